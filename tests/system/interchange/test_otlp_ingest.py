"""A real instrumented application sends its traces to ``chronicle serve``'s ``POST /v1/traces``:
a small agent calls the scripted model with the official ``openai`` SDK, instrumented by
OpenTelemetry's own GenAI instrumentation (``opentelemetry-instrumentation-openai-v2``, content
capture on; and, as a third-party one, OpenLLMetry's ``opentelemetry-instrumentation-openai``),
runs the tool the model asked for in a span of its own, and exports with
OpenTelemetry's OTLP/HTTP exporter (protobuf; and the OTLP JSON exporter) authenticated by a
Chronicle token. The session that results matches what the agent did, call for call: the
messages the model got, what it answered, the usage, the tool and its result, the agent's end.
Wrong tokens, content types and bodies are refused as OTLP/HTTP expects."""

from __future__ import annotations

import gzip
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.postgres import PgServer, database_from_template
from tests.support.venvs import installed_venv

#: The instrumented application: its tracer provider exports to Chronicle (the endpoint and
#: the token come from OpenTelemetry's own environment variables), the openai SDK is
#: instrumented, the agent and its tool are spans of its own with the GenAI attributes.
AGENT = r"""
import json, os, sys
import openai
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
if sys.argv[3] == "traceloop":  # OpenLLMetry's instrumentation of the openai SDK
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
else:  # OpenTelemetry's own
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

if sys.argv[1] == "json":
    from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
else:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
OpenAIInstrumentor().instrument()
tracer = trace.get_tracer("weather-agent")
client = openai.OpenAI()
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
messages = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"}]
conversation = sys.argv[2]
done = {"calls": []}
with tracer.start_as_current_span("invoke_agent weather", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
        "gen_ai.provider.name": "openai", "gen_ai.conversation.id": conversation}):
    first = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    done["calls"].append({"id": first.id, "tool_call_id": call.id})
    with tracer.start_as_current_span("execute_tool get_weather", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.call.arguments": call.function.arguments}) as span:
        result = "rainy, 14 C"
        span.set_attribute("gen_ai.tool.call.result", result)
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": result}]
    second = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    done["calls"].append({"id": second.id, "content": second.choices[0].message.content})
provider.shutdown()
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def server(
    pg_server: PgServer, pg_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("otlp-in")
    for admin_url in database_from_template(
        pg_server.admin, pg_template, f"otlp_{uuid.uuid4().hex[:16]}"
    ):
        env = database_environment(
            pg_server, admin_url, root, server_otlp_quiet_seconds="1",
            gateway_model_map=json.dumps({"gpt-*": "openai/scripted"}),
        )  # fmt: skip
        started = start_server(env)
        try:
            yield started
        finally:
            started.stop()


@pytest.fixture(scope="module")
def token(server: ServerProcess) -> str:
    return server.token("tracer")


def run_agent(
    venv: str, encoding: str, conversation: str, server: ServerProcess, token: str,
    upstream: FakeLlmServer, tmp_path: Path,
) -> dict[str, Any]:  # fmt: skip
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENAI_BASE_URL": upstream.base_url,
        "OPENAI_API_KEY": "sk-upstream",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{server.url}/v1/traces",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{token}",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    }
    python = installed_venv(venv) / "bin" / "python"
    instrumentation = "traceloop" if venv == "otel-traceloop" else "openai-v2"
    done = subprocess.run(
        [str(python), str(script), encoding, conversation, instrumentation],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def session_of(
    server: ServerProcess, token: str, conversation: str, *, settled: bool = True
) -> dict[str, Any]:
    """The session the conversation became, once its trace has settled (its end recorded)."""
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = httpx.get(f"{server.url}/api/sessions", headers=headers).json()["sessions"]
        for summary in listed:
            if conversation in (summary.get("title") or ""):
                events = httpx.get(
                    f"{server.url}/api/sessions/{summary['id']}/events", headers=headers
                ).json()["events"]
                if events and (not settled or events[-1]["kind"] == "agent.state"):
                    return {"id": summary["id"], "events": events}
        time.sleep(0.3)
    raise AssertionError(f"no settled session for {conversation}: {server.rest_of_output()}")


@pytest.mark.parametrize(
    ("venv", "encoding"),
    [("otel-openai", "protobuf"), ("otel-json", "json"), ("otel-traceloop", "protobuf")],
)
def test_an_instrumented_agents_trace_becomes_its_session_call_for_call(
    venv: str, encoding: str, server: ServerProcess, token: str, upstream: FakeLlmServer,
    tmp_path: Path,
) -> None:  # fmt: skip
    upstream.requests.clear()
    upstream.script(
        Reply(tool_calls=[tool_call("get_weather", city="Paris")], prompt_tokens=31),
        Reply(content="Rainy, 14 C.", prompt_tokens=52, completion_tokens=6),
    )
    conversation = f"weather-{encoding}-{uuid.uuid4().hex[:8]}"
    done = run_agent(venv, encoding, conversation, server, token, upstream, tmp_path)
    session = session_of(server, token, conversation)
    events = session["events"]
    assert [event["kind"] for event in events] == [
        "session.created", "llm.call", "imported", "imported.output", "llm.call",
        "otel.span", "agent.state",
    ]  # fmt: skip
    created, first, action, output, second, agent, end = events
    assert created["payload"]["config"]["agent"] == "external"
    assert created["payload"]["config"]["client"] == "weather-agent"

    # call for call: what the model was sent, as it got it, and what it answered
    headers = {"Authorization": f"Bearer {token}"}
    for event, request, answer in zip(
        (first, second), upstream.requests[-2:], done["calls"], strict=True
    ):
        exact = httpx.get(
            f"{server.url}/api/sessions/{session['id']}/model-calls/{event['seq']}",
            headers=headers,
        ).json()
        sent = [{"role": m["role"], "content": m.get("content")} for m in request["messages"]]
        got = [{"role": m["role"], "content": m.get("content")} for m in exact["messages"]]
        assert got == sent
        payload = event["payload"]
        assert payload["model"] == "gpt-4o"
        assert payload["response"]["id"] == answer["id"]
        assert payload["imported"]["format"] == "otlp"
    assert first["payload"]["response"]["tool_calls"][0]["id"] == done["calls"][0]["tool_call_id"]
    assert first["payload"]["response"]["tool_calls"][0]["name"] == "get_weather"
    assert first["payload"]["usage"]["prompt_tokens"] == 31
    assert second["payload"]["response"]["content"] == done["calls"][1]["content"]
    assert second["payload"]["usage"]["completion_tokens"] == 6
    assert second["payload"]["latency_ms"] > 0
    tool_message = exact["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == done["calls"][0]["tool_call_id"]

    assert action["payload"]["tool"] == "get_weather"
    assert action["payload"]["arguments"] == {"city": "Paris"}
    assert action["cause"] == first["seq"]
    assert output["payload"]["content"] == "rainy, 14 C" and output["cause"] == action["seq"]
    assert agent["payload"]["name"] == "invoke_agent weather"
    assert end["payload"]["state"] == "finished"

    verified = httpx.get(f"{server.url}/api/sessions/{session['id']}/verify", headers=headers)
    assert verified.json()["ok"] is True


def test_a_received_session_is_scored_and_replayed_like_a_recorded_one(
    server: ServerProcess, token: str, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    upstream.script(
        Reply(tool_calls=[tool_call("get_weather", city="Paris")]), Reply(content="Rainy.")
    )
    conversation = f"weather-replay-{uuid.uuid4().hex[:8]}"
    run_agent("otel-openai", "protobuf", conversation, server, token, upstream, tmp_path)
    session = session_of(server, token, conversation)["id"]

    scored = chronicle("eval", "score", session, env=server.env)
    assert scored.returncode == 0, scored.stderr
    kinds = [e["kind"] for e in session_of(server, token, conversation, settled=False)["events"]]
    assert "eval.score" in kinds

    # the same agent, its model calls answered from the received session: no model is asked
    asked = len(upstream.requests)
    script = tmp_path / "agent.py"
    python = installed_venv("otel-openai") / "bin" / "python"
    replayed = chronicle(
        "record", "--user", "tracer", "--url", server.url, "--workspace", str(tmp_path),
        "--replay", session, "--mode", "positional",
        "--", str(python), str(script), "protobuf", f"{conversation}-again", "openai-v2",
        env={
            **server.env,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{server.url}/v1/traces",
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{token}",
        },
        timeout=120,
    )  # fmt: skip
    assert replayed.returncode in (0, 3), replayed.stderr
    assert len(upstream.requests) == asked
    assert json.loads(replayed.stdout.splitlines()[-1])["calls"][1]["content"] == "Rainy."
    # served in order although the requests differ from what the spans recorded: the
    # instrumentation records no tool definitions, and the gateway asks the mapped model
    assert "2 served, 0 made" in replayed.stderr, replayed.stderr
    assert "prompt message" not in replayed.stderr  # the messages are the recorded ones


def test_exports_are_refused_as_otlp_expects(server: ServerProcess, token: str) -> None:
    url = f"{server.url}/v1/traces"
    bearer = {"Authorization": f"Bearer {token}"}
    protobuf = {**bearer, "Content-Type": "application/x-protobuf"}
    assert (
        httpx.post(url, content=b"", headers={"Content-Type": "application/json"}).status_code
        == 401
    )
    wrong_type = httpx.post(url, content=b"{}", headers={**bearer, "Content-Type": "text/plain"})
    assert wrong_type.status_code == 415 and "application/x-protobuf" in wrong_type.text
    garbage = httpx.post(url, content=b"\xff\xff\xff", headers=protobuf)
    assert garbage.status_code == 400 and "protobuf" in garbage.text
    json_headers = {**bearer, "Content-Type": "application/json"}
    assert httpx.post(url, content=b"{}", headers=json_headers).json() == {}  # nothing, taken
    empty = httpx.post(url, content=b"", headers=protobuf)
    assert empty.status_code == 200 and empty.content == b""
    # a gzip bomb stays small: 80 MB of zeros unzips past the 64 MiB limit and is refused
    bomb = gzip.compress(b"\0" * (80 * 1024 * 1024))
    refused = httpx.post(url, content=bomb, headers={**protobuf, "Content-Encoding": "gzip"})
    assert refused.status_code == 413 and "server_otlp_max_body_bytes" in refused.text
    assert httpx.get(f"{server.url}/api/me", headers=bearer).status_code == 200  # still up
