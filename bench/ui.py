"""`chronicle bench ui`: the web page's first render of a long session, in a real browser.

A real `chronicle serve --role api` on a throwaway database holds one session of 10,000
events (model calls, commands with their output, thoughts: what an agent records) and 100
annotations written after it (issue 27: labels on events all through the session, ten of them
on its first page, and on the whole session); headless Chromium (Debian's, driven by
Playwright) is signed in as an admin. Each round:

- chronicle: a fresh load of ``/#/sessions/ID`` until the page's first screen of the timeline
  is drawn (the ``chronicle:timeline-first-screen`` performance mark, set a frame after the
  first page of events, with the chips of the session's annotations, is in the document),
  timed from the navigation's start; each round checks the chips are there;
- baseline: the same browser fetching the session's 10,000 events from the API
  (``GET /api/sessions/ID/events``, pages of 1,000, each parsed), timed in a page of the
  same origin without the app's scripts.

The two alternate in rounds (A B, B A, ...; medians and ranges). Target (issue 14): first
render <= 1 s.

    python -m bench.ui [--rounds N] [--events N] [--annotations N] [--url POSTGRES_SUPERUSER_URL]
                       [--json]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import Browser, Page, async_playwright

from app.events import (
    Annotation,
    Event,
    LlmCall,
    LlmResponse,
    LlmUsage,
    Message,
    Run,
    RunOutput,
    SessionCreated,
    Think,
    ToolCall,
)
from app.events.masking import SecretMasker
from app.store import EventStore
from bench.harness import (
    BenchDatabase,
    Measurement,
    bench_arguments,
    command_line,
    interleave,
    measured_on_database,
    report,
)
from bench.server import Server

EVENTS = 10_000
ANNOTATIONS = 100
#: Events the page draws first (app/server/web/session.js's FIRST_PAGE).
FIRST_PAGE = 200
TARGET_MS = 1000.0
#: The mark the page sets once its first screen of the timeline is drawn (app/server/web).
FIRST_SCREEN_MARK = "chronicle:timeline-first-screen"
#: Debian's chromium package (Playwright's own browser download is not reachable here).
CHROMIUM = "/usr/bin/chromium"
APPEND_BATCH = 500
#: In the page: every event of the session through the events API, as a client reads them.
FETCH_ALL = """async ([session, limit]) => {
  const started = performance.now();
  let after = 0, count = 0;
  for (;;) {
    const query = `after_seq=${after}&limit=${limit}`;
    const response = await fetch(`/api/sessions/${session}/events?${query}`);
    if (!response.ok) throw new Error(`events page: ${response.status}`);
    const page = await response.json();
    count += page.events.length;
    if (page.next_after_seq === null) break;
    after = page.next_after_seq;
  }
  return [performance.now() - started, count];
}"""


def step_events(step: int, first_seq: int) -> list[Event]:
    """One agent step as the agent records it: the model call, its command, the command's
    output (caused by the command), a thought."""
    command = f"pytest tests/test_module_{step % 50}.py -q"
    output = "\n".join(f"tests/test_module_{step % 50}.py::test_{n} PASSED" for n in range(8))
    return [
        LlmCall(
            model="openai/gpt-4o",
            fingerprint="bench",
            response=LlmResponse(
                content=f"Step {step}: run the next module's tests.",
                tool_calls=[
                    ToolCall(id=f"call_{step}", name="execute_bash", arguments='{"command": "x"}')
                ],
                finish_reason="tool_calls",
            ),
            usage=LlmUsage(prompt_tokens=1200 + step, completion_tokens=40, total_tokens=1240),
            cost_usd=0.0031,
            latency_ms=850.0,
        ),
        Run(command=command, thought="Check the module still passes.", cause=first_seq),
        RunOutput(output=output + "\n8 passed in 0.41s\n", exit_code=0, cause=first_seq + 1),
        Think(thought=f"Module {step % 50} passes; on to the next."),
    ]


def session_events(count: int) -> list[Event]:
    """``count`` events: the session's creation, the task, then agent steps."""
    events: list[Event] = [
        SessionCreated(config={"model": "openai/gpt-4o", "runtime": "local"}),
        Message(content="Run every module's tests and fix what fails."),
    ]
    step = 0
    while len(events) < count:
        events.extend(step_events(step, len(events) + 1))
        step += 1
    return events[:count]


