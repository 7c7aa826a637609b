"""`chronicle redact --value-file` adds the secret to the masker: a later `chronicle append`
of text holding it records the placeholder, and neither the database nor any file Chronicle
wrote holds the secret (docs/erasure.md, "The masker learns a found secret")."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import psycopg

from tests.support.cli import chronicle

SECRET = "ghp_Secr3tT0kenFoundL8r"


def test_a_found_secret_is_masked_in_what_is_appended_later(
    env: dict[str, str], tmp_path: Path, database_url: str
) -> None:
    session = str(uuid.uuid4())
    before = chronicle("append", session, "message", json.dumps({"content": SECRET}), env=env)
    assert before.returncode == 0, before.stderr
    value_file = tmp_path / "found.txt"
    value_file.write_text(SECRET + "\n")

    found = chronicle(
        "redact", "--value-file", str(value_file), "--all", "--reason", "leaked", env=env
    )
    assert found.returncode == 0, found.stderr
    added = re.search(
        r"added to the masker: recorded as (\[secret found [0-9a-f]{8}\])", found.stderr
    )
    assert added, found.stderr
    placeholder = added.group(1)
    assert "#1 /content redacted by cli:" in found.stdout

    later = chronicle(
        "append", session, "message", json.dumps({"content": f"token={SECRET}."}), env=env
    )
    assert later.returncode == 0, later.stderr
    events = chronicle("events", session, "--json", env=env).stdout
    contents = [json.loads(line)["payload"].get("content") for line in events.splitlines()]
    assert contents[0] == "[redacted]" and contents[-1] == f"token={placeholder}."

    again = chronicle("redact", "--value-file", str(value_file), "--all", "--reason", "x", env=env)
    assert again.returncode == 0, again.stderr
    assert f"already known to the masker: recorded as {placeholder}" in again.stderr

    with psycopg.connect(database_url) as connection:
        dumped = "\n".join(
            str(row[0])
            for table in ("events", "blobs", "llm_messages", "masked_secrets", "masker_key")
            for row in connection.execute(f"SELECT t::text FROM {table} AS t")
        )
    assert placeholder in dumped and SECRET not in dumped
    assert SECRET.encode().hex() not in dumped
    written = [p for p in Path(env["CHRONICLE_DATA_DIR"]).rglob("*") if p.is_file()]
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
