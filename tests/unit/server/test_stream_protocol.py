"""The stream's wire format: where a stream starts (Last-Event-ID over after_seq, anything but
a seq refused), an SSE message per event with its seq as id, and the farewell of a client
that fell behind."""

from __future__ import annotations

import json

import pytest

from app.events import Message
from app.server.problems import Unprocessable
from app.server.stream_relay import RelayEnd
from app.server.streams import event_json, resume_point, sse_event, sse_lagging
from tests.support.event_log import HandMadeLog


def test_last_event_id_wins_over_after_seq() -> None:
    assert resume_point("3", "41") == 41
    assert resume_point("3", None) == 3
    assert resume_point(None, None) == 0
    assert resume_point("", "") == 0


@pytest.mark.parametrize("bad", ["-1", "yesterday", "4.5"])
def test_anything_but_a_seq_is_refused(bad: str) -> None:
    with pytest.raises(Unprocessable, match="whole number"):
        resume_point(bad, None)
    with pytest.raises(Unprocessable, match="Last-Event-ID"):
        resume_point(None, bad)


def test_an_sse_message_is_the_event_with_its_seq_as_id() -> None:
    log = HandMadeLog()
    [event] = log.add(Message(content="two\nlines", source="user"))
    message = sse_event(event)
    assert message.startswith(b"id: 1\ndata: ")
    assert message.endswith(b"\n\n")
    # one data line: the JSON escapes the payload's newline
    assert message.count(b"\n") == 3
    data = json.loads(message.split(b"data: ", 1)[1])
    assert data == json.loads(event_json(event))
    assert data["seq"] == 1 and data["payload"]["content"] == "two\nlines"


def test_the_farewell_names_the_seq_to_resume_from_and_has_no_id() -> None:
    message = sse_lagging(RelayEnd(reason="behind", delivered_seq=17))
    assert message.startswith(b"event: lagging\ndata: ")
    assert b"\nid:" not in message
    farewell = json.loads(message.split(b"data: ", 1)[1])
    assert farewell["type"] == "lagging"
    assert farewell["resume_after_seq"] == 17
    assert "after_seq=17" in farewell["detail"]
