"""Whether this run is CI's (``CI=true``): there a test that cannot run fails instead of
skipping, so that CI always exercises Docker, bubblewrap, tmpfs mounts and the rest."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI") == "true"
