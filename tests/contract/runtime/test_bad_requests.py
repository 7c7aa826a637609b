"""One bad request never takes down the sandbox: it gets its own answer, the rest goes on.

Before: ``view`` of a directory holding a file name that is not UTF-8 put a lone surrogate in
the JSON reply, encoding it raised inside the handler, the connection was dropped, and the
client (and with it the executor) took the sandbox for dead: every later action of the
session answered "the sandbox is unavailable". A negative ``Content-Length`` made the
handler read until the client hung up. (The server's own failures, idle connections and
connection bound: tests/system/runtime/test_action_server.py.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.events import (
    ErrorObservation,
    FileEdit,
    FileEditOutput,
    FileRead,
    FileReadOutput,
    FileWrite,
    Run,
    RunOutput,
)
from app.runtime import Runtime
from tests.support.sandbox_server import exchange
from tests.support.sandboxes import client_of, still_works


async def test_view_lists_names_that_are_not_utf8(runtime: Runtime, workspace: Path) -> None:
    (workspace / "caf\udce9.txt").write_bytes(b"latin-1 name\n")  # the name's byte is 0xe9
    (workspace / "dir\udcff").mkdir()
    (workspace / "dir\udcff" / "inner.txt").write_bytes(b"inside\n")
    assert os.fsencode(workspace / "caf\udce9.txt").endswith(b"/caf\xe9.txt")
    listing = await runtime.execute(FileEdit(command="view", path="."))
    assert isinstance(listing, FileEditOutput), listing
    assert "caf\\xe9.txt" in listing.content  # shown escaped, as valid text
    assert "dir\\xff/" in listing.content and "dir\\xff/inner.txt" in listing.content
    listing.content.encode("utf-8")  # no lone surrogate reached us
    await still_works(runtime)
    # The same name given back as a lone surrogate (how Python spells an undecodable byte)
    # names the file; the path in the answer is escaped the same way.
    read = await runtime.execute(FileRead(path="caf\udce9.txt"))
    assert isinstance(read, FileReadOutput), read
    assert read.content == "     1\tlatin-1 name" and read.path == "caf\\xe9.txt"
    await still_works(runtime)


async def test_lone_surrogates_in_actions_get_answers(runtime: Runtime, workspace: Path) -> None:
    ran = await runtime.execute(Run(command="printf 'caf\udce9\\n' > raw.txt; echo done"))
    assert isinstance(ran, RunOutput) and ran.output == "done\n", ran
    assert (workspace / "raw.txt").read_bytes() == b"caf\xe9\n"  # the byte it stands for
    written = await runtime.execute(FileWrite(path="text.txt", content="caf\udce9"))
    assert isinstance(written, ErrorObservation), written
    assert "not valid text" in written.message
    assert not (workspace / "text.txt").exists()
    odd_path = await runtime.execute(FileRead(path="\ud800.txt"))  # no byte stands for it
    assert isinstance(odd_path, ErrorObservation), odd_path
    assert "not a valid file name" in odd_path.message
    await still_works(runtime)


@pytest.mark.parametrize("length", ["-1", "-999999", "99999999999999999999999", "1e3", "1_0"])
async def test_negative_or_absurd_content_length_is_a_400(runtime: Runtime, length: str) -> None:
    client = client_of(runtime)
    request = (
        f"POST /execute HTTP/1.1\r\nHost: sandbox\r\nAuthorization: Bearer {client.token}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    assert client.unix_socket is not None
    status, body = exchange(client.unix_socket, request, timeout=10)  # before: no answer
    assert status == 400 and b"Content-Length" in body
    await still_works(runtime)
