"""A tiny PostgreSQL client (standard library only): does anything answer a StartupMessage?

Runs on the host and inside a sandbox (copied into the workspace, run with the jail's
``python3``):

    python3 pg_probe.py '{"unix": ["/path/.s.PGSQL.5432"], "tcp": [["127.0.0.1", 5432]]}'

prints one JSON list with, per target, whether a connection was made and the first bytes of
the reply (``R`` is PostgreSQL asking for authentication, ``E`` an error report: either way
a server answered). Also lists the host's listening TCP sockets (``listening_tcp``).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import sys
from typing import Any

PROTOCOL_3 = 196608
LISTEN = "0A"


def startup_message(user: str = "postgres", database: str = "postgres") -> bytes:
    body = struct.pack("!I", PROTOCOL_3)
    for key, value in (("user", user), ("database", database)):
        body += key.encode() + b"\0" + value.encode() + b"\0"
    body += b"\0"
    return struct.pack("!I", len(body) + 4) + body


def _ask(sock: socket.socket, target: str) -> dict[str, Any]:
    result: dict[str, Any] = {"target": target, "connected": True, "reply": ""}
    try:
        sock.sendall(startup_message())
        result["reply"] = sock.recv(64).decode("latin-1")
    except OSError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    return result


def probe_unix(path: str, timeout: float = 2.0) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:
            return {"target": path, "connected": False, "error": f"{type(exc).__name__}: {exc}"}
        return _ask(sock, path)


def probe_tcp(host: str, port: int, timeout: float = 2.0) -> dict[str, Any]:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect((host, port))
        except OSError as exc:
            return {"target": target, "connected": False, "error": f"{type(exc).__name__}: {exc}"}
        return _ask(sock, target)


def answered(result: dict[str, Any]) -> bool:
    return bool(result.get("connected")) and bool(result.get("reply"))


def _address(hex_address: str) -> str:
    """An address from /proc/net/tcp{,6} (little-endian 32-bit words) as text."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def listening_tcp() -> list[tuple[str, int]]:
    """Every listening TCP socket this machine has, as (address to dial, port)."""
    found: set[tuple[str, int]] = set()
    for table, anywhere in (("/proc/net/tcp", "127.0.0.1"), ("/proc/net/tcp6", "::1")):
        try:
            with open(table) as handle:
                lines = handle.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != LISTEN:
                continue
            hex_address, hex_port = fields[1].split(":")
            address = _address(hex_address)
            if ipaddress.ip_address(address).is_unspecified:
                address = anywhere
            elif isinstance(ipaddress.ip_address(address), ipaddress.IPv6Address):
                mapped = ipaddress.IPv6Address(address).ipv4_mapped
                address = str(mapped) if mapped else address
            found.add((address, int(hex_port, 16)))
    return sorted(found)


def main() -> None:
    targets = json.loads(sys.argv[1])
    results = [probe_unix(path) for path in targets.get("unix", [])]
    results += [probe_tcp(host, int(port), timeout=1.0) for host, port in targets.get("tcp", [])]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
