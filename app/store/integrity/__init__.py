"""Proving the log was not rewritten: ``verification`` re-hashes sessions, prompt messages and
blobs; ``anchors`` signs sessions' heads and checks them; ``anchor_key`` keeps the signing key
outside the database. Outside the store, import these names from here (loaded on first use:
the signing code imports ``cryptography``, which a plain append never needs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.store.integrity.anchor_key import (
        load_private_key,
        new_key_files,
        public_key_file,
        public_key_pem,
        signing_key,
        trusted_public_key,
    )
    from app.store.integrity.anchors import AnchorRecord, key_id, read_anchors, sign_anchor
    from app.store.integrity.verification import (
        session_ids,
        stored_blob_problem,
        stored_message_problem,
    )

_EXPORTED_FROM = {
    "load_private_key": "app.store.integrity.anchor_key",
    "new_key_files": "app.store.integrity.anchor_key",
    "public_key_file": "app.store.integrity.anchor_key",
    "public_key_pem": "app.store.integrity.anchor_key",
    "signing_key": "app.store.integrity.anchor_key",
    "trusted_public_key": "app.store.integrity.anchor_key",
    "AnchorRecord": "app.store.integrity.anchors",
    "key_id": "app.store.integrity.anchors",
    "read_anchors": "app.store.integrity.anchors",
    "sign_anchor": "app.store.integrity.anchors",
    "session_ids": "app.store.integrity.verification",
    "stored_blob_problem": "app.store.integrity.verification",
    "stored_message_problem": "app.store.integrity.verification",
}

__all__ = [
    "AnchorRecord",
    "key_id",
    "load_private_key",
    "new_key_files",
    "public_key_file",
    "public_key_pem",
    "read_anchors",
    "session_ids",
    "sign_anchor",
    "signing_key",
    "stored_blob_problem",
    "stored_message_problem",
    "trusted_public_key",
]

__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
