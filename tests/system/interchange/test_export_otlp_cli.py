"""`chronicle export --otlp URL` as a user runs it: a real process sends a recorded session
over HTTP to a collector, which reads the request with OpenTelemetry's own classes; wrong
arguments and a collector that is down are one line each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import chronicle, cli_environment, demo_session
from tests.support.otlp_collector import Collector, running_collector


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as server:
        yield server


@pytest.fixture
def env(app_database_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_environment(app_database_url, tmp_path)


def test_a_recorded_session_is_sent_as_one_trace(collector: Collector, env: dict[str, str]) -> None:
    session = demo_session(env)
    done = chronicle(
        "export", "--otlp", collector.url, session, "--header", "x-api-key=k1", env=env
    )
    assert done.returncode == 0, done.stderr
    assert "sent 1 sessions" in done.stderr and f"to {collector.url}/v1/traces" in done.stderr
    [request] = collector.received
    [(path, headers)] = collector.posts
    assert path == "/v1/traces" and headers["x-api-key"] == "k1"
    spans = request.resource_spans[0].scope_spans[0].spans
    assert spans[0].name.startswith("invoke_agent")
    assert {span.trace_id.hex() for span in spans} == {session.replace("-", "")}
    assert not any(kv.key == "gen_ai.input.messages" for s in spans for kv in s.attributes)
    every = chronicle("export", "--otlp", collector.url, "--all", env=env)
    assert every.returncode == 0 and "sent 1 sessions" in every.stderr, every.stderr
    since = chronicle("export", "--otlp", collector.url, "--since", "2000-01-01", env=env)
    assert since.returncode == 0 and "sent 1 sessions" in since.stderr, since.stderr


def test_wrong_arguments_and_a_collector_that_is_down_are_one_line(env: dict[str, str]) -> None:
    session = demo_session(env)
    for args, status, says in (
        (["--otlp", "http://127.0.0.1:9"], 2, "name the SESSIONs, or give --all"),
        (["--otlp", "127.0.0.1:4318", session], 2, "is not an http(s) URL"),
        (["--otlp", "http://127.0.0.1:9", session, "--view", "llm_calls"], 2, "--otlp sends"),
        ([session, "--content"], 2, "go with --otlp URL"),
        (["--otlp", "http://127.0.0.1:9", session], 1, "cannot reach the OTLP collector"),
    ):
        done = chronicle("export", *args, env=env, timeout=120)
        assert done.returncode == status, (args, done.stderr)
        assert says in done.stderr and "Traceback" not in done.stderr, done.stderr
