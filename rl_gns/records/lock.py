"""One writer per run directory: an OS-level lock (``fcntl.flock``) on ``<run>/.lock``, held for the run's lifetime.

The kernel releases the lock when its holder exits, however it exits (a kill included), so a lock is never stale;
the holder's process id is written into the file for the message that refuses a second writer. Reading a run
takes no lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK = ".lock"


class RunLockedError(ValueError):
    """Another process is writing the run directory."""


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid else "another process"


def _refusal(run_path: Path) -> RunLockedError:
    return RunLockedError(f"{run_path} is being written by {_holder(run_path / LOCK)}; wait for it to end or stop it first")


def check_unlocked(run_path: Path) -> None:
    """Refuse a run directory that a live process is writing; writes nothing (a probe of the lock).

    :raises RunLockedError: naming the process that holds it.
    """
    path = run_path / LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _refusal(run_path) from None
    finally:
        os.close(fd)  # closing releases a probe that succeeded


class RunLock:
    """The exclusive lock of one run directory, taken by :meth:`acquire` and held until :meth:`release`, the end of a
    ``with`` block, or the process's exit.

    :param run_path: the run directory (created if missing).
    """

    def __init__(self, run_path: Path) -> None:
        self.run_path = run_path
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock without waiting.

        :raises RunLockedError: if another process holds it.
        """
        self.run_path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _refusal(self.run_path) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def release(self) -> None:
        """Let the lock go (closing the file releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
