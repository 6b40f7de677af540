"""Processes for data-parallel training: ``--nproc D`` on one machine, or ranks that ``torchrun`` started.

Both go through torch's elastic launcher, the engine of ``torchrun``: on one machine :func:`launch` starts ``D``
workers with a c10d rendezvous on a free local port; on several machines ``torchrun`` starts them and sets the
same environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``). Each worker then
joins the process group with :func:`join` (gloo for the CPU, NCCL for CUDA devices).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch as th
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.launcher.api import LaunchConfig, elastic_launch


class RankFailedError(RuntimeError):
    """A worker of a data-parallel run died or raised; the message names the rank and how it ended."""


def under_torchrun() -> bool:
    """Whether this process is a worker that an elastic launcher (``torchrun``, :func:`launch`) started."""
    return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ)


def world_size_from_env() -> int:
    """``WORLD_SIZE`` of a launched worker (1 outside a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def join(device: str) -> th.device:
    """Join the default process group of a launched worker, once, and return this rank's torch device.

    :param device: ``cpu`` (gloo), or ``cuda``/``auto`` with CUDA present (NCCL; rank ``LOCAL_RANK`` takes
        ``cuda:LOCAL_RANK``).
    """
    use_cuda = th.device(device).type == "cuda" or (device == "auto" and th.cuda.is_available())
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        th.cuda.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return th.device("cuda", local) if use_cuda else th.device("cpu")


def die_with_parent(parent: int) -> None:
    """Ask the kernel to send this process SIGTERM when the process that started it ends (Linux; elsewhere nothing),
    so that a worker never outlives the command that started it (a sweep, or the launcher of a
    data-parallel run's ranks), however that command ends.

    :param parent: the starting process's id, as it started this worker: one that ended while the worker was still
        starting (its parent is then another process) ends the worker at once.
    """
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # the parent ended before the request was in place
        os.kill(os.getpid(), signal.SIGTERM)


def launched(entry: Callable[..., Any], launcher: int, *args: Any) -> Any:
    """A worker that :func:`launch` started: ends with its launcher (torch's own request, SIGINT, reaches a rank that
    still waits for its peers only when that wait ends, which can take minutes), then runs ``entry(*args)``.

    :param launcher: the process id of the launcher.
    """
    die_with_parent(launcher)
    return entry(*args)


def launch(entry: Callable[..., Any], nproc: int, *args: Any) -> dict[int, Any]:
    """Run ``entry(*args)`` in ``nproc`` new worker processes on this machine and wait for them all; a worker ends
    when this process does (:func:`die_with_parent`), however it ends.

    :param entry: a module-level function (workers are spawned, so it is pickled by name); it calls :func:`join`.
    :param nproc: worker processes (ranks).
    :return: each rank's return value.
    :raises RankFailedError: naming the first rank that failed, its exit code or signal and its error.
    """
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=nproc,
        run_id=f"rl-gns-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        monitor_interval=0.2,
    )
    try:
        with launcher_logs_quiet():
            return elastic_launch(config, launched)(entry, os.getpid(), *args)
    except ChildFailedError as error:
        # the root cause: a rank killed by a signal, else the first error (the others then lose their peer)
        rank, failure = min(error.failures.items(), key=lambda item: (item[1].exitcode >= 0, item[1].timestamp, item[0]))
        raise RankFailedError(f"rank {rank} of {nproc} {how_it_ended(failure.exitcode, failure.message)}") from None


#: Loggers of torch's launcher; a failed rank is reported in one line by :class:`RankFailedError` instead.
LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.multiprocessing.spawn")


@contextmanager
def launcher_logs_quiet() -> Iterator[None]:
    """Silence the launcher's own warnings and tracebacks (a rank's failure is re-raised in one line)."""
    loggers = [logging.getLogger(name) for name in LAUNCHER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def how_it_ended(exitcode: int, message: str | dict[str, Any]) -> str:
    """``"was killed by SIGKILL"``, ``"exited with status 3"`` or ``"failed: <its error>"``.

    :param message: the launcher's record of the failure: text, or ``{"message": text, ...}`` from the error file.
    """
    if exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    text = str(message.get("message", "")) if isinstance(message, dict) else message
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    if first_line and "To enable traceback" not in first_line:
        return f"failed: {first_line}"
    return f"exited with status {exitcode}"
