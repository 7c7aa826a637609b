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
