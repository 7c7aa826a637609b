"""An archive directory (``chronicle archive``) made anew without something, which then still
proves itself (``chronicle verify --file DIR``): a value found (``redact --value-file``), the
parts a redaction removed, or erased sessions (``app.store.on_disk.removal``).

The archive is made anew beside it (an ``ArchiveEdit`` says how each file changes):
``sessions.jsonl`` rewritten as an export file is (markers in chain-2 events, a message
dropped, or whole sessions taken out), the Parquet tables made from it again (as the archive
made them), ``session_state.parquet``'s cells redacted or its rows dropped, ``anchors.jsonl``
without an erased session's anchor, the other files copied; then the manifest names the new
files' hashes and sizes (and the sessions left), is signed again, and the whole directory is
proved with the key's public half before it takes the old one's place (two renames; the old
directory is then removed). The anchors of the sessions left do not change: no event's hash
did.

Signing needs the key the archive was signed with (the manifest names its id), so an archive
signed elsewhere is left as it was, and said so. An archive the database records (its
``sessions`` rows hold the manifest's sha256) is made anew the same way, but takes the old
one's place inside the transaction that records the new manifest's sha256
(``app.store.on_disk.recorded_archive``).
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.archive.directory import check_directory
from app.store.archive.manifest import (
    ANCHORS,
    EVENTS_PARQUET,
    MANIFEST,
    MANIFEST_SIGNATURE,
    MESSAGES_PARQUET,
    SESSION_STATE_PARQUET,
    SESSIONS_JSONL,
    SESSIONS_PARQUET,
    ArchiveManifest,
    ManifestError,
    described,
    read_manifest_bytes,
    sign_manifest,
)
from app.store.archive.parquet import parquet_rows, write_parquet_tables
from app.store.errors import StoreError
from app.store.integrity.anchor_key import default_key_file, load_private_key
from app.store.integrity.anchors import key_id
from app.store.on_disk.export_file import redact_export
from app.store.on_disk.findings import Finding, where_in_file
from app.store.on_disk.replacing import NotRewritten, sync_directory, sync_file
from app.store.on_disk.tables import redact_parquet

#: The tables made from the JSONL, and their names in the directory.
FROM_JSONL = {
    "events": EVENTS_PARQUET,
    "sessions": SESSIONS_PARQUET,
    "llm_messages": MESSAGES_PARQUET,
}


def existing_anchor_key(key_file: Path | None, data_dir: Path) -> Ed25519PrivateKey | None:
    """The key this machine signs archives with (the configured file, else the data
    directory's), if there is one: none is made here, unlike ``signing_key``."""
    path = key_file or default_key_file(data_dir)
    if not path.expanduser().exists():
        return None
    try:
        return load_private_key(path)
    except StoreError:
        return None


def found_in_archive(directory: Path, value: str) -> dict[str, list[str]]:
    """Each file of the directory that holds ``value``, by name, with where."""
    found: dict[str, list[str]] = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and not path.is_symlink():
            places = where_in_file(path, value)
            if places:
                found[path.name] = places
    return found


def redact_archive(directory: Path, value: str, key: Ed25519PrivateKey | None) -> list[Finding]:
    """Remove ``value`` from the archive in ``directory``, which the database does not record
    (see the module): a finding per file that held it."""
    found = found_in_archive(directory, value)
    if not found:
        return []
    try:
        rewrite = prepare_rewrite(directory, value, key, set(found))
    except NotRewritten as exc:
        return not_rewritten(directory, found, str(exc))
    rewrite.replace()
    return rewritten(directory, found, value, rewrite.left)


def not_rewritten(directory: Path, found: dict[str, list[str]], why: str) -> list[Finding]:
    """The findings of an archive left as it was, and why."""
    return [
        Finding(path=str(directory / name), found_at=places, rewritten=False, problem=why)
        for name, places in found.items()
    ]


def rewritten(
    directory: Path, found: dict[str, list[str]], value: str, left: list[str]
) -> list[Finding]:
    """The findings of an archive made anew: each file searched again (the report says what
    is on the disk), and what of the value the JSONL keeps (``left``)."""
    still = found_in_archive(directory, value)
    return [
        Finding(
            path=str(directory / name),
            found_at=places,
            rewritten=True,
            problem="; ".join(
                ([f"still holds it at {', '.join(still[name])}"] if name in still else [])
                + (left if name == SESSIONS_JSONL else [])
            ),
        )
        for name, places in found.items()
    ]


@dataclass
class ArchiveRewrite:
    """An archive made anew and proved beside the one it replaces, not yet in its place."""

    directory: Path
    staging: Path
    #: sha256 of the manifest now in ``directory``, and of the new one in ``staging``.
    old_manifest: bytes
    new_manifest: bytes
    #: What of the value the new JSONL still holds (``line N: why``).
    left: list[str]

    def put_in_place(self) -> Path:
        """The new directory in the old one's place; the old one's name now (beside it,
        hidden), to remove once the change is final."""
        sync_directory(self.staging)
        aside = self.directory.parent / (
            f".{self.directory.name}.before-rewrite-{uuid.uuid4().hex[:8]}"
        )
        os.rename(self.directory, aside)
        try:
            os.rename(self.staging, self.directory)
        except BaseException:
            os.rename(aside, self.directory)
            raise
        sync_directory(self.directory.parent)
        return aside

    def put_back(self, aside: Path) -> None:
        """Undo ``put_in_place``: the old directory (at ``aside``) in its place again, the new
        one back where it was made."""
        os.rename(self.directory, self.staging)
        os.rename(aside, self.directory)
        sync_directory(self.directory.parent)

    def remove_old(self, aside: Path) -> None:
        """The old directory (at ``aside``) removed; said in ``left`` if it cannot be."""
        try:
            shutil.rmtree(aside)
        except OSError as exc:
            self.left.append(f"the old archive, still at {aside}, could not be removed: {exc}")

    def discard(self) -> None:
        """The new directory removed (the old one left as it is)."""
        shutil.rmtree(self.staging, ignore_errors=True)

    def replace(self) -> None:
        """The new directory in the old one's place for good (an archive the database does
        not record); the old one removed."""
        try:
            aside = self.put_in_place()
        except BaseException:
            self.discard()
            raise
        self.remove_old(aside)


@dataclass(frozen=True)
class ArchiveEdit:
    """How an archive's files change, each from the old file to the new one (None: copied as
    it is). When the JSONL changes, the Parquet tables made from it are made again."""

    #: ``sessions.jsonl``; what it still holds of what was to go (``line N: why``).
    jsonl: Callable[[Path, Path], list[str]] | None = None
    state: Callable[[Path, Path], None] | None = None
    anchors: Callable[[Path, Path], None] | None = None
    #: The sessions the new archive no longer holds (its manifest leaves them out).
    dropped: frozenset[UUID] = frozenset()


def value_edit(value: str, found: set[str]) -> ArchiveEdit:
    """The edit that takes ``value`` out of the files that hold it (``found``, by name);
    ``NotRewritten`` when one of them cannot be rewritten."""
    if found & {MANIFEST, MANIFEST_SIGNATURE}:
        raise NotRewritten(f"{MANIFEST} itself holds it (who archived, say): it is signed as it is")
    others = sorted(found - {SESSIONS_JSONL, SESSION_STATE_PARQUET, *FROM_JSONL.values()})
    if others:
        raise NotRewritten(f"{others[0]} holds it, and only the JSONL and the Parquet are redacted")
    remade = bool(found & {SESSIONS_JSONL, *FROM_JSONL.values()})
    return ArchiveEdit(
        jsonl=(lambda source, target: redact_export(source, target, value).left)
        if remade
        else None,
        state=(lambda source, target: redact_parquet(source, target, value))
        if SESSION_STATE_PARQUET in found
        else None,
    )


def prepare_rewrite(
    directory: Path, value: str, key: Ed25519PrivateKey | None, found: set[str]
) -> ArchiveRewrite:
    """The archive made anew without ``value`` beside ``directory`` and proved (see the
    module); ``NotRewritten`` with why it cannot be, and nothing then left behind."""
    return prepare_edit(directory, key, value_edit(value, found))


def read_archive_manifest(directory: Path) -> ArchiveManifest:
    """The archive's manifest; ``NotRewritten`` when it is not an archive."""
    try:
        manifest, _ = read_manifest_bytes(directory)
    except ManifestError as exc:
        raise NotRewritten(str(exc)) from None
    return manifest


def prepare_edit(
    directory: Path, key: Ed25519PrivateKey | None, edit: ArchiveEdit
) -> ArchiveRewrite:
    """The archive made anew as ``edit`` says beside ``directory`` and proved (see the
    module); ``NotRewritten`` with why it cannot be, and nothing then left behind."""
    manifest = read_archive_manifest(directory)
    if key is None or key_id(key.public_key()) != manifest.key_id:
        raise NotRewritten(
            f"the archive is signed with key {manifest.key_id}, and its manifest cannot be "
            "signed again without that key: this machine's anchor key "
            + ("is another" if key is not None else "is missing")
        )
    before = check_directory(directory, key.public_key())
    if not before.ok or before.manifest_sha256 is None:
        raise NotRewritten(f"the archive does not verify as it is: {before.reason}")
    staging = directory.parent / f".{directory.name}.rewriting-{uuid.uuid4().hex[:8]}"
    staging.mkdir(mode=0o700)
    os.chmod(staging, stat.S_IMODE(directory.stat().st_mode))  # as it was, past the umask
    try:
        left = _write(directory, staging, manifest, key, edit)
        after = check_directory(staging, key.public_key())
        if not after.ok or after.manifest_sha256 is None:
            raise NotRewritten(f"the archive rewritten would not verify: {after.reason}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ArchiveRewrite(
        directory=directory,
        staging=staging,
        old_manifest=bytes.fromhex(before.manifest_sha256),
        new_manifest=bytes.fromhex(after.manifest_sha256),
        left=left,
    )


def _write(
    directory: Path,
    staging: Path,
    manifest: ArchiveManifest,
    key: Ed25519PrivateKey,
    edit: ArchiveEdit,
) -> list[str]:
    left: list[str] = []
    for name in manifest.files:
        source, target = directory / name, staging / name
        if edit.jsonl is not None and name == SESSIONS_JSONL:
            left = edit.jsonl(source, target)
        elif edit.jsonl is not None and name in FROM_JSONL.values():
            continue  # made below, from the new JSONL
        elif edit.state is not None and name == SESSION_STATE_PARQUET:
            edit.state(source, target)
        elif edit.anchors is not None and name == ANCHORS:
            edit.anchors(source, target)
        else:
            shutil.copy2(source, target)
    if edit.jsonl is not None:
        write_parquet_tables(staging / SESSIONS_JSONL, staging, FROM_JSONL)
    for name in manifest.files:
        os.chmod(staging / name, stat.S_IMODE((directory / name).stat().st_mode))
    files = {
        name: described(
            staging / name, parquet_rows(staging / name) if was.rows is not None else None
        )
        for name, was in manifest.files.items()
    }
    update: dict[str, object] = {"files": files}
    if edit.dropped:
        sessions = [s for s in manifest.sessions if s.session_id not in edit.dropped]
        update |= {"sessions": sessions, "events": sum(s.events for s in sessions)}
    text = manifest.model_copy(update=update).text()
    (staging / MANIFEST).write_bytes(text)
    (staging / MANIFEST_SIGNATURE).write_bytes(sign_manifest(key, text))
    for name in (MANIFEST, MANIFEST_SIGNATURE):
        os.chmod(staging / name, stat.S_IMODE((directory / name).stat().st_mode))
    for path in staging.iterdir():
        sync_file(path)
    return left
