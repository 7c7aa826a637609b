"""A seccomp filter for the shell and its commands: no disk space without writing it.

The workspace size limit (``quota``) holds through what is measured between two rounds and
through ``RLIMIT_FSIZE``. ``fallocate`` escapes both: one call reserves any number of blocks
(with ``FALLOC_FL_KEEP_SIZE`` the file's size stays 0, so ``RLIMIT_FSIZE`` never applies) in
an instant, and ``fallocate -n -l 1T x`` filled the host's disk before a measurement could
see it. So the shell's commands get ``fallocate`` answered ``EOPNOTSUPP`` (what a file system
without it says: ``posix_fallocate`` then writes the bytes, which the limit counts) and
``io_uring_setup`` answered ``ENOSYS`` (io_uring can ask for an fallocate the filter would
not see). Everything else is allowed; an architecture not listed is left unfiltered.

Built here, before the fork (a ``sock_fprog`` in memory), and installed in the forked child by
two ``prctl`` calls: no new privileges (required without CAP_SYS_ADMIN), then the filter.
Standard library only (this runs in the sandbox image).
"""

from __future__ import annotations

import ctypes
import errno
import struct
from typing import Any

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
NR_OFFSET, ARCH_OFFSET = 0, 4  # in struct seccomp_data
X32 = 0x40000000  # x86_64's x32 system calls carry this bit

#: Per AUDIT_ARCH_*: (system call number, errno it is answered with).
DENIED: dict[int, list[tuple[int, int]]] = {
    0xC000003E: [  # x86_64, with x32
        (285, errno.EOPNOTSUPP), (X32 | 285, errno.EOPNOTSUPP),
        (425, errno.ENOSYS), (X32 | 425, errno.ENOSYS),
    ],
    0x40000003: [(324, errno.EOPNOTSUPP), (425, errno.ENOSYS)],  # i386
    0xC00000B7: [(47, errno.EOPNOTSUPP), (425, errno.ENOSYS)],  # aarch64
    0x40000028: [(352, errno.EOPNOTSUPP), (425, errno.ENOSYS)],  # arm
}  # fmt: skip


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def instructions() -> list[bytes]:
    """The filter: for each architecture, its denied calls answered with their errno."""
    program: list[bytes] = []
    for arch, denied in DENIED.items():
        rest = 1 + 2 * len(denied) + 1  # load nr, a test and a return per call, allow
        program.append(_instruction(LOAD_WORD, ARCH_OFFSET))
        program.append(_instruction(JUMP_IF_EQUAL, arch, 0, rest))
        program.append(_instruction(LOAD_WORD, NR_OFFSET))
        for number, code in denied:
            program.append(_instruction(JUMP_IF_EQUAL, number, 0, 1))
            program.append(_instruction(RETURN, SECCOMP_RET_ERRNO | code))
        program.append(_instruction(RETURN, SECCOMP_RET_ALLOW))
    program.append(_instruction(RETURN, SECCOMP_RET_ALLOW))
    return program


class DiskFilter:
    """The filter, ready to install in a forked child (``install``: plain calls only)."""

    def __init__(self) -> None:
        program = instructions()
        self._code = ctypes.create_string_buffer(b"".join(program))
        self._program = _Program(len(program), ctypes.cast(self._code, ctypes.c_char_p))
        self._pointer = ctypes.byref(self._program)
        self._one = ctypes.c_ulong(1)
        self._zero = ctypes.c_ulong(0)
        self._mode = ctypes.c_ulong(SECCOMP_MODE_FILTER)

    def install(self, prctl: Any) -> bool:
        """In the child: no new privileges, then the filter; whether both took."""
        zero = self._zero
        if prctl(PR_SET_NO_NEW_PRIVS, self._one, zero, zero, zero) != 0:
            return False
        return bool(prctl(PR_SET_SECCOMP, self._mode, self._pointer, zero, zero) == 0)
