"""The direct path to an OpenAI-compatible upstream: one HTTP request, no litellm call.

litellm's ``acompletion`` does ~9 ms of work per call on a 2-core machine (request building,
its logging objects, its response wrapping), more than the upstream itself takes to answer a
short reply. For a model litellm would call through the OpenAI SDK at the configured base URL
with no translation of its own, that work changes nothing: the request is the messages and
parameters as they are. This path sends that request itself, on the same HTTP client litellm
gives the SDK (its TLS, proxy and redirect settings, its connection pool), and reads the reply
with the same functions litellm's OpenAI handler reads it with (the SDK's parsed completion,
then litellm's ``convert_to_model_response_object``), so the gateway reads, prices and records
the same response object either way (tests/integration/llm/test_direct_sameness.py holds the
two paths' ``llm.call`` events to each other).

Only a plain request goes this way (``direct_body``): messages of the four roles with text
content and the keys OpenAI defines, function tools, and parameters litellm passes on as they
are; anything else (content parts, images, a ``developer`` message, a model litellm sends
through a provider config of its own such as o-series or gpt-5) goes through litellm. A
streamed request (``stream`` with its ``stream_options``) goes directly too, its chunks read
by litellm's own stream reader (``app.llm.direct_stream``). A reply that is not a plain
success (an HTTP error, a connection that failed, a body that is not JSON or that litellm
cannot convert) is handed to litellm as it came, through a transport that answers with it
(``replayed_client``), so its error, its classification and its message are litellm's own
and the upstream is never asked twice.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import httpx
import orjson

#: Roles and message keys sent as they are (OpenAI's chat-completions message fields).
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_TOOL_KEYS = frozenset({"type", "function"})
_FUNCTION_KEYS = frozenset({"name", "description", "parameters"})
#: Parameters litellm's OpenAI config passes on unchanged (when not None).
_PASSED = frozenset(
    {"temperature", "max_tokens", "top_p", "seed", "stop", "frequency_penalty",
     "presence_penalty", "tool_choice", "parallel_tool_calls"}
)  # fmt: skip
#: A stream's parameters: ``stream: true`` with its ``stream_options`` (``app.llm.direct_stream``).
_STREAM = frozenset({"stream", "stream_options"})
#: Parameters that mean something only with tools (litellm drops them without).
_WITH_TOOLS = frozenset({"tool_choice", "parallel_tool_calls"})


@functools.cache
def direct_model(model: str, base_url: str) -> str | None:
    """The model name to send when litellm would call ``model`` at ``base_url`` through
    its plain OpenAI chat config (no provider-specific translation); else None."""
    from app.llm.gateway import _import_litellm

    litellm = _import_litellm()
    from litellm.llms.openai.chat.gpt_transformation import OpenAIUnknownModelConfig

    try:
        name, provider, _, _ = litellm.get_llm_provider(model=model, api_base=base_url)
        config = litellm.ProviderConfigManager.get_provider_chat_config(
            model=name, provider=litellm.LlmProviders(provider)
        )
    except Exception:  # a model litellm cannot place: its own call says why
        return None
    # the base config, or the one for a name it does not know (a self-hosted model), which
    # differs only in passing reasoning_effort on (not a parameter sent directly)
    plain = (litellm.OpenAIGPTConfig, OpenAIUnknownModelConfig)
    if provider != "openai" or type(config) not in plain or "?" in base_url:
        return None  # (a base URL with a query: the SDK's joining of it is litellm's path)
    return str(name)


def _plain_message(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message as litellm sends it (keys holding None left out), or None when it is
    not a plain one."""
    if message.get("role") not in _ROLES:
        return None
    sent: dict[str, Any] = {}
    for key, value in message.items():
        if key not in _MESSAGE_KEYS:
            return None
        if value is not None:
            sent[key] = value
    content = sent.get("content")
    if content is not None and not isinstance(content, str):
        return None
    calls = sent.get("tool_calls")
    if calls is not None and not all(_plain_call(call) for call in calls):
        return None
    return sent


