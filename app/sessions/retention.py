"""Erasing sessions: by hand (``chronicle erase``), by a retention policy (``chronicle
retention run`` and the projection runner), and for a person (``chronicle users erase``).

Each erasure is ``app.store.erase_session``: the events, blobs and prompt messages go, a
tombstone signed with the anchor key stays in the session's row, and the platform log records
it. A policy that says ``archive_to`` first writes the sessions to a new, verified archive
directory with their anchors (``chronicle archive``'s own path), and erases only what that
archive holds. A session something runs is never erased; one that took an event after it was
chosen is left for the next round (the database refuses the stale tombstone).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel

from app.config import Settings
from app.config.groups import RetentionConfig, RetentionPolicy
from app.errors import ChronicleError
from app.projections.periodic import every
from app.projections.runner import Upkeep
from app.sessions.archiving import ArchiveRequest, Progress, archive_sessions
from app.sessions.platform_audit import Actor
from app.sessions.sql.archive_candidates import quiet_sessions
from app.sessions.sql.retention_candidates import (
    archived_in,
    matching,
    retention_round,
    running,
)
from app.store import (
    ErasedSession,
    ErasureRefused,
    EventStore,
    admin_database_url,
    erase_session,
    remove_sessions_on_disk,
)
from app.store.integrity import signing_key

log = logging.getLogger(__name__)


class ErasureProblem(ChronicleError):
    """Nothing was erased; the message says why (one line)."""


class Skipped(BaseModel):
    session_id: UUID
    reason: str


class ErasureOutcome(BaseModel):
    """What one policy (or one request) erased, archived and left."""

    policy: str
    chosen: list[UUID] = []
    erased: list[ErasedSession] = []
    skipped: list[Skipped] = []
    archived_to: Path | None = None


async def erase_sessions(
    store: EventStore,
    sessions: Sequence[UUID],
    *,
    key: Ed25519PrivateKey,
    actor: Actor,
    policy: str,
    progress: Progress | None = None,
) -> ErasureOutcome:
    """Erase each of ``sessions`` under ``policy``; one something runs, or the database
    refuses, is skipped with its reason (the others go on)."""
    outcome = ErasureOutcome(policy=policy, chosen=list(sessions))
    busy = await running(store, sessions)
    for number, session_id in enumerate(sessions, start=1):
        if session_id in busy:
            outcome.skipped.append(
                Skipped(session_id=session_id, reason="it is running (stop it first)")
            )
            continue
        try:
            done = await erase_session(
                store,
                session_id,
                key=key,
                actor=actor.name,
                via=actor.via,
                address=actor.address,
                policy=policy,
            )
        except ErasureRefused as exc:
            outcome.skipped.append(Skipped(session_id=session_id, reason=str(exc)))
            continue
        outcome.erased.append(done)
        if progress is not None:
            progress(
                f"erased {session_id} ({number}/{len(sessions)}, {done.events_deleted} events)",
                steady=True,
            )
    return outcome


async def due(
    store: EventStore, policy: RetentionPolicy, now: datetime | None = None
) -> list[UUID]:
    """The sessions ``policy`` erases now: ended at least ``after_days`` ago, not archived,
    not erased, and named by its filters."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=policy.after_days)
    ended = [c.session_id for c in await quiet_sessions(store, cutoff) if c.ended]
    if not ended:
        return []
    return await matching(
        store,
        ended,
        users=policy.users,
        tags=policy.tags,
        evaluation_runs=policy.evaluation_runs,
    )


