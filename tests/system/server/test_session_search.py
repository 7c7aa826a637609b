"""``GET /api/sessions?q=``: sessions whose title has words beginning with each word of ``q``,
case-insensitive, through a real `chronicle serve` (its database migrated with the index of
migration 0013); never another user's; text with no word matches nothing; a cursor pages on
within the filter."""

from __future__ import annotations

import time

import httpx

from tests.support.chronicle_server import ServerProcess

TITLES = {
    "payroll": "Fix the Payroll export in payroll.py",
    "report": "Write the quarterly report generator",
    "payments": "Add retries to the payments client",
    "both": "Payroll report: totals are off by one",
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def listed(server: ServerProcess, token: str, q: str, **params: str) -> httpx.Response:
    return httpx.get(f"{server.url}/api/sessions", headers=bearer(token), params={"q": q, **params})


def titles(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {s["title"] for s in response.json()["sessions"]}


def test_the_list_filters_by_words_of_the_title(shared_server: ServerProcess) -> None:
    server = shared_server
    rosa, other = server.token("rosa"), server.token("otto")
    for title in TITLES.values():
        made = httpx.post(f"{server.url}/api/sessions", headers=bearer(rosa), json={"task": title})
        assert made.status_code == 201, made.text
    theirs = httpx.post(
        f"{server.url}/api/sessions", headers=bearer(other), json={"task": "payroll for otto"}
    )
    assert theirs.status_code == 201
    deadline = time.monotonic() + 30
    while len(titles(listed(server, rosa, "payroll"))) < 2:
        assert time.monotonic() < deadline, "the sessions were never listed"
        time.sleep(0.3)

    assert titles(listed(server, rosa, "payroll")) == {TITLES["payroll"], TITLES["both"]}
    assert titles(listed(server, rosa, "PAYROLL")) == {TITLES["payroll"], TITLES["both"]}
    # each word begins a word of the title (a prefix), all of them must
    assert titles(listed(server, rosa, "pay")) == {
        TITLES["payroll"], TITLES["payments"], TITLES["both"]
    }  # fmt: skip
    assert titles(listed(server, rosa, "payroll report")) == {TITLES["both"]}
    assert titles(listed(server, rosa, "roll")) == set()  # inside a word: not a match
    assert titles(listed(server, rosa, "!!! ''' \\")) == set()  # no word at all
    assert titles(listed(server, rosa, "o'brien")) == set()  # quoting is the database's
    assert titles(listed(server, other, "payroll")) == {"payroll for otto"}
    # a cursor pages on inside the filter
    first = listed(server, rosa, "pay", limit="2")
    assert len(titles(first)) == 2 and first.json()["next_cursor"]
    rest = listed(server, rosa, "pay", limit="2", cursor=first.json()["next_cursor"])
    assert titles(first) | titles(rest) == {
        TITLES["payroll"], TITLES["payments"], TITLES["both"]
    }  # fmt: skip
    nul = listed(server, rosa, "pay\x00roll")
    assert nul.status_code == 422 and "NUL" in nul.text
    nul_model = listed(server, rosa, "pay", model="gpt\x00")
    assert nul_model.status_code == 422 and "model cannot contain a NUL" in nul_model.text
    too_long = listed(server, rosa, "x" * 201)
    assert too_long.status_code == 400
    assert too_long.headers["content-type"] == "application/problem+json"


def test_the_list_finds_a_session_by_a_prefix_of_its_id(shared_server: ServerProcess) -> None:
    """``id_prefix=``: the 8 characters the page shows name a session (the page's routes take
    them); never another user's; anything but hex digits is refused with the rule."""
    server = shared_server
    ida, ivo = server.token("ida"), server.token("ivo")
    made = httpx.post(f"{server.url}/api/sessions", headers=bearer(ida), json={"task": "mine"})
    assert made.status_code == 201, made.text
    session = made.json()["id"]

    def by_prefix(token: str, prefix: str) -> httpx.Response:
        return httpx.get(
            f"{server.url}/api/sessions", headers=bearer(token), params={"id_prefix": prefix}
        )

    deadline = time.monotonic() + 30
    while not by_prefix(ida, session[:8]).json()["sessions"]:
        assert time.monotonic() < deadline, "the session was never listed"
        time.sleep(0.3)
    found = by_prefix(ida, session[:8].upper()).json()["sessions"]
    assert [s["id"] for s in found] == [session]
    assert [s["id"] for s in by_prefix(ida, session).json()["sessions"]] == [session]
    assert by_prefix(ivo, session[:8]).json()["sessions"] == []  # not theirs
    missing = "0000" if not session.startswith("0000") else "ffff"
    assert by_prefix(ida, missing).json()["sessions"] == []
    for bad in ("abc", "zzzz1234", "12345678' OR '1'='1"):
        refused = by_prefix(ida, bad)
        assert refused.status_code in (400, 422), (bad, refused.text)
    assert "at least 4 hex digits" in by_prefix(ida, "zzzz1234").text
