"""`chronicle verify --anchors` names every session the anchors file does not cover.

Before, a session missing from the file was verified without anchors and printed as plain
``ok``: a superuser who rewrote a session (chain recomputed) and dropped its lines from the
anchors file, or a session anchoring never reached, passed ``verify --all --anchors`` with
exit 0. Now such a session is ``NOT ANCHORED``, listed at the end, and the exit status is 3
unless ``--allow-unanchored`` says that is accepted.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import chronicle, demo_session
from tests.support.tampering import rewrite_payload


def test_a_rewritten_session_dropped_from_the_anchors_file_is_named(
    env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    kept, rewritten = demo_session(env), demo_session(env)
    anchors = tmp_path / "anchors.jsonl"
    assert chronicle("anchor", "--all", "-o", str(anchors), env=env).returncode == 0

    # The attacker rewrites a session so that its chain checks out, and drops its anchor.
    rewrite_payload(database_url, rewritten, 2, {"content": "Delete every file."})
    assert chronicle("verify", rewritten, env=env).returncode == 0, "a valid-looking log"
    anchors.write_text(
        "".join(line for line in anchors.read_text().splitlines(True) if rewritten not in line)
    )

    result = chronicle("verify", "--all", "--anchors", str(anchors), env=env)
    assert result.returncode == 3, result.stdout + result.stderr
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines() if "  " in line)
    assert lines[kept].startswith("ok:") and "1 anchors match" in lines[kept]
    assert lines[rewritten].startswith("NOT ANCHORED: the anchors file has no anchor")
    assert f"not anchored: 1 sessions ({rewritten})" in result.stdout
    assert "--allow-unanchored" in result.stderr

    one = chronicle("verify", rewritten, "--anchors", str(anchors), env=env)
    assert one.returncode == 3 and one.stdout.startswith("NOT ANCHORED"), one.stdout

    lenient = chronicle("verify", "--all", "--anchors", str(anchors), "--allow-unanchored", env=env)
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert f"not anchored: 1 sessions ({rewritten})" in lenient.stdout
    assert "warning: 1 sessions are not anchored" in lenient.stderr


def test_events_after_the_last_anchor_and_new_sessions_are_shown(
    env: dict[str, str], tmp_path: Path
) -> None:
    first = demo_session(env)
    anchors = tmp_path / "anchors.jsonl"
    assert chronicle("anchor", first, "-o", str(anchors), env=env).returncode == 0
    appended = chronicle("append", first, "message", '{"content": "later"}', env=env)
    assert appended.returncode == 0, appended.stderr
    later = demo_session(env)

    result = chronicle("verify", "--all", "--anchors", str(anchors), env=env)
    assert result.returncode == 3
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines() if "  " in line)
    assert "1 anchors match (1 events after the last, not covered yet)" in lines[first]
    assert lines[later].startswith("NOT ANCHORED")
    assert chronicle("anchor", "--all", "-o", str(anchors), env=env).returncode == 0
    covered = chronicle("verify", "--all", "--anchors", str(anchors), env=env)
    assert covered.returncode == 0, covered.stdout + covered.stderr
    assert "not anchored" not in covered.stdout.lower()
