"""An evaluation suite's answer pattern cannot freeze the server (issue 22, item 3).

The attack: a user starts an evaluation run over the API whose task expects
``regex:^(a+)+$`` (or ``^(a|a)+$``) and gets the model to answer ``a`` thirty-one times and a
``!``. Scoring ran Python's ``re`` in the event loop of the process that also serves the API:
every request, stream and projection of every user stalled, doubling per character (27
characters: 6.5 s). Now the pattern is searched in a thread, with a time limit: the API
answers throughout, and the trial's verdict says the search was cut off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.evaluation_api import bearer, wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

ATTACK = "a" * 31 + "!"
SUITE = {
    "name": "patterns",
    "tasks": [
        # the pattern of the report (this matcher has no trouble with it: a plain fail)
        {"id": "nested", "prompt": "Say a lot of a.", "answer": "regex:^(a+)+$"},
        # exponential for every backtracking matcher: cut off after its time limit
        {"id": "alternation", "prompt": "Say a lot of a.", "answer": "regex:^(a|a)+$"},
    ],
}
#: The slowest answer the API may give while the trials are scored (the stall was minutes).
RESPONSIVE = 1.0


class Prober:
    """Asks the API over and over, from a thread, how long each answer took."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._probe, daemon=True)

    def _probe(self) -> None:
        with httpx.Client(base_url=self.url, timeout=RESPONSIVE * 3) as client:
            while not self.stop.is_set():
                for path, headers in (
                    ("/health/live", {}),
                    ("/api/sessions", bearer(self.token)),
                ):
                    started = time.monotonic()
                    try:
                        answer = client.get(path, headers=headers)
                    except httpx.TimeoutException:
                        self.failures.append(f"{path}: no answer in {RESPONSIVE * 3} s")
                        return
                    self.latencies.append(time.monotonic() - started)
                    if answer.status_code != 200:
                        self.failures.append(f"{path}: {answer.status_code}")
                time.sleep(0.05)

    def __enter__(self) -> Prober:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def test_a_backtracking_answer_pattern_neither_stalls_the_api_nor_hangs_the_trial(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(*(Reply(tool_calls=[tool_call("finish", message=ATTACK)]) for _ in range(2)))
    server = serve(llm_base_url=fake_llm.base_url)
    mallory, ada = server.token("mallory"), server.token("ada")

    with Prober(server.url, ada) as prober:
        started = httpx.post(
            f"{server.url}/api/evaluations",
            headers=bearer(mallory),
            json={"name": "stall", "suite": SUITE, "concurrency": 2},
            timeout=60,
        )
        assert started.status_code == 202, started.text
        run = wait_finished(server.url, mallory, "stall", timeout=120)
    assert (run["total"], run["done"], run["failed"]) == (2, 2, 2)
    assert prober.failures == [], prober.failures
    assert len(prober.latencies) > 10
    assert max(prober.latencies) < RESPONSIVE, sorted(prober.latencies)[-5:]

    report = httpx.get(f"{server.url}/api/evaluations/stall/report", headers=bearer(mallory))
    assert report.status_code == 200, report.text
    sessions = {task["id"]: task["session_id"] for task in report.json()["tasks"]}
    verdicts = {}
    for task, session in sessions.items():
        events = httpx.get(
            f"{server.url}/api/sessions/{session}/events?limit=1000", headers=bearer(mallory)
        ).json()["events"]
        [answer] = [
            e["payload"] for e in events
            if e["kind"] == "eval.score" and e["payload"]["name"] == "answer"
        ]  # fmt: skip
        verdicts[task] = (answer["score_label"], answer["explanation"])
    assert verdicts["alternation"][0] == "fail"
    assert verdicts["alternation"][1].startswith("the answer pattern '^(a|a)+$' took longer than")
    assert verdicts["alternation"][1].endswith("; cut off")
    assert verdicts["nested"] == (
        "fail",
        f"the finish message {ATTACK!r} does not match the regex '^(a+)+$'",
    )
