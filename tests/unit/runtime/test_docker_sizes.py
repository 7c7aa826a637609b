"""The local sandbox's limits take sizes as Docker writes them (``sandbox_memory = "4g"`` is
also the Docker sandbox's memory), read as Docker's SDK reads them, without importing it."""

from __future__ import annotations

import pytest
from docker.utils import parse_bytes

from app.runtime.local.limits import SandboxLimits, size_in_bytes


@pytest.mark.parametrize("text", ["4g", "512m", "10g", "1.5k", "2048", "10gb", "512MB", "3K"])
def test_a_size_is_read_as_docker_reads_it(text: str) -> None:
    assert size_in_bytes(text) == parse_bytes(text)


def test_an_empty_size_is_no_limit_and_a_wrong_one_an_error() -> None:
    assert size_in_bytes("") is None
    assert SandboxLimits(file_size_bytes="").file_size_bytes is None  # type: ignore[arg-type]
    assert SandboxLimits(memory_bytes="512m").memory_bytes == 512 * 1024**2  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a size as Docker writes it"):
        SandboxLimits(memory_bytes="four gigs")  # type: ignore[arg-type]
