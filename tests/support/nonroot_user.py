"""Running a test's helper script as a non-root user (created when the suite runs as root):
the user, the command prefix that switches to it, and a Python it can run Chronicle with."""

from __future__ import annotations

import os
import pwd
import site
import subprocess
import sys

import pytest

from tests.support.repository import ROOT

REPO = ROOT


def ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
        )
        return pwd.getpwnam(name)


def as_user(user: pwd.struct_passwd | None) -> list[str]:
    if user is None:
        return []
    return ["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--init-groups"]


def interpreter_for(prefix: list[str], env: dict[str, str]) -> tuple[str, str]:
    """A Python the user can run that imports Chronicle, and the PYTHONPATH it needs.

    This interpreter when the user can reach it; else the system's of the same version with
    this environment's packages on the path (a root-only home often holds the interpreter).
    """
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = os.pathsep.join([str(REPO), *site.getsitepackages()])
    for python, path in ((sys.executable, str(REPO)), (f"/usr/bin/{version}", packages)):
        probe = subprocess.run(
            [*prefix, python, "-c", "import app.runtime, tests.support.jail_attacks"],
            env={**env, "PYTHONPATH": path},
            capture_output=True,
        )
        if probe.returncode == 0:
            return python, path
    pytest.fail(
        f"the non-root user cannot run Chronicle from {REPO} ({probe.stderr.decode()[-500:]}); "
        "the checkout and a Python with its packages must be readable by other users"
    )
