"""A replay's overrides on top of the ones a fork recorded: set ones win, model params merge."""

from __future__ import annotations

from app.replay import AgentConfig


def test_overrides_go_on_top_of_the_recorded_ones() -> None:
    recorded = AgentConfig(
        system_prompt="recorded",
        tools=["finish"],
        max_iterations=3,
        model_params={"temperature": 0.5},
    ).model_dump(mode="json")
    merged = AgentConfig(max_iterations=9, model_params={"max_tokens": 100}).over(recorded)
    assert merged.system_prompt == "recorded" and merged.tools == ["finish"]
    assert merged.max_iterations == 9
    assert merged.model_params == {"temperature": 0.5, "max_tokens": 100}


def test_nothing_recorded_keeps_the_overrides() -> None:
    config = AgentConfig(system_prompt="new")
    assert config.over(None) is config and config.over({}) is config


def test_an_override_set_to_the_default_still_wins() -> None:
    # `chronicle replay --agent codeact` of a session run with `--agent shell-only`: the
    # default name given on purpose must not be mistaken for "not given" (it was, when the
    # overrides left out what equalled a default).
    recorded = AgentConfig(agent="shell-only", stuck_detection=False).model_dump(mode="json")
    assert AgentConfig(agent="codeact").over(recorded).agent == "codeact"
    assert AgentConfig().over(recorded).agent == "shell-only"
    assert AgentConfig(max_iterations=3).over(recorded).stuck_detection is False
