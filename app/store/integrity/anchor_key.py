"""The anchor signing key: an Ed25519 private key in a file, never in the database.

By default it is generated on first use in ``<data_dir>/secrets`` (0600): convenient, but a
superuser of this machine can read it and re-sign a rewritten history. For anchors that prove
something against this machine, the operator brings a key that lives elsewhere (``chronicle
anchor --key FILE``, or ``CHRONICLE_ANCHOR_KEY_FILE``; ``chronicle anchor --new-key FILE`` or
``openssl genpkey -algorithm ed25519`` makes one) and an auditor checks with its public half
only (``verify --public-key FILE``). Keys are read as PEM (PKCS#8 / SubjectPublicKeyInfo, as
openssl writes them), OpenSSH, or the raw 32 bytes.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from app.store.errors import StoreError
from app.store.private_files import private_dir, write_secret

DEFAULT_KEY_NAME = "anchor-ed25519.pem"
#: An Ed25519 key's raw size, private (its seed) or public.
RAW_KEY_BYTES = 32


class AnchorKeyError(StoreError):
    """The anchor key is missing, unreadable, or not an Ed25519 key."""


def default_key_file(data_dir: Path) -> Path:
    return data_dir.expanduser() / "secrets" / DEFAULT_KEY_NAME


def _read(path: Path) -> bytes:
    try:
        return path.expanduser().read_bytes()
    except FileNotFoundError:
        raise AnchorKeyError(f"the anchor key file {path} does not exist") from None
    except OSError as exc:
        raise AnchorKeyError(f"cannot read the anchor key file {path}: {exc.strerror}") from None


def load_private_key(path: Path) -> Ed25519PrivateKey:
    data = _read(path)
    try:
        if len(data) == RAW_KEY_BYTES:
            key: object = Ed25519PrivateKey.from_private_bytes(data)
        elif b"OPENSSH PRIVATE KEY" in data:
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise AnchorKeyError(
            f"{path} is not an unencrypted Ed25519 private key (PEM, OpenSSH or 32 raw bytes): "
            f"{exc}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AnchorKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def signing_key(key_file: Path | None, data_dir: Path) -> tuple[Ed25519PrivateKey, Path, bool]:
    """The key that signs anchors, where it is, and whether it was generated just now.

    A configured ``key_file`` must exist; the default one is generated on first use.
    """
    if key_file is not None:
        return load_private_key(key_file), key_file, False
    path = default_key_file(data_dir)
    if path.exists():
        return load_private_key(path), path, False
    path.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # a new data dir: private
    private_dir(path.parent)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        write_secret(path, pem)
    except FileExistsError:  # another process generated it first: use that one
        return load_private_key(path), path, False
    return key, path, True


def load_public_key(path: Path) -> Ed25519PublicKey:
    """A trusted public key from a PEM file holding either the public or the private key."""
    data = _read(path)
    if b"PRIVATE KEY" in data:
        return load_private_key(path).public_key()
    try:
        if len(data) == RAW_KEY_BYTES:
            key: object = Ed25519PublicKey.from_public_bytes(data)
        elif data.startswith(b"ssh-ed25519 "):
            key = serialization.load_ssh_public_key(data)
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise AnchorKeyError(
            f"{path} is not an Ed25519 public key (PEM, OpenSSH or 32 raw bytes): {exc}"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise AnchorKeyError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def trusted_public_key(
    public_key_file: Path | None, key_file: Path | None, data_dir: Path
) -> Ed25519PublicKey:
    """The key anchors must be signed by: the one given, else the signing key's own."""
    if public_key_file is not None:
        return load_public_key(public_key_file)
    path = key_file or default_key_file(data_dir)
    if not path.exists():
        raise AnchorKeyError(
            f"no anchor key at {path} to check anchors with; pass --public-key FILE "
            "(the deployment's public key, from `chronicle anchor --print-public-key`)"
        )
    return load_private_key(path).public_key()


def new_key_files(path: Path) -> Ed25519PrivateKey:
    """A new signing key in ``path`` (PEM, 0600, never replacing a file) and its public half in
    ``path.pub``: for the operator to keep the first off this machine and hand out the second."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = public_key_file(path)
    for existing in (path, public):
        if existing.exists() or existing.is_symlink():
            raise AnchorKeyError(f"{existing} exists already; choose a new file name")
    try:
        write_secret(path, pem)
    except FileExistsError:
        raise AnchorKeyError(f"{path} exists already; choose a new file name") from None
    except OSError as exc:
        raise AnchorKeyError(f"cannot write the key file {path}: {exc.strerror}") from None
    public.write_text(public_key_pem(key.public_key()))
    return key


def public_key_file(path: Path) -> Path:
    """Where ``new_key_files`` puts the public half of the key in ``path``."""
    return path.with_name(path.name + ".pub")


def public_key_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
