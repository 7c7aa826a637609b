"""Recordings of other agents for the import tests (``chronicle import --from``): small ones
written here, and real ones kept in foreign/ (``real_recording``).

Each follows its agent's real serialization (app/interchange/importers/openhands.py and
swe_agent.py name every field read) and holds the odd things real files hold: string
booleans, a missing ``source`` and ``id``, NUL and a lone surrogate in an output, a huge
output, an action type no importer knows, an agent state change and a condensation
(OpenHands), a submit and an empty action (SWE-agent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Real files of the agents themselves, trimmed (foreign/README.md says where each is from).
REAL_RECORDINGS = Path(__file__).parent / "foreign"
#: OpenHands' resolver output before 0.20: flat events, per-call ``metrics.costs``.
OPENHANDS_RESOLVER_OUTPUT = "openhands_resolver_output.jsonl"
#: An OpenHands evaluation output whose latencies are only in its ``metrics``.
OPENHANDS_EVALUATION_OUTPUT = "openhands_multi_swe_bench_output.jsonl"
#: A SWE-agent CTF trajectory that ends with ``submit 'FLAG'``; its flag.
SWE_AGENT_CTF = "BabyEncryption.traj"
CTF_FLAG = "HTB{l00k_47_y0u_r3v3rs1ng_3qu4710n5_c0ngr475}"


def real_recording(name: str) -> bytes:
    """A real recording's bytes, as its agent wrote them (see ``REAL_RECORDINGS``)."""
    return (REAL_RECORDINGS / name).read_bytes()


#: What a command printed: NUL and a lone surrogate, which PostgreSQL text cannot hold.
ODD_OUTPUT = "def add(a, b):\x00\n    return a - b  # \ud800\n"
HUGE_OUTPUT = "x" * 150_000 + "\nend\n"
BASH_TOOL = {
    "type": "function",
    "function": {"name": "execute_bash", "parameters": {"type": "object", "properties": {}}},
}


def _response(
    response_id: str, content: str, calls: list[tuple[str, str, dict[str, Any]]]
) -> dict[str, Any]:
    """A litellm ``ModelResponse`` as OpenHands dumps it into ``tool_call_metadata``."""
    return {
        "id": response_id,
        "created": 1738046713,
        "model": "gpt-4o-2024-08-06",
        "object": "chat.completion",
        "system_fingerprint": None,
        "choices": [
            {
                "finish_reason": "tool_calls",
                "index": 0,
                "message": {
                    "content": content,
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 1,
                            "function": {"arguments": json.dumps(arguments), "name": name},
                            "id": call_id,
                            "type": "function",
                        }
                        for call_id, name, arguments in calls
                    ],
                },
            }
        ],
        "usage": {
            "completion_tokens": 20,
            "prompt_tokens": 100,
            "total_tokens": 120,
            "completion_tokens_details": None,
            "prompt_tokens_details": {"audio_tokens": None, "cached_tokens": 40},
        },
    }


def _metadata(function: str, call_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "function_name": function,
        "tool_call_id": call_id,
        "model_response": response,
        "total_calls_in_response": len(response["choices"][0]["message"]["tool_calls"]),
    }


#: Seconds each response took, as OpenHands' ``Metrics`` lists them (``response_latencies``
#: grows over the session); the later responses of the trajectory have none recorded.
LATENCIES = [("resp-1", 1.5), ("resp-2", 2.25)]


def _metrics(accumulated: float, responses: int = 0) -> dict[str, Any]:
    return {
        "accumulated_cost": accumulated,
        "max_budget_per_task": None,
        "accumulated_token_usage": {"model": "gpt-4o-2024-08-06", "prompt_tokens": 100},
        "costs": [],
        "response_latencies": [
            {"model": "gpt-4o-2024-08-06", "latency": latency, "response_id": response_id}
            for response_id, latency in LATENCIES[:responses]
        ],
        "token_usages": [],
    }


