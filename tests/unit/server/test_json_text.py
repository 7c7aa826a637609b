"""JSON the API writes and reads with lone surrogates: written as their escape (in values and
keys, inside models), read back from their escape, and what the fast encoders write left as
they write it; a length bound that counts a surrogate as a character."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

import pytest
from pydantic import BaseModel, ValidationError

from app.server.json_text import (
    dumps,
    holds_escaped_surrogate,
    json_bytes,
    loads,
    utf8_text,
)
from app.server.text_fields import TextLength


class View(BaseModel):
    id: UUID
    at: datetime
    payload: dict[str, Any]


VIEW = View(
    id=UUID(int=1),
    at=datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    payload={"caf\udce9": ["\ud800 alone", {"k\udfff": 1.5}], "plain": "é"},
)


def test_a_model_holding_surrogates_is_written_with_their_escapes() -> None:
    written = json_bytes(VIEW)
    written.decode("utf-8")  # valid UTF-8 throughout
    assert b'"caf\\udce9"' in written and b'"k\\udfff"' in written
    assert json.loads(written) == VIEW.model_dump(mode="python") | {
        "id": str(VIEW.id),
        "at": "2026-12-01T12:00:00Z",
    }


def test_without_surrogates_the_bytes_are_msgspecs() -> None:
    plain = View(id=UUID(int=2), at=VIEW.at, payload={"a": "é", "n": [1, 2.5, None]})
    assert json_bytes(plain) == plain.model_dump_json().encode()
    assert dumps({"a": "é"}) == '{"a":"é"}'.encode()
    assert json.loads(dumps({"a": "x\udce9"})) == {"a": "x\udce9"}


def test_an_escaped_surrogate_reads_back_and_other_text_is_refused_as_msgspec_does() -> None:
    body = b'{"task": "caf\\udce9 and \\uD83D alone"}'
    assert holds_escaped_surrogate(body)
    assert not holds_escaped_surrogate(b'{"task": "\\u00e9"}')
    assert loads(utf8_text(body)) == {"task": "caf\udce9 and \ud83d alone"}
    for refused in ('{"a": NaN}', '{"a": 1e400}', '{"a": Infinity}'):
        with pytest.raises(ValueError):
            loads(refused)
    with pytest.raises(ValueError, match="not UTF-8 text \\(byte 13 is not\\)"):
        utf8_text(b'{"task": "caf\xe9"}')


def test_a_text_length_counts_a_surrogate_as_one_character() -> None:
    bound = TextLength(1, 5)

    class Message(BaseModel):
        content: Annotated[str, bound] = bound.field()

    assert Message(content="caf\udce9").content == "caf\udce9"
    for wrong in ("", "123456"):
        with pytest.raises(ValidationError):
            Message(content=wrong)
    assert Message.model_json_schema()["properties"]["content"]["maxLength"] == 5
