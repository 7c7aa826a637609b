"""A value found and removed in an archive directory (``chronicle archive``), which then
still proves itself (``chronicle verify --file DIR``).

The archive is made anew beside it: ``sessions.jsonl`` redacted as any export file is
(markers in chain-2 events, a message dropped), the Parquet tables made from it again (as the
archive made them), ``session_state.parquet``'s cells redacted, the other files copied; then
the manifest names the new files' hashes and sizes, is signed again, and the whole directory
is proved with the key's public half before it takes the old one's place (two renames; the
old directory is then removed). The anchors do not change: no event's hash did.

Signing needs the key the archive was signed with (the manifest names its id), so an archive
signed elsewhere is left as it was, and said so. An archive the database records (its
``sessions`` rows hold the manifest's sha256) is never given here: see
``app.store.on_disk.search``.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.archive.directory import check_directory
from app.store.archive.manifest import (
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
from app.store.on_disk.export_file import ExportLines, redact_export
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


def redact_archive(
    directory: Path, value: str, key: Ed25519PrivateKey | None, *, pinned: str = ""
) -> list[Finding]:
    """Remove ``value`` from the archive in ``directory`` (see the module): a finding per
    file that held it. ``pinned`` says why it must stay as it is (the file is then only
    reported)."""
    found = found_in_archive(directory, value)
    if not found:
        return []

    def findings(rewritten: bool, problem: str) -> list[Finding]:
        return [
            Finding(path=str(directory / name), found_at=places, rewritten=rewritten,
                    problem=problem)
            for name, places in found.items()
        ]  # fmt: skip

    try:
        if pinned:
            raise NotRewritten(pinned)
        left = _rewrite(directory, value, key, set(found))
    except NotRewritten as exc:
        return findings(False, str(exc))
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


def _rewrite(
    directory: Path, value: str, key: Ed25519PrivateKey | None, found: set[str]
) -> list[str]:
    """The archive made anew without ``value`` and put in the directory's place; what of it
    the JSONL still holds (``line N: why``)."""
    try:
        manifest, _ = read_manifest_bytes(directory)
    except ManifestError as exc:
        raise NotRewritten(str(exc)) from None
    if found & {MANIFEST, MANIFEST_SIGNATURE}:
        raise NotRewritten(f"{MANIFEST} itself holds it (who archived, say): it is signed as it is")
    if key is None or key_id(key.public_key()) != manifest.key_id:
        raise NotRewritten(
            f"the archive is signed with key {manifest.key_id}, and its manifest cannot be "
            "signed again without that key: this machine's anchor key "
            + ("is another" if key is not None else "is missing")
        )
    before = check_directory(directory, key.public_key())
    if not before.ok:
        raise NotRewritten(f"the archive does not verify as it is: {before.reason}")
    staging = directory.parent / f".{directory.name}.redacting-{uuid.uuid4().hex[:8]}"
    staging.mkdir(mode=0o700)
    os.chmod(staging, stat.S_IMODE(directory.stat().st_mode))  # as it was, past the umask
    try:
        left = _write(directory, staging, value, manifest, key, found)
        after = check_directory(staging, key.public_key())
        if not after.ok:
            raise NotRewritten(f"the archive redacted would not verify: {after.reason}")
        _swap(directory, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return left


def _write(
    directory: Path,
    staging: Path,
    value: str,
    manifest: ArchiveManifest,
    key: Ed25519PrivateKey,
    found: set[str],
) -> list[str]:
    left: list[str] = []
    remade = found & {SESSIONS_JSONL, *FROM_JSONL.values()}
    for name in manifest.files:
        source, target = directory / name, staging / name
        if remade and name == SESSIONS_JSONL:
            state: ExportLines = redact_export(source, target, value)
            left = state.left
        elif remade and name in FROM_JSONL.values():
            continue  # made below, from the JSONL redacted
        elif name == SESSION_STATE_PARQUET and name in found:
            redact_parquet(source, target, value)
        elif name in found:
            raise NotRewritten(f"{name} holds it, and only the JSONL and the Parquet are redacted")
        else:
            shutil.copy2(source, target)
    if remade:
        write_parquet_tables(staging / SESSIONS_JSONL, staging, FROM_JSONL)
    for name in manifest.files:
        os.chmod(staging / name, stat.S_IMODE((directory / name).stat().st_mode))
    files = {
        name: described(
            staging / name, parquet_rows(staging / name) if was.rows is not None else None
        )
        for name, was in manifest.files.items()
    }
    text = manifest.model_copy(update={"files": files}).text()
    (staging / MANIFEST).write_bytes(text)
    (staging / MANIFEST_SIGNATURE).write_bytes(sign_manifest(key, text))
    for name in (MANIFEST, MANIFEST_SIGNATURE):
        os.chmod(staging / name, stat.S_IMODE((directory / name).stat().st_mode))
    for path in staging.iterdir():
        sync_file(path)
    return left


def _swap(directory: Path, staging: Path) -> None:
    """The new directory in the old one's place; the old one removed."""
    sync_directory(staging)
    old = directory.parent / f".{directory.name}.before-redaction-{uuid.uuid4().hex[:8]}"
    os.rename(directory, old)
    try:
        os.rename(staging, directory)
    except BaseException:
        os.rename(old, directory)
        raise
    sync_directory(directory.parent)
    shutil.rmtree(old)
