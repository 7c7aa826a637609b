"""The Docker sandbox: the action server in a hardened container, one per session.

``runtime`` starts and stops the container; ``hardening`` is what confines it;
``sandbox_user`` and ``private_dir`` are the user it runs as and the private socket
directory; ``reaper`` removes containers whose owner went quiet.
"""

from app.runtime.docker.runtime import DockerRuntime, container_name

__all__ = ["DockerRuntime", "container_name"]
