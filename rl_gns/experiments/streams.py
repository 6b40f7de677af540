"""The console's streams outlive their readers: a command whose output goes to a reader that leaves (a pipe into
``tee`` that the same signal ended first, a terminal that hung up) finishes its work, writes its files (a run's
checkpoint on SIGTERM included) and ends with its own exit status. Only the standard library: the entry point
(:mod:`rl_gns.commands`) uses it before it imports torch.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


def send_to_devnull(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at ``/dev/null``, so that what it still holds, and the interpreter's last
    flush, go nowhere without failing; a stream without a file descriptor (one a test captures) is left as it is."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


class ReaderMayLeave:
    """A text stream whose reader may go away: the first write or flush that finds it gone (a closed pipe, or a
    terminal that hung up) points the stream's file descriptor at ``/dev/null``, so that the interpreter's last flush
    cannot fail either, and from then on what is written is dropped. Everything else is the wrapped stream's.

    :param stream: the console stream (``sys.stdout`` or ``sys.stderr``).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except OSError as error:
                self.leave_if_gone(error)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except OSError as error:
                self.leave_if_gone(error)

    def leave_if_gone(self, error: OSError) -> None:
        """Drop what is written from now on if ``error`` says the reader is gone (``EPIPE``, or ``EIO`` from a
        hung-up terminal); raise it otherwise."""
        if error.errno not in READER_GONE:
            raise error
        self.gone = True
        send_to_devnull(self.stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


#: ``errno`` of a write whose reader is gone: a closed pipe, a terminal that hung up.
READER_GONE = frozenset({errno.EPIPE, errno.EIO})


@contextlib.contextmanager
def console_may_close() -> Iterator[None]:
    """A context in which ``sys.stdout`` and ``sys.stderr`` outlive their readers (:class:`ReaderMayLeave`): work that
    writes files (a run, its checkpoint on SIGTERM, a report) finishes, and ends with its own exit status, when the
    reader of its console is gone."""
    with (
        contextlib.redirect_stdout(ReaderMayLeave(sys.stdout)),
        contextlib.redirect_stderr(ReaderMayLeave(sys.stderr)),
    ):
        yield
