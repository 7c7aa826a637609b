"""The gateway's pure parts: which upstream model answers a name, which parameters reach
litellm by name (and which only as the provider's JSON), and OpenAI's request, chunk and
error shapes."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.external.calls import upstream_params
from app.external.errors import GatewayError
from app.external.models import ModelRoutes
from app.external.openai_protocol import chat_request, error_body


def routes(**settings: object) -> ModelRoutes:
    return ModelRoutes.of(Settings(llm_model="openai/team-model", **settings))  # type: ignore[arg-type]


def test_names_are_mapped_most_specific_pattern_first() -> None:
    mapped = routes(
        gateway_model_map={"*": "openai/cheap", "gpt-4*": "openai/team-model", "o3": "openai/o3"}
    )
    assert mapped.upstream("o3") == "openai/o3"
    assert mapped.upstream("gpt-4o") == "openai/team-model"
    assert mapped.upstream("claude-sonnet-4-5") == "openai/cheap"
    assert mapped.listed() == ["o3", "team-model", "openai/team-model"]


def test_allowed_names_pass_as_they_are_and_the_own_model_by_both_names() -> None:
    allowed = routes(gateway_models="anthropic/claude-*, openai/gpt-4o")
    assert allowed.upstream("anthropic/claude-sonnet-4-5") == "anthropic/claude-sonnet-4-5"
    assert allowed.upstream("team-model") == "openai/team-model"
    assert allowed.upstream("openai/team-model") == "openai/team-model"


@pytest.mark.parametrize("name", ["gpt-4o", "Team-model", "x" * 300, "team-model\x00"])
def test_any_other_name_is_a_404_that_says_what_is_allowed(name: str) -> None:
    with pytest.raises(GatewayError) as refused:
        routes().upstream(name)
    assert (refused.value.status, refused.value.code) == (404, "model_not_found")
    assert "team-model" in refused.value.message


@pytest.mark.parametrize("name", [None, "", "  ", 3])
def test_no_model_is_a_400(name: object) -> None:
    with pytest.raises(GatewayError) as refused:
        routes().upstream(name)
    assert refused.value.status == 400


def test_only_openai_parameters_reach_litellm_by_name() -> None:
    sent = upstream_params(
        {"temperature": 0.2, "tool_choice": "auto", "api_base": "http://evil", "top_k": 3}
    )
    assert sent == {
        "temperature": 0.2,
        "tool_choice": "auto",
        "extra_body": {"api_base": "http://evil", "top_k": 3},
    }


def test_a_request_keeps_its_parameters_apart_from_its_messages_and_stream() -> None:
    request = chat_request(
        {
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": None,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0,
        }
    )
    assert (request.model, request.tools, request.params) == ("gpt-4o", [], {"temperature": 0})
    assert request.stream and request.stream_usage


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"model": "m"},
        {"model": "m", "messages": []},
        {"model": "m", "messages": ["hi"]},
        {"model": "m", "messages": [{}], "tools": {"a": 1}},
        {"model": "m", "messages": [{}], "stream": "yes"},
    ],
)
def test_what_is_not_a_chat_request_is_a_400(body: object) -> None:
    with pytest.raises(GatewayError) as refused:
        chat_request(body)
    assert refused.value.status == 400


def test_errors_have_openais_shape() -> None:
    assert error_body(404, "no such model", "model_not_found") == {
        "error": {
            "message": "no such model",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    assert error_body(401, "no", None)["error"]["type"] == "authentication_error"
    assert error_body(503, "down", None)["error"]["type"] == "server_error"
