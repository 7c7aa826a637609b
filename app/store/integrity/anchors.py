"""Signed heads ("anchors"): a session's last seq and head hash, signed with an Ed25519 key.

The hash chain proves that events were not changed *unless the whole chain was recomputed*,
which anyone who can write the table can do. An anchor closes that gap: the head at a moment,
signed by a key kept outside the database and stored outside it (a JSONL file), so a rewritten,
truncated or deleted session no longer matches what was signed. Only the trusted public key
(the deployment's, never one found in an anchors file) can make a record valid.

Pure logic, no I/O but reading an anchors file: signing a record and checking one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.events.canonical import canonical_json, format_timestamp
from app.store.errors import StoreError

#: Signatures cover this prefix too, so an anchor signature means nothing anywhere else.
SIGNING_CONTEXT = b"chronicle anchor v1\n"

HEX_SHA256 = r"^[0-9a-f]{64}$"


class AnchorFileError(StoreError):
    """An anchors file that cannot be read as anchor records (names the line)."""


class AnchorRecord(BaseModel):
    """One signed head: ``session_id`` had ``last_seq`` events ending with hash ``head``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: UUID
    last_seq: int = Field(ge=1)
    head: str = Field(pattern=HEX_SHA256, description="sha256 hex of event last_seq")
    anchored_at: datetime
    key_id: str = Field(pattern=r"^[0-9a-f]{32}$", description="which key signed it")
    signature: str = Field(pattern=r"^[0-9a-f]{128}$", description="Ed25519, hex")

    def to_line(self) -> str:
        """The record as one JSONL line (no newline)."""
        return self.model_dump_json()


def key_id(public_key: Ed25519PublicKey) -> str:
    """A short name for a key: the first 16 bytes of sha256 of its raw public bytes, hex."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:32]


def _signed_bytes(
    session_id: UUID, last_seq: int, head: str, anchored_at: datetime, signer: str
) -> bytes:
    document = canonical_json(
        {
            "anchored_at": format_timestamp(anchored_at),
            "head": head,
            "key_id": signer,
            "last_seq": last_seq,
            "session_id": str(session_id),
        }
    )
    return SIGNING_CONTEXT + document.encode()


def sign_anchor(
    private_key: Ed25519PrivateKey,
    session_id: UUID,
    last_seq: int,
    head: bytes,
    anchored_at: datetime | None = None,
) -> AnchorRecord:
    """Sign that ``session_id`` had ``last_seq`` events ending with hash ``head``."""
    moment = (anchored_at or datetime.now(UTC)).astimezone(UTC)
    # The record carries the time as signed: microseconds, UTC.
    moment = datetime.strptime(format_timestamp(moment), "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=UTC
    )
    signer = key_id(private_key.public_key())
    signature = private_key.sign(_signed_bytes(session_id, last_seq, head.hex(), moment, signer))
    return AnchorRecord(
        session_id=session_id,
        last_seq=last_seq,
        head=head.hex(),
        anchored_at=moment,
        key_id=signer,
        signature=signature.hex(),
    )


def anchor_problem(record: AnchorRecord, trusted: Ed25519PublicKey) -> str | None:
    """Why ``record`` is not a valid anchor by the ``trusted`` key, or None when it is."""
    trusted_id = key_id(trusted)
    if record.key_id != trusted_id:
        return (
            f"the anchor of seq {record.last_seq} names key {record.key_id}, not the trusted "
            f"key {trusted_id}: it was not signed by this deployment"
        )
    message = _signed_bytes(
        record.session_id, record.last_seq, record.head, record.anchored_at, record.key_id
    )
    try:
        trusted.verify(bytes.fromhex(record.signature), message)
    except InvalidSignature:
        return (
            f"the anchor of seq {record.last_seq} has a signature the trusted key did not make "
            "(a forged or edited anchor)"
        )
    return None


def parse_anchors(lines: Iterator[str] | list[str], source: str = "anchors") -> list[AnchorRecord]:
    """Anchor records from JSONL lines (blank lines ignored); a bad line names itself."""
    records: list[AnchorRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(AnchorRecord.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "record"
            raise AnchorFileError(
                f"{source}, line {number}: not an anchor record ({where}: {problem['msg']})"
            ) from None
    return records


def read_anchors(path: Path) -> list[AnchorRecord]:
    """The records of an anchors file (JSONL, as `chronicle anchor` writes it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AnchorFileError(f"cannot read the anchors file {path}: {exc.strerror}") from None
    return parse_anchors(text.splitlines(), str(path))
