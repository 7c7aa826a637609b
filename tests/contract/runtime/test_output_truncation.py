"""The truncation marker counts the characters that were actually removed.

A command's output over 30,000 characters keeps 15,000 from the start and 15,000 from the
end; the marker between them says how many characters are missing. Before: bytes were
capped while the output streamed (keeping 60,000 from each end) and the text was cut again
after decoding, so above ~120k characters the marker counted only what the second cut
removed (or named bytes, never the total): 200,000 ASCII characters were reported as
"90,000 characters truncated" where 170,000 were gone.
"""

from __future__ import annotations

import re

import pytest

from app.events import Run, RunOutput
from app.runtime import Runtime

KEPT = 15_000  # from each end, of the default 30,000
MARKER = re.compile(r"\n\[\.\.\. ([\d,]+) characters truncated \.\.\.\]\n")
UNITS = {
    "ascii": "0123456789abcdefghijklmnopqrstuvwxyz",
    "multibyte": "a\u00e9\u20ac\U0001f600\u4e2d",  # 1, 2, 3, 4 and 3 bytes in UTF-8
}


def printed(unit: str, count: int) -> str:
    return (unit * (count // len(unit) + 1))[:count]


@pytest.mark.parametrize("count", [50_000, 200_000, 10_000_000])
@pytest.mark.parametrize("alphabet", ["ascii", "multibyte"])
async def test_the_marker_counts_what_was_removed(
    runtime: Runtime, count: int, alphabet: str
) -> None:
    unit = UNITS[alphabet]
    escaped = unit.encode("ascii", "backslashreplace").decode()  # the command stays ASCII
    program = (
        f"import sys; u = '{escaped}'; "
        f"sys.stdout.buffer.write(((u * ({count} // len(u) + 1))[:{count}]).encode())"
    )
    result = await runtime.execute(Run(command=f'python3 -c "{program}"', timeout=120))
    assert isinstance(result, RunOutput) and result.exit_code == 0, result
    assert result.truncated
    expected = printed(unit, count)
    found = MARKER.search(result.output)
    assert found, result.output[KEPT - 100 : KEPT + 200]
    head, tail = result.output[: found.start()], result.output[found.end() :]
    assert len(head) == KEPT and len(tail) == KEPT
    assert expected.startswith(head) and expected.endswith(tail)
    assert int(found.group(1).replace(",", "")) == count - 2 * KEPT
