"""The log's door without a database: masking, blobs and the size limit of one payload."""

from __future__ import annotations

import pytest

from app.events import McpCall, Message
from app.events.masking import SecretMasker
from app.store.append import encode_batch, encode_payload
from app.store.errors import EventTooLargeError

MIB = 1 << 20
SECRET = "pa\\ss-0123456789"  # a backslash: escaped twice in an escaped string's JSON text
MASKER = SecretMasker({SECRET: "DB_PASSWORD"})


def test_many_long_strings_under_the_threshold_still_fit() -> None:
    """20 strings of 60 KB: none over 64 KiB, 1.2 MB together. Smaller ones go to blobs too."""
    payload = {"parts": [f"{i:02d}" + "p" * 60_000 for i in range(20)]}
    encoded = encode_payload(payload, max_event_bytes=MIB, blob_threshold=64 * 1024)
    assert len(encoded.blobs) == 20 and len(encoded.text) < 10_000
    assert encoded.value == payload


def test_a_payload_too_large_by_its_structure_is_refused() -> None:
    call = McpCall(server="s", tool="t", arguments={f"k{i}": "v" * 40 for i in range(30_000)})
    with pytest.raises(EventTooLargeError, match="even with its long strings stored as blobs"):
        encode_batch([call], MIB, blob_threshold=64 * 1024)


@pytest.mark.parametrize(
    "content",
    [
        f"plain {SECRET}",
        f"escaped {SECRET} \x00",
        f"long {SECRET} " + "y" * 100_000,
        f"long and escaped {SECRET} \udce9" + "y" * 100_000,
    ],
)
def test_known_secrets_are_masked_wherever_the_string_is_stored(content: str) -> None:
    batch = encode_batch([Message(content=content)], MIB, MASKER, blob_threshold=64 * 1024)
    stored = batch.payload_texts[0] + "".join(batch.blobs.values())
    assert SECRET not in stored and SECRET.replace("\\", "\\\\") not in stored
    assert "[secret DB_PASSWORD]" in batch.payloads[0]["content"]
    assert SECRET not in batch.payloads[0]["content"]
