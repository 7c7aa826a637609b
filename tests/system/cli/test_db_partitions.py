"""`chronicle db partitions [list|ensure]` as an operator runs it (the owner's URL)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from app.store.partitions import current_month
from tests.support.cli import chronicle, cli_environment


def _month(offset: int) -> str:
    start = current_month()
    index = start.year * 12 + start.month - 1 + offset
    return f"events_{index // 12:04d}_{index % 12 + 1:02d}"


def test_list_and_ensure(database_url: str, tmp_path: Path) -> None:
    env = cli_environment(database_url, tmp_path)
    listed = chronicle("db", "partitions", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[0].split() == ["partition", "from", "(UTC)", "to", "(UTC)", "attached"]
    assert [row.split()[0] for row in rows[1:]] == [_month(0), _month(1), _month(2)]
    assert rows[1].split()[1] == current_month().isoformat()
    assert all(row.split()[-1] == "yes" for row in rows[1:])

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(f"ALTER TABLE events DETACH PARTITION {_month(2)}")
        connection.execute(f"DROP TABLE {_month(2)}")
    made = chronicle("db", "partitions", "ensure", "--ahead", "3", env=env)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == f"made {_month(2)}, {_month(3)}"

    bad = chronicle("db", "partitions", "ensure", "--ahead", "-1", env=env)
    assert bad.returncode == 1 and "months_ahead must be 0 or more" in bad.stderr
    assert "Traceback" not in bad.stderr
