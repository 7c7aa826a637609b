"""`chronicle redact`: an event's payload removed from a terminal, then a secret found and
removed everywhere from a file; the chain still verifies and `verify` lists each redaction
with who and why; what cannot be redacted is refused with a reason and exit 1 or 2
(docs/erasure.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import chronicle


def test_redact_a_payload_then_a_value_everywhere_then_refusals(
    env: dict[str, str], tmp_path: Path
) -> None:
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    session = next(w for w in demo.stdout.split() if w.count("-") == 4)
    listed = chronicle("events", session, "--json", env=env)
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    run = next(e for e in events if e["kind"] == "run")
    output = next(e for e in events if e["kind"] == "run.output")
    command = run["payload"]["command"]

    whole = chronicle(
        "redact", session[:8], "--seq", str(output["seq"]), "--reason", "its output",
        "--user", "ada", "--json", env=env,
    )  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    record = json.loads(whole.stdout.splitlines()[0])
    assert record["kind"] == "redaction" and record["payload"]["target_seq"] == output["seq"]
    assert record["payload"]["user"] == "ada" and record["payload"]["path"] == ""

    secret = tmp_path / "secret.txt"
    secret.write_text(command + "\n")
    found = chronicle("redact", "--value-file", str(secret), "--all", "--reason", "leaked", env=env)
    assert found.returncode == 0, found.stderr
    assert f"#{run['seq']} /command redacted by cli:" in found.stdout
    assert "redactions in 1 sessions" in found.stderr
    after = chronicle("events", session, "--json", env=env).stdout
    assert command not in after and json.dumps(command)[1:-1] not in after
    assert json.loads(after.splitlines()[run["seq"] - 1])["payload"]["command"] == "[redacted]"
    verified = chronicle("verify", session, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"seq {run['seq']} /command redacted by cli:" in verified.stdout
    assert f"seq {output['seq']} redacted by ada" in verified.stdout

    def refused(*args: str) -> tuple[int, str]:
        answer = chronicle("redact", *args, env=env)
        return answer.returncode, answer.stderr

    code, says = refused(session, "--seq", str(run["seq"]), "--field", "/command", "--reason", "x")
    assert code == 1 and "already redacted" in says
    code, says = refused(session, "--seq", str(run["seq"]), "--field", "/nope", "--reason", "x")
    assert code == 1 and "nothing at /nope" in says
    code, says = refused(session, "--seq", "999", "--reason", "x")
    assert code == 1 and "has no event 999" in says
    code, says = refused(session, "--seq", "1", "--reason", " ")
    assert code == 2 and "--reason" in says
    code, says = refused(session, "--reason", "x")
    assert code == 2 and "--seq" in says
    code, says = refused("--value-file", str(secret), "--reason", "x")
    assert code == 2 and "--all or the SESSIONs" in says
    short = tmp_path / "short.txt"
    short.write_text("1234")
    code, says = refused("--value-file", str(short), "--all", "--reason", "x")
    assert code == 2 and "too short" in says
