"""How long text is cut for an observation: its head and tail around a marker that counts
what was removed.

The sandbox cuts command output the same way (``runtime_image/chronicle_sandbox/output.py``
cannot import this package; a test keeps the two identical), so the model reads one format.
"""

from __future__ import annotations


def cut_middle(text: str, limit: int) -> tuple[str, int]:
    """``text`` with its middle replaced by a marker when it is over ``limit`` characters;
    and how many characters were removed (0: unchanged)."""
    if len(text) <= limit:
        return text, 0
    half = limit // 2
    removed = len(text) - 2 * half
    marker = f"\n[... {removed:,} characters truncated ...]\n"
    return text[:half] + marker + text[len(text) - half :], removed
