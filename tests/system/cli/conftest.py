"""The `chronicle` command's tests share its environment as the application runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import cli_environment


@pytest.fixture
def env(app_database_url: str, tmp_path: Path) -> dict[str, str]:
    """The command as the application runs it: configured with chronicle_app's URL."""
    return cli_environment(app_database_url, tmp_path)
