"""A toy I/O scorer, written as a scorer outside the app would be: it proves the extension
point (one module with the scorer, one registration) without a sandbox."""

from __future__ import annotations

import asyncio

from app.evaluation.scoring import Score, ScoringContext


class ReadmeWritten:
    """Pass when the trial's own final workspace holds a README.md: it reads the disk, so it
    is not pure, and it does not apply later, when that workspace may be gone."""

    name = "readme_written"
    version = 1
    pure = False

    async def judge(self, context: ScoringContext) -> Score | None:
        if context.workspace is None:
            return None
        found = await asyncio.to_thread((context.workspace / "README.md").is_file)
        return Score.verdict(found, "README.md " + ("is" if found else "is not") + " written")
