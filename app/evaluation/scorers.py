"""The built-in scorers, registered in one place (``BUILTIN``), and finding a scorer by name
(a registered one, or ``module:object``).

Adding a scorer is one module with the scorer (``app/evaluation/scoring.py`` says what one
is: a ``PureScorer`` that reads the log, or an async ``judge`` that may use the sandbox and
settings its context gives it, as ``check.py`` does) and one line in ``REGISTERED`` below;
``chronicle eval score --scorer NAME`` then finds it, and a trial is scored with it when it is
in ``TRIAL_SCORERS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from app.evaluation.answer_patterns import PatternCutOff, pattern_found
from app.evaluation.check import Check
from app.evaluation.scoring import (
    PureScorer,
    Score,
    ScoredSession,
    Scorer,
    ScoringError,
)


class Finished(PureScorer):
    """Pass when the agent called ``finish``: it declared the task done. An agent Chronicle
    does not run declares it as a command does, by exiting with code 0."""

    name = "finished"
    version = 1

    def score(self, session: ScoredSession) -> Score:
        if session.external:
            state, reason = session.final_state
            if state is None:
                return Score.verdict(False, "the agent's command recorded no end")
            return Score.verdict(state == "finished", reason or f"the command ended {state}")
        finish = session.finish
        if finish is not None:
            return Score.verdict(True, f"the agent called finish at seq {finish.seq}")
        state, reason = session.final_state
        ended = f"the session ended {state}" + (f" ({reason})" if reason else "")
        if state is None:
            ended = "the session recorded no agent state"
        return Score.verdict(False, f"the agent never called finish; {ended}")


class Answer(PureScorer):
    """Pass when the finish message matches the task's expected answer: the whole message
    (trimmed) for an exact answer, a search for ``regex:``, a substring for ``contains:``.
    Does not apply to a task without an answer. A ``regex:`` search that runs past its time
    limit (``answer_patterns``) is a fail that says it was cut off. An agent Chronicle does
    not run calls no finish: its model's last reply is judged instead."""

    name = "answer"
    version = 1

    def score(self, session: ScoredSession) -> Score | None:
        expected = session.task.expected_answer if session.task else None
        if expected is None:
            return None
        message = session.final_reply if session.external else session.finish_message
        if message is None and session.external:
            return Score.verdict(False, "the agent's model never answered, so it gave no answer")
        if message is None:
            return Score.verdict(False, "the agent never called finish, so it gave no answer")
        if expected.mode == "exact":
            passed = message.strip() == expected.text.strip()
            how = ("equals", "does not equal", expected.text.strip())
        elif expected.mode == "regex":
            try:
                passed = pattern_found(expected.text, message)
            except PatternCutOff as exc:
                return Score.verdict(
                    False,
                    f"the answer pattern {expected.text!r} {exc} on the finish message "
                    f"{_short(message)}; cut off",
                )
            how = ("matches the regex", "does not match the regex", expected.text)
        else:
            passed = expected.text in message
            how = ("contains", "does not contain", expected.text)
        verb = how[0] if passed else how[1]
        return Score.verdict(passed, f"the finish message {_short(message)} {verb} {how[2]!r}")


class Cost(PureScorer):
    """What the session's model calls cost, in US dollars (a measure, not a verdict)."""

    name = "cost"
    version = 1

    def score(self, session: ScoredSession) -> Score:
        total, unpriced = session.cost()
        calls = len(session.model_calls)
        if total is None:
            return Score(
                label="unpriced", explanation=f"none of the {calls} model calls had a price"
            )
        note = f"; {unpriced} had no price and are not counted" if unpriced else ""
        return Score(value=float(total), explanation=f"{calls} model calls cost ${total}{note}")


class Steps(PureScorer):
    """How many actions the agent took (a measure, not a verdict)."""

    name = "steps"
    version = 1

    def score(self, session: ScoredSession) -> Score:
        steps, calls = session.steps, len(session.model_calls)
        return Score(value=float(steps), explanation=f"{steps} actions over {calls} model calls")


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


class _Plain(PureScorer):
    """An object with a name, a version and a plain ``score(session)``, as a pure scorer."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.name = str(scorer.name)
        self.version = int(scorer.version)

    def score(self, session: ScoredSession) -> Score | None:
        found: Score | None = self.scorer.score(session)
        return found


#: Every built-in scorer: the one place a scorer is registered.
REGISTERED: tuple[Scorer, ...] = (Finished(), Answer(), Cost(), Steps(), Check())
BUILTIN: Mapping[str, Scorer] = MappingProxyType({s.name: s for s in REGISTERED})
#: What ``chronicle eval score`` runs without ``--scorer`` (the pure ones: no sandbox).
DEFAULT_SCORERS = ("finished", "answer", "cost", "steps")
#: What a trial is scored with as it ends (``app/evaluation/trials.py``).
TRIAL_SCORERS = (*DEFAULT_SCORERS, "check")


def scorer_named(name: str, registry: Mapping[str, Scorer] = BUILTIN) -> Scorer:
    """A registered scorer, or ``package.module:NAME`` (an object, or a class taking no
    arguments: a ``Scorer``, or one with a name, an integer version and a plain
    ``score(session)``, taken as a pure scorer)."""
    if name in registry:
        return registry[name]
    if ":" not in name:
        raise ScoringError(
            f"no scorer named {name!r}; the built-in scorers are {', '.join(registry)}, "
            "or name your own as package.module:NAME"
        )
    module_name, _, attribute = name.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except ImportError as exc:
        raise ScoringError(f"cannot import the scorer module {module_name!r}: {exc}") from None
    except AttributeError:
        raise ScoringError(f"the module {module_name!r} has no {attribute!r}") from None
    scorer = found() if isinstance(found, type) else found
    named = isinstance(getattr(scorer, "name", None), str)
    versioned = isinstance(getattr(scorer, "version", None), int)
    if named and versioned and isinstance(scorer, Scorer):
        return scorer
    if named and versioned and callable(getattr(scorer, "score", None)):
        return _Plain(scorer)
    raise ScoringError(
        f"{name} is not a scorer: it needs a name, an integer version and either "
        "score(session) or judge(context) with pure (whether it reads only the log)"
    )
