"""Agents Chronicle does not run: the model gateway that records each of their calls.

An agent (aider, Claude Code, an OpenAI Agents SDK app, ...) points its OpenAI or Anthropic
base URL at ``chronicle serve`` and uses a Chronicle token as its API key. Each request goes
upstream through ``app.llm.LlmGateway`` (retries, masking, the prompt stored once per
message) to the model the deployment allows, and is recorded as an ``llm.call`` of a session
whose ``session.created`` says ``agent: external``: the same event Chronicle's own agent
records, so verify, analytics, the page and scoring read it unchanged. See docs/gateway.md.

The pieces, and how a protocol plugs in:

- ``calls``: the core. ``ChatRequest`` (a request in OpenAI's chat-completions shape, whatever
  protocol it came in) and ``ExternalCalls`` (``complete`` -> ``LlmReply``; ``stream`` ->
  ``CallStream`` of OpenAI chunk dicts, then ``reply`` or ``error``);
- ``models``: which upstream model answers the name an agent sends (``gateway_*`` settings);
- ``sessions``: which session a call goes to (``X-Chronicle-Session``, else the token's own),
  and ``external_session``, the ``session.created`` of such a session;
- ``errors``: ``GatewayError`` (status, protocol-neutral kind, message), which each protocol
  renders in its own error shape;
- ``openai_protocol``: OpenAI's requests, replies, SSE chunks and errors. A protocol module
  is pure translation: body -> ``ChatRequest``; ``LlmReply`` -> its reply; OpenAI chunk
  dicts -> its SSE frames; ``GatewayError`` -> its error body. Its routes live in
  ``app/server/gateway_routes.py``.
"""
