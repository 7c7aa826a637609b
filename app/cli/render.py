"""One readable line per event for the terminal."""

from __future__ import annotations

import json
from typing import Any

from app.store import RecordedEvent

WIDTH = 100


def _one_line(text: str, width: int = WIDTH) -> str:
    flat = " ⏎ ".join(part for part in text.strip().splitlines() if part.strip())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def summarize(kind: str, payload: dict[str, Any]) -> str:
    """What a person wants to see of a payload, by kind; unknown kinds show compact JSON."""
    p = payload
    match kind:
        case "message":
            return _one_line(str(p.get("content", "")))
        case "run":
            prefix = "input> " if p.get("is_input") else "$ "
            return prefix + _one_line(str(p.get("command", "")))
        case "run.output":
            flags = [f"exit {p.get('exit_code')}"]
            flags += [flag for flag in ("timed_out", "truncated") if p.get(flag)]
            return f"[{', '.join(flags)}] " + _one_line(str(p.get("output", "")))
        case "file.read" | "file.write" | "file.read.output" | "file.write.output":
            return str(p.get("path", ""))
        case "file.edit":
            return f"{p.get('command')} {p.get('path')}"
        case "file.edit.output":
            return f"{p.get('path')} " + _one_line(str(p.get("diff", "")), 60)
        case "think":
            return _one_line(str(p.get("thought", "")))
        case "annotation":
            about = "session" if p.get("target_seq") is None else f"#{p.get('target_seq')}"
            tags = "".join(f" [{tag}]" for tag in p.get("tags") or [])
            comment = f": {_one_line(str(p['comment']))}" if p.get("comment") else ""
            return f"{about} {p.get('label')} by {p.get('user')}{tags}{comment}"
        case "redaction":
            part = p.get("path") or "its payload"
            return (
                f"#{p.get('target_seq')} {part} redacted by {p.get('user')}: "
                f"{_one_line(str(p.get('reason', '')))} (sha256 {str(p.get('removed', ''))[:12]})"
            )
        case "finish":
            return _one_line(str(p.get("message", "")) or "done")
        case "error":
            return _one_line(str(p.get("message", "")))
        case "mcp.call":
            arguments = _one_line(json.dumps(p.get("arguments")), 60)
            return f"{p.get('server')}.{p.get('tool')}({arguments})"
        case "llm.call":
            usage = p.get("usage") or {}
            cost = p.get("cost_usd")
            latency = p.get("latency_ms")
            tokens_in, tokens_out = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
            return (
                f"{p.get('model')}  in={'?' if tokens_in is None else tokens_in} "
                f"out={'?' if tokens_out is None else tokens_out}"
                + (f"  ${cost:.4f}" if isinstance(cost, int | float) else "")
                + (f"  {latency:.0f} ms" if isinstance(latency, int | float) else "")
            )
        case "agent.state":
            reason = p.get("reason")
            return str(p.get("state")) + (f" ({_one_line(str(reason), 80)})" if reason else "")
        case "session.created":
            return _one_line(str(p.get("title") or "") or json.dumps(p.get("config", {})))
        case _:
            return _one_line(json.dumps(p, ensure_ascii=False, sort_keys=True))


def render_line(event: RecordedEvent) -> str:
    time = event.created_at.astimezone().strftime("%H:%M:%S.%f")[:-3]
    cause = f"←{event.cause}" if event.cause else ""
    return (
        f"{event.seq:>5}  {time}  {event.source:<11}  {event.kind:<17}{cause:>5}  "
        f"{summarize(event.kind, event.payload)}"
    )


def render_json(event: RecordedEvent) -> str:
    return json.dumps(event.to_json_dict(), ensure_ascii=False)
