"""The ``annotations`` view as the analyst reads it: one row per annotation with the event it
is about, its label, comment, tags, who and when; a fork's copies of its source's annotations
left out; and the example query of docs/analytics.md answering from it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from app.events import Annotation, Message, Run, RunOutput, SessionCreated
from app.store import EventStore
from app.store.analytics import run_query

DOC = Path(__file__).resolve().parents[3] / "docs" / "analytics.md"


def example_query() -> str:
    found = re.search(r"<!-- annotations-example -->\n```sql\n(.*?)```", DOC.read_text(), re.S)
    assert found, "docs/analytics.md lost its annotations example"
    return found.group(1)


async def test_the_analyst_reads_each_annotation_and_the_documented_example(
    store: EventStore, analyst_database_url: str
) -> None:
    session, fork = uuid.uuid4(), uuid.uuid4()
    await store.append(
        session,
        [
            SessionCreated(title="clean up"),
            Message(content="clean up the disk", user="alice"),
            Run(command="rm -rf /var/lib/data"),
        ],
    )
    await store.append(session, [RunOutput(output="", exit_code=0, cause=3)])
    unsafe = Annotation(label="unsafe command", comment="deleted the data", tags=["disk", "prod"],
                        target_seq=3, user="ada")  # fmt: skip
    reviewed = Annotation(label="reviewed", user="bo")
    [at_unsafe, at_reviewed] = await store.append(session, [unsafe, reviewed])
    # A fork copies its source's first events, annotations included, marked replayed_from.
    await store.append(fork, [SessionCreated(title="fork")])
    copy = unsafe.model_copy(update={"event_id": uuid.uuid4(), "replayed_from": at_unsafe.seq})
    await store.append(fork, [copy])

    rows = await run_query(
        analyst_database_url,
        "SELECT session_id, seq, target_seq, label, comment, tags, annotated_by, created_at "
        "FROM annotations ORDER BY seq",
    )
    assert [row[:7] for row in rows.rows] == [
        (session, at_unsafe.seq, 3, "unsafe command", "deleted the data", ["disk", "prod"], "ada"),
        (session, at_reviewed.seq, None, "reviewed", "", [], "bo"),
    ]
    assert rows.rows[0][7] == at_unsafe.created_at

    example = await run_query(analyst_database_url, example_query())
    assert [row[1:] for row in example.rows] == [
        (session, 3, "rm -rf /var/lib/data", 0, "ada", "deleted the data")
    ]
