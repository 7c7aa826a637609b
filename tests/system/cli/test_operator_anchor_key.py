"""Anchors signed with a key that lives off the machine, checked with its public half only.

The machine's own anchor key sits in ``data_dir/secrets``, where a superuser of the machine can
read it: such a superuser rewrites a session, recomputes its chain and signs the new head with
that key. ``chronicle anchor --key FILE`` signs with the operator's key instead (made by
``anchor --new-key`` or openssl), and ``verify --public-key FILE`` on an auditor's machine that
holds no private key at all refuses the re-signed history and says why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.cli import chronicle, demo_session
from tests.support.tampering import rewrite_payload


def _lines(stdout: str) -> dict[str, str]:
    return dict(line.split("  ", 1) for line in stdout.splitlines() if "  " in line)


def test_a_history_re_signed_with_the_machines_key_fails_against_the_operators(
    env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    kept, rewritten = demo_session(env), demo_session(env)
    operator = tmp_path / "operator" / "anchor.pem"
    operator.parent.mkdir()
    made = chronicle("anchor", "--new-key", str(operator), env=env)
    assert made.returncode == 0, made.stderr
    public = Path(f"{operator}.pub")
    assert operator.stat().st_mode & 0o777 == 0o600 and "BEGIN PUBLIC KEY" in public.read_text()
    again = chronicle("anchor", "--new-key", str(operator), env=env)
    assert again.returncode == 1 and "exists already" in again.stderr

    anchors = tmp_path / "anchors.jsonl"
    signed = chronicle("anchor", "--all", "--key", str(operator), "-o", str(anchors), env=env)
    assert signed.returncode == 0, signed.stderr
    assert not (tmp_path / "data" / "secrets" / "anchor-ed25519.pem").exists()

    # An auditor's machine: no private key anywhere, only the operator's public half.
    auditor = {**env, "CHRONICLE_DATA_DIR": str(tmp_path / "auditor")}
    check = ["verify", "--all", "--anchors", str(anchors), "--public-key", str(public)]
    clean = chronicle(*check, env=auditor)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    # The superuser rewrites a session, recomputes its chain, and re-anchors everything with
    # the machine's own key into the same file (straight to it: `-o` checks the earlier
    # anchors with that key first, and refuses).
    rewrite_payload(database_url, rewritten, 2, {"content": "Delete every file."})
    refused = chronicle("anchor", "--all", "-o", str(anchors), env=env)
    assert refused.returncode == 1 and "not anchored" in refused.stderr
    resigned = chronicle("anchor", "--all", env=env)
    assert resigned.returncode == 0, resigned.stderr
    with anchors.open("a") as file:
        file.write(resigned.stdout)
    machine = chronicle("verify", rewritten, "--anchors", str(anchors), env=env)
    assert machine.returncode == 1, "the operator's anchor still names the machine's key foreign"

    result = chronicle(*check, env=auditor)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = _lines(result.stdout)
    assert lines[rewritten].startswith("BROKEN at seq 8: event 8 is not the one anchored")
    assert "the log was rewritten" in lines[rewritten]
    assert lines[kept].startswith("BROKEN") and "not the trusted key" in lines[kept]
    assert "Traceback" not in result.stderr


def test_a_key_made_with_openssl_signs_and_its_public_half_checks(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The documented way to make a key without Chronicle."""
    session = demo_session(env)
    key, public = tmp_path / "ops.pem", tmp_path / "ops.pub"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(public)], check=True)
    anchors = tmp_path / "anchors.jsonl"
    assert (
        chronicle("anchor", session, "--key", str(key), "-o", str(anchors), env=env).returncode == 0
    )
    auditor = {**env, "CHRONICLE_DATA_DIR": str(tmp_path / "auditor")}
    verified = chronicle(
        "verify", session, "--anchors", str(anchors), "--public-key", str(public), env=auditor
    )
    assert verified.returncode == 0 and "1 anchors match" in verified.stdout, verified.stdout
    wrong = chronicle("verify", session, "--anchors", str(anchors), env=auditor)
    assert wrong.returncode == 1 and "pass --public-key" in wrong.stderr
    bad = chronicle("anchor", session, "--key", str(public), env=env)
    assert bad.returncode == 1 and "not an unencrypted Ed25519 private key" in bad.stderr
