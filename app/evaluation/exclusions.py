"""Trials a report counts apart, outside its pass rate (docs/evaluation.md, "Erased and
redacted trials"): nothing says whether they passed, and counting them as failures would
lower a rate for a reason that has nothing to do with the agent.

- **erased**: the trial's session was erased (its events deleted under a retention policy or
  a person's request; its signed tombstone stays). Its verdicts went with it, and so did its
  task and epoch.
- **redacted**: a replay of the trial (in a replay run, ``chronicle eval replay``) stopped at
  a ``redacted`` divergence, so whether today's agent matches it cannot be told; or a verdict
  that counts on the trial had its label redacted.

A trial whose session was redacted but still holds its verdicts counts as usual: it was run
and judged when it was recorded, and a redaction removes content, not the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.evaluation.sql.erased_trials import ErasedSession
from app.evaluation.sql.evaluation_results import EvaluationRow, ReplayRow
from app.events.commitment import is_redacted

#: The kind of a replay's divergence that stopped at a redacted part (``app.replay``).
REDACTED = "redacted"


class ExcludedTrial(BaseModel):
    """A trial left out of the pass rate: why (``erased`` or ``redacted``) in words."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["erased", "redacted"]
    session_id: UUID
    #: None for an erased trial: its task and epoch went with its events
    task_id: str | None = None
    epoch: int | None = None
    note: str


def redacted_verdicts(labels: dict[str, str | None]) -> list[str]:
    """The scorers whose counting label was redacted: the report views read a label as text,
    so a redacted one reads as its marker's JSON."""
    found = []
    for name, label in sorted(labels.items()):
        if label is None or not label.startswith("{"):
            continue
        try:
            stored = json.loads(label)
        except json.JSONDecodeError:
            continue
        if is_redacted(stored):
            found.append(name)
    return found


def set_apart(
    rows: Sequence[EvaluationRow],
    replays: Sequence[ReplayRow] = (),
    erased: Sequence[ErasedSession] = (),
) -> tuple[list[EvaluationRow], list[ExcludedTrial]]:
    """The rows that count, and the trials set apart (erased ones first)."""
    stopped = {r.session_id: r.divergence for r in replays if r.divergence_kind == REDACTED}
    excluded = [
        ExcludedTrial(kind="erased", session_id=gone.session_id, note=gone.describe())
        for gone in erased
    ]
    counted: list[EvaluationRow] = []
    for row in rows:
        if row.session_id in stopped:
            note = f"its replay cannot go on: {stopped[row.session_id] or 'a part was redacted'}"
        elif names := redacted_verdicts(row.labels):
            note = f"the verdict of {', '.join(names)} was redacted"
        else:
            counted.append(row)
            continue
        excluded.append(
            ExcludedTrial(
                kind="redacted",
                session_id=row.session_id,
                task_id=row.task_id or str(row.session_id),
                epoch=row.epoch or 1,
                note=note,
            )
        )
    return counted, excluded
