"""SIGINT, SIGTERM and SIGHUP during training: stop after the PPO iteration in progress, with a checkpoint.

The first signal asks the run to stop (the :class:`~rl_gns.experiments.callbacks.Checkpointer` writes a checkpoint
at the next iteration boundary and ends training); the same signal again ends the process at once, without one.
SIGHUP is a closed terminal; a process started to ignore it (``nohup``) goes on ignoring it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(Exception):
    """Training stopped on a signal, with a checkpoint; the exit status is ``128 + signum``.

    :param signum: the signal.
    :param message: what happened and how to go on, one line.
    """

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class StopOnSignal:
    """A context in which SIGINT, SIGTERM and SIGHUP set :attr:`signum` instead of ending the process (main thread
    only; elsewhere it changes nothing). A SIGHUP ignored when the context starts (``nohup``) stays ignored. The
    previous handlers come back on exit.

    :param what: names the work in the message printed when the first signal arrives.
    :param stopping: says what the work does then.
    :param on_signal: called at the first signal (a sweep stops its workers there).
    """

    def __init__(
        self,
        what: str = "rl-gns train",
        stopping: str = "stopping after this PPO iteration, with a checkpoint",
        on_signal: Callable[[], None] = lambda: None,
    ) -> None:
        self.what, self.stopping = what, stopping
        self.on_signal = on_signal
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            self._previous = {
                signum: signal.signal(signum, self._handle)
                for signum in SIGNALS
                if not (signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN)
            }
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def requested(self) -> bool:
        """Whether a signal asked the run to stop."""
        return self.signum is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum == signum:  # the same signal twice: stop now
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        if self.signum is None:  # the first signal decides the exit status
            self.signum = signum
            name = signal.Signals(signum).name
            print(
                f"{self.what}: {name}: {self.stopping} ({name} again stops at once, without one)",
                file=sys.stderr,
                flush=True,
            )
            self.on_signal()
