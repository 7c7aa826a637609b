"""`chronicle annotate`: a label on a session or one of its events from a terminal, recorded in
its log with who wrote it; what cannot be recorded is refused with a reason and exit 1 or 2."""

from __future__ import annotations

import json

from tests.support.cli import chronicle


def test_annotate_an_event_and_the_session_then_refusals(env: dict[str, str]) -> None:
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)

    made = chronicle(
        "annotate", session[:8], "--seq", "4", "--label", "unsafe command",
        "--comment", "counts files it should not", "--tag", "shell", "--tag", "demo", env=env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "#4 unsafe command by cli:" in made.stdout and "[shell] [demo]" in made.stdout
    whole = chronicle(
        "annotate", session, "--label", "reviewed", "--user", "ada", "--json", env=env
    )
    assert whole.returncode == 0, whole.stderr
    recorded = json.loads(whole.stdout)
    assert (recorded["kind"], recorded["source"], recorded["seq"]) == ("annotation", "user", 10)
    assert recorded["payload"] == {
        "label": "reviewed", "comment": "", "tags": [], "target_seq": None, "user": "ada"
    }  # fmt: skip
    assert chronicle("verify", session, env=env).returncode == 0

    beyond = chronicle("annotate", session, "--seq", "99", "--label", "x", env=env)
    assert beyond.returncode == 1 and "has no event 99 (its last is 10)" in beyond.stderr
    blank = chronicle("annotate", session, "--label", "  ", env=env)
    assert blank.returncode == 2 and "label" in blank.stderr
    events = chronicle("events", session, env=env).stdout.splitlines()
    assert len(events) == 10