def _plain_call(call: Any) -> bool:
    function = call.get("function") if isinstance(call, dict) else None
    return (
        isinstance(function, dict)
        and set(call) <= {"id", "type", "function"}
        and set(function) <= {"name", "arguments"}
        and all(isinstance(value, str) for value in function.values())
    )


def _plain_tool(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return (
        isinstance(function, dict)
        and tool.get("type") == "function"
        and set(tool) <= _TOOL_KEYS
        and set(function) <= _FUNCTION_KEYS
    )


def _plain_value(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def direct_body(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    params: Mapping[str, Any],
) -> bytes | None:
    """The request's JSON as litellm would send it, or None when it is not a plain request
    (see the module's docstring) or holds text JSON cannot carry (a lone surrogate)."""
    body: dict[str, Any] = {"model": model}
    sent = []
    for message in messages:
        plain = _plain_message(message)
        if plain is None:
            return None
        sent.append(plain)
    body["messages"] = sent
    extra: Mapping[str, Any] = {}
    for key, value in params.items():
        if key == "extra_body" and isinstance(value, dict):
            extra = value
        elif key in _STREAM:
            continue  # added after the rest, as litellm's handler of a stream adds them
        elif key not in _PASSED or not _plain_value(value):
            return None
        elif value is not None:
            if key in _WITH_TOOLS and not tools:
                return None
            body[key] = value
    if tools:
        if not all(_plain_tool(tool) for tool in tools):
            return None
        body["tools"] = tools
    if params.get("stream") is not None or params.get("stream_options") is not None:
        options = params.get("stream_options")
        if params.get("stream") is not True or not isinstance(options, dict):
            return None  # (litellm decides the options of a stream asked without them)
        body["stream"] = True
        body["stream_options"] = options
    if any(key in body for key in extra):
        return None
    body.update(extra)
    try:
        return orjson.dumps(body)
    except TypeError:  # a lone surrogate, or a value JSON has no form for
        return None


class Replay(httpx.AsyncBaseTransport):
    """Answers one request with a response already received (or raises the exception the
    request raised), so litellm reads an upstream's failure as if it had sent the request."""

    def __init__(self, answer: httpx.Response | BaseException) -> None:
        self.answer = answer

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if isinstance(self.answer, BaseException):
            raise self.answer
        answer = self.answer
        return httpx.Response(
            answer.status_code, headers=answer.headers, content=answer.content, request=request
        )


def replayed_client(base_url: str, api_key: str, answer: httpx.Response | BaseException) -> Any:
    """An SDK client (as ``app.llm.openai_client`` makes them) whose one request gets
    ``answer``."""
    from app.llm.openai_client import ArgumentsAsText

    # the SDK takes an httpx client as litellm's own is (its type names the SDK's own httpx)
    http: Any = httpx.AsyncClient(transport=Replay(answer), follow_redirects=True)
    return ArgumentsAsText(base_url=base_url, api_key=api_key, max_retries=0, http_client=http)


def http_client(base_url: str, api_key: str) -> Any:
    """The HTTP client litellm's calls to this upstream use (``openai_client.client_for``):
    the direct path shares its settings and connections."""
    from app.llm.openai_client import client_for

    return client_for(base_url, api_key)._client


def completions_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/completions"


def headers(api_key: str) -> dict[str, str]:
    """The request's headers (the SDK's: its key, JSON both ways)."""
    return {
        "Authorization": f"Bearer {api_key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }


async def post(
    base_url: str, api_key: str, body: bytes, seconds: float
) -> httpx.Response | BaseException:
    """The upstream's answer to ``body`` (read whole), or the exception the request raised."""
    try:
        response = await http_client(base_url, api_key).post(
            completions_url(base_url), content=body, headers=headers(api_key), timeout=seconds
        )
        await response.aread()
    except Exception as exc:  # handed to the SDK and litellm, which say what it was
        return exc
    return response


def read(response: httpx.Response) -> Any:
    """The chat completion litellm's OpenAI handler makes of a 200 reply, or None when it
    would not make one as plainly (the reply is then handed to litellm: ``replayed_client``).
    """
    from litellm import ModelResponse
    from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
        convert_to_model_response_object,
    )
    from litellm.llms.openai.common_utils import model_dump_provider_response
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    from app.llm.openai_client import arguments_as_text

    if response.status_code != 200:
        return None
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:  # not JSON, or a lone surrogate orjson will not read
        return None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        return None
    parsed = construct_type(type_=ChatCompletion, value=arguments_as_text(data))
    if not hasattr(parsed, "model_dump"):
        return None
    headers = dict(response.headers)
    try:
        return convert_to_model_response_object(
            response_object=model_dump_provider_response(parsed),
            model_response_object=ModelResponse(),
            hidden_params={"headers": headers},
            _response_headers=headers,
        )
    except Exception:  # litellm gives up on it: its own call says how
        return None


class Direct(NamedTuple):
    """How a direct call went: its ``response`` (litellm's object, as litellm would have
    returned it), or the SDK ``client`` that hands the upstream's answer to litellm, and how
    long the request took (seconds)."""

    response: Any = None
    client: Any = None
    took: float = 0.0

    def retimed(self, exc: BaseException) -> None:
        """litellm's words for a timeout say how long the attempt took, as litellm saw it:
        reading the answer from ``replayed_client`` took no time, the request took ``took``.
        Its message says the latter, as it would have through litellm."""
        message = getattr(exc, "message", None)
        if isinstance(message, str):
            exc.message = _TOOK.sub(f"time taken={round(self.took, 2)} seconds", message)  # type: ignore[attr-defined]


#: how litellm's message of a timeout says how long the attempt took
_TOOK = re.compile(r"time taken=[0-9.]+ seconds")


async def call_directly(
    model: str,
    base_url: str,
    api_key: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    params: Mapping[str, Any],
    seconds: float,
    unpriced: set[str],
) -> Direct | None:
    """The call made directly (see the module's docstring), or None when the request is not
    a plain one (litellm makes it, as it always did). ``seconds``: the attempt's timeout;
    ``unpriced``: see ``stamp_cost``."""
    name = direct_model(model, base_url)
    body = None if name is None else direct_body(name, messages, tools, params)
    if name is None or body is None:
        return None
    started = time.time()  # as litellm times an attempt
    answer = await post(base_url, api_key, body, seconds)
    response = read(answer) if isinstance(answer, httpx.Response) else None
    if response is not None:
        stamp_cost(response, name, base_url, params, unpriced)
        return Direct(response=response)
    took = time.time() - started
    return Direct(client=replayed_client(base_url, api_key, answer), took=took)


def stamp_cost(
    response: Any, model: str, base_url: str, params: Mapping[str, Any], unpriced: set[str]
) -> None:
    """Price ``response`` as litellm's own call prices it (by the model asked for, at the
    OpenAI provider's prices) and stamp it where litellm does, so ``app.llm.cost`` reads the
    same figure. A model the map has no price for is remembered in ``unpriced`` (the lookup
    walks the whole map, ~1.5 ms) and left unstamped, as litellm leaves it."""
    import litellm

    hidden = response._hidden_params
    # what litellm's call leaves there, which its pricing of the response reads again
    # (``app.llm.cost`` prices it by the answering model when the asked one has no price)
    hidden.update(custom_llm_provider="openai", region_name=None, model_id=None,
                  api_base=base_url, litellm_model_name=f"openai/{model}",
                  provider_response_model=getattr(response, "model", None))  # fmt: skip
    key = f"openai/{model}"
    if key in unpriced:
        return
    try:
        cost = litellm.response_cost_calculator(
            response_object=response, model=model, custom_llm_provider="openai",
            call_type="acompletion", optional_params=dict(params),
        )  # fmt: skip
    except litellm.ModelNotMappedError:
        unpriced.add(key)
        return
    except Exception:  # odd usage: litellm's own call stamps nothing either
        return
    if cost is not None:
        hidden["response_cost"] = cost
