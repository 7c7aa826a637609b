"""Offline evaluation: task suites, scorers over recorded sessions, the ``eval.score`` events."""
