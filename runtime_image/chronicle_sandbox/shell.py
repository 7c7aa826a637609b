"""One persistent bash per sandbox, driven through a pseudo-terminal.

``cd``, exported variables and an activated virtualenv persist between commands because it
is the same bash. Completion is detected by a prompt marker that carries ``$?``. Output is
merged stdout+stderr in order (one terminal), bounded while it streams.
"""

from __future__ import annotations

import os
import pty
import re
import resource
import secrets
import shutil
import signal
import termios
import threading
import time
from typing import Any, NoReturn

from .disk_filter import DiskFilter
from .output import CappedBuffer, decode, truncate_around

SPECIAL_KEYS = {"C-c": b"\x03", "C-d": b"\x04", "C-z": b"\x1a", "C-\\": b"\x1c"}


class Shell:
    def __init__(
        self,
        workspace: str,
        env: dict[str, str],
        *,
        no_output_timeout: float = 10.0,
        max_wait: float = 120.0,
        max_output_chars: int = 30_000,
        limits: dict[int, int] | None = None,
        disk_filter: bool = False,
    ) -> None:
        """``disk_filter``: the commands may not reserve disk space without writing it (the
        workspace size limit needs it; see the ``disk_filter`` module)."""
        self.workspace = workspace
        self._env = env
        self._limits = limits or {}  # resource.RLIMIT_* -> value, for bash and its commands
        self.no_output_timeout = no_output_timeout
        self.max_wait = max_wait
        self.max_output_chars = max_output_chars
        self._lock = threading.Lock()
        self._running: str | None = None
        self._started_at = 0.0
        self._generation = 0  # which bash the reader threads belong to
        #: why commands were stopped from outside (the workspace size limit), for the next
        #: observation to say
        self._stopped_note: str | None = None
        self._prctl = _prctl()  # loaded here: nothing may be loaded between fork and exec
        self._filter = DiskFilter() if disk_filter and self._prctl is not None else None
        self._start()

    # -- process -------------------------------------------------------------------------

    def _start(self) -> None:
        self._marker = f"__CHRONICLE_{secrets.token_hex(8)}__"
        env = dict(self._env)
        env.update(
            PS1="",
            PS2="",
            PROMPT_COMMAND=f'printf "\\n{self._marker}%s{self._marker}\\n" "$?"',
            TERM="dumb",
            HISTFILE="/dev/null",
            PAGER="cat",
            GIT_PAGER="cat",
        )
        argv = ["bash", "--noprofile", "--norc", "--noediting", "-i"]
        bash = shutil.which("bash", path=env.get("PATH")) or "/bin/bash"
        limits = _rlimit_values(self._limits)
        pid, fd = pty.fork()
        if pid == 0:  # the child: become bash in the workspace, and die with the server
            _exec_shell(self._prctl, limits, self.workspace, bash, argv, env, self._filter)
        self.pid, self.fd = pid, fd
        self.alive = True
        self._generation += 1
        self._buffer = self._new_buffer()
        self._pattern = re.compile(
            rb"\n?" + self._marker.encode() + rb"(\d+)" + self._marker.encode() + rb"\n"
        )
        self._reader = threading.Thread(
            target=self._pump, args=(fd, self._generation), name="shell-reader", daemon=True
        )
        self._reader.start()
        if self._wait_for_prompt(self._buffer, 10) is None:
            raise RuntimeError("bash did not start")
        # bash at its prompt is the terminal's foreground group: remember which group that is
        # (inside a jail, bash is not our direct child).
        self._shell_group = os.tcgetpgrp(self.fd)
        self._buffer = self._new_buffer()

    def _new_buffer(self) -> CappedBuffer:
        # Bytes: room for half the characters at up to 4 bytes each (and the prompt marker);
        # the text is cut to max_output_chars after decoding, with one count of what is gone.
        room = 2 * self.max_output_chars + 256
        return CappedBuffer(head=room, tail=room)

    def _pump(self, fd: int, generation: int) -> None:
        """Read one bash's terminal until it closes; once that bash was replaced, what is
        read is dropped and nothing of the new one is touched."""
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if generation != self._generation:
                if not data:
                    return
                continue
            if not data:
                self.alive = False
                with self._buffer.changed:
                    self._buffer.changed.notify_all()
                return
            self._buffer.write(data)

    def _wait_for_prompt(self, buffer: CappedBuffer, seconds: float) -> int | None:
        deadline = time.monotonic() + seconds
        with buffer.changed:
            while True:
                match = self._pattern.search(_recent(buffer))
                if match:
                    return int(match.group(1))
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.alive:
                    return None
                buffer.changed.wait(min(remaining, 0.5))

    def _exited(self) -> bool:
        """Has bash itself exited? (Background jobs may still hold the terminal open.)"""
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid:
            self.alive = False
        return not self.alive

    def _kill(self) -> None:
        """Kill bash and everything started from its terminal session, jobs included. Bash
        first: a command of the line killed while bash still lived let bash run the rest of
        the line (``sleep 1000; echo ran``) in the moment before its own kill, on a busy
        machine."""
        members = _session_members(self.pid)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        # then its session, and once more for what forked while the first sweep killed
        for pid in [*members, *_session_members(self.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.alive = False
        # Close the terminal only once its reader is done with it: a number closed under a
        # reader could be reused by the next terminal, which that reader would then steal
        # from. (If something escaped the kill and holds it open, it is left open.)
        self._reader.join(timeout=2)
        if not self._reader.is_alive():
            try:
                os.close(self.fd)
            except OSError:
                pass

    def close(self) -> None:
        self._kill()

    def adopt_orphans(self) -> None:
        """Become the subreaper of what the shell starts: a command that detaches itself
        (``setsid``, a double fork) stays this server's descendant, so ``stop_commands``
        reaches it. Its zombies are then ours to reap (``reap_orphans``)."""
        if self._prctl is not None:
            self._prctl(36, 1)  # PR_SET_CHILD_SUBREAPER

    def reap_orphans(self) -> None:
        """Collect adopted processes that ended (never bash: ``run`` waits for that one)."""
        for pid in _children_of(os.getpid()):
            if pid == self.pid:
                continue
            try:
                os.waitpid(pid, os.WNOHANG)
            except OSError:
                pass

    def stop_commands(self, note: str) -> bool:
        """Kill every command of the shell (its terminal's session and whatever descends
        from this server, orphans it adopted included), not bash itself; the next observation
        ends with ``note``. Called from another thread (the workspace size limit's watcher):
        no lock is taken. Only the commands found now are killed: the observation may be
        back before the SIGKILL, and the next command must not be taken for one of them."""
        commands = self._commands()
        if not commands:
            return False
        self._stopped_note = note
        if self._running is not None:
            # Ctrl-C first, so bash abandons the rest of the command line (a loop it runs
            # itself would otherwise start the next writer), then SIGKILL for what is left.
            try:
                os.write(self.fd, SPECIAL_KEYS["C-c"])
            except OSError:
                pass
            time.sleep(0.1)
        for pid in commands:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return True

    def stop_processes(self, pids: set[int], note: str) -> None:
        """Kill ``pids`` (bash too, when it is one of them: the next command gets a new
        bash); the next observation ends with ``note``. From the watcher's thread, as
        ``stop_commands``."""
        self._stopped_note = note
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def processes(self) -> set[int]:
        """bash and every command of it (what the workspace size limit looks into)."""
        return self._commands() | {self.pid}

    def _commands(self) -> set[int]:
        """The processes of the shell's commands: bash's session and this server's
        descendants, bash itself aside."""
        found = set(_session_members(self.pid)) | _descendants(os.getpid())
        found.discard(self.pid)
        return found

    # -- commands ------------------------------------------------------------------------

    def run(self, command: str, timeout: float | None, is_input: bool) -> dict[str, Any]:
        with self._lock:
            notes: list[str] = []
            if self._exited():
                self._kill()
                self._start()
                self._running = None
                notes.append(f"[the shell had exited; a new shell was started in {self.workspace}]")
            if is_input:
                if self._running is None:
                    return _error("no command is running: is_input=true sends input to one")
                key = SPECIAL_KEYS.get(command.strip())
                if key is not None:
                    os.write(self.fd, key)
                elif command:
                    os.write(self.fd, command.encode("utf-8", "surrogateescape") + b"\n")
            else:
                if self._running is not None:
                    return _error(
                        f"the command {self._running!r} is still running; send input to it "
                        "with is_input=true, or C-c to interrupt it"
                    )
                self._buffer = self._new_buffer()
                text = command.rstrip("\n")
                if "\n" in text:  # one compound command, so bash prompts once at the end
                    text = "{\n" + text + "\n}"
                self._running = command
                self._started_at = time.monotonic()
                os.write(self.fd, text.encode("utf-8", "surrogateescape") + b"\n")
            return self._collect(timeout, notes)

    def _collect(self, timeout: float | None, notes: list[str]) -> dict[str, Any]:
        buffer = self._buffer
        hard = timeout if timeout is not None else self.max_wait
        soft = None if timeout is not None else self.no_output_timeout
        deadline = time.monotonic() + hard
        exit_code: int | None = None
        timed_out = still_running = False
        with buffer.changed:
            last_total, last_change = buffer.total, time.monotonic()
            while True:
                match = self._pattern.search(_recent(buffer))
                if match:
                    exit_code = int(match.group(1))
                    break
                if self._exited():
                    notes.append("[the shell exited; the next command starts a new one]")
                    break
                now = time.monotonic()
                if buffer.total != last_total:
                    last_total, last_change = buffer.total, now
                if now >= deadline:
                    timed_out = True
                    break
                if soft is not None and now - last_change >= soft:
                    still_running = True
                    break
                buffer.changed.wait(0.2)
        if timed_out:
            exit_code = self._stop_command(buffer)
            notes.append(f"[the command timed out after {hard:g} s and was stopped]")
        if still_running:
            self._buffer = self._new_buffer()  # what follows belongs to the next read
            notes.append(
                f"[no output for {soft:g} s; the command is still running. Send more input "
                "with is_input=true (an empty command waits for more output), or C-c to stop it]"
            )
        else:
            self._running = None
        note, self._stopped_note = self._stopped_note, None
        if note is not None:
            notes.append(note)
        return self._observation(buffer, exit_code, timed_out, still_running, notes)

    def _stop_command(self, buffer: CappedBuffer) -> int | None:
        """Ctrl-C, so bash abandons the rest of the command line, then SIGKILL for what is left
        of the command's process group. A command that outlives Ctrl-C (it ignores SIGINT, or
        the machine is slow) takes bash with it and a new shell starts: killing only its group
        would let bash run the rest of the line (``sleep 1000; rm -rf ...`` would remove).
        """
        try:
            group = os.tcgetpgrp(self.fd)
        except OSError:
            group = self._shell_group
        os.write(self.fd, SPECIAL_KEYS["C-c"])
        code = self._wait_for_prompt(buffer, 2.5)
        if code is None:
            self._kill()
            self._start()
            self._stopped_note = (
                "[the command did not stop at Ctrl-C: its shell was replaced by a new one, "
                "so its directory and variables are back to where the sandbox started]"
            )
            return None
        if group != self._shell_group:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        return code

    def _observation(
        self,
        buffer: CappedBuffer,
        exit_code: int | None,
        timed_out: bool,
        still_running: bool,
        notes: list[str],
    ) -> dict[str, Any]:
        if buffer.dropped:
            head = decode(bytes(buffer.head))
            tail = decode(self._pattern.sub(b"", bytes(buffer.tail)))
            dropped = max(buffer.dropped_characters, 1)  # (only bytes that are not UTF-8: 0)
        else:  # one stretch of bytes: the prompt marker may straddle head and tail
            head, tail, dropped = decode(self._pattern.sub(b"", buffer.contents())), "", 0
        text, truncated = truncate_around(head, dropped, tail, self.max_output_chars)
        if notes:
            text = (text + "\n" if text and not text.endswith("\n") else text) + "\n".join(notes)
        return {
            "kind": "run.output",
            "output": text,
            "exit_code": exit_code,
            "timed_out": timed_out,
            "truncated": truncated,
            "still_running": still_running,
        }


def _prctl() -> Any:
    """libc's ``prctl``, or None where there is none (not Linux)."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _rlimit_values(limits: dict[int, int]) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) to set for good: never above the current hard limit, and CPU
    with one second of grace so SIGXCPU can be reported before SIGKILL."""
    values = []
    for which, value in limits.items():
        _soft, hard = resource.getrlimit(which)
        ceiling = value + 1 if which == resource.RLIMIT_CPU else value
        if hard != resource.RLIM_INFINITY:
            value, ceiling = min(value, hard), min(ceiling, hard)
        values.append((which, value, ceiling))
    return values


def _exec_shell(
    prctl: Any,
    limits: list[tuple[int, int, int]],
    workspace: str,
    bash: str,
    argv: list[str],
    env: dict[str, str],
    disk_filter: DiskFilter | None = None,
) -> NoReturn:
    """In the forked child: become bash. Only plain system calls here (no imports, no
    libraries loaded, no Python-level locks): the server has threads, and a lock one of them
    held at the fork would stay held in this child forever.

    bash and every command it runs get: death with the server, only the terminal (none of the
    server's descriptors; set to neither add carriage returns nor echo input), the default
    action of the signals Python ignores (as ``subprocess`` does) and of those a server started
    in the background or under ``nohup`` inherits ignored (else Ctrl-C and a timeout's
    interrupt would not reach a command), the resource limits for
    good, and the out-of-memory killer's first place (before the server); with a
    ``disk_filter``, its seccomp filter for good (no shell at all if it cannot be installed).
    """
    try:
        if prctl is not None:
            prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ", "SIGINT", "SIGQUIT", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        for which, soft, hard in limits:
            try:
                resource.setrlimit(which, (soft, hard))
            except (OSError, ValueError):
                pass
        try:
            adjust = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(adjust, b"1000")
            os.close(adjust)
        except OSError:
            pass
        # Before bash prints anything (its first prompt must not race this): plain newlines
        # in output, commands not echoed back.
        attrs = termios.tcgetattr(0)
        attrs[1] &= ~termios.ONLCR
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(0, termios.TCSANOW, attrs)
        try:
            os.chdir(workspace)
        except OSError:
            pass
        if disk_filter is not None and not disk_filter.install(prctl):
            os.write(2, b"chronicle_sandbox: the seccomp filter could not be installed\n")
            os._exit(126)
        os.execve(bash, argv, env)
    finally:
        os._exit(127)  # never back into the server's code


def _session_members(session_id: int) -> list[int]:
    """Processes whose session is ``session_id`` (Linux /proc; empty elsewhere)."""
    return [
        pid
        for pid, fields in _process_stats()
        if len(fields) > 3 and int(fields[3]) == session_id and pid != session_id
    ]


def _parents() -> dict[int, list[int]]:
    """Each process's children (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for pid, fields in _process_stats():
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    return children


def _process_stats() -> list[tuple[int, list[bytes]]]:
    """Each live process's /proc/PID/stat fields after its name (state, ppid, pgrp, session,
    ...); empty where there is no /proc. A process gone meanwhile is left out."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    stats: list[tuple[int, list[bytes]]] = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        stats.append((int(entry), stat[stat.rfind(b")") + 2 :].split()))
    return stats


def _children_of(parent: int) -> list[int]:
    return _parents().get(parent, [])


def _descendants(root: int) -> set[int]:
    """Processes descending from ``root``."""
    children = _parents()
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _recent(buffer: CappedBuffer) -> bytes:
    """The last bytes printed, where a prompt marker would be (it may straddle head and tail)."""
    if len(buffer.tail) >= 256:
        return bytes(buffer.tail[-256:])
    return bytes((buffer.head + buffer.tail)[-256:])


def _error(message: str) -> dict[str, Any]:
    return {"kind": "error", "message": message, "error_type": "shell"}
