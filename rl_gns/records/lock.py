"""One writer per directory: an OS-level lock (``fcntl.flock``) on ``<dir>/.lock``, held for the writer's lifetime.

A run directory is held by the process that trains it; a sweep's, a benchmark's, a probe's or a scaling measurement's
directory by the command that writes it (its runs are held by their own processes). The kernel releases the lock when
its holder exits, however it exits (a kill included), so a lock is never stale; the holder's process id is written
into the file for the message that refuses a second writer. Within one process the lock is shared: a probe holds its
directory, and the sweep of its branches, in the same directory, takes it again. Reading takes no lock; a report
rewrites its own files whole, so one written while the experiment runs is replaced by the experiment's last.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

LOCK = ".lock"

#: The locks this process holds: real path of the directory -> [file descriptor, number of holders].
_HELD: dict[str, list[int]] = {}


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


def open_lock(path: Path, flags: int) -> int:
    """Open a lock file without following a symbolic link or waiting on a FIFO; only a regular file is a lock.

    :param path: ``<dir>/.lock``.
    :param flags: ``os.open``'s flags (``O_RDONLY``; ``O_RDWR | O_CREAT``).
    :return: the file descriptor.
    :raises FileNotFoundError: if it does not exist (and ``flags`` does not create it).
    :raises RunLockedError: if it is a link, a directory, a FIFO or a device: not a file that rl-gns wrote.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except FileNotFoundError:
        raise
    except OSError as error:  # ELOOP: a symbolic link; EISDIR: a directory
        raise RunLockedError(f"{path} is not a lock file ({error.strerror}): remove it to write here") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunLockedError(f"{path} is not a lock file (not a regular file): remove it to write here")
    return fd


def check_unlocked(run_path: Path) -> None:
    """Refuse a directory that another live process is writing; writes nothing (a probe of the lock).

    :raises RunLockedError: naming the process that holds it, or for a ``.lock`` that is not a lock file.
    """
    if os.path.realpath(run_path) in _HELD or not run_path.is_dir():  # a file or nothing: no one writes it
        return
    path = run_path / LOCK
    try:
        fd = open_lock(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _refusal(run_path) from None
    finally:
        os.close(fd)  # closing releases a probe that succeeded


class RunLock:
    """The exclusive lock of one directory, taken by :meth:`acquire` and held until :meth:`release`, the end of a
    ``with`` block, or the process's exit.

    :param run_path: the directory (created if missing).
    """

    def __init__(self, run_path: Path) -> None:
        self.run_path = run_path
        self._key: str | None = None

    def acquire(self) -> RunLock:
        """Take the lock without waiting (shared with this process's other holders of the directory).

        :raises RunLockedError: if another process holds it.
        """
        self.run_path.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(self.run_path)
        if key not in _HELD:
            fd = open_lock(self.run_path / LOCK, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise _refusal(self.run_path) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            _HELD[key] = [fd, 0]
        _HELD[key][1] += 1
        self._key = key
        return self

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def release(self, unlink: bool = False) -> None:
        """Let the lock go; the last holder in this process closes the file, which releases it.

        :param unlink: the last holder also removes the lock file, while it still holds it (a finished run keeps none):
            a process that opened the file meanwhile fails to take it, every lock being taken without waiting.
        """
        if self._key is None:
            return
        held = _HELD[self._key]
        held[1] -= 1
        if held[1] == 0:
            if unlink:
                (self.run_path / LOCK).unlink(missing_ok=True)
            os.close(held[0])
            del _HELD[self._key]
        self._key = None
