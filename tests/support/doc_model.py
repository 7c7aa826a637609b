"""A model server that answers every session alike, whatever runs it and in whatever order:
first a command that writes hello.py, then, once the prompt holds its result, ``finish``.

The documentation's examples start sessions the test does not sequence (the server's worker,
an evaluation's concurrent trials, a fork); a script of replies in one order would hand one
session's answer to another. Each answer here depends on its own request only."""

from __future__ import annotations

from typing import Any

from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

HELLO = "echo \"print('hello chronicle')\" > hello.py && python3 hello.py"


class HelloModel(FakeLlmServer):
    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.in_flight += 1
            self._changed()
        answered = any(message.get("role") == "tool" for message in body.get("messages", []))
        if answered:
            return Reply(tool_calls=[tool_call("finish", message="hello.py prints hello")])
        return Reply(tool_calls=[tool_call("execute_bash", command=HELLO)])
