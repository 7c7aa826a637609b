"""Chronicle's alembic migrations (plain SQL), shipped in the package as ``app.migrations``.

pyproject.toml maps this directory into the distribution; the code finds it with
``importlib.resources`` (app/store/migrate.py), in a checkout and in an installed wheel alike.
"""
