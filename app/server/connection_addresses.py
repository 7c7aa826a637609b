"""How many connections each client address holds open, so one address cannot take every place
under the connection cap.

The cap on connections (``http_protocol``) keeps a process within its descriptors, but counts
every connection alike: one client that keeps opening sockets (each held up to the header
deadline, then opened again) filled it and kept everyone else out with 503, without a token.
So each peer address may hold at most ``per_address`` of them (an IPv6 client is counted by its
/64, which one host is usually given whole). The proxies the operator names
(``server_forwarded_allow_ips``) are not counted: every client behind one arrives from its
address, and limiting its clients is the proxy's job.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from app.errors import ChronicleError

#: The networks a host's IPv6 addresses are counted by.
IPV6_PREFIX = 64


def address_key(host: str) -> str:
    """The key a peer's connections are counted under: its IPv4 address, or its IPv6 /64."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a unix socket's peer, or something uvicorn does not give: as it is
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)


def trusted_networks(
    forwarded_allow_ips: str,
) -> tuple[bool, list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    """The proxies named in ``server_forwarded_allow_ips``: (any address, the networks)."""
    networks = []
    names = [part.strip() for part in forwarded_allow_ips.split(",") if part.strip()]
    for name in names:
        try:
            networks.append(ipaddress.ip_network(name, strict=False))
        except ValueError:
            continue  # a unix socket path uvicorn accepts there: no peer address to match
    return "*" in names, networks


@dataclass
class AddressCounts:
    """The open connections of each address (only those counted), within ``per_address``."""

    per_address: int
    forwarded_allow_ips: str = ""
    open: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._any_trusted, self._trusted = trusted_networks(self.forwarded_allow_ips)

    def _exempt(self, host: str) -> bool:
        if self._any_trusted:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self._trusted)

    def take(self, host: str | None) -> str | None:
        """Count one more connection of ``host``: the key to give back when it closes, None
        when it is not counted; raises ``AddressFull`` when the address holds its most."""
        if host is None or self._exempt(host):
            return None
        key = address_key(host)
        held = self.open.get(key, 0)
        if held >= self.per_address:
            raise AddressFull(self.per_address)
        self.open[key] = held + 1
        return key

    def give_back(self, key: str | None) -> None:
        if key is None:
            return
        held = self.open.get(key, 0) - 1
        if held > 0:
            self.open[key] = held
        else:
            self.open.pop(key, None)


class AddressFull(ChronicleError):
    """The client's address holds as many connections as one address may."""

    def __init__(self, per_address: int) -> None:
        super().__init__(
            f"this address has {per_address} connections open, as many as one address may; "
            "close some, or retry in a moment"
        )
