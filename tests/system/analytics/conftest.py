"""A login in chronicle_analyst on the test's database, for `chronicle sql` and exports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.analyst_login import analyst_login
from tests.support.postgres import ServerAddress


@pytest.fixture
def analyst_database_url(database_url: str, pg_address: ServerAddress) -> Iterator[str]:
    with analyst_login(database_url, pg_address) as url:
        yield url
