"""X-Forwarded-For as a local attacker sends it to a real `chronicle serve`: uvicorn believes
it from 127.0.0.1 unless told otherwise, so any client on the machine (or behind a proxy that
passes the header on) picked its own address: a fresh one per guess escaped the failure limit,
and a forged one was written into a login's record and the platform's audit trail. Only the
proxies the operator names (``server_forwarded_allow_ips``) are believed now."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess

FORGED = "203.0.113.66"
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_forged_forwarded_address_escapes_no_limit_and_lands_in_no_record(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_auth_failures="5", server_rate_limit="100000")
    admin = server.token("root", admin=True)
    token = server.token("mallory")
    with httpx.Client(base_url=server.url) as browser:
        signed_in = browser.post(
            "/api/login",
            json={"token": token},
            headers={**SAME_SITE, "X-Forwarded-For": FORGED},
        )
        assert signed_in.status_code == 200, signed_in.text
    listed = httpx.get(f"{server.url}/api/users/mallory/logins", headers=bearer(admin))
    assert listed.status_code == 200, listed.text
    assert all(login["address"] != FORGED for login in listed.json())
    audit = httpx.get(f"{server.url}/api/audit", headers=bearer(admin))
    assert audit.status_code == 200, audit.text
    assert FORGED not in audit.text

    with httpx.Client(base_url=server.url) as client:
        statuses = [
            client.get(
                "/api/me",
                headers={**bearer(f"chr_guess{n:039d}"), "X-Forwarded-For": f"198.51.100.{n}"},
            ).status_code
            for n in range(30)
        ]
        assert statuses[:5] == [401] * 5
        assert statuses.count(429) >= 20, statuses  # one address however the header names it


def test_the_proxies_the_operator_names_are_believed(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_forwarded_allow_ips="127.0.0.1")
    admin = server.token("root", admin=True)
    token = server.token("nell")
    with httpx.Client(base_url=server.url) as browser:
        signed_in = browser.post(
            "/api/login",
            json={"token": token},
            headers={**SAME_SITE, "X-Forwarded-For": "192.0.2.7"},
        )
        assert signed_in.status_code == 200, signed_in.text
    listed = httpx.get(f"{server.url}/api/users/nell/logins", headers=bearer(admin))
    assert [login["address"] for login in listed.json()] == ["192.0.2.7"]
