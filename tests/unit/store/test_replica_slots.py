"""A standby's slot name and the primary's pg_hba.conf once it streams (`chronicle db replica`)."""

from __future__ import annotations

import re
from pathlib import Path

from app.store.embedded import slot_name
from app.store.embedded.auth import PG_HBA_REPLICATION, REPLICATION_ROLE, hba_requires_passwords


def test_each_directory_has_a_slot_name_postgresql_accepts() -> None:
    first, second = slot_name(Path("/srv/a/replica")), slot_name(Path("/srv/b/replica"))
    assert first != second and first == slot_name(Path("/srv/a/replica"))
    for name in (first, second):  # slot names: lower case letters, digits, underscores, < 64
        assert re.fullmatch(r"[a-z0-9_]{1,63}", name)


def test_the_replication_role_streams_with_a_password_and_does_nothing_else(
    tmp_path: Path,
) -> None:
    (tmp_path / "pg_hba.conf").write_text(PG_HBA_REPLICATION)
    assert hba_requires_passwords(tmp_path)
    rules = [line.split() for line in PG_HBA_REPLICATION.splitlines() if line[:1] not in "#"]
    rules = [rule for rule in rules if rule]
    assert rules[0] == ["local", "replication", REPLICATION_ROLE, "scram-sha-256"]
    # its ordinary connections are refused before the line that lets every role in
    assert rules.index(["local", "all", REPLICATION_ROLE, "reject"]) < rules.index(
        ["local", "all", "all", "scram-sha-256"]
    )
