"""The session list: rows of the ``session_state`` projection, newest first, filtered.

Every variant of the query is a range of one index in ``created_at`` order (all sessions,
one status, one model; ``since`` bounds the range), so it reads only the rows it returns
even with hundreds of thousands of sessions (tests/integration/projections/test_query_plans.py
checks the plans). ``claimed`` says whether a process runs the session now (see
``session_claims``): a session whose status is ``working`` while nobody holds its claim was
interrupted, which no event records, so it is decided here, when reading.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from pydantic import BaseModel

from app.events.session_config import json_path
from app.sessions.sql.annotations import LABELLED, TAGGED, UNREVIEWED
from app.store import claimed_sql

if TYPE_CHECKING:
    from app.store import EventStore

#: What a session list can be narrowed to: a stored status, or whether a working session's
#: process is alive (``running``) or gone (``interrupted``).
ListedState = Literal[
    "running",
    "interrupted",
    "finished",
    "awaiting_user_input",
    "paused",
    "stopped",
    "limit",
    "error",
]
LISTED_STATES: tuple[ListedState, ...] = (
    "running",
    "interrupted",
    "finished",
    "awaiting_user_input",
    "paused",
    "stopped",
    "limit",
    "error",
)

COLUMNS = (
    "session_id, title, created_at, updated_at, ended_at, status, agent_state, state_reason, "
    "agent, model, runtime, workspace, steps, model_calls, failed_calls, priced_calls, "
    "unpriced_calls, input_tokens, output_tokens, cached_tokens, cost_usd, errors, last_seq, "
    "replay_of, forked_from, evaluation_run"
)
CLAIMED = claimed_sql("s.session_id")


class SessionRow(BaseModel):
    """A ``session_state`` row and whether a process runs the session now."""

    session_id: UUID
    title: str | None
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    #: working, finished, awaiting_user_input, paused, stopped, limit, error (None: no
    #: agent state recorded yet).
    status: str | None
    agent_state: str | None
    state_reason: str | None
    agent: str | None
    model: str | None
    runtime: str | None
    workspace: str | None
    steps: int
    model_calls: int
    failed_calls: int
    priced_calls: int
    unpriced_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    #: None when no call has a price and some have none.
    cost_usd: Decimal | None
    errors: int
    last_seq: int
    replay_of: UUID | None
    forked_from: UUID | None
    evaluation_run: str | None
    #: A process holds the session's claim: it is running it now.
    claimed: bool


#: A title with a word beginning with each word of the parameter, case-insensitive: the
#: parameter split into words by the same parser (``simple``: lower case, no stemming), each
#: made a prefix term, so the GIN index of migration 0013 answers it. Text with no word
#: matches nothing (a word with a backslash is left out: it cannot be quoted as a term).
TITLE_WORDS = (
    "to_tsvector('simple'::regconfig, coalesce(s.title, '')) @@ to_tsquery("
    "'simple'::regconfig, (SELECT string_agg(quote_literal(w) || ':*', ' & ') "
    "FROM unnest(tsvector_to_array(to_tsvector('simple'::regconfig, {param}::text))) w "
    "WHERE strpos(w, '\\') = 0))"
)

#: Pages' worth of rows the steered text filter reads newest first before it asks the title
#: index (see ``session_owners.list_visible_records``): a page of ``limit`` is filled from
#: these ``limit * STEERED_PAGES`` rows when the words are in more than about one title in
#: ``STEERED_PAGES``, so that a common word never costs more than these rows' read.
STEERED_PAGES = 4

#: The columns qualified by the list's alias (a join may bring another ``session_id``).
QUALIFIED_COLUMNS = ", ".join(f"s.{name.strip()}" for name in COLUMNS.split(","))


#: How a list may be ordered: newest or oldest first, or the largest first by cost, tokens or
#: steps (the sessions the filters pass, so "the 200 dearest sessions of this run"). Only the
#: newest-first list pages on by a cursor.
ListOrder = Literal["newest", "oldest", "cost", "tokens", "steps"]
ORDERS: dict[str, str] = {
    "newest": "created_at DESC, {a}session_id DESC",
    "oldest": "created_at ASC, {a}session_id ASC",
    "cost": "cost_usd DESC NULLS LAST, {a}created_at DESC",
    "tokens": "input_tokens + {a}output_tokens DESC, {a}created_at DESC",
    "steps": "steps DESC, {a}created_at DESC",
}
#: A trial's task and epoch, read from its first event (the session's configuration).
TASK_ID = json_path("evaluation", "task", "id", alias="first")
EPOCH = json_path("evaluation", "epoch", alias="first")
#: A trial of a task, matched on its first event.
TRIAL_TASK = (
    "EXISTS (SELECT 1 FROM events first WHERE first.session_id = s.session_id "
    f"AND first.seq = 1 AND {TASK_ID} = {{param}})"
)


def _order(sort: ListOrder, alias: str) -> str:
    return f" ORDER BY {alias}" + ORDERS[sort].format(a=alias)


def _narrowed(
    *,
    state: ListedState | None = None,
    model: bool = False,
    since: bool = False,
    owner: bool = False,
    until: bool = False,
    id_range: bool = False,
    label: bool = False,
    tag: bool = False,
    unreviewed: bool = False,
    run: bool = False,
    task: bool = False,
) -> tuple[str, list[str], list[str]]:
    """The sessions the filters pass: the source (``session_state s`` and the owner's join),
    the conditions, and the parameters they take, in order."""
    where: list[str] = []
    params: list[str] = []
    joins = ""
    if owner:
        params.append("owner")
        joins = " JOIN session_owners o ON o.session_id = s.session_id AND o.user_id = $1"
    if state in ("running", "interrupted"):
        where.append("s.status = 'working'")
        where.append(CLAIMED if state == "running" else f"NOT {CLAIMED}")
    elif state is not None:
        params.append("state")
        where.append(f"s.status = ${len(params)}")
    if model:
        params.append("model")
        where.append(f"s.model = ${len(params)}")
    if since:
        params.append("since")
        where.append(f"s.created_at >= ${len(params)}")
    if until:
        params.append("until")
        where.append(f"s.created_at < ${len(params)}")
    if run:
        params.append("run")
        where.append(f"s.evaluation_run = ${len(params)}")
    if task:
        params.append("task")
        where.append(TRIAL_TASK.format(param=f"${len(params)}"))
    if id_range:
        params.append("id_low")
        params.append("id_high")
        where.append(f"s.session_id BETWEEN ${len(params) - 1} AND ${len(params)}")
    for wanted, name, condition in ((label, "label", LABELLED), (tag, "tag", TAGGED)):
        if wanted:
            params.append(name)
            where.append(condition.format(param=f"${len(params)}"))
    if unreviewed:
        where.append(UNREVIEWED)
    return f"session_state s{joins}", where, params


def list_sql(
    *,
    state: ListedState | None,
    model: bool,
    since: bool,
    owner: bool = False,
    after: bool = False,
    words: bool = False,
    newest_first: bool = False,
    id_range: bool = False,
    label: bool = False,
    tag: bool = False,
    unreviewed: bool = False,
    until: bool = False,
    run: bool = False,
    task: bool = False,
    sort: ListOrder = "newest",
) -> tuple[str, list[str]]:
    """The list query for these filters, and the order of its parameters (the limit last):
    narrowed to one ``owner``'s sessions (``session_owners``), to titles with ``words``
    (``TITLE_WORDS``), to ids in a range (``id_low`` to ``id_high``: a prefix of an id,
    app/events/id_prefix.py), to a start before ``until``, to one evaluation ``run`` and a
    ``task`` of it, and paged after a keyset cursor ``(created_at, session_id)`` in the
    list's own order when asked (newest first only). ``newest_first`` (with ``words``): the
    words are looked for only in the newest ``scan`` rows the other filters pass
    (``STEERED_PAGES``). ``label``, ``tag``, ``unreviewed``: the session's annotations
    (``annotations``). ``sort``: ``ListOrder``."""
    source, where, params = _narrowed(
        state=state, model=model, since=since, owner=owner, until=until, id_range=id_range,
        label=label, tag=tag, unreviewed=unreviewed, run=run, task=task,
    )  # fmt: skip
    if after:
        if sort != "newest":
            raise ValueError("only the newest-first list pages on by a cursor")
        params.append("after_created")
        params.append("after_id")
        where.append(f"(s.created_at, s.session_id) < (${len(params) - 1}, ${len(params)})")
    order = _order(sort, "s.")
    if words and newest_first:
        params.append("scan")
        scanned = " WHERE " + " AND ".join(where) if where else ""
        source = f"(SELECT s.* FROM {source}{scanned}{order} LIMIT ${len(params)}) s"
        where = []
    if words:
        params.append("words")
        where.append(TITLE_WORDS.format(param=f"${len(params)}"))
    params.append("limit")
    return (
        f"SELECT {QUALIFIED_COLUMNS}, {CLAIMED} AS claimed FROM {source}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f"{order} LIMIT ${len(params)}",
        params,
    )


#: What the list adds to each row of a page, read for the page's rows only (an outer query
#: over the page): a trial's task and epoch from its configuration, and how a replay went.
PAGE_EXTRAS = """
SELECT page.*,
       {task} AS task,
       CASE WHEN {epoch} ~ '^[0-9]{{1,9}}$' THEN ({epoch})::int END AS epoch,
       CASE WHEN page.replay_of IS NOT NULL THEN (
         SELECT CASE WHEN jsonb_typeof(r.payload -> 'divergence') = 'object' THEN 'diverged'
                     WHEN (r.payload ->> 'matched')::boolean THEN 'matched'
                     ELSE 'differed' END
         FROM events r WHERE r.session_id = page.session_id AND r.kind = 'replay.result'
         ORDER BY r.seq DESC LIMIT 1) END AS replay_outcome
FROM ({page}) page
LEFT JOIN events first
  ON first.session_id = page.session_id AND first.seq = 1 AND page.evaluation_run IS NOT NULL
{order}
"""


def page_sql(sql: str, sort: ListOrder = "newest") -> str:
    """``list_sql``'s query with ``PAGE_EXTRAS`` on each row, in the same order."""
    return PAGE_EXTRAS.format(page=sql, order=_order(sort, "page."), task=TASK_ID, epoch=EPOCH)


def totals_sql(
    *, words: bool = False, cap: bool = False, **narrowing: Any
) -> tuple[str, list[str]]:
    """How many sessions pass ``list_sql``'s filters and their sums (model calls, tokens,
    cost, unpriced calls), over all of them, not a page; ``narrowing``: ``list_sql``'s filter
    switches (``_narrowed``'s); ``cap``: count at most ``cap`` sessions (a queue's length,
    where only "more than N" matters)."""
    source, where, params = _narrowed(**narrowing)
    if words:
        params.append("words")
        where.append(TITLE_WORDS.format(param=f"${len(params)}"))
    rows = f"SELECT s.* FROM {source}" + (f" WHERE {' AND '.join(where)}" if where else "")
    if cap:
        params.append("cap")
        rows += f" LIMIT ${len(params)}"
    return (
        "SELECT count(*) AS sessions, coalesce(sum(model_calls), 0) AS model_calls, "
        "coalesce(sum(input_tokens), 0) AS input_tokens, "
        "coalesce(sum(output_tokens), 0) AS output_tokens, sum(cost_usd) AS cost_usd, "
        "coalesce(sum(unpriced_calls), 0) AS unpriced_calls "
        f"FROM ({rows}) s",
        params,
    )


async def list_sessions(
    store: EventStore,
    *,
    limit: int,
    state: ListedState | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> list[SessionRow]:
    """The newest sessions (by start) that match every filter given, at most ``limit``."""
    sql, params = list_sql(state=state, model=model is not None, since=since is not None)
    values: dict[str, Any] = {"state": state, "model": model, "since": since, "limit": limit}
    rows = await store.pool.fetch(sql, *(values[name] for name in params))
    return [SessionRow(**dict(row)) for row in rows]
