"""ATIF, the Agent Trajectory Interchange Format (Harbor's), in and out.

``schema.py`` is the format (its models and the rules beyond them), ``steps.py`` what each
event becomes, ``export.py`` a session as a trajectory (``chronicle export --format atif``)
and ``to_events.py`` a trajectory as a session (``chronicle import --from atif``, registered
in ``app.interchange.importers.IMPORTERS``). docs/atif.md has the mapping as a table.
"""
