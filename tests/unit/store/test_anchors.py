"""Signed heads without a database: a record signs exactly what it says, by exactly one key."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.store.integrity.anchor_key import (
    AnchorKeyError,
    load_public_key,
    public_key_pem,
    signing_key,
    trusted_public_key,
)
from app.store.integrity.anchors import (
    AnchorFileError,
    AnchorRecord,
    anchor_problem,
    key_id,
    parse_anchors,
    read_anchors,
    sign_anchor,
)

HEAD = hashlib.sha256(b"the last event").digest()


def _record(key: Ed25519PrivateKey) -> AnchorRecord:
    return sign_anchor(key, uuid.uuid4(), 42, HEAD, datetime(2026, 12, 1, 12, 0, 1, 5, UTC))


def test_a_signed_record_checks_out_after_a_round_trip_through_json() -> None:
    key = Ed25519PrivateKey.generate()
    record = _record(key)
    assert record.head == HEAD.hex() and record.last_seq == 42
    assert record.key_id == key_id(key.public_key())
    [again] = parse_anchors([record.to_line()])
    assert again == record
    assert anchor_problem(again, key.public_key()) is None


@pytest.mark.parametrize(
    "change",
    [
        {"last_seq": 41},
        {"head": hashlib.sha256(b"another event").hexdigest()},
        {"session_id": uuid.uuid4()},
        {"anchored_at": datetime(2026, 12, 1, 12, 0, 2, tzinfo=UTC)},
    ],
)
def test_any_edited_field_breaks_the_signature(change: dict[str, object]) -> None:
    key = Ed25519PrivateKey.generate()
    edited = _record(key).model_copy(update=change)
    problem = anchor_problem(edited, key.public_key())
    assert problem is not None and "signature the trusted key did not make" in problem


def test_a_record_signed_by_another_key_is_refused_even_naming_ours() -> None:
    ours, theirs = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    forged = _record(theirs)
    problem = anchor_problem(forged, ours.public_key())
    assert problem is not None and "not signed by this deployment" in problem
    # Claiming our key id does not help: the signature is still theirs.
    spoofed = forged.model_copy(update={"key_id": key_id(ours.public_key())})
    problem = anchor_problem(spoofed, ours.public_key())
    assert problem is not None and "did not make" in problem


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "anchors.jsonl"
    path.write_text(_record(key).to_line() + "\n\n" + '{"session_id": "nope"}\n')
    with pytest.raises(AnchorFileError, match=r"anchors.jsonl, line 3: not an anchor record"):
        read_anchors(path)
    with pytest.raises(AnchorFileError, match="cannot read"):
        read_anchors(tmp_path / "missing.jsonl")


def test_the_default_key_is_generated_once_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key, path, generated = signing_key(None, data_dir)
    assert generated and path.parent == data_dir / "secrets"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    again, _, generated_again = signing_key(None, data_dir)
    assert not generated_again and key_id(again.public_key()) == key_id(key.public_key())
    # The trusted key is derived from it, or read from an exported public half.
    assert key_id(trusted_public_key(None, None, data_dir)) == key_id(key.public_key())
    exported = tmp_path / "public.pem"
    exported.write_text(public_key_pem(key.public_key()))
    assert key_id(load_public_key(exported)) == key_id(key.public_key())


def test_a_configured_key_must_exist_and_checking_never_generates_one(tmp_path: Path) -> None:
    with pytest.raises(AnchorKeyError, match="does not exist"):
        signing_key(tmp_path / "deployment.pem", tmp_path / "data")
    with pytest.raises(AnchorKeyError, match="pass --public-key"):
        trusted_public_key(None, None, tmp_path / "data")
    assert not (tmp_path / "data").exists()
