"""The local sandbox: the action server on this machine, in a bubblewrap jail.

``runtime`` starts and stops it; ``jail`` says what the jail shows and hides; ``cgroup`` and
``limits`` bound what it may take.
"""

from app.runtime.local.limits import SandboxLimits
from app.runtime.local.runtime import LocalRuntime

__all__ = ["LocalRuntime", "SandboxLimits"]
