"""`chronicle anchor` and `chronicle verify` as an operator and an auditor run them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.integrity import sign_anchor
from tests.support.cli import chronicle, cli_environment, demo_session
from tests.support.payloads import sha256_hex


def test_anchor_then_verify_and_an_auditor_with_only_the_public_key(
    env: dict[str, str], tmp_path: Path
) -> None:
    first, second = demo_session(env), demo_session(env)
    anchors = tmp_path / "anchors.jsonl"
    anchored = chronicle("anchor", "--all", "-o", str(anchors), env=env)
    assert anchored.returncode == 0, anchored.stderr
    assert (
        "generated the anchor key" in anchored.stderr and "anchored 2 sessions" in anchored.stderr
    )
    key_file = tmp_path / "data" / "secrets" / "anchor-ed25519.pem"
    assert key_file.stat().st_mode & 0o777 == 0o600
    records = [json.loads(line) for line in anchors.read_text().splitlines()]
    assert {r["session_id"] for r in records} == {first, second}
    assert set(records[0]) == {
        "session_id", "last_seq", "head", "anchored_at", "key_id", "signature"
    }  # fmt: skip
    assert all(r["last_seq"] == 8 for r in records)

    verified = chronicle("verify", first, "--anchors", str(anchors), env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "8 events" in verified.stdout and "1 anchors match" in verified.stdout
    everything = chronicle("verify", "--all", "--anchors", str(anchors), env=env)
    assert everything.returncode == 0, everything.stdout
    assert everything.stdout.count(" ok: ") == 4  # two sessions, llm_messages and blobs

    # Anchoring again appends, after checking the earlier anchors.
    assert chronicle("anchor", first, "-o", str(anchors), env=env).returncode == 0
    assert len(anchors.read_text().splitlines()) == 3

    public = tmp_path / "public.pem"
    printed = chronicle("anchor", "--print-public-key", env=env)
    assert printed.returncode == 0 and "BEGIN PUBLIC KEY" in printed.stdout
    public.write_text(printed.stdout)
    auditor = {**env, "CHRONICLE_DATA_DIR": str(tmp_path / "auditor")}
    no_key = chronicle("verify", first, "--anchors", str(anchors), env=auditor)
    assert no_key.returncode == 1 and "pass --public-key" in no_key.stderr
    audited = chronicle(
        "verify", "--all", "--anchors", str(anchors), "--public-key", str(public), env=auditor
    )
    assert audited.returncode == 0, audited.stdout + audited.stderr


def test_a_deleted_session_and_a_forged_anchor_are_reported(
    env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    kept, deleted = demo_session(env), demo_session(env)
    anchors = tmp_path / "anchors.jsonl"
    assert chronicle("anchor", "--all", "-o", str(anchors), env=env).returncode == 0
    with psycopg.connect(database_url, autocommit=True) as attacker:
        attacker.execute("SET session_replication_role = replica")
        attacker.execute("DELETE FROM events WHERE session_id = %s", (deleted,))
        attacker.execute("DELETE FROM sessions WHERE id = %s", (deleted,))

    result = chronicle("verify", "--all", "--anchors", str(anchors), env=env)
    assert result.returncode == 1
    lines = dict(line.split("  ", 1) for line in result.stdout.splitlines())
    assert lines[kept].startswith("ok:")
    assert lines[deleted].startswith("BROKEN") and "the session is gone" in lines[deleted]
    assert chronicle("verify", "--all", env=env).returncode == 0, "no anchors: nothing to miss"

    forged = tmp_path / "forged.jsonl"
    record = sign_anchor(Ed25519PrivateKey.generate(), uuid.UUID(kept), 8, b"\0" * 32)
    forged.write_text(record.to_line() + "\n")
    refused = chronicle("verify", kept, "--anchors", str(forged), env=env)
    assert refused.returncode == 1 and "not signed by this deployment" in refused.stdout

    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text("not json\n")
    bad = chronicle("verify", kept, "--anchors", str(garbled), env=env)
    assert bad.returncode == 1 and "line 1: not an anchor record" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_anchor_refuses_a_session_that_does_not_verify(
    env: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    session = demo_session(env)
    with psycopg.connect(database_url, autocommit=True) as attacker:
        attacker.execute("DELETE FROM sessions WHERE id = %s", (session,))
    anchors = tmp_path / "anchors.jsonl"
    result = chronicle("anchor", session, "-o", str(anchors), env=env)
    assert result.returncode == 1 and "not anchored" in result.stderr
    assert "sessions table is missing" in result.stderr
    assert not anchors.exists()
    unnamed = chronicle("anchor", env=env)
    assert unnamed.returncode == 2 and "or --all" in unnamed.stderr


def test_chronicle_verify_reports_blobs(
    app_database_url: str, database_url: str, tmp_path: Path
) -> None:
    env = cli_environment(app_database_url, tmp_path)
    session = str(uuid.uuid4())
    text = "v" * 100_000  # a blob, and still one command-line argument
    big = json.dumps({"command": "create", "path": "/w/big.txt", "file_text": text})
    appended = chronicle("append", session, "file.edit", big, env=env)
    assert appended.returncode == 0, appended.stderr
    one = chronicle("verify", session, env=env)
    assert one.returncode == 0 and "1 blobs match their hashes" in one.stdout, one.stdout
    everything = chronicle("verify", "--all", env=env)
    assert everything.returncode == 0 and "blobs  ok: 1" in everything.stdout

    with psycopg.connect(database_url) as attacker:
        attacker.execute("SET session_replication_role = replica")
        attacker.execute("UPDATE blobs SET content = 'forged'")
    broken = chronicle("verify", "--all", env=env)
    assert broken.returncode == 1
    assert f"blobs  BROKEN: blob {sha256_hex(text)} does not match its hash" in broken.stdout
    assert f"the blob {sha256_hex(text)} that event 1 refers to does not match" in broken.stdout
