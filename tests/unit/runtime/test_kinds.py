"""Which kinds of sandbox exist is said once (``app.runtime.kinds``): the settings, the API's
requests, the CLI's ``--runtime`` choices and the contract suite all take the registry's names,
and a name it lacks is refused with the message a fixed list of names gave."""

from __future__ import annotations

import argparse

import pytest
from pydantic import BaseModel, ValidationError

from app.cli import build_parser
from app.config import Settings
from app.evaluation.api_runs import EvaluationRequest
from app.runtime.kinds import (
    KINDS,
    RuntimeKind,
    UnknownRuntimeKind,
    named,
    sandbox_kind,
    workspace_inside,
)
from app.server.creation import NewSession
from app.server.replay_routes import NewFork


def _runtime_choices(parser: argparse.ArgumentParser, command: list[str]) -> list[str]:
    for name in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    option = next(a for a in parser._actions if "--runtime" in a.option_strings)
    return list(option.choices or [])


def test_every_place_that_names_runtimes_takes_the_registrys_names() -> None:
    names = list(KINDS)
    assert {"local", "docker"} <= set(names)
    parser = build_parser()
    for command in (["run"], ["resume"], ["fork"], ["eval", "run"]):
        assert _runtime_choices(parser, command) == names, command
    for model in (NewSession, NewFork, EvaluationRequest):
        schema = model.model_json_schema()["properties"]["runtime"]
        assert {"type": "string", "enum": names} in schema["anyOf"], (model, schema)
    sandbox = Settings.model_json_schema()["$defs"]["RuntimeConfig"]  # settings.sandbox.kind
    assert sandbox["properties"]["kind"]["enum"] == names


def test_a_name_no_kind_has_is_refused_as_before() -> None:
    class Request(BaseModel):
        runtime: RuntimeKind

    with pytest.raises(ValidationError) as refused:
        Request(runtime="podman")
    error = refused.value.errors()[0]
    assert error["type"] == "literal_error"
    assert error["msg"] == f"Input should be {named()}"
    assert named(("local", "docker")) == "'local' or 'docker'"  # as a Literal of the two said
    assert named(("a", "b", "c")) == "'a', 'b' or 'c'"
    with pytest.raises(UnknownRuntimeKind, match=f"unknown runtime 'podman'; use {named()}"):
        sandbox_kind("podman")
    assert isinstance(UnknownRuntimeKind("x"), ValueError)


def test_the_workspace_inside_each_kind() -> None:
    assert workspace_inside("local", "/home/me/project") == "/home/me/project"
    assert workspace_inside(None, "/home/me/project") == "/home/me/project"  # the default kind
    assert workspace_inside("docker", "/home/me/project") == "/workspace"
    # sessions recorded elsewhere ran on their workspace as recorded
    assert workspace_inside("imported", "/workspace") == "/workspace"
    assert workspace_inside("host", "/srv/agent") == "/srv/agent"


def test_what_a_session_records_of_its_image() -> None:
    assert sandbox_kind("local").recorded_image("python:3.12-slim-bookworm") is None
    tag = sandbox_kind("docker").recorded_image("python:3.12-slim-bookworm")
    assert tag is not None and tag.startswith("chronicle-sandbox:"), tag
    assert [k.name for k in KINDS.values() if k.reap_forever is not None] == ["docker"]
