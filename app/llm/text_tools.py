"""Tool calling for models without native support: tools described in the prompt, calls
parsed back from the text.

The model is asked to write a call as::

    <function=execute_bash>
    <parameter=command>ls -la</parameter>
    </function>

and the conversation's native tool turns are rewritten into that text form on the way in.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.events import ToolCall

CALL = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)</parameter>", re.DOTALL)


def describe_tools(tools: list[dict[str, Any]]) -> str:
    lines = [
        "You can use these tools. To call one, write exactly:",
        "<function=TOOL_NAME>",
        "<parameter=PARAMETER_NAME>value</parameter>",
        "</function>",
        "Call at most one tool per reply, and stop after the closing </function>.",
        "",
    ]
    for tool in tools:
        function = tool.get("function", tool)
        lines.append(f"## {function['name']}: {function.get('description', '').strip()}")
        properties = function.get("parameters", {}).get("properties", {})
        required = set(function.get("parameters", {}).get("required", []))
        for name, spec in properties.items():
            need = "required" if name in required else "optional"
            kind = spec.get("type", "string")
            detail = spec.get("description", "")
            choices = f" One of: {', '.join(map(str, spec['enum']))}." if "enum" in spec else ""
            lines.append(f"- {name} ({kind}, {need}): {detail}{choices}")
        lines.append("")
    return "\n".join(lines)


def _typed(value: str, spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    text = value.strip("\n")
    if kind in ("integer", "number", "boolean", "array", "object"):
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text
    return text


def parse_tool_calls(
    content: str, tools: list[dict[str, Any]], *, id_prefix: str = "text-call"
) -> tuple[str, list[ToolCall]]:
    """The text without the calls, and the calls (arguments as a JSON string, like native)."""
    specs = {
        tool.get("function", tool)["name"]: tool.get("function", tool)
        .get("parameters", {})
        .get("properties", {})
        for tool in tools
    }
    calls = []
    for index, match in enumerate(CALL.finditer(content)):
        name, body = match.group(1), match.group(2)
        properties = specs.get(name, {})
        arguments = {
            param: _typed(value, properties.get(param, {}))
            for param, value in PARAMETER.findall(body)
        }
        calls.append(
            ToolCall(id=f"{id_prefix}-{index}", name=name, arguments=json.dumps(arguments))
        )
    return CALL.sub("", content).strip(), calls


def to_prompt_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Native tool turns rewritten as text, tool descriptions added to the system message."""
    out: list[dict[str, Any]] = []
    description = describe_tools(tools) if tools else ""
    for message in messages:
        role = message.get("role")
        if role == "system" and description:
            out.append(
                {"role": "system", "content": f"{message.get('content', '')}\n\n{description}"}
            )
            description = ""
        elif role == "assistant" and message.get("tool_calls"):
            text = message.get("content") or ""
            for call in message["tool_calls"]:
                function = call["function"]
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (json.JSONDecodeError, RecursionError):
                    arguments = {"raw": function.get("arguments")}
                if not isinstance(arguments, dict):  # a model's "[1, 2]": shown as sent
                    arguments = {"raw": function.get("arguments")}
                params = "".join(
                    f"<parameter={key}>{value if isinstance(value, str) else json.dumps(value)}"
                    "</parameter>\n"
                    for key, value in arguments.items()
                )
                text += f"\n<function={function['name']}>\n{params}</function>"
            out.append({"role": "assistant", "content": text.strip()})
        elif role == "tool":
            out.append(
                {
                    "role": "user",
                    "content": f"EXECUTION RESULT of [{message.get('name', 'tool')}]:\n"
                    f"{message.get('content', '')}",
                }
            )
        else:
            out.append(message)
    if description:
        out.insert(0, {"role": "system", "content": description})
    return out
