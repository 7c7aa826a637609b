"""Progress of a long command on stderr: one line at most every second (and the first), so a
run over thousands of sessions says it is alive without flooding the terminal."""

from __future__ import annotations

import sys
import time


class StderrProgress:
    """``progress(text)`` prints ``<command>: text``; a ``steady`` line (one of many alike)
    only when a second has passed since the last one printed."""

    def __init__(self, command: str, interval: float = 1.0) -> None:
        self.command = command
        self.interval = interval
        self.last = 0.0

    def __call__(self, text: str, *, steady: bool = False) -> None:
        now = time.monotonic()
        if not steady or now - self.last >= self.interval:
            print(f"{self.command}: {text}", file=sys.stderr, flush=True)
            self.last = now
