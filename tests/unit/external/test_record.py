"""``chronicle record``'s pure parts: the command's environment, exit codes as a shell reports
them, and the ``agent.state`` events that start and end a recorded run."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from app.events import AgentState
from app.external.agent_command import CommandNotFound, RecordError, exit_code_of, find_command
from app.external.record import ending, gateway_environment, session_config, starting
from app.external.session_scope import scope_label, scoped_session

SESSION = uuid.UUID("00000000-0000-4000-8000-000000000024")


def test_every_sdk_variable_points_at_the_gateway_with_the_token() -> None:
    env = gateway_environment(
        {"PATH": "/bin", "OPENAI_API_KEY": "sk-provider", "ANTHROPIC_AUTH_TOKEN": "sk-ant"},
        "http://127.0.0.1:8000/",
        "chr_token",
        SESSION,
    )
    assert env["PATH"] == "/bin"
    assert env["OPENAI_BASE_URL"] == env["OPENAI_API_BASE"] == "http://127.0.0.1:8000/v1"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8000"  # the SDK adds /v1/messages
    # no provider key of the user's shell reaches the gateway: the agent has the token only
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == "chr_token"
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert env["CHRONICLE_SESSION"] == str(SESSION)


@pytest.mark.parametrize(
    ("returncode", "code"), [(0, 0), (3, 3), (255, 255), (-signal.SIGINT, 130), (-9, 137)]
)
def test_exit_codes_are_a_shells(returncode: int, code: int) -> None:
    assert exit_code_of(returncode) == code


def test_a_run_ends_finished_on_exit_0_with_code_and_time() -> None:
    end = ending(0, 1.23456)
    assert (end.state, end.exit_code, end.wall_seconds) == ("finished", 0, 1.235)
    assert end.reason == "the command exited with code 0 after 1.235 s"
    assert end.payload() == {
        "state": "finished",
        "reason": end.reason,
        "exit_code": 0,
        "wall_seconds": 1.235,
    }


def test_a_failing_command_is_an_error_and_a_signal_a_stop() -> None:
    failed = ending(3, 0.5)
    assert (failed.state, failed.exit_code) == ("error", 3)
    assert "code 3" in failed.reason
    stopped = ending(-signal.SIGINT, 2)
    assert (stopped.state, stopped.exit_code) == ("stopped", 130)
    assert "SIGINT" in stopped.reason


def test_other_agent_states_keep_their_payload() -> None:
    """The new fields are left out when None: every other agent.state hashes as before."""
    assert AgentState(state="running").payload() == {"state": "running", "reason": ""}
    assert "exit_code" in ending(0, 1).payload()


def test_the_start_names_the_command_line() -> None:
    start = starting(["python", "agent.py", "two words"])
    assert (start.state, start.source) == ("running", "agent")
    assert start.reason == "running python agent.py 'two words'"
    config = session_config(["aider", "--yes"], Path("/w"))
    assert config["command"] == ["aider", "--yes"] and config["workspace"] == "/w"


def test_no_command_is_a_sentence() -> None:
    with pytest.raises(RecordError, match="give the command"):
        find_command([], Path("/"), {"PATH": ""})
    with pytest.raises(CommandNotFound, match="not found on PATH") as found:
        find_command(["no-such-agent-24"], Path("/"), {"PATH": ""})
    assert found.value.exit_code == 127


def test_a_token_label_scopes_it_to_one_session() -> None:
    assert scoped_session(scope_label(SESSION)) == SESSION
    assert scoped_session("") is None
    assert scoped_session("nightly runs") is None
    assert scoped_session("session:not-a-uuid") is None
