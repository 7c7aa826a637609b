"""`chronicle replay SESSION`: re-feed a recorded session into today's agent, without the model.

Exit codes: 0 when the replay matched the recording, 3 when it diverged (or, positional,
asked the model something else somewhere), 2 for options that cannot be used, 1 when the
session cannot be replayed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.cli.log import open_store, positive
from app.cli.session_ids import session_id
from app.config import Settings
from app.errors import ChronicleError

#: The exit code of a replay that diverged.
DIVERGED = 3


def add_parsers(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser(
        "replay",
        help="re-run a recorded session's agent against its recording (no model calls) and "
        "report the first divergence",
    )
    replay.add_argument("session", type=session_id, metavar="SESSION")
    add_agent_options(replay)
    replay.add_argument("--json", action="store_true", help="print the result as JSON")
    replay.add_argument(
        "--on-divergence",
        choices=["stop", "fork"],
        default="stop",
        help="fork: at a divergence, fork the recorded session just before it and continue "
        "live with the model (chronicle fork); stop (default): only report it",
    )
    replay.set_defaults(handler=run)


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The replay mode and the agent overrides (``agent_config_from`` reads them), shared
    by `chronicle replay` and `chronicle eval replay`."""
    parser.add_argument(
        "--mode",
        choices=["strict", "positional"],
        default="strict",
        help="strict: a request unlike the recorded one stops the replay (default); "
        "positional: the recorded reply is served anyway and the difference reported",
    )
    add_override_options(parser)
    parser.add_argument("--max-iterations", type=positive, metavar="N", help="model calls allowed")
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help="replay with another registered agent (codeact, shell-only; a name that is "
        "not registered lists them)",
    )


def add_override_options(parser: argparse.ArgumentParser) -> None:
    """The agent overrides of a replay that `chronicle fork` takes too (it has its own
    ``--max-iterations`` and ``--agent``)."""
    parser.add_argument(
        "--agent-config",
        type=Path,
        metavar="FILE",
        help="a TOML or JSON file of overrides (agent, system_prompt, tools, max_iterations, "
        "model_params, stuck_detection); the options below override it",
    )
    parser.add_argument(
        "--system-prompt", type=Path, metavar="FILE", help="use this system prompt instead"
    )
    parser.add_argument(
        "--tools", metavar="LIST", help="offer only these tools (comma-separated names)"
    )
    parser.add_argument(
        "--model-param",
        action="append",
        default=[],
        metavar="K=V",
        help="set a model parameter (temperature, max_tokens); repeatable",
    )


def overrides_given(args: argparse.Namespace) -> bool:
    """Whether any of ``add_override_options``' options was given."""
    return bool(
        args.agent_config or args.system_prompt is not None or args.tools is not None
    ) or bool(args.model_param)


class OptionError(ChronicleError):
    """An option cannot be used; the message says which and why."""


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OptionError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise OptionError(f"the {what} {path} is not UTF-8 text") from None


def _config_file(path: Path) -> dict[str, Any]:
    text = _read_text(path, "agent configuration")
    try:
        values = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise OptionError(f"the agent configuration {path} is not valid {kind}: {exc}") from None
    if not isinstance(values, dict):
        raise OptionError(f"the agent configuration {path} must be a table of settings")
    return values


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise OptionError(f"--model-param {text!r}: write it as KEY=VALUE, e.g. temperature=0.2")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def agent_config_from(args: argparse.Namespace) -> Any:
    """The ``AgentConfig`` the options describe (file first, then each option)."""
    from app.replay import AgentConfig

    values: dict[str, Any] = _config_file(args.agent_config) if args.agent_config else {}
    if args.system_prompt is not None:
        values["system_prompt"] = _read_text(args.system_prompt, "system prompt")
    if args.tools is not None:
        values["tools"] = [name.strip() for name in args.tools.split(",") if name.strip()]
    if args.max_iterations is not None:
        values["max_iterations"] = args.max_iterations
    if args.model_param:
        values["model_params"] = {
            **values.get("model_params", {}),
            **dict(_param(p) for p in args.model_param),
        }
    if args.agent is not None:
        values["agent"] = args.agent
    try:
        config = AgentConfig.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise OptionError(f"invalid agent configuration ({problems})") from None
    from app.agent.registry import UnknownAgent, agent_class

    try:
        agent_class(config.agent)
    except UnknownAgent as exc:
        raise OptionError(str(exc)) from None
    return config


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.replay import ReplayError, replay
    from app.replay.report import describe

    try:
        config = agent_config_from(args)
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    async with await open_store(settings) as store:
        try:
            result = await replay(store, args.session, config, mode=args.mode)
        except ReplayError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(result.model_dump_json(indent=2) if args.json else describe(result))
        if args.on_divergence == "fork" and result.divergence is not None:
            code = await _fork_at_divergence(
                store, settings, args.session, result.divergence, config
            )
            if code:
                return code
    return 0 if result.matched else DIVERGED


async def _fork_at_divergence(
    store: Any, settings: Settings, source: Any, divergence: Any, agent_config: Any
) -> int:
    """``--on-divergence fork``: fork the recording just before the divergence, run it live
    with the replay's overrides (system prompt, tools, iterations, model parameters)."""
    from app.replay.fork import ForkError, fork_point
    from app.sessions.fork import fork_session
    from app.sessions.runner import SessionError, SessionOptions

    try:
        at = fork_point(await store.read(source), divergence)
        fork, outcome, divergences = await fork_session(
            store, settings, source, at, SessionOptions(), agent_config=agent_config
        )
    except (ForkError, SessionError) as exc:
        print(f"error: cannot fork at the divergence: {exc}", file=sys.stderr)
        return 1
    print(
        f"forked {source} at seq {at} into {fork}: {outcome}"
        f"{f', {len(divergences)} environment divergence(s)' if divergences else ''}"
    )
    return 0
