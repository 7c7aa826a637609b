"""Every request that asks a worker for a run counts against the user's cap of working
sessions (issue 22, item 4).

The attack: with a cap of 5, a user let ten sessions end, then sent each a message (or a
resume) at once: creation was capped, a message was not, and ten sessions ran together. Here,
with a cap of 2 and a model that takes seconds to answer (so a run stays working), four ended
sessions are messaged and resumed at once: two runs are taken, the others are refused with
429 and nothing of theirs is recorded, and the model never sees more than two sessions at
once. Creations and messages at once share the same places.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import psycopg

from app.sessions.sql.session_owners import COUNTS
from tests.support.chronicle_server import ServerProcess, wait_until_run_ended
from tests.support.evaluation_api import wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

CAP = 2
PROBLEM = "application/problem+json"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def finish(delay: float = 0.0) -> Reply:
    return Reply(tool_calls=[tool_call("finish", message="done")], delay=delay)


def messages_of(server: ServerProcess, token: str, session: str) -> list[str]:
    page = httpx.get(
        f"{server.url}/api/sessions/{session}/events?limit=1000", headers=bearer(token)
    ).json()
    return [e["payload"]["content"] for e in page["events"] if e["kind"] == "message"]


#: How many of the sessions the cap counts as active (what creation checks).
COUNTED_SQL = f"""
SELECT count(*) FROM session_owners o LEFT JOIN session_state s ON s.session_id = o.session_id
WHERE o.session_id = ANY(%s::uuid[]) AND {COUNTS}
"""


def settle(server: ServerProcess, token: str, fake_llm: FakeLlmServer, sessions: list[str]) -> None:
    """Until no model call is in flight, every session's run has ended, and the cap no
    longer counts them: the run's last event comes before its worker lets the run go and
    before the projection has it, and a loaded machine shows that gap."""
    deadline = time.monotonic() + 60
    while fake_llm.in_flight:
        assert time.monotonic() < deadline, "the model calls never ended"
        time.sleep(0.1)
    for session in sessions:
        wait_until_run_ended(server.url, bearer(token), session)
    with psycopg.connect(server.env["CHRONICLE_DATABASE_URL"]) as connection:
        while connection.execute(COUNTED_SQL, [sessions]).fetchone() != (0,):
            assert time.monotonic() < deadline, "the cap still counts sessions that ended"
            time.sleep(0.1)


def test_messages_and_resumes_to_ended_sessions_count_against_the_cap(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    server = serve(llm_base_url=fake_llm.base_url, server_max_active_sessions=str(CAP))
    token = server.token("mallory")

    # four sessions that ran and ended in error (so that a resume applies to them, as a
    # message does), created two at a time (creation is capped)
    ended: list[str] = []
    for _ in range(2):
        fake_llm.script(Reply(status=500), Reply(status=500))
        for _ in range(CAP):
            created = httpx.post(
                f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"}
            )
            assert created.status_code == 201, created.text
            ended.append(created.json()["id"])
        settle(server, token, fake_llm, ended)

    # all four asked to run again at once
    fake_llm.max_in_flight = 0
    fake_llm.script(*(finish(delay=4) for _ in range(8)))

    async def wake_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        f"/api/sessions/{session}/messages",
                        headers=bearer(token),
                        json={"content": f"again {n}"},
                    )
                    for n, session in enumerate(ended)
                ),
            )

    answers = asyncio.run(wake_all())
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [202] * CAP + [429] * (4 - CAP), [a.text for a in answers]
    for answer in answers:
        if answer.status_code == 429:
            assert answer.headers["content-type"] == PROBLEM
            assert f"{CAP} sessions working already" in answer.json()["detail"]
            assert answer.headers["retry-after"] == "30"
    # a refused message was not recorded: sending it again later is not a duplicate
    for n, (session, answer) in enumerate(zip(ended, answers, strict=True)):
        recorded = f"again {n}" in messages_of(server, token, session)
        assert recorded is (answer.status_code == 202), (session, answer.text)
    # a third place was never taken meanwhile, not by a new session nor by a resume
    refused = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"})
    assert refused.status_code == 429, refused.text
    idle = next(s for s, a in zip(ended, answers, strict=True) if a.status_code == 429)
    resumed = httpx.post(f"{server.url}/api/sessions/{idle}/resume", headers=bearer(token))
    assert resumed.status_code == 429, resumed.text
    settle(server, token, fake_llm, ended)
    assert 1 <= fake_llm.max_in_flight <= CAP, fake_llm.max_in_flight

    # creations and messages at once share the places
    fake_llm.max_in_flight = 0

    async def mix() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            return await asyncio.gather(
                *(
                    client.post("/api/sessions", headers=bearer(token), json={"task": "t"})
                    for _ in range(2)
                ),
                *(
                    client.post(
                        f"/api/sessions/{session}/messages",
                        headers=bearer(token),
                        json={"content": "once more"},
                    )
                    for session in ended[:3]
                ),
            )

    answers = asyncio.run(mix())
    accepted = [answer for answer in answers if answer.status_code in (201, 202)]
    assert len(accepted) == CAP, [(a.status_code, a.text) for a in answers]
    assert all(a.status_code == 429 for a in answers if a not in accepted)
    started = ended + [a.json()["id"] for a in answers[:2] if a.status_code == 201]
    settle(server, token, fake_llm, started)
    assert 1 <= fake_llm.max_in_flight <= CAP, fake_llm.max_in_flight


def test_a_message_to_a_working_session_is_taken_at_the_cap(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    """A session that holds a place needs no second one: the user at the cap can still talk
    to the sessions that are working."""
    server = serve(llm_base_url=fake_llm.base_url, server_max_active_sessions="1")
    token = server.token("ada")
    fake_llm.script(finish(delay=3), finish(), finish())
    created = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    asyncio.run(fake_llm.wait_until(lambda fake: fake.in_flight == 1))
    told = httpx.post(
        f"{server.url}/api/sessions/{session}/messages",
        headers=bearer(token),
        json={"content": "and also this"},
    )
    assert told.status_code == 202, told.text
    assert told.json()["run_requested"] is True
    settle(server, token, fake_llm, [session])


def test_an_evaluation_run_takes_its_next_trials_within_the_cap(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    """A run's next trials, recorded by the worker as earlier ones end, take places of the
    cap as its first did: with one session of the user working, a run of concurrency 2 never
    has more than one trial working beside it (before, every trial that ended was followed by
    as many as the run's concurrency, whatever else the user had working)."""
    server = serve(
        llm_base_url=fake_llm.base_url, server_max_active_sessions=str(CAP),
        worker_sweep_interval="2",
    )  # fmt: skip
    token = server.token("mallory")
    fake_llm.script(finish(delay=20))  # the user's session, working throughout
    created = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"})
    assert created.status_code == 201, created.text
    asyncio.run(fake_llm.wait_until(lambda fake: fake.in_flight == 1))
    fake_llm.script(finish(), *(finish(delay=3) for _ in range(4)))
    suite = {
        "name": "three",
        "tasks": [{"id": f"t{n}", "prompt": "Say done.", "answer": "done"} for n in range(3)],
    }
    started = httpx.post(
        f"{server.url}/api/evaluations",
        headers=bearer(token),
        json={"name": "capped", "suite": suite, "concurrency": 2},
        timeout=60,
    )
    assert started.status_code == 202, started.text
    assert started.json()["started"] == 1  # the other place is the session's
    run = wait_finished(server.url, token, "capped", timeout=120)
    assert (run["total"], run["done"], run["passed"]) == (3, 3, 3)
    assert fake_llm.max_in_flight <= CAP, fake_llm.max_in_flight
