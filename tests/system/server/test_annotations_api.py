"""Annotations over HTTP: the owner and an admin label a session and its events (a session
that has ended too), a member cannot label another user's (404, nothing recorded), what is
refused is refused with a reason, the list filters by label and tag, and the review queue
holds the sessions nobody has reviewed yet."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Client:
    def __init__(self, server: ServerProcess, token: str) -> None:
        self.url, self.headers = server.url, bearer(token)

    def get(self, path: str, **params: Any) -> httpx.Response:
        return httpx.get(self.url + path, headers=self.headers, params=params, timeout=30)

    def post(self, path: str, body: Any) -> httpx.Response:
        return httpx.post(self.url + path, headers=self.headers, json=body, timeout=30)

    def annotate(self, session: str, **body: Any) -> httpx.Response:
        return self.post(f"/api/sessions/{session}/annotations", body)

    def listed(self, **params: Any) -> list[str]:
        page = self.get("/api/sessions", limit=200, **params)
        assert page.status_code == 200, page.text
        return [s["id"] for s in page.json()["sessions"]]

    def queue(self, **params: Any) -> dict[str, Any]:
        answer = self.get("/api/review", **params)
        assert answer.status_code == 200, answer.text
        return answer.json()


def new_session(client: Client, task: str) -> str:
    """A session, once the list shows it (its agent ends in error: no model is reachable)."""
    created = client.post("/api/sessions", {"task": task})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    deadline = time.monotonic() + 30
    while session not in client.listed():
        assert time.monotonic() < deadline, "the session was never listed"
        time.sleep(0.1)
    return session


@pytest.fixture(scope="module")
def alice(shared_server: ServerProcess) -> Client:
    return Client(shared_server, shared_server.token("alice"))


def test_the_owner_labels_an_event_and_the_session_in_its_own_chain(alice: Client) -> None:
    session = new_session(alice, "label me")
    first = alice.annotate(
        session, label="Wrong answer", comment="it edited the wrong file", tags=["edits", "x"],
        target_seq=1,
    )  # fmt: skip
    assert first.status_code == 201, first.text
    whole = alice.annotate(session, label="good")
    assert whole.status_code == 201, whole.text
    assert first.json() | {"seq": 0, "created_at": ""} == {
        "seq": 0, "created_at": "", "user": "alice", "label": "Wrong answer",
        "comment": "it edited the wrong file", "tags": ["edits", "x"], "target_seq": 1,
        "copied_from": None,
    }  # fmt: skip
    assert whole.json()["target_seq"] is None

    listed = alice.get(f"/api/sessions/{session}/annotations").json()["annotations"]
    assert [(a["seq"], a["label"]) for a in listed] == [
        (first.json()["seq"], "Wrong answer"),
        (whole.json()["seq"], "good"),
    ]
    events = alice.get(f"/api/sessions/{session}/events", limit=1000).json()["events"]
    [recorded] = [e for e in events if e["seq"] == first.json()["seq"]]
    assert (recorded["kind"], recorded["source"], recorded["cause"]) == ("annotation", "user", None)
    assert recorded["payload"]["user"] == "alice" and recorded["payload"]["target_seq"] == 1
    report = alice.get(f"/api/sessions/{session}/verify").json()
    assert report["ok"] and report["checked"] >= whole.json()["seq"], report


def test_a_member_cannot_annotate_another_users_session_and_an_admin_can(
    shared_server: ServerProcess, alice: Client
) -> None:
    session = new_session(alice, "not mallory's")
    mallory = Client(shared_server, shared_server.token("mallory"))
    before = alice.get(f"/api/sessions/{session}/annotations").json()["annotations"]
    for body in ({"label": "unsafe command"}, {"label": "reviewed", "target_seq": 1}):
        refused = mallory.annotate(session, **body)
        assert refused.status_code == 404, refused.text
        assert "alice" not in refused.text
    assert mallory.get(f"/api/sessions/{session}/annotations").status_code == 404
    assert alice.get(f"/api/sessions/{session}/annotations").json()["annotations"] == before

    root = Client(shared_server, shared_server.token("root", admin=True))
    made = root.annotate(session, label="unsafe command", target_seq=1)
    assert made.status_code == 201, made.text
    assert made.json()["user"] == "root"
    assert session not in mallory.listed() and session not in [
        s["id"] for s in mallory.queue()["sessions"]
    ]


@pytest.fixture(scope="module")
def refusals(alice: Client) -> str:
    return new_session(alice, "refusals")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"label": "   "}, "label"),
        ({"label": "a\u0007b"}, "control characters"),
        ({"label": "x" * 101}, "label"),
        ({"label": "ok", "target_seq": 100000}, "has no event 100000"),
        ({"label": "ok", "target_seq": 0}, "target_seq"),
        ({"label": "ok", "tags": [f"t{i}" for i in range(21)]}, "tags"),
        ({"label": "ok", "comment": "c" * 4001}, "comment"),
        ({"comment": "no label"}, "label"),
    ],
)
def test_what_is_refused_says_why_and_records_nothing(
    alice: Client, refusals: str, body: dict[str, Any], says: str
) -> None:
    session = refusals
    refused = alice.annotate(session, **body)
    assert refused.status_code in (400, 422), refused.text
    assert says in refused.text, refused.text
    assert alice.get(f"/api/sessions/{session}/annotations").json()["annotations"] == []


def test_the_list_filters_by_label_and_tag_and_the_queue_leaves_out_the_reviewed(
    alice: Client,
) -> None:
    flagged = new_session(alice, "flagged")
    tagged = new_session(alice, "tagged")
    plain = new_session(alice, "plain")
    assert alice.annotate(flagged, label="unsafe command", target_seq=1).status_code == 201
    assert alice.annotate(tagged, label="good", tags=["Payroll"]).status_code == 201

    by_label = alice.listed(label="UNSAFE command")
    assert flagged in by_label and tagged not in by_label and plain not in by_label
    by_tag = alice.listed(tag="payroll")
    assert by_tag == [tagged]

    queue = alice.queue()
    assert {flagged, tagged, plain} <= {s["id"] for s in queue["sessions"]}
    remaining = queue["remaining"]
    # "reviewed" on an event is a remark about that event; on the whole session it reviews it
    assert alice.annotate(plain, label="reviewed", target_seq=1).status_code == 201
    assert plain in {s["id"] for s in alice.queue()["sessions"]}
    assert alice.annotate(plain, label="Reviewed", comment="fine").status_code == 201
    after = alice.queue()
    assert plain not in {s["id"] for s in after["sessions"]}
    assert after["remaining"] == remaining - 1
    assert alice.queue(label="unsafe command")["sessions"][0]["id"] == flagged
    assert [s["id"] for s in alice.queue(tag="payroll")["sessions"]] == [tagged]