def session_annotations(count: int, events: int) -> list[Annotation]:
    """``count`` annotations of a session of ``events`` events, as reviewers write them after
    it ran: a tenth on the whole session, a tenth on its first page, the rest spread over it."""
    whole, first = count // 10, count // 10
    spread = count - whole - first
    targets = [2 + i * (FIRST_PAGE // max(first, 1)) for i in range(first)]
    targets += [
        FIRST_PAGE + 1 + i * ((events - FIRST_PAGE - 1) // max(spread, 1)) for i in range(spread)
    ]
    labels = ("unsafe command", "wrong answer", "good", "needs attention")
    made = [
        Annotation(label=labels[i % len(labels)], comment=f"note {i}", tags=["bench", f"t{i % 7}"],
                   target_seq=target, user="bench-admin")
        for i, target in enumerate(targets)
    ]  # fmt: skip
    return made + [Annotation(label="reviewed", user="bench-admin") for _ in range(whole)]


def chips_on_first_screen(notes: list[Annotation]) -> int:
    """The chips the first screen shows: those on its events and on the whole session."""
    return sum(1 for a in notes if a.target_seq is None or a.target_seq <= FIRST_PAGE)


async def seed_session(database: BenchDatabase, count: int, notes: list[Annotation]) -> uuid.UUID:
    session = uuid.uuid4()
    events: list[Event] = [*session_events(count), *notes]
    async with await EventStore.open(database.app, masker=SecretMasker({})) as store:
        for start in range(0, len(events), APPEND_BATCH):
            await store.append(session, events[start : start + APPEND_BATCH], expected_seq=start)
    return session


def chromium() -> str:
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if found is None:
        raise SystemExit(
            "no Chromium: install Debian's chromium package (scripts/ensure-test-services does)"
        )
    return found


@contextlib.asynccontextmanager
async def signed_in_page(url: str, token: str) -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        browser: Browser = await playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=["--no-sandbox"]
        )
        try:
            context = await browser.new_context(
                base_url=url, viewport={"width": 1280, "height": 800}
            )
            page = await context.new_page()
            await page.goto("/")  # signs in as a person does: the token pasted in the form
            await page.get_by_label("API token").fill(token)
            await page.get_by_role("button", name="Sign in").click()
            await page.get_by_role("heading", name="Sessions").wait_for()
            yield page
        finally:
            await browser.close()


async def first_render_ms(page: Page, session: uuid.UUID, count: int, chips: int) -> float:
    """A fresh load of the session's page until its first screen is drawn (ms since the
    navigation started); checks the page says how many events the session has, and shows
    the ``chips`` of the annotations on what it drew."""
    await page.goto("about:blank")
    await page.goto(f"/#/sessions/{session}")
    await page.wait_for_function(
        "mark => performance.getEntriesByName(mark).length > 0", arg=FIRST_SCREEN_MARK
    )
    at = await page.evaluate(
        "mark => performance.getEntriesByName(mark)[0].startTime", FIRST_SCREEN_MARK
    )
    drawn = await page.locator(".timeline > li").count()
    more = await page.locator(".timeline-more").inner_text()
    if drawn == 0 or f"of {count:,} events" not in more:
        raise RuntimeError(f"the page drew {drawn} events and says {more!r}")
    shown = await page.locator(".annotation-chip").count()
    if shown != chips:
        raise RuntimeError(f"the first screen shows {shown} annotation chips, not {chips}")
    return float(at)


async def fetch_all_ms(page: Page, session: uuid.UUID, count: int) -> float:
    """The session's events through the API from a page of the same origin without the
    app's scripts (so no stream of a previous round's timeline competes with it)."""
    await page.goto("/health/live")
    took, fetched = await page.evaluate(FETCH_ALL, [str(session), 1000])
    if fetched != count:
        raise RuntimeError(f"the API returned {fetched} events, not {count}")
    return float(took)


async def measure(
    server: Server, database: BenchDatabase, rounds: int, count: int, annotated: int
) -> Measurement:
    notes = session_annotations(annotated, count)
    session = await seed_session(database, count, notes)
    chips = chips_on_first_screen(notes)
    total = count + len(notes)
    # the session's summary row, as a running projection would have written it
    await asyncio.to_thread(server.cli, "projections", "rebuild", "session_state")
    token = await asyncio.to_thread(server.token, "bench-admin", admin=True)
    async with signed_in_page(server.url, token) as page:
        result = await interleave(
            lambda: fetch_all_ms(page, session, total),
            lambda: first_render_ms(page, session, total, chips),
            rounds=rounds,
        )
    return Measurement(
        name=f"first render of a {count:,}-event session with {annotated} annotations, against "
        "fetching its events from the API",
        unit="ms",
        baseline=result.baseline.median,
        chronicle=result.chronicle.median,
        ratio=result.ratio,
        target=f"<= {TARGET_MS:,.0f} ms",
        met=result.chronicle.median <= TARGET_MS,
        baseline_spread=f"{result.baseline.low:,.0f}-{result.baseline.high:,.0f}",
        chronicle_spread=f"{result.chronicle.low:,.0f}-{result.chronicle.high:,.0f}",
        ratio_spread=f"{result.ratio_low:.2f}-{result.ratio_high:.2f}",
        detail={
            "rounds": rounds,
            "events": count,
            "annotations": annotated,
            "chips_on_first_screen": chips,
            "baseline_samples": result.baseline.values,
            "chronicle_samples": result.chronicle.values,
            "ratios": result.ratios,
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, rounds=7)
    parser.add_argument("--events", type=int, default=EVENTS, help="events in the session")
    parser.add_argument(
        "--annotations", type=int, default=ANNOTATIONS, help="annotations written after them"
    )
    args = parser.parse_args(argv)

    async def run(database: BenchDatabase) -> list[Measurement]:
        with tempfile.TemporaryDirectory(prefix="chronicle-bench-ui-") as root:
            server = Server(database, Path(root))
            await asyncio.to_thread(server.start)
            try:
                return [await measure(server, database, args.rounds, args.events, args.annotations)]
            finally:
                await asyncio.to_thread(server.stop)

    machine, rows = measured_on_database(args.url, run)
    return report(
        "ui",
        "Web page: first render of a long session in Chromium (ms; median and range over the "
        "rounds)",
        rows,
        as_json=args.json,
        machine=machine,
        how=command_line("ui", args) + f" --events {args.events} --annotations {args.annotations}",
        extra={"load": os.getloadavg()},
    )


if __name__ == "__main__":
    sys.exit(main())