async def apply_policy(
    store: EventStore,
    policy: RetentionPolicy,
    *,
    key: Ed25519PrivateKey,
    actor: Actor,
    progress: Progress,
    now: datetime | None = None,
) -> ErasureOutcome:
    """One round of ``policy``: archive (if it says so) and erase what is due."""
    moment = now or datetime.now(UTC)
    chosen = await due(store, policy, moment)
    if not chosen:
        return ErasureOutcome(policy=policy.name)
    archived_to = None
    if policy.archive_to is not None:
        directory = policy.archive_to / f"{policy.name}-{moment.strftime('%Y%m%dT%H%M%SZ')}"
        progress(f"policy {policy.name}: archiving {len(chosen)} sessions to {directory}")
        archived = await archive_sessions(
            store,
            ArchiveRequest(
                before=moment - timedelta(days=policy.after_days),
                directory=directory,
                actor=actor,
                detach=False,
                only=frozenset(chosen),
            ),
            key,
            progress,
        )
        if archived is None:
            return ErasureOutcome(policy=policy.name)
        archived_to = archived.directory
        in_archive = await archived_in(store, chosen, archived.directory)
        chosen = [session for session in chosen if session in in_archive]
    progress(f"policy {policy.name}: erasing {len(chosen)} sessions")
    outcome = await erase_sessions(
        store, chosen, key=key, actor=actor, policy=policy.name, progress=progress
    )
    return outcome.model_copy(update={"archived_to": archived_to})


async def apply_retention(
    store: EventStore,
    config: RetentionConfig,
    *,
    key: Ed25519PrivateKey,
    actor: Actor,
    progress: Progress,
) -> list[ErasureOutcome] | None:
    """One round of every policy, in order; None when another process holds the round."""
    async with retention_round(store) as held:
        if not held:
            return None
        return [
            await apply_policy(store, policy, key=key, actor=actor, progress=progress)
            for policy in config.policies
        ]


async def owner_store(settings: Settings) -> EventStore:
    """The store through the database owner's login, without a statement timeout: an archive
    marks sessions archived, which only the owner may (migration 0027)."""
    database = settings.database_config()
    url = await asyncio.to_thread(admin_database_url, database)
    return await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    )


async def keep_retention(settings: Settings, key: Ed25519PrivateKey, stop: asyncio.Event) -> None:
    """Where projections run: a round of the policies every ``retention.interval`` seconds,
    each through the owner's login (opened for the round)."""
    actor = Actor(name="chronicle:retention", via="cli")

    def quiet(text: str, *, steady: bool = False) -> None:
        (log.debug if steady else log.info)("retention: %s", text)

    async def round_() -> None:
        try:
            async with await owner_store(settings) as store:
                outcomes = await apply_retention(
                    store, settings.retention, key=key, actor=actor, progress=quiet
                )
                await _off_the_disk(store, settings, key, outcomes or [])
        except ChronicleError as exc:  # an archive refused, say: the next round tries again
            log.warning("retention: a round failed: %s", exc)
            return
        for outcome in outcomes or []:
            if outcome.erased or outcome.skipped:
                log.info(
                    "retention: policy %s erased %d sessions, skipped %d",
                    outcome.policy,
                    len(outcome.erased),
                    len(outcome.skipped),
                )

    await every(
        settings.retention.interval,
        stop,
        round_,
        log=log,
        failed="retention: a round failed",
        unreachable="retention: could not reach the database",
    )


async def _off_the_disk(
    store: EventStore,
    settings: Settings,
    key: Ed25519PrivateKey,
    outcomes: list[ErasureOutcome],
) -> None:
    """What a round erased, out of the exports and archives this machine's disk holds (as
    ``chronicle retention run`` does), but for the archives the policies wrote first."""
    erased = [done.tombstone.session_id for outcome in outcomes for done in outcome.erased]
    if not erased:
        return
    report = await remove_sessions_on_disk(
        store,
        erased,
        data_dir=settings.data_dir,
        key=key,
        keep=[outcome.archived_to for outcome in outcomes if outcome.archived_to is not None],
    )
    for change in report.changes:
        log.info("retention: on disk: %s", change)
    for left in report.left:
        log.warning("retention: a copy on disk still holds erased sessions: %s", left)


def retention_upkeep(settings: Settings) -> list[Upkeep]:
    """What ``running_projections`` runs beside the runners for the retention policies:
    nothing without a policy; the anchor key is read (or made) once, here."""
    if not settings.retention.policies:
        return []
    key, _, _ = signing_key(settings.anchor_key_file, settings.data_dir)
    return [functools.partial(keep_retention, settings, key)]
