"""The frames of a hijacked ``docker exec`` stream (app/runtime/docker/exec_bridge.py), read
whole however the engine's bytes arrive: a TLS engine's records split them anywhere."""

from __future__ import annotations

from app.runtime.docker.exec_bridge import HEADER, frames


class _Pieces:
    """A hijacked exec stream handing out its bytes in awkward pieces."""

    def __init__(self, data: bytes, size: int) -> None:
        self.pieces = [data[i : i + size] for i in range(0, len(data), size)]

    def recv(self, _: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def test_exec_frames_are_read_whole_however_the_bytes_arrive() -> None:
    def frame(stream: int, data: bytes) -> bytes:
        return HEADER.pack(stream, len(data)) + data

    wire = frame(1, b"HTTP/1.1 200 OK\r\n") + frame(2, b"a complaint") + frame(1, b"x" * 70_000)
    wire += frame(1, b"")
    for size in (1, 7, 8, 9, 65536, len(wire)):
        assert list(frames(_Pieces(wire, size))) == [
            (1, b"HTTP/1.1 200 OK\r\n"),
            (2, b"a complaint"),
            (1, b"x" * 70_000),
            (1, b""),
        ], size
    assert list(frames(_Pieces(wire[:-3], 5)))[-1] == (1, b"x" * 70_000)  # cut short: ends
