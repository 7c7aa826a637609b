"""An archive directory's manifest: what it holds, and how to prove it without a database.

``chronicle archive`` writes a directory::

    manifest.json          this model: sessions, counts, sha256 of every other file
    manifest.sig           manifest.json's bytes signed with the anchor key (Ed25519, hex)
    sessions.jsonl         the export format (app/store/archive/lines.py), every session whole
    anchors.jsonl          one signed head (app/store/integrity/anchors.py) per session
    events.parquet         one row per event, for analysts (app/store/archive/parquet.py)
    sessions.parquet       one row per session: the ``sessions`` head as the database had it
    llm_messages.parquet   the prompt messages the llm.call events name
    session_state.parquet  the session list's row of each session, as the projection had it

The manifest names every file with its sha256 and size, and every session with its event
count, head hash and the anchor it was checked against. Its own sha256 is what each archived
session's ``sessions`` row records (``archive_manifest``): the database points at exactly
this manifest, and the manifest at exactly these bytes. The manifest is signed with the key
that signs the anchors, so that with the trusted public key no byte of it (who archived,
when, DATE) can change unseen either, without a database.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Literal
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.store.errors import StoreError
from app.store.integrity.anchors import AnchorRecord

MANIFEST = "manifest.json"
MANIFEST_SIGNATURE = "manifest.sig"
#: The signature covers this prefix too, so it means nothing anywhere else.
MANIFEST_CONTEXT = b"chronicle archive manifest v1\n"
SESSIONS_JSONL = "sessions.jsonl"
ANCHORS = "anchors.jsonl"
EVENTS_PARQUET = "events.parquet"
SESSIONS_PARQUET = "sessions.parquet"
MESSAGES_PARQUET = "llm_messages.parquet"
SESSION_STATE_PARQUET = "session_state.parquet"
#: The Parquet files and the table each one is (``chronicle sql --archive`` names them so).
PARQUET_TABLES = {
    "events": EVENTS_PARQUET,
    "sessions": SESSIONS_PARQUET,
    "llm_messages": MESSAGES_PARQUET,
    "session_state": SESSION_STATE_PARQUET,
}
Sha256Hex = str
HEX64 = "^[0-9a-f]{64}$"


class ManifestError(StoreError):
    """A directory that is not a readable archive (no manifest, or not one)."""


class ArchivedFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sha256: str = Field(pattern=HEX64)
    bytes: int = Field(ge=0)
    #: Rows of a Parquet file (None for the JSONL files).
    rows: int | None = None


class ArchivedSession(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: UUID
    events: int = Field(ge=1)
    head: str = Field(pattern=HEX64)
    first_event_at: datetime
    last_event_at: datetime
    #: The head signed when it was archived (in anchors.jsonl too).
    anchor: AnchorRecord
    #: The latest anchor from the operator's anchors file it was checked against, if given.
    checked_against: AnchorRecord | None = None


class ArchiveManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["chronicle.archive"] = "chronicle.archive"
    version: Literal[1] = 1
    #: Sessions that ended before this moment (``--before``).
    before: datetime
    archived_at: datetime
    archived_by: str
    #: The key that signed the anchors (its id; the public key itself is never trusted from
    #: the archive: ``verify --file`` takes it from the deployment).
    key_id: str = Field(pattern="^[0-9a-f]{32}$")
    sessions: list[ArchivedSession]
    events: int = Field(ge=0)
    files: dict[str, ArchivedFile]

    def text(self) -> bytes:
        """The manifest as written: indented JSON, keys in model order, a final newline."""
        return (self.model_dump_json(indent=2) + "\n").encode("utf-8")


def file_sha256(path: Path) -> str:
    """sha256 hex of the file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def described(path: Path, rows: int | None = None) -> ArchivedFile:
    return ArchivedFile(sha256=file_sha256(path), bytes=path.stat().st_size, rows=rows)


def read_manifest(directory: Path) -> tuple[ArchiveManifest, str]:
    """The manifest of the archive in ``directory`` and its sha256 hex."""
    manifest, data = read_manifest_bytes(directory)
    return manifest, hashlib.sha256(data).hexdigest()


def read_manifest_bytes(directory: Path) -> tuple[ArchiveManifest, bytes]:
    """The manifest of the archive in ``directory`` and its bytes as written."""
    path = directory / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(
            f"{directory} has no {MANIFEST}: it is not a `chronicle archive` directory"
        ) from None
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from None
    try:
        manifest = ArchiveManifest.model_validate_json(data)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "manifest"
        raise ManifestError(
            f"{path} is not an archive manifest ({where}: {problem['msg']})"
        ) from None
    return manifest, data


def sign_manifest(key: Ed25519PrivateKey, manifest: bytes) -> bytes:
    """The text of manifest.sig: the signature of ``manifest``'s bytes, hex, a newline."""
    return (key.sign(MANIFEST_CONTEXT + manifest).hex() + "\n").encode()


def manifest_signature_problem(
    manifest: bytes, signature: bytes, trusted: Ed25519PublicKey
) -> str | None:
    """Why ``signature`` (manifest.sig's text) is not the trusted key's over ``manifest``."""
    try:
        trusted.verify(
            bytes.fromhex(signature.decode("ascii").strip()), MANIFEST_CONTEXT + manifest
        )
    except (ValueError, UnicodeDecodeError, InvalidSignature):
        return (
            f"{MANIFEST} was changed, or signed by another key: its signature "
            f"({MANIFEST_SIGNATURE}) is not the trusted key's"
        )
    return None
