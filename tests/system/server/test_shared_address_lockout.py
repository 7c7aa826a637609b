"""A guesser behind the same address as real users (one proxy, one NAT, one machine) against a
real `chronicle serve`: its refused guesses block the address, and before, every request of
that address with credentials was then 429, the users' good tokens and browser logins too,
for as long as the guessing went on. Credentials the server has seen work still pass now; a
guess, and a credential it never saw, are still 429 before any lookup."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_guesser_does_not_lock_out_the_users_who_share_its_address(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_auth_failures="5", server_rate_limit="100000")
    token = server.token("ursula")
    later = server.token("victor")  # a real token nobody has used on this server yet
    browser = httpx.Client(base_url=server.url)
    signed_in = browser.post(
        "/api/login", json={"token": token}, headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert signed_in.status_code == 200, signed_in.text
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/api/me", headers=bearer(token)).status_code == 200
        guesses = [
            client.get("/api/me", headers=bearer(f"chr_guess{n:039d}")).status_code
            for n in range(30)
        ]
        assert guesses.count(429) >= 20, guesses  # the address is blocked

        assert client.get("/api/me", headers=bearer(token)).status_code == 200
        assert browser.get("/api/me").status_code == 200
        assert client.get("/api/me", headers=bearer("chr_one_more_guess")).status_code == 429
        assert client.get("/api/me", headers=bearer(later)).status_code == 429

        # a known credential revoked since is refused by its lookup, and forgotten
        listed = chronicle("tokens", "list", env=server.env).stdout
        token_id = next(line.split()[0] for line in listed.splitlines() if " ursula " in line)
        assert chronicle("tokens", "revoke", token_id, env=server.env).returncode == 0
        assert client.get("/api/me", headers=bearer(token)).status_code == 401
        assert client.get("/api/me", headers=bearer(token)).status_code == 429
        assert browser.get("/api/me").status_code == 401  # the login ended with its token
    browser.close()
