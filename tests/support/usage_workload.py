"""Sessions with known usage, for the usage page's tests: three owners' model calls, tool
calls and errors, recorded straight into the log (no agent runs)."""

from __future__ import annotations

import uuid

from app.events import ErrorObservation, Event, LlmCall, LlmUsage, Message, Run, RunOutput
from app.events.masking import SecretMasker
from app.sessions.sql.session_owners import record_owner
from app.sessions.sql.users import find_user
from app.store import EventStore


def call(
    model: str, cost: float | None, tokens: tuple[int, int], error: str | None = None
) -> LlmCall:
    return LlmCall(
        model=model,
        fingerprint=uuid.uuid4().hex,
        cost_usd=cost,
        usage=LlmUsage(prompt_tokens=tokens[0], completion_tokens=tokens[1]),
        error=error,
        error_kind="rate_limited" if error else None,
    )


async def record(database_url: str, owners: dict[str, str | None]) -> dict[str, list[str]]:
    """Three sessions: mia's (two calls to m1, one failed; a failed command), bob's (an
    unpriced call to m2; an error observation) and one nobody owns (a call to m1): the
    session ids of each owner."""
    workloads: dict[str, list[Event]] = {
        "mia": [
            Message(content="fix it"),
            call("openai/m1", 0.5, (100, 20)),
            call("openai/m1", None, (0, 0), error="rate limited"),
            Run(command="pytest", cause=2),
            RunOutput(output="1 failed", exit_code=1, cause=4),
            Run(command="ls", cause=2),
            RunOutput(output="a", exit_code=0, cause=6),
        ],
        "bob": [
            Message(content="read it"),
            call("openai/m2", None, (50, 5)),
            Run(command="cat nothing", cause=2),
            ErrorObservation(message="no such file", error_type="not_found", cause=3),
        ],
        "nobody": [Message(content="on the host"), call("openai/m1", 0.25, (10, 1))],
    }
    made: dict[str, list[str]] = {}
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        for who, events in workloads.items():
            session = uuid.uuid4()
            owner = owners.get(who)
            if owner is not None:
                user = await find_user(store, owner)
                assert user is not None
                await record_owner(store, session, user.id)
            await store.append(session, events, expected_seq=0)
            made.setdefault(who, []).append(str(session))
    return made
