"""The ``imported`` origin on events: in the payload of an imported event, left out of a
replayed copy's and of the fields a replay compares.

Were ``imported`` an ordinary field of the envelope, a replay would compare it too: every
action Chronicle's agent makes (no origin) would differ from the imported one (an origin),
and no imported session could ever replay — the last test fails then.
"""

from __future__ import annotations

from app.events import ImportOrigin, Run, event_from_stored
from app.replay.canonical import canonical_action, compare_consequences

ORIGIN = ImportOrigin(format="openhands", file="run.json", index=4, id="4", field="action")


def test_an_imported_event_carries_its_origin_in_its_payload() -> None:
    run = Run(command="ls", imported=ORIGIN)
    assert run.payload()["imported"] == {
        "format": "openhands",
        "file": "run.json",
        "index": 4,
        "id": "4",
        "field": "action",
    }
    assert "imported" not in Run(command="ls").payload()  # every other payload as it was
    back = event_from_stored(
        kind="run", source="agent", cause=None, event_id=run.event_id,
        payload=run.payload(), schema_version=1,
    )  # fmt: skip
    assert back.imported == ORIGIN


def test_a_replayed_copy_points_at_the_imported_event_instead() -> None:
    copy = Run(command="ls", imported=ORIGIN).model_copy(update={"replayed_from": 5})
    assert "imported" not in copy.payload() and copy.payload()["replayed_from"] == 5


def test_a_replay_compares_actions_without_their_origin() -> None:
    imported = Run(command="ls", thought="t", imported=ORIGIN).payload()
    replayed = Run(command="ls", thought="t").payload()
    assert canonical_action("run", imported) == canonical_action("run", replayed)
    assert compare_consequences(1, 3, [(4, "run", imported)], [("run", replayed)]) is None
