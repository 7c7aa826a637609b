"""An evaluation run's name is its owner's: a name another user chose is neither refused nor
readable, so the API tells nobody which names others chose.

Before, names were global: bob's POST of alice's run name answered 409 where a name nobody
chose answered 202 (and GET 404), so bob could probe alice's run names one by one."""

from __future__ import annotations

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.evaluation_api import wait_finished

SUITE = {"name": "s", "tasks": [{"id": "payroll", "prompt": "audit payroll.py"}]}
NAME = "q3-layoffs-review"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def start(server: ServerProcess, token: str, name: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/api/evaluations",
        headers=bearer(token),
        json={"name": name, "suite": SUITE},
        timeout=30,
    )


def test_two_users_may_choose_one_name_and_neither_sees_the_other(
    shared_server: ServerProcess,
) -> None:
    alice, bob = shared_server.token("alice"), shared_server.token("bob")
    first = start(shared_server, alice, NAME)
    assert first.status_code == 202, first.text
    # The probe: bob's request of alice's name answers as a fresh name's does.
    probe = start(shared_server, bob, NAME)
    assert probe.status_code == 202, probe.text
    assert probe.json()["name"] == NAME and probe.json()["user"] == "bob"
    assert probe.json()["key"] != first.json()["key"]
    again = start(shared_server, bob, NAME)
    assert again.status_code == 409 and "you have" in again.text  # his own name is taken

    alices, bobs = (  # stopped at their one trial: no model listens
        wait_finished(shared_server.url, alice, NAME, status="stopped"),
        wait_finished(shared_server.url, bob, NAME, status="stopped"),
    )
    assert (alices["user"], bobs["user"]) == ("alice", "bob")
    assert (alices["total"], bobs["total"]) == (1, 1)  # one trial each: the runs are apart
    for token, user in ((alice, "alice"), (bob, "bob")):
        listed = httpx.get(f"{shared_server.url}/api/evaluations", headers=bearer(token)).json()
        assert [(run["name"], run["user"]) for run in listed["runs"]] == [(NAME, user)]
        report = httpx.get(
            f"{shared_server.url}/api/evaluations/{NAME}/report", headers=bearer(token)
        )
        assert report.status_code == 200 and report.json()["run"] == NAME
        assert report.json()["total"] == 1
    # Nobody reads the other's run by its key either; an admin reads both, by key where the
    # name is ambiguous.
    stolen = httpx.get(f"{shared_server.url}/api/evaluations/{alices['key']}", headers=bearer(bob))
    assert stolen.status_code == 404
    admin = shared_server.token("root", admin=True)
    ambiguous = httpx.get(f"{shared_server.url}/api/evaluations/{NAME}", headers=bearer(admin))
    assert ambiguous.status_code == 409 and str(alices["key"]) in ambiguous.text
    for run in (alices, bobs):
        got = httpx.get(f"{shared_server.url}/api/evaluations/{run['key']}", headers=bearer(admin))
        assert got.status_code == 200 and got.json()["user"] == run["user"]
