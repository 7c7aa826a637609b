"""The canonical form of an action and the comparison of what a model call led to."""

from __future__ import annotations

from app.replay.canonical import (
    VOLATILE_FIELDS,
    canonical_action,
    compare_consequences,
    field_changes,
)


def test_volatile_fields_do_not_count() -> None:
    recorded = {"command": "ls", "thought": "look", "tool_call_id": "call_0_1", "cause": 3}
    new = {"command": "ls", "thought": "look", "tool_call_id": "call_0_99", "cause": 7}
    new |= {"event_id": "4b7f1a5c-0000-4000-8000-000000000000", "replayed_from": 12}
    assert canonical_action("run", recorded) == canonical_action("run", new)
    assert not VOLATILE_FIELDS & set(canonical_action("run", new))


def test_defaults_written_out_or_left_out_compare_equal() -> None:
    assert canonical_action("run", {"command": "ls"}) == canonical_action(
        "run", {"command": "ls", "is_input": False, "timeout": None, "thought": ""}
    )


def test_what_the_agent_says_counts() -> None:
    assert canonical_action("run", {"command": "ls"}) != canonical_action(
        "run", {"command": "ls -a"}
    )
    assert canonical_action("run", {"command": "ls", "thought": "a"}) != canonical_action(
        "run", {"command": "ls", "thought": "b"}
    )
    assert canonical_action("run", {"command": "ls"}) != canonical_action(
        "file.read", {"path": "ls"}
    )


def test_a_payload_its_class_refuses_is_compared_as_it_is() -> None:
    odd = canonical_action("run", {"command": 5, "tool_call_id": "x"})
    assert odd == {"kind": "run", "command": 5}


def test_field_changes_name_each_field_with_both_values() -> None:
    old = canonical_action("file.edit", {"command": "create", "path": "a.py", "file_text": "1"})
    new = canonical_action("file.edit", {"command": "create", "path": "b.py", "file_text": "1"})
    changes = field_changes(old, new)
    assert [(c.field, c.recorded, c.new) for c in changes] == [("path", "a.py", "b.py")]


def test_equal_consequences_match() -> None:
    recorded = [(5, "run", {"command": "ls", "tool_call_id": "a"})]
    assert (
        compare_consequences(2, 4, recorded, [("run", {"command": "ls", "tool_call_id": "z"})])
        is None
    )


def test_a_different_action_is_reported_field_by_field() -> None:
    recorded = [(5, "run", {"command": "ls"}), (6, "finish", {"message": "done"})]
    new = [("run", {"command": "ls"}), ("finish", {"message": "all done"})]
    divergence = compare_consequences(3, 4, recorded, new)
    assert divergence is not None and divergence.kind == "action"
    assert (divergence.step, divergence.recorded_seq, divergence.index) == (3, 6, 1)
    assert [(c.field, c.recorded, c.new) for c in divergence.fields] == [
        ("message", "done", "all done")
    ]
    assert "finish differs" in divergence.summary and "message" in divergence.summary


def test_another_kind_more_or_fewer_consequences() -> None:
    kind = compare_consequences(1, 2, [(3, "run", {"command": "ls"})], [("think", {"thought": ""})])
    assert kind is not None and "a think where the recording has a run" in kind.summary
    more = compare_consequences(1, 2, [], [("run", {"command": "ls"})])
    assert (
        more is not None
        and more.recorded is None
        and more.new
        == {
            "kind": "run",
            "command": "ls",
            "is_input": False,
            "thought": "",
            "timeout": None,
        }
    )
    assert more.recorded_seq == 2  # nothing recorded there: the call's seq
    fewer = compare_consequences(1, 2, [(3, "run", {"command": "ls"})], [])
    assert fewer is not None and fewer.new is None and "did less" in fewer.summary


def test_the_quick_equality_is_canonical_json_equality() -> None:
    # Actions equal as written skip the event classes; that shortcut must not call equal
    # what canonical JSON tells apart (True is 1 in Python), nor differ where it agrees.
    run = {"command": "ls", "is_input": False, "timeout": 5, "tool_call_id": "a"}
    assert compare_consequences(1, 2, [(3, "run", run)], [("run", {**run, "timeout": 5.0})]) is None
    assert (
        compare_consequences(1, 2, [(3, "run", run)], [("run", {**run, "tool_call_id": "b"})])
        is None
    )
    flagged = {"server": "s", "tool": "t", "arguments": {"flag": 1}, "thought": ""}
    changed = compare_consequences(
        1, 2, [(3, "mcp.call", flagged)], [("mcp.call", {**flagged, "arguments": {"flag": True}})]
    )
    assert changed is not None and [f.field for f in changed.fields] == ["arguments"]