def openhands_events() -> list[dict[str, Any]]:
    """An OpenHands trajectory (``save_trajectory_path``): a fix in calc.py, then a finish.

    Indexes: 0 system prompt, 1 ``loading`` before the task, 2 the task, 3 ``running``,
    4-5 a command (string boolean, hard timeout; NUL and surrogate in its output), 6-9 one
    response with two tool calls (an edit, then a command with a huge output still running),
    10-11 a browser action and its page (imported), 12 a condensation (imported, no model
    call), 13 an action type no importer knows (no ``id``, no ``source``), 14 an error no
    action caused, 15 a finish, 16 ``finished``.
    """
    first = _response(
        "resp-1",
        "Let me look at calc.py.",
        [("call_1", "execute_bash", {"command": "cat calc.py", "is_input": "false"})],
    )
    second = _response(
        "resp-2",
        "The sign is wrong; fixing it and running the tests.",
        [
            (
                "call_2",
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/calc.py",
                    "old_str": "a - b",
                    "new_str": "a + b",
                    "security_risk": "LOW",
                },
            ),
            ("call_3", "execute_bash", {"command": "python -m pytest -q", "timeout": "30"}),
        ],
    )
    browse = _response(
        "resp-3", "Checking the docs.", [("call_4", "browser", {"code": "goto('x')"})]
    )
    mystery = _response("resp-4", "", [("call_5", "teleport", {"to": "mars"})])
    finish = _response("resp-5", "Done.", [("call_6", "finish", {"message": "Fixed add()."})])
    return [
        {
            "id": 0,
            "timestamp": "2025-01-27T22:44:56.900854",
            "source": "agent",
            "message": "You are OpenHands agent...",
            "action": "system",
            "args": {
                "content": "You are OpenHands agent, a helpful AI assistant.",
                "tools": [BASH_TOOL],
                "openhands_version": "0.39.0",
                "agent_class": "CodeActAgent",
            },
        },
        {
            "id": 1,
            "source": "environment",
            "message": "",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "loading", "reason": ""},
        },
        {
            "id": 2,
            "source": "user",
            "message": "Fix add() in calc.py",
            "action": "message",
            "args": {
                "content": "Fix add() in calc.py",
                "image_urls": None,
                "wait_for_response": False,
            },
        },
        {
            "id": 3,
            "source": "environment",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "running", "reason": ""},
        },
        {
            "id": 4,
            "source": "agent",
            "message": "Running command: cat calc.py",
            "action": "run",
            "tool_call_metadata": _metadata("execute_bash", "call_1", first),
            "llm_metrics": _metrics(0.01, responses=1),
            "args": {
                "command": "cat calc.py",
                "is_input": "false",
                "thought": "Let me look at calc.py.",
                "blocking": False,
                "hidden": False,
                "confirmation_state": "confirmed",
            },
            "timeout": 120,
        },
        {
            "id": 5,
            "source": "agent",
            "cause": 4,
            "observation": "run",
            "content": ODD_OUTPUT,
            "extras": {"command": "cat calc.py", "metadata": {"exit_code": 0, "pid": -1}},
            "success": True,
        },
        {
            "id": 6,
            "source": "agent",
            "action": "edit",
            "tool_call_metadata": _metadata("str_replace_editor", "call_2", second),
            "llm_metrics": _metrics(0.025, responses=2),
            "args": {
                "path": "/workspace/calc.py",
                "command": "str_replace",
                "old_str": "a - b",
                "new_str": "a + b",
                "thought": "The sign is wrong; fixing it and running the tests.",
                "impl_source": "oh_aci",
            },
        },
        {
            "id": 7,
            "source": "agent",
            "cause": 6,
            "observation": "edit",
            "content": "The file /workspace/calc.py has been edited.",
            "extras": {"path": "/workspace/calc.py", "diff": "-a - b\n+a + b", "prev_exist": True},
        },
        {
            "id": 8,
            "action": "run",
            "tool_call_metadata": _metadata("execute_bash", "call_3", second),
            "llm_metrics": _metrics(0.025, responses=2),
            "args": {"command": "python -m pytest -q", "is_input": False},
            "timeout": "30",
        },
        {
            "id": 9,
            "source": "agent",
            "cause": 8,
            "observation": "run",
            "content": HUGE_OUTPUT,
            "extras": {"command": "python -m pytest -q", "metadata": {"exit_code": -1}},
        },
        {
            "id": 10,
            "source": "agent",
            "action": "browse_interactive",
            "tool_call_metadata": _metadata("browser", "call_4", browse),
            "llm_metrics": _metrics(0.03, responses=2),
            "args": {"browser_actions": "goto('x')", "thought": "Checking the docs."},
        },
        {
            "id": 11,
            "source": "environment",
            "cause": 10,
            "observation": "browse",
            "content": "<html>docs</html>",
            "extras": {"url": "http://docs.invalid/", "screenshot": "", "error": False},
        },
        {
            "id": 12,
            "source": "agent",
            "action": "condensation",
            "args": {
                "forgotten_events_start_id": 4,
                "forgotten_events_end_id": 9,
                "summary": "Fixed the sign; tests still running.",
            },
        },
        {
            "action": "teleport",
            "tool_call_metadata": _metadata("teleport", "call_5", mystery),
            "args": {"to": "mars"},
        },
        {
            "id": 14,
            "source": "environment",
            "observation": "error",
            "content": "Agent got stuck in a loop",
            "extras": {"error_id": "AGENT_STUCK"},
        },
        {
            "id": 15,
            "source": "agent",
            "action": "finish",
            "tool_call_metadata": _metadata("finish", "call_6", finish),
            "llm_metrics": _metrics(0.04, responses=2),
            "args": {"final_thought": "Fixed add().", "outputs": {}, "thought": "Done."},
        },
        {
            "id": 16,
            "source": "environment",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "finished", "reason": ""},
        },
    ]


