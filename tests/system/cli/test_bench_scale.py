"""`chronicle bench scale` end to end at a tiny size, so that the benchmark cannot rot: it
generates two databases through the import path, verifies them whole, measures every figure
on both and prints the ratios; a second run with --reuse keeps the databases."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from app.store.embedded import EmbeddedPostgres
from tests.support.cli import empty_settings_file
from tests.support.forked import chronicle_run

FIGURES = {
    "single-event append p50", "single-event append p99", "session list, admin, p99",
    "session list, member with 10%, p99", "one session's read p50", "one session's read p99",
    "verify, sessions not read before", "verify, the same again", "daily_usage, whole",
    "session_costs, whole", "session_costs, per session", "session_state rebuild",
    "database size per million events",
}  # fmt: skip


@pytest.mark.slow
def test_bench_scale_at_two_tiny_sizes(tmp_path: Path, data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHRONICLE_DATABASE_URL"}
    env["CHRONICLE_CONFIG"] = str(empty_settings_file(tmp_path))
    env["CHRONICLE_DATA_DIR"] = str(tmp_path / "unused")
    command = [
        "bench",
        "scale",
        "--sizes",
        "3k,1500",
        "--rounds",
        "1",
        "--samples",
        "100",
        "--dir",
        str(data_dir),
        "--json",
    ]
    try:
        first = chronicle_run(command, env=env, capture_output=True, text=True, timeout=120)
        assert first.returncode in (0, 1), first.stderr  # 1: a figure is not flat
        result = json.loads(first.stdout)
        assert {row["figure"] for row in result["rows"]} == FIGURES
        for row in result["rows"]:
            assert (row["base_size"], row["size"]) == ("1.5k", "3k")
            assert (
                row["base"] > 0
                and row["value"] > 0
                and row["met"]
                == (row["ratio"] <= 1.5 if row["target"] == "<= 1.5x" else row["ratio"] >= 1 / 1.5)
            )
        assert result["generated"]["3k"]["sessions"] == 30
        assert result["generated"]["1.5k"]["events"] == 1_500
        assert "every session verifies" in first.stderr
        assert json.loads((data_dir / "results.json").read_text())["rows"] == result["rows"]

        server = EmbeddedPostgres(data_dir / "server")
        assert not server.status().running  # stopped at the end; the data stays for --reuse
        admin = server.ensure_running().admin
        with psycopg.connect(admin.replace("/chronicle?", "/scale_3k?")) as connection:
            counts = connection.execute(
                "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM session_owners),"
                " (SELECT count(*) FROM llm_messages) > 0, (SELECT count(*) FROM blobs) > 0,"
                " (SELECT count(*) FROM session_state),"
                " (SELECT sum(cost_usd) FROM session_costs) > 0"
            ).fetchone()
        assert counts == (30, 30, True, True, 30, True)

        again = chronicle_run([*command, "--reuse"], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert again.returncode in (0, 1), again.stderr
        assert "3k: reusing scale_3k" in again.stderr and "generating" not in again.stderr
        assert {row["figure"] for row in json.loads(again.stdout)["rows"]} == FIGURES
    finally:
        EmbeddedPostgres(data_dir / "server").stop()
