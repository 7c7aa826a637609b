"""Every ``chronicle users CHANGE`` has its store function and its words, so a change added to
the command's list cannot reach a user without either."""

from __future__ import annotations

import inspect

from app.cli.users import CHANGE_WORDS, USER_CHANGES
from app.server.sql import user_states


def test_every_change_has_a_store_function_and_words() -> None:
    assert set(CHANGE_WORDS) == set(USER_CHANGES)
    for change in USER_CHANGES:
        assert inspect.iscoroutinefunction(getattr(user_states, f"{change}_user"))
