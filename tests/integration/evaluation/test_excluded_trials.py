"""Erased and redacted trials are counted apart in a run's report, outside the pass rate and
not as failures: a trial whose session was erased (``erase_session``, as a retention policy
erases it: its tombstone kept), one whose verdict was redacted, and, in a replay run, one whose
replay stopped at a redacted observation. Real PostgreSQL; the replays run the real agent
against the recordings (no model, no sandbox)."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.evaluation.replaying import replay_trial
from app.evaluation.report import compare
from app.evaluation.report_text import comparison_lines, report_lines, report_markdown
from app.evaluation.reporting import run_report
from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import EvalScore, Message, SessionCreated
from app.replay import AgentConfig
from app.store import EventStore, erase_session
from tests.support.written_sessions import Recorder

RUN = "nightly"


class TrialRecorder(Recorder):
    """A ``Recorder`` whose session is trial ``task`` x ``epoch`` of ``RUN``."""

    def __init__(self, store: EventStore, task: str, epoch: int = 1) -> None:
        super().__init__(store)
        self.trial = evaluation_config(RUN, Task(id=task, prompt="Fix the tests."), epoch)

    async def start(self, task: str = "Fix the tests.") -> None:
        config = {
            "agent": "codeact", "workspace": self.workspace, "runtime": "local",
            "model": self.llm.model, "llm": self.llm.public(),
            "tools": [tool["function"]["name"] for tool in self.agent.tools()],
            "mcp_servers": [], "max_iterations": self.max_iterations,
            "stuck_detection": self.stuck_detection, **self.trial,
        }  # fmt: skip
        await self.store.append(
            self.session,
            [SessionCreated(title=task, config=config), Message(content=task)],
            expected_seq=0,
        )

    async def fix_and_finish(self) -> int:
        """The recording, scored passed; the seq of its second run's output."""
        await self.start()
        await self.state("running")
        [run] = await self.call(("execute_bash", {"command": "pytest -q"}))
        await self.output(run, "1 failed", exit_code=1)
        [run] = await self.call(("execute_bash", {"command": "pytest -q -x"}))
        await self.output(run, "1 passed")
        await self.call(("finish", {"message": "fixed"}))
        await self.state("finished", "the agent called finish")
        await self.append(score(RUN, "pass"))
        return run + 1


def score(run: str, label: str) -> EvalScore:
    return EvalScore(name="finished", scorer_version=1, score_label=label,
                     score_value=float(label == "pass"), explanation="e", scored_seq=1,
                     evaluation_run=run)  # fmt: skip


async def test_erased_and_redacted_trials_are_counted_apart(store: EventStore) -> None:
    matched = TrialRecorder(store, "a")
    await matched.fix_and_finish()
    stopped = TrialRecorder(store, "b")
    output = await stopped.fix_and_finish()
    unjudged = TrialRecorder(store, "c")
    await unjudged.start()
    [label] = await unjudged.append(score(RUN, "fail"))
    gone = TrialRecorder(store, "d")
    await gone.start()
    await gone.append(score(RUN, "fail"))
    assert (await run_report(store, RUN)).total == 4  # the projection has seen every trial

    await erase_session(store, gone.session, key=Ed25519PrivateKey.generate(), actor="ops",
                        via="cli", policy="keep 90 days")  # fmt: skip
    await store.redact(unjudged.session, label.seq, "/score_label", reason="x", user="ops")
    report = await run_report(store, RUN)

    # a and b count (both passed); c and d are neither passes nor failures
    assert (report.total, report.passed, report.pass_rate) == (2, 2, 1.0)
    assert (report.erased, report.redacted) == (1, 1)
    assert [t.id for t in report.tasks] == ["a", "b"]
    assert [t.id for t in report.task_table] == ["a", "b"]
    erased, redacted = report.excluded
    assert (erased.kind, erased.session_id, erased.task_id) == ("erased", gone.session, None)
    assert (
        erased.note.startswith("erased ")
        and "by ops under the policy 'keep 90 days'" in erased.note
    )
    assert (redacted.kind, redacted.task_id, redacted.epoch) == ("redacted", "c", 1)
    assert redacted.note == "the verdict of finished was redacted"
    lines = report_lines(report)
    assert lines[1] == (
        "not counted: 1 erased, 1 redacted (in neither the pass rate nor the failures: nothing "
        "says whether they passed)"
    )
    assert lines[2].startswith(f"  a trial (erased, session {gone.session}): erased ")
    assert lines[3] == f"  c epoch 1 (redacted, session {unjudged.session}): {redacted.note}"
    assert "not counted: 1 erased, 1 redacted" in report_markdown(report)

    # A replay run: b's observation was redacted since, so its replay stops there; d's
    # recording is gone. Neither is a divergence.
    await store.redact(stopped.session, output, "/output", reason="a key", user="ops")
    trials = (("a", matched.session), ("b", stopped.session), ("d", gone.session))
    replays = {
        task: await replay_trial(store, f"{RUN}-replay", task, 1, session, AgentConfig(),
                                 "strict", [])
        for task, session in trials
    }  # fmt: skip
    assert replays["a"].matched and replays["a"].excluded is None
    assert (replays["b"].excluded, replays["b"].kind, replays["b"].step) == (
        "redacted",
        "redacted",
        2,
    )
    assert replays["b"].replay is not None and replays["b"].error is None
    assert replays["d"].excluded == "erased" and replays["d"].replay is None
    assert replays["d"].error is None and replays["d"].divergence == erased.note

    replayed = await run_report(store, f"{RUN}-replay")
    assert (replayed.total, replayed.passed, replayed.redacted, replayed.erased) == (1, 1, 1, 0)
    [apart] = replayed.excluded
    assert (apart.task_id, apart.session_id) == ("b", replays["b"].replay)
    assert apart.note == (
        f"its replay cannot go on: model call 2: the answer to its run cannot be served: seq "
        f"{output} /output was redacted (a key)"
    )
    assert "replays: 1 of 2 matched, 1 stopped at a redacted part" in report_lines(replayed)

    comparison = compare(report, replayed)
    assert comparison.excluded == 3 and comparison.diverged == []
    assert "not counted: 3 trials erased or redacted (in neither pass rate)" in (
        comparison_lines(comparison)
    )
