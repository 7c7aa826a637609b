"""`chronicle redact`: an event's field, or its whole payload, removed from a terminal; the
chain still verifies and `verify` lists the redaction with who and why; what cannot be
redacted is refused with a reason and exit 1 or 2 (docs/erasure.md)."""

from __future__ import annotations

import json

from tests.support.cli import chronicle


def test_redact_a_field_and_a_payload_then_verify_lists_them(env: dict[str, str]) -> None:
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)
    listed = chronicle("events", session, "--json", env=env)
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    run = next(e for e in events if e["kind"] == "run")
    output = next(e for e in events if e["kind"] == "run.output")
    command = run["payload"]["command"]

    field = chronicle(
        "redact", session[:8], "--seq", str(run["seq"]), "--field", "/command",
        "--reason", "a pasted key", env=env,
    )  # fmt: skip
    assert field.returncode == 0, field.stderr
    assert f"#{run['seq']} /command redacted by cli:" in field.stdout
    whole = chronicle(
        "redact", session, "--seq", str(output["seq"]), "--reason", "its output too",
        "--user", "ada", "--json", env=env,
    )  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    record = json.loads(whole.stdout.splitlines()[0])
    assert record["kind"] == "redaction" and record["payload"]["target_seq"] == output["seq"]
    assert record["payload"]["user"] == "ada" and record["payload"]["path"] == ""

    after = [
        json.loads(line)
        for line in chronicle("events", session, "--json", env=env).stdout.splitlines()
    ]
    assert command not in json.dumps(after[run["seq"] - 1]["payload"])
    assert after[run["seq"] - 1]["payload"]["command"] == "[redacted]"
    verified = chronicle("verify", session, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"seq {run['seq']} /command redacted by cli:" in verified.stdout
    assert f"seq {output['seq']} redacted by ada" in verified.stdout

    again = chronicle(
        "redact", session, "--seq", str(run["seq"]), "--field", "/command", "--reason", "x", env=env
    )
    assert again.returncode == 1 and "already redacted" in again.stderr
    nothing = chronicle(
        "redact", session, "--seq", str(run["seq"]), "--field", "/nope", "--reason", "x", env=env
    )
    assert nothing.returncode == 1 and "nothing at /nope" in nothing.stderr
    beyond = chronicle("redact", session, "--seq", "999", "--reason", "x", env=env)
    assert beyond.returncode == 1 and "has no event 999" in beyond.stderr
    blank = chronicle("redact", session, "--seq", "1", "--reason", " ", env=env)
    assert blank.returncode == 2 and "--reason" in blank.stderr
