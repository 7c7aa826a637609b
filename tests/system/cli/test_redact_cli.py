"""`chronicle redact`: an event's field, or its whole payload, removed from a terminal; the
chain still verifies and `verify` lists the redaction with who and why; what cannot be
redacted is refused with a reason and exit 1 or 2 (docs/erasure.md)."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_redact_a_value_everywhere_from_a_file(env: dict[str, str], tmp_path: Path) -> None:
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)
    listed = chronicle("events", session, "--json", env=env)
    command = next(
        json.loads(line)["payload"]["command"]
        for line in listed.stdout.splitlines()
        if json.loads(line)["kind"] == "run"
    )
    secret = tmp_path / "secret.txt"
    secret.write_text(command + "\n")

    found = chronicle("redact", "--value-file", str(secret), "--all", "--reason", "leaked", env=env)
    assert found.returncode == 0, found.stderr
    assert "redacted by cli:" in found.stdout and "redactions in 1 sessions" in found.stderr
    after = chronicle("events", session, "--json", env=env).stdout
    assert command not in after and json.dumps(command)[1:-1] not in after
    verified = chronicle("verify", session, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "redacted by cli:" in verified.stdout

    neither = chronicle("redact", "--value-file", str(secret), "--reason", "x", env=env)
    assert neither.returncode == 2 and "--all or the SESSIONs" in neither.stderr
    short = tmp_path / "short.txt"
    short.write_text("1234")
    plain = chronicle("redact", "--value-file", str(short), "--all", "--reason", "x", env=env)
    assert plain.returncode == 2 and "too short" in plain.stderr
    no_seq = chronicle("redact", session, "--reason", "x", env=env)
    assert no_seq.returncode == 2 and "--seq" in no_seq.stderr