def openhands_chat() -> list[dict[str, Any]]:
    """A short OpenHands conversation without tool calls (OpenHands' own
    tests/runtime/trajs/basic_interactions.json in shape): question, answer, a second
    question, a finish. No state changes: the importer infers them."""
    return [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "what's 1+1?"}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "1 + 1 = 2."}},
        {"id": 2, "source": "user", "action": "message", "args": {"content": "Finish please"}},
        {"id": 3, "source": "agent", "action": "finish", "args": {"outputs": {}, "thought": ""}},
    ]


def openhands_output_line(instance_id: str, events: list[Any]) -> dict[str, Any]:
    """One line of an OpenHands evaluation's output.jsonl (``EvalOutput``)."""
    return {
        "instance_id": instance_id,
        "instruction": "Fix add() in calc.py",
        "test_result": {"git_patch": "diff --git a/calc.py b/calc.py"},
        "metadata": {"agent_class": "CodeActAgent", "max_iterations": 30},
        "history": events,
        "metrics": {"accumulated_cost": 0.04},
        "error": None,
    }


def _history_action(action: str, tool_calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "...",
        "thought": "...",
        "action": action,
        "agent": "main",
        "tool_calls": tool_calls,
        "message_type": "action",
    }


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


EDIT_ACTION = "str_replace_editor str_replace /testbed/calc.py --old_str 'a - b' --new_str 'a + b'"
VIEW_ACTION = "str_replace_editor view /testbed/calc.py --view_range '[1, 5]'"
HEREDOC_ACTION = "cat <<'EOF' > check.py\nprint(1)\nEOF"


