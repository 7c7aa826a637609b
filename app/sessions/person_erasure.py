"""``chronicle users erase NAME``: a person's sessions and personal data go, the record stays.

In order, so that a run cut short can be run again by the same name:

1. every session the user created is erased (``app.sessions.retention.erase_sessions``, policy
   ``person``); a session something runs stops it all before anything else changes;
2. in the platform log, the records that name the person have the name redacted (and the
   address of their sign-ins), and in every other session the events they sent or annotated
   have their ``user`` redacted: each with its ``redaction`` record, whose reason names the
   user by id only;
3. the user's row keeps its id (what owners, limits and usage name) under a name that says
   nothing; its tokens lose their labels, its logins their addresses (``chronicle_erase_user``);
4. ``audit.user_erased`` records it: the id, the new name, how many sessions and mentions.

The person's name is written nowhere by this: not in a reason, not in the record. An event
recorded before migration 0029 loses its whole payload (a part of it cannot go alone). What
it returns says which parts were redacted, with the strings they held (never serialized),
for the command to remove them from the copies on disk too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, Field

from app.errors import ChronicleError
from app.events.commitment import RedactionPathError, markers_in, part_at
from app.events.platform_audit import PLATFORM_LOG_ID, AuditUserErased
from app.sessions.archiving import Progress
from app.sessions.platform_audit import Actor
from app.sessions.retention import ErasureOutcome, erase_sessions
from app.sessions.sql.platform_audit import append_audit
from app.sessions.sql.retention_candidates import erase_user_row, named_in_log, owned_by, sent_by
from app.sessions.sql.users import UnknownUserError, find_user
from app.store import EventStore, RecordedEvent, RedactedPart, RedactionRefused

#: Records whose ``address`` is where the person signed in from.
SIGN_INS = frozenset({"audit.login", "audit.logout"})


class PersonNotErased(ChronicleError):
    """Nothing of the person's data was changed; the message says why. ``sessions``: those
    of their sessions that were erased all the same."""

    def __init__(self, message: str, sessions: ErasureOutcome) -> None:
        super().__init__(message)
        self.sessions = sessions


class PersonErased(BaseModel):
    user_id: UUID
    renamed_to: str
    sessions: ErasureOutcome
    #: Parts redacted: names in the platform log, sign-in addresses, senders elsewhere.
    redacted: int
    #: Places the name stays, with why (an event recorded before redaction was possible).
    kept: list[str] = []
    #: The parts redacted (for the copies on disk).
    parts: list[RedactedPart] = []
    #: The strings they held (the name, sign-in addresses): for the copies on disk only.
    texts: list[str] = Field(default=[], exclude=True, repr=False)


@dataclass
class _Mentions:
    """What the redaction of a person's mentions did."""

    records: list[RecordedEvent] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def erased_name(user_id: UUID) -> str:
    """The name an erased user keeps: its id's first 12 hex digits, nothing of the person."""
    return f"erased-{user_id.hex[:12]}"


async def erase_person(
    store: EventStore,
    name: str,
    *,
    key: Ed25519PrivateKey,
    actor: Actor,
    progress: Progress,
) -> PersonErased:
    """Erase ``name`` (see the module); ``store`` is the owner's (only it may change users)."""
    user = await find_user(store, name)
    if user is None:
        raise UnknownUserError(name)
    sessions = await owned_by(store, user.id)
    progress(f"erasing {len(sessions)} sessions of user {user.id}")
    outcome = await erase_sessions(
        store, sessions, key=key, actor=actor, policy="person", progress=progress
    )
    if outcome.skipped:
        left = ", ".join(f"{s.session_id} ({s.reason})" for s in outcome.skipped)
        raise PersonNotErased(
            f"{len(outcome.erased)} sessions erased, but not {left}: the user's data was not "
            "changed; deal with those and run it again",
            outcome,
        )
    reason = f"erasing a person (user {user.id})"
    mentions = await _redact_mentions(store, name, reason, actor)
    redacted = len(mentions.records)
    renamed = erased_name(user.id)
    await erase_user_row(store, user.id, renamed)
    await append_audit(
        store,
        AuditUserErased(
            **actor.fields(),
            user_id=user.id,
            renamed_to=renamed,
            sessions=len(outcome.erased),
            redacted=redacted,
        ),
    )
    return PersonErased(
        user_id=user.id,
        renamed_to=renamed,
        sessions=outcome,
        redacted=redacted,
        kept=mentions.kept,
        parts=[RedactedPart.of(record) for record in mentions.records],
        texts=[name, *mentions.texts],
    )


async def _redact_mentions(store: EventStore, name: str, reason: str, actor: Actor) -> _Mentions:
    """Redact the name in the platform log, their sign-in addresses, and the ``user`` of
    what they sent elsewhere; the records made, the addresses, the places kept with why."""
    done = _Mentions()
    for seq, kind, who in await named_in_log(store, PLATFORM_LOG_ID, name):
        try:
            if kind in SIGN_INS and who == name:
                await _redact_if_there(store, PLATFORM_LOG_ID, seq, "/address", reason, actor, done)
            done.records += await store.redact_matching(
                PLATFORM_LOG_ID,
                seq,
                lambda node: node == name,
                reason=reason,
                user=actor.name,
                whole_if_needed=True,
            )
        except RedactionRefused as exc:
            done.kept.append(f"platform log seq {seq}: {exc}")
    for session_id, seq in await sent_by(store, name, PLATFORM_LOG_ID):
        try:
            await _redact_if_there(store, session_id, seq, "/user", reason, actor, done)
        except RedactionRefused as exc:
            done.kept.append(f"session {session_id} seq {seq}: {exc}")
    return done


async def _redact_if_there(
    store: EventStore,
    session_id: UUID,
    seq: int,
    path: str,
    reason: str,
    actor: Actor,
    done: _Mentions,
) -> None:
    """Redact the part at ``path`` of one event if it holds something still (into ``done``:
    its records, and the part if it is a string)."""
    [event] = await store.read(session_id, after_seq=seq - 1, limit=1, resolve_blobs=False)
    try:
        part = part_at(event.stored_payload, path)
    except RedactionPathError:
        return
    if markers_in(part) or part is None:
        return
    done.records += await store.redact(
        session_id, seq, path, reason=reason, user=actor.name, whole_if_needed=True
    )
    if isinstance(part, str):
        done.texts.append(part)
