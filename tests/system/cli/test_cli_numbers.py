"""Numbers on the command line are checked where they are read: a seq out of range, a
negative one, a cause PostgreSQL's integer cannot hold are refused in a sentence (exit 2),
never with the driver's error. Before, ``events --after 99999999999999999999`` printed a
DataError, ``append --cause 999999999999`` "the database refused the write: None (22000)",
and ``--after -1`` was taken silently. And a fork refused before its first event prints its
error alone: before, it went on with "session <a new id>: not started", an id that exists
nowhere."""

from __future__ import annotations

import uuid

from tests.support.cli import chronicle


def refused(result: object, *phrases: str) -> None:
    code, stderr = result.returncode, result.stderr  # type: ignore[attr-defined]
    assert code == 2, stderr
    for phrase in phrases:
        assert phrase in stderr, stderr
    assert "Error" not in stderr and "Traceback" not in stderr, stderr


def test_out_of_range_seqs_are_refused_in_a_sentence(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    assert chronicle("append", session, "run", '{"command": "ls"}', env=env).returncode == 0
    refused(
        chronicle("events", session, "--after", "99999999999999999999", env=env),
        "--after: 99999999999999999999 is not a seq to start after: it goes from 0 to "
        "2,147,483,647",
    )
    refused(chronicle("events", session, "--after", "-1", env=env), "-1 is not a seq to start")
    refused(chronicle("events", session, "--after", "x", env=env), "'x' is not a seq to start")
    refused(
        chronicle("append", session, "run.output", "{}", "--cause", "999999999999", env=env),
        "--cause: 999999999999 is not a seq: it goes from 1 to 2,147,483,647",
    )
    refused(chronicle("append", session, "run.output", "{}", "--cause", "0", env=env), "0 is not")
    refused(chronicle("sessions", "--limit", "99999999999999999999", env=env), "is not a count")
    refused(chronicle("fork", session, "--at", "99999999999999999999", env=env), "is not a seq")
    within = chronicle("events", session, "--after", "2147483647", env=env)
    assert within.returncode == 0 and within.stdout == "", within.stderr


def test_a_fork_refused_before_its_first_event_prints_only_why(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    for kind, payload in (("session.created", '{"config": {}}'), ("message", '{"content": "hi"}')):
        assert chronicle("append", session, kind, payload, env=env).returncode == 0
    forked = chronicle("fork", session, "--at", "9999", env=env)
    assert forked.returncode != 0
    assert "error: --at must be between 2 and 2" in forked.stderr, forked.stderr
    assert "not started" not in forked.stdout + forked.stderr, forked.stdout
