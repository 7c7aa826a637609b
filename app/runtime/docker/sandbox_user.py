"""Who a Docker sandbox runs as: the rule both runtimes share, in ``app.runtime.sandbox_user``."""

from app.runtime.sandbox_user import SandboxUser, hand_over, prepare_workspace

__all__ = ["SandboxUser", "hand_over", "prepare_workspace"]
