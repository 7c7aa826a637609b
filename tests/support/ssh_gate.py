"""An SSH server of the tests' own in front of a Docker engine: what an ``ssh://`` entry of
``docker_hosts`` reaches on another machine.

``sshd`` listens on a free loopback port with a host key and one authorised client key made
here, and runs ``docker system dial-stdio`` (what ``docker -H ssh://`` and the SDK run) against
the engine given, through ``SetEnv DOCKER_HOST``. The ssh program finds the host under the
name ``HOST`` through a configuration of ours: ``path_dir`` holds an ``ssh`` that adds ``-F``
with it, for the test to put first in ``PATH`` (the SDK starts ``ssh`` by name), so the
user's own ``~/.ssh`` is neither read nor changed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

HOST = "chronicle-ssh-test"
SSHD = "/usr/sbin/sshd"


def sshd_available() -> bool:
    return Path(SSHD).exists() and shutil.which("ssh-keygen") is not None


@dataclass
class SshGate:
    root: Path
    engine_url: str
    user: str = "root"
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The ``docker_hosts`` entry (with the port: the SDK adds 22 to an entry without
        one, over what the ssh configuration says)."""
        return f"ssh://{self.user}@{HOST}:{self.port}"

    @property
    def path_dir(self) -> Path:
        return self.root / "bin"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "client_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.root / name)],
                check=True,
            )
        (self.root / "authorized_keys").write_bytes((self.root / "client_key.pub").read_bytes())
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        (self.root / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.root / 'host_key'}\n"
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}\nPidFile {self.root / 'pid'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"SetEnv DOCKER_HOST={self.engine_url}\n"
        )
        host_key = (self.root / "host_key.pub").read_text().split()
        (self.root / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} {host_key[0]} {host_key[1]}\n"
        )
        (self.root / "ssh_config").write_text(
            f"Host {HOST}\n  HostName 127.0.0.1\n  Port {self.port}\n"
            f"  IdentityFile {self.root / 'client_key'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.root / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
            # one connection for every docker call and exec, as docs/sandboxes.md advises
            f"  ControlMaster auto\n  ControlPath {self.root / 'cm-%C'}\n  ControlPersist 60\n"
        )
        self.path_dir.mkdir(exist_ok=True)
        wrapper = self.path_dir / "ssh"
        wrapper.write_text(
            f'#!/bin/sh\nexec {shutil.which("ssh")} -F {self.root / "ssh_config"} "$@"\n'
        )
        wrapper.chmod(0o755)
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "sshd.log", "wb"),
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not start: {(self.root / 'sshd.log').read_text()[-2000:]}")

    def stop(self) -> None:
        subprocess.run(  # the shared connection's master, if one is still up
            ["ssh", "-F", str(self.root / "ssh_config"), "-O", "exit", HOST],
            capture_output=True,
            timeout=10,
            check=False,
        )
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None
