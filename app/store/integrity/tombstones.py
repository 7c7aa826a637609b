"""Tombstones: the signed record an erased session leaves in its ``sessions`` row.

An erasure deletes a session's events; what stays proves what was there and that it went on
purpose: the session id, how many events it had and its last hash (what an anchor of it
signed), who erased it, when, and by which policy, signed with the deployment's Ed25519 anchor
key. ``verify`` checks the signature with the trusted public key and the session's anchors
against the signed head, and tells an erasure from a deletion (a session gone with no
tombstone). Signatures cover a context prefix of their own, so a tombstone's signature means
nothing as an anchor and an anchor's nothing as a tombstone.

Pure logic: signing a tombstone and checking one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field

from app.events.canonical import canonical_json, format_timestamp
from app.store.integrity.anchors import HEX_SHA256, key_id

SIGNING_CONTEXT = b"chronicle tombstone v1\n"


class Tombstone(BaseModel):
    """``session_id`` had ``last_seq`` events ending with ``last_hash`` when ``erased_by``
    erased it at ``erased_at`` under ``policy``; signed by ``key_id``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: UUID
    last_seq: int = Field(ge=1)
    last_hash: str = Field(pattern=HEX_SHA256)
    erased_at: datetime
    erased_by: str = Field(min_length=1, max_length=200)
    policy: str = Field(min_length=1, max_length=200)
    key_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    signature: str = Field(pattern=r"^[0-9a-f]{128}$")


def _signed_bytes(
    session_id: UUID,
    last_seq: int,
    last_hash: str,
    erased_at: datetime,
    erased_by: str,
    policy: str,
    signer: str,
) -> bytes:
    document = canonical_json(
        {
            "erased_at": format_timestamp(erased_at),
            "erased_by": erased_by,
            "key_id": signer,
            "last_hash": last_hash,
            "last_seq": last_seq,
            "policy": policy,
            "session_id": str(session_id),
        }
    )
    return SIGNING_CONTEXT + document.encode()


def exact_moment(moment: datetime) -> datetime:
    """``moment`` in UTC at the microsecond, as it is signed and stored."""
    text = format_timestamp(moment.astimezone(UTC))
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def sign_tombstone(
    private_key: Ed25519PrivateKey,
    session_id: UUID,
    last_seq: int,
    last_hash: bytes,
    *,
    erased_by: str,
    policy: str,
    erased_at: datetime | None = None,
) -> Tombstone:
    """Sign that ``session_id`` (``last_seq`` events, ending with ``last_hash``) is erased."""
    moment = exact_moment(erased_at or datetime.now(UTC))
    signer = key_id(private_key.public_key())
    signed = _signed_bytes(session_id, last_seq, last_hash.hex(), moment, erased_by, policy, signer)
    return Tombstone(
        session_id=session_id,
        last_seq=last_seq,
        last_hash=last_hash.hex(),
        erased_at=moment,
        erased_by=erased_by,
        policy=policy,
        key_id=signer,
        signature=private_key.sign(signed).hex(),
    )


def tombstone_problem(tombstone: Tombstone, trusted: Ed25519PublicKey) -> str | None:
    """Why ``tombstone`` is not one the ``trusted`` key made, or None when it is."""
    trusted_id = key_id(trusted)
    if tombstone.key_id != trusted_id:
        return (
            f"its tombstone names key {tombstone.key_id}, not the trusted key {trusted_id}: "
            "this deployment did not sign it"
        )
    signed = _signed_bytes(
        tombstone.session_id,
        tombstone.last_seq,
        tombstone.last_hash,
        tombstone.erased_at,
        tombstone.erased_by,
        tombstone.policy,
        tombstone.key_id,
    )
    try:
        trusted.verify(bytes.fromhex(tombstone.signature), signed)
    except InvalidSignature:
        return "its tombstone's signature is not the trusted key's (a forged or edited tombstone)"
    return None
