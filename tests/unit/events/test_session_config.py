"""``session.created``'s typed ``config`` (app.events.session_config) keeps recorded payloads.

``data/recorded_session_created.json`` holds the ``session.created`` payloads the producers
wrote while ``config`` was a ``dict[str, Any]`` (a native session by ``chronicle run`` and by
the API, an evaluation trial by the CLI and by the API, a replay, a replay that forks on a
divergence, a fork, an external agent's session by ``chronicle record``, by the gateway, by
``chronicle record --replay`` and by an evaluated external agent, imported OpenHands and
SWE-agent recordings, the platform's audit log, the demo and an empty one), with the hash
each had as the first event of a session. Each must read back as the typed event and dump to
the same payload, the same canonical bytes and the same hash, so ``verify`` and a copy (a
fork's, a replay's) of a recorded session are unchanged.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.events import SessionCreated, event_from_stored
from app.events.canonical import canonical_json, chain_hash, hashed_document
from app.events.session_config import EvaluationTrial, ReplayOrigin, SessionConfig, json_path
from app.events.stored_form import restore

RECORDED = json.loads(
    (Path(__file__).parent / "data" / "recorded_session_created.json").read_text()
)
EVENTS: list[dict[str, Any]] = RECORDED["events"]


def _typed(recorded: dict[str, Any]) -> SessionCreated:
    event = event_from_stored(
        kind="session.created",
        source=recorded["source"],
        cause=None,
        event_id=recorded["event_id"],
        payload=recorded["payload"],
        schema_version=recorded["schema_version"],
    )
    assert isinstance(event, SessionCreated)
    return event


@pytest.mark.parametrize("recorded", EVENTS, ids=[e["name"] for e in EVENTS])
def test_a_recorded_payload_reads_back_and_dumps_byte_for_byte(recorded: dict[str, Any]) -> None:
    event = _typed(recorded)
    payload = event.payload()
    assert payload == recorded["payload"]
    assert canonical_json(payload) == canonical_json(recorded["payload"])
    document = hashed_document(
        session_id=RECORDED["session_id"],
        seq=1,
        event_id=str(event.event_id),
        kind=event.kind,
        source=event.source,
        cause=event.cause,
        payload=payload,
        schema_version=event.schema_version,
        created_at=datetime.fromisoformat(RECORDED["created_at"]),
    )
    assert chain_hash(b"", document).hex() == recorded["hash"]


@pytest.mark.parametrize("recorded", EVENTS, ids=[e["name"] for e in EVENTS])
def test_a_recorded_config_round_trips_through_its_stored_form(recorded: dict[str, Any]) -> None:
    config = SessionConfig.of_payload(recorded["payload"])
    assert config.stored() == recorded["payload"].get("config", {})
    assert SessionConfig.model_validate(config.stored()) == config


def _config(name: str) -> SessionConfig:
    return _typed(next(e for e in EVENTS if e["name"] == name)).config


def test_the_recorded_parts_read_typed() -> None:
    trial = _config("eval_trial_api").evaluation
    assert trial is not None
    assert (trial.run, trial.epoch, trial.attempt, trial.resume) == ("nightly", 2, 1, 0)
    assert trial.task is not None and trial.task["id"] == "fix-add"
    assert trial.request is not None and trial.request["name"] == "nightly"
    native = _config("native_cli")
    assert native.evaluation is None and native.replay is None
    assert native.llm is not None and native.llm.retries == 5
    assert native.max_cost_usd == 1.5 and native.tools is not None
    replay = _config("replay_fork_on_divergence").replay
    assert replay == ReplayOrigin(mode="positional", on_divergence="fork")
    external = _config("external_replay")
    assert external.replay is not None and external.replay.on_divergence == "live"
    assert external.command == ["python", "agent.py"] and external.agent == "external"
    assert _config("imported_swe_agent").imported is not None
    assert _config("platform_log").platform_log is True


def test_an_unknown_key_is_kept_and_a_left_out_one_stays_out() -> None:
    stored = {"agent": "codeact", "image": None, "added_later": {"x": [1, 2.5]}}
    config = SessionConfig.model_validate(stored)
    assert config.stored() == stored
    assert SessionCreated(config=stored).payload()["config"] == stored


def test_a_value_is_never_coerced() -> None:
    # lax validation would turn these into True, 7 and "1": another payload, another hash
    for stored in ({"stuck_detection": 1}, {"max_iterations": "7"}, {"agent": 1}):
        with pytest.raises(ValidationError):
            SessionConfig.model_validate(stored)
    assert type(SessionConfig.model_validate({"max_cost_usd": 2}).max_cost_usd) is int


def test_a_part_built_nested_is_stored_flat() -> None:
    config = SessionConfig(agent="codeact", evaluation=EvaluationTrial(run="r", epoch=1))
    assert config.stored() == {"agent": "codeact", "evaluation_run": "r", "evaluation_epoch": 1}
    assert config.with_keys(on_divergence="fork").replay == ReplayOrigin(on_divergence="fork")
    with pytest.raises(ValidationError, match="both nested"):
        SessionConfig.model_validate({"evaluation": {"run": "a"}, "evaluation_run": "b"})


def test_a_surrogate_key_inside_an_unknown_keys_value_is_kept() -> None:
    stored = {"agent": "codeact", "added": {"k\ud800": [{"\udc80": None}]}}
    payload = SessionCreated(config=stored).payload()
    assert payload["config"] == stored
    assert restore(json.loads(canonical_json(payload)), {})["config"] == stored


def test_json_paths_are_rendered_from_the_fields() -> None:
    assert json_path("evaluation", "task", "id") == "c.payload->'config'->'evaluation_task'->>'id'"
    assert json_path("evaluation", "request", text=False) == (
        "c.payload->'config'->'evaluation_request'"
    )
    assert json_path("workspace", alias="s") == "s.payload->'config'->>'workspace'"
    for wrong in (("evaluation",), ("evaluation", "nope"), ("nope",)):
        with pytest.raises(KeyError):
            json_path(*wrong)
