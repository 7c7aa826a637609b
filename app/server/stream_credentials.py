"""A live stream ends when the credentials it was opened with stop holding.

A stream is one request that lasts: checking its token when it opened is not enough once the
token is revoked, its user disabled or removed, its login ended, or an admin demoted (who may
no longer see the session). Each stream waits on the process's ``CredentialWatch`` and, on
every change it hears (and at least every ``RECHECK_SECONDS``, should a notification be lost),
asks the database whether its credentials still hold; when they do not, the stream tells the
client so and ends.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from app.server.sql.credential_watch import CredentialWatch
from app.server.sql.logins import still_live
from app.sessions.sql.users import Principal
from app.store import EventStore

#: The longest a stream goes without asking, whatever it hears.
RECHECK_SECONDS = 30.0

log = logging.getLogger(__name__)


@dataclass
class CredentialCheck:
    """``ended()`` returns once the stream's credentials no longer hold (``revoked`` set)."""

    store: EventStore
    principal: Principal
    watch: CredentialWatch
    recheck_seconds: float = RECHECK_SECONDS
    revoked: bool = field(default=False, init=False)

    async def ended(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.recheck_seconds):
                    await self.watch.changed()
            except TimeoutError:
                pass
            try:
                live = await still_live(self.store, self.principal)
            except Exception as exc:  # the database away: the stream goes on, asks again later
                log.info("could not check a stream's credentials (%s)", exc)
                continue
            if not live:
                self.revoked = True
                return