def swe_agent_trajectory(*, exit_status: str | None = "submitted") -> dict[str, Any]:
    """A SWE-agent ``.traj``: steps 0 a command (its output with NUL and a surrogate), 1 an
    edit by tool call, 2 a view written as text, 3 an empty action (unparsable output), 4 a
    heredoc command, 5 an ``exit_forfeit``-style command no Chronicle tool expresses, 6 a
    submit; then, for ``submitted (exit_cost)``, SWE-agent's own autosubmission step."""
    system = {
        "role": "system",
        "content": "SETTING: You are an autonomous programmer.",
        "agent": "main",
        "message_type": "system_prompt",
    }
    task = {
        "role": "user",
        "content": "<uploaded_files>/testbed</uploaded_files>\nFix add() in calc.py",
        "agent": "main",
        "message_type": "observation",
    }
    demo = {
        "role": "assistant",
        "content": "demo",
        "agent": "main",
        "message_type": "action",
        "action": "ls",
        "is_demo": True,
    }
    tool_answer = {
        "role": "tool",
        "content": "OBSERVATION:\n...",
        "agent": "main",
        "message_type": "observation",
        "tool_call_ids": ["call_a"],
    }
    steps: list[dict[str, Any]] = []

    def step(action: str, response: str, observation: str) -> None:
        query = [system, task, *([tool_answer] if steps else [])]
        steps.append(
            {
                "action": action,
                "observation": observation,
                "response": response,
                "thought": response.split("\n")[0],
                "execution_time": 0.12,
                "state": {"working_dir": "/testbed"},
                "query": query,
                "extra_info": {},
            }
        )

    step("cat calc.py\n", "Let me look.\n\n```\ncat calc.py\n```", ODD_OUTPUT)
    step(EDIT_ACTION, "Fix the sign.", "The file /testbed/calc.py has been edited.")
    step(VIEW_ACTION, "Check it.\n\n```\n" + VIEW_ACTION + "\n```", "     1\tdef add(a, b):")
    step("", "I think this is right but I forgot the command format.", "")
    step(HEREDOC_ACTION, "Write a check.", "")
    step("exit_forfeit", "I give up on the extra check.", "Exiting.")
    step(
        "submit",
        "Submitting.\n\n```\nsubmit\n```",
        "diff --git a/calc.py b/calc.py\n-a - b\n+a + b\n",
    )
    if exit_status and "exit_cost" in exit_status:
        steps.append(
            {
                "action": "",
                "observation": "Exited (autosubmitted)",
                "response": "Exit due to cost limit",
                "thought": "Exit due to cost limit",
                "execution_time": 0.0,
                "state": {},
                "query": [{}],
                "extra_info": {},
            }
        )
    history = [
        system,
        task,
        demo,
        _history_action("cat calc.py\n", [_call("call_a", "bash", {"command": "cat calc.py\n"})]),
        tool_answer,
        _history_action(
            EDIT_ACTION,
            [
                _call(
                    "call_b",
                    "str_replace_editor",
                    {
                        "command": "str_replace",
                        "path": "/testbed/calc.py",
                        "old_str": "a - b",
                        "new_str": "a + b",
                    },
                )
            ],
        ),
        _history_action(VIEW_ACTION, None),
        _history_action("submit", [_call("call_z", "submit", {})]),
    ]
    info: dict[str, Any] = {
        "submission": "diff --git a/calc.py b/calc.py\n-a - b\n+a + b\n",
        "model_stats": {
            "instance_cost": 0.42,
            "tokens_sent": 1000,
            "tokens_received": 100,
            "api_calls": 7,
        },
        "swe_agent_version": "1.1.0",
    }
    if exit_status is not None:
        info["exit_status"] = exit_status
    return {
        "environment": "swe_main",
        "replay_config": json.dumps({"agent": {"model": {"name": "claude-sonnet-4-20250514"}}}),
        "trajectory": steps,
        "history": history,
        "info": info,
    }


def as_bytes(document: Any) -> bytes:
    """A document as its agent writes it (Python's json: lone surrogates escaped)."""
    return json.dumps(document, indent=2).encode()


def as_json_lines(documents: list[Any]) -> bytes:
    return b"".join(json.dumps(document).encode() + b"\n" for document in documents)
