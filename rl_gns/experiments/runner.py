"""Running many training runs: one process per run, or per population of runs, on a local pool or as Ray tasks,
resumable.

Shared by ``rl-gns sweep``, ``rl-gns probe`` and ``rl-gns bench``. Each run is a ``rl-gns train`` run directory; its
settings are written to ``<out>/specs/<run>.json`` and a child process runs ``python -m rl_gns run <spec>``. With
``--engine population``, the runs that differ only in seed and learning rate are one job: a child process runs
``python -m rl_gns run <spec> <spec> ...``, which trains them together (:mod:`rl_gns.experiments.population_train`).
Finished runs (``summary.json``) are skipped, unfinished ones resume from their last checkpoint (or restart
where they have none that this rl-gns can resume), and a failing run leaves ``error.txt`` in its directory
without stopping the others.

The command owns its workers (local executor): each child runs in its own session, so a terminal's Ctrl-C reaches
the command alone, and ends with it (Linux: ``PR_SET_PDEATHSIG``), so no worker outlives it. SIGINT, SIGTERM or
SIGHUP to the command sends SIGTERM to every run in flight, which stops with a checkpoint; runs not started wait, and
rerunning the command goes on.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from tqdm import tqdm

from rl_gns.experiments.config import TrainConfig, population_settings, to_json, training_settings
from rl_gns.experiments.plan import EVERY_SETTING, check_inert, plan_run
from rl_gns.experiments.signals import SIGNALS, Interrupted, StopOnSignal
from rl_gns.records.checkpoint import CHECKPOINTS, CheckpointError, checkpoint_dirs
from rl_gns.records.lock import RunLockedError, check_unlocked
from rl_gns.records.logs import check_writable
from rl_gns.records.rundir import ERROR, LOG, RunDir, read_record, write_json
from rl_gns.records.schema import changed_settings
from rl_gns.records.study import MARKS, Kind, check_kind, check_no_strangers, check_not_inside


@dataclass
class ExecutionConfig:
    """Where the runs of a sweep or a benchmark execute: one process per run, a local pool or Ray tasks."""

    executor: Literal["local", "ray"] = "local"
    """local: a pool of processes on this machine; ray: Ray tasks on the cluster at --ray-address."""
    workers: int | None = None
    """Runs at once for the local executor; if unset, CPU cores // threads_per_run."""
    threads_per_run: int = 1
    """Torch threads (and Ray CPUs) per run."""
    ray_address: str | None = None
    """Address of a running Ray cluster (ray://head:10001 or auto; --out on a shared filesystem); if unset, a local Ray."""
    device: str = "cpu"
    """Torch device of every run."""
    engine: Literal["process", "population"] = "process"
    """process: one process per run; population: runs that differ only in seed and learning rate train in one process."""
    checkpoint_minutes: float | None = 10.0
    """Each run checkpoints after the PPO iteration that passes this many wall-clock minutes since its last (0: every one)."""
    max_wall_minutes: float | None = None
    """Stop before this many wall-clock minutes (a job time limit): runs in flight checkpoint, others wait; rerun to go on."""

    def check_execution(self) -> None:
        """Validate how the runs execute (raises ``ValueError`` with the reason)."""
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {self.workers}")
        if self.threads_per_run < 1:
            raise ValueError(f"--threads-per-run must be >= 1, got {self.threads_per_run}")
        if self.max_wall_minutes is not None and not self.max_wall_minutes > 0:
            raise ValueError(f"--max-wall-minutes must be > 0, got {self.max_wall_minutes}")
        local = self.executor == "local"
        check_inert(self, {"ray_address": "with --executor local"} if local else {"workers": "with --executor ray"})
        if self.ray_address is not None and self.ray_address != "auto":
            ray_host_port(self.ray_address)
        if not local:
            check_ray_installed()


def check_ray_installed() -> None:
    """Refuse ``--executor ray`` where Ray cannot be imported (an optional dependency: the ``ray`` extra).

    :raises ValueError: naming the command that installs it.
    """
    try:
        import ray  # noqa: F401
    except ImportError as error:
        raise ValueError(
            f"--executor ray needs Ray, which cannot be imported here ({error}): pip install 'rl-gns[ray]'"
        ) from None


class RayAddressError(RuntimeError):
    """No Ray cluster answers at ``--ray-address``."""


#: Seconds to wait for a Ray cluster's head to accept a connection before the command refuses its address.
RAY_CONNECT_TIMEOUT_S = 10.0


def ray_host_port(address: str) -> tuple[str, int]:
    """The host and port of a Ray address ``host:port`` or ``ray://host:port``.

    :raises ValueError: if ``address`` has neither form.
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--ray-address must be host:port, ray://host:port or auto, got {address!r}")
    return host, int(port)


def connect(execution: ExecutionConfig) -> None:
    """Connect to the Ray cluster that ``execution`` names (a local Ray without an address), before a command writes
    anything; nothing for the local executor or when already connected.

    :raises RayAddressError: if the head at ``--ray-address`` does not accept a connection within
        :data:`RAY_CONNECT_TIMEOUT_S` seconds, or Ray finds no cluster there.
    """
    if execution.executor != "ray":
        return
    import ray

    if ray.is_initialized():
        return
    address = execution.ray_address
    if address is not None and address != "auto":
        try:  # ray.init retries an unreachable head for minutes; a socket says at once
            socket.create_connection(ray_host_port(address), timeout=RAY_CONNECT_TIMEOUT_S).close()
        except OSError as error:
            raise RayAddressError(f"--ray-address {address}: no Ray cluster answers there ({error})") from None
    try:
        ray.init(address=address, log_to_driver=False)
    except ConnectionError as error:
        raise RayAddressError(f"--ray-address {address}: {error}") from None


#: Settings that say how runs execute or where they are written, not what they train: they may change on resume.
EXECUTION_FIELDS = ("executor", "workers", "threads_per_run", "ray_address", "out", "checkpoint_minutes", "max_wall_minutes")
#: The most runs one sweep, probe or benchmark holds: each is a process (or a population's member) and a run directory;
#: the largest studies here hold 54. A count far beyond it is a typing slip that would take hours to enumerate.
MAX_RUNS = 10_000
#: Wall seconds a run needs to start (imports, envs, device) and to stop, kept out of its slice of a deadline.
START_STOP_S = 30.0
#: A run is not started with less than this many wall seconds left before the deadline.
MIN_SLICE_S = 60.0


def check_directory(out: Path, kind: Kind, now: dict, ignore: tuple[str, ...] = (), shares: tuple[Kind, ...] = ()) -> None:
    """Refuse an ``--out`` that a command cannot write as a ``kind`` of study, before it writes anything: a file on its
    path or no permission to write, another kind of study there or around it, files of no study, another live writer,
    or a record of other settings.

    :param out: the directory (it need not exist).
    :param kind: what the command writes there; its record (:data:`~rl_gns.records.study.MARKS`) holds the settings.
    :param now: the settings of this invocation, as JSON values.
    :param ignore: keys that may differ from the record's (how runs execute, not what they train).
    :param shares: kinds that live in the same directory (a probe's branches are a sweep in the probe's directory).
    :raises ValueError: with the reason (:class:`~rl_gns.records.lock.RunLockedError` for another writer).
    """
    check_writable(out)
    check_kind(out, kind, shares)
    check_not_inside(out, kind)
    check_no_strangers(out, kind, shares)
    check_unlocked(out)  # another command of this kind writes it: say so, not that one of its runs is taken
    check_same_settings(out / MARKS[kind], now, ignore)


def check_run_count(counts: dict[str, int], kind: Kind) -> None:
    """Refuse a collection of more than :data:`MAX_RUNS` runs, from the counts that multiply into it, before a
    single run is enumerated.

    :param counts: each factor of the run count, by what the user gave for it (``{"--seeds": 3, "sizes": 6}``).
    :param kind: what holds the runs (a sweep, a probe, a benchmark), for the message.
    :raises ValueError: naming the factors and their product.
    """
    total = math.prod(counts.values())
    if total > MAX_RUNS:
        factors = " x ".join(f"{count:,} {name}" for name, count in counts.items())
        raise ValueError(f"{factors} make {total:,} runs; a {kind} holds at most {MAX_RUNS:,}")


def check_same_settings(record: Path, now: dict, ignore: tuple[str, ...]) -> None:
    """Refuse to reuse a directory whose ``record`` (``sweep.json``, ``bench.json``) holds other settings.

    :param record: the JSON settings file written by the first run of the command in that directory.
    :param now: the settings of this invocation, as JSON values.
    :param ignore: keys that may differ (how runs execute, not what they train).
    :raises ValueError: naming the keys that differ.
    """
    if not record.exists():
        return
    # the record lies in the directory --out names, however --out is spelled
    changed = changed_settings(read_record(record, {}), now, (*ignore, "out"))
    if changed:
        raise ValueError(f"{record.parent} holds runs with other settings ({', '.join(changed)}); use another --out")


def check_runs(specs: Iterable[TrainConfig], restart: bool = False) -> None:
    """Check every run of a sweep, benchmark or probe before anything is written: each must be able to start or
    resume (:func:`~rl_gns.experiments.plan.plan_run`), and a finished one, which is not run again, must have trained
    what it is counted for (its ``config.json`` against its spec: a run copied in, or edited, is refused).

    :param restart: unfinished runs start again from their start (:func:`run_all`): their checkpoints, which a kill
        may have left half deleted, need not resume them.

    :raises ValueError: naming the run and why it cannot run, or the settings a finished run trained otherwise.
    """
    for spec in specs:
        plan_run(spec, EVERY_SETTING)
        run = RunDir(spec.out) if spec.out is not None else None
        if run is None:
            continue
        if run.status() != "done":
            if not restart:
                check_resumes(spec)
            continue
        changed = changed_settings(run.config().settings, training_settings(spec), out=spec.out)
        if changed:
            raise ValueError(f"{run.path} finished with other settings ({', '.join(changed)}); use another --out")


def check_resumes(spec: TrainConfig) -> None:
    """Refuse an unfinished run whose checkpoints cannot resume it (corrupted, cut logs, another version): run again,
    it would start over and delete them. A run stopped before its first checkpoint starts over.

    :raises CheckpointError: naming the run, why, and what to do.
    """
    if spec.out is None or not checkpoint_dirs(spec.out / CHECKPOINTS):
        return
    try:
        plan_run(as_resume(spec), EVERY_SETTING)
    except CheckpointError as error:
        raise CheckpointError(
            f"{spec.out} cannot resume ({error}); delete it to run it from the start, or use another --out"
        ) from None


class RunsFailedError(RuntimeError):
    """Some runs of a sweep or benchmark failed (each has its ``error.txt``)."""


def as_resume(spec: TrainConfig) -> TrainConfig:
    """The spec that resumes the run of ``spec`` where it is (a spec that started it may replace one, ``overwrite``)."""
    return replace(spec, resume=spec.out, overwrite=False)


def resumable(spec: TrainConfig) -> bool:
    """Whether the run of ``spec`` has a checkpoint that this rl-gns can resume with ``spec``'s settings."""
    if spec.out is None or not (spec.out / CHECKPOINTS).is_dir():
        return False
    try:
        plan_run(as_resume(spec), EVERY_SETTING)
    except (ValueError, FileNotFoundError):
        return False
    return True


#: The environment variable that tells a worker the process id of the sweep that started it (:meth:`Workers.run`).
WORKER_OF = "RL_GNS_WORKER"


class Workers:
    """The child processes of a command, started in their own sessions and stopped together on :meth:`stop`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopping = False

    def run(self, command: list[str], log_path: str | Path) -> int | None:
        """Run ``command`` with its output appended to ``log_path`` and return its exit status; ``None`` without
        starting it once :meth:`stop` was called."""
        with open(log_path, "a") as log, self._lock:
            if self.stopping:
                return None
            env = {**os.environ, "PYTHONUNBUFFERED": "1", WORKER_OF: str(os.getpid())}
            process = subprocess.Popen(command, stdout=log, stderr=log, env=env, start_new_session=True)
            self._running.add(process)
        try:
            return process.wait()
        finally:
            with self._lock:
                self._running.discard(process)

    def stop(self) -> None:
        """Start no new run, and send SIGTERM to every run in flight (each stops with a checkpoint)."""
        with self._lock:
            self.stopping = True
            for process in self._running:
                process.send_signal(signal.SIGTERM)


def run_spec(
    spec_paths: Sequence[str | Path], log_path: str | Path, deadline: float | None = None, workers: Workers | None = None
) -> int | None:
    """Run specs in a child process (``python -m rl_gns run``: one spec alone, several as one population), output
    appended to ``log_path``; return its exit status, or ``None`` without starting it when less than
    :data:`MIN_SLICE_S` would remain before ``deadline``, or when the command is stopping.

    :param deadline: ``time.time()`` by which the run must have stopped (it gets ``--max-wall-minutes`` up to it,
        less :data:`START_STOP_S`); ``None``: no deadline.
    :param workers: the command's workers (local executor); ``None``: a Ray task's own.
    """
    command = [sys.executable, "-m", "rl_gns", "run", *map(str, spec_paths)]
    if deadline is not None:
        slice_s = deadline - time.time() - START_STOP_S
        if slice_s < MIN_SLICE_S:
            return None
        command += ["--max-wall-minutes", f"{slice_s / 60:.3f}"]
    return (workers or Workers()).run(command, log_path)


#: Exit statuses of a run that stopped with a checkpoint: at its deadline (0), or on a signal (SIGINT, SIGTERM, SIGHUP).
PAUSED_STATUSES = (0, *(128 + signum for signum in SIGNALS))


def record_outcome(run: RunDir, returncode: int | None, log_path: Path) -> str:
    """How a run's process ended, for the collection's count: ``waiting`` (not started), ``done``, ``paused`` (with a
    checkpoint), or ``failed``, with the log's tail written to the run's ``error.txt`` unless another process holds
    the run.

    :param returncode: the process's exit status; ``None`` if it was not started.
    :param log_path: the file its output went to.
    :raises OSError: for a failed run whose ``error.txt`` cannot be written (a full disk): none is left.
    """
    if returncode is None:
        return "waiting"
    if run.status() == "done":  # summary.json marks a run finished (a population's member, before the others)
        return "done"
    if returncode in PAUSED_STATUSES and (run.path / CHECKPOINTS).is_dir():
        return "paused"  # stopped at the deadline or on a signal, with a checkpoint
    try:
        check_unlocked(run.path)
    except RunLockedError:
        return "failed"  # another process took the run after the check: it is that process's to write
    tail = log_path.read_text(errors="replace").splitlines()[-30:] if log_path.exists() else []
    run.write_error(f"exit status {returncode}\n" + "\n".join(tail) + "\n")
    return "failed"


#: Agent steps per second that one worker (one CPU core) trains, for the estimate printed before a collection of runs
#: starts: the RAM MLP at 1,000-1,800, pixels with the Nature CNN at 350-430 on two cores (docs/performance.md).
CPU_STEPS_PER_S = {"ram": 1_000.0, "pixels": 200.0}


def workload(specs: list[TrainConfig], n_workers: int) -> str:
    """What a collection of runs will do, said before it starts: its budget in agent steps and a rough wall time on
    CPU workers (a run stops earlier at its target; a GPU is faster)."""
    total = sum(spec.total_steps for spec in specs)
    seconds = sum(spec.total_steps / CPU_STEPS_PER_S["ram" if spec.backend == "ram" else "pixels"] for spec in specs)
    wall_s = seconds / min(n_workers, len(specs))
    duration = f"{wall_s / 3600:.1f} h" if wall_s >= 3600 else f"{max(1, round(wall_s / 60))} min"
    return (
        f"up to {total:,} agent steps ({len(specs)} runs of up to {max(s.total_steps for s in specs):,}); "
        f"on {n_workers} CPU worker(s) that is up to about {duration} (runs stop at their target; "
        "Ctrl-C stops with checkpoints, the same command resumes)"
    )


def population_jobs(names: list[str], specs: dict[str, TrainConfig]) -> list[list[str]]:
    """The runs ``names`` grouped into populations: runs with the same
    :func:`~rl_gns.experiments.config.population_settings` train together; a run that trains alone is a job of one."""
    groups: dict[str, list[str]] = {}
    for name in names:
        shared = population_settings(specs[name])
        key = name if shared is None else json.dumps(shared, sort_keys=True)
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def makespan(costs: Sequence[float], n_workers: int) -> float:
    """When the last of ``n_workers`` workers finishes, each taking the next job in order as soon as it is free.

    :param costs: the jobs' durations, in the order they are handed out (any unit).
    :param n_workers: workers at once (≥ 1).
    :return: the largest worker's total, in the unit of ``costs``.
    """
    loads = [0.0] * n_workers
    for cost in costs:
        heapq.heapreplace(loads, loads[0] + cost)
    return max(loads)


def balance(jobs: list[list[str]], specs: dict[str, TrainConfig], n_workers: int) -> list[list[str]]:
    """The jobs in the order workers take them, longest first, with populations halved where that lets the workers
    finish sooner: five equal populations on two workers leave one worker idle for a fifth of the sweep, four whole
    ones and two halves do not; on sixteen workers the five are cut into sixteen or more pieces. A job's cost is its
    runs' budgets in agent steps (runs stop earlier at their target). Each round halves the fewest of the largest
    populations that shortens the longest worker's share the most, and rounds go on while one does.

    :param jobs: runs grouped into jobs (:func:`population_jobs`, or one run each).
    :param specs: the runs, by name.
    :param n_workers: jobs at once.
    """

    def cost(job: list[str]) -> int:
        return sum(specs[name].total_steps for name in job)

    def ordered(jobs: list[list[str]]) -> list[list[str]]:
        return sorted(jobs, key=cost, reverse=True)

    def span(jobs: list[list[str]]) -> float:
        return makespan([cost(job) for job in jobs], n_workers)

    jobs = ordered(jobs)
    while True:
        splittable = [i for i, job in enumerate(jobs) if len(job) > 1]  # largest first
        rounds = [
            ordered(
                [job for i, job in enumerate(jobs) if i not in splittable[:k]]
                + [piece for i in splittable[:k] for piece in (jobs[i][: len(jobs[i]) // 2], jobs[i][len(jobs[i]) // 2 :])]
            )
            for k in range(1, len(splittable) + 1)
        ]
        best = min(rounds, key=span, default=jobs)  # the first of equals: the fewest halved
        if span(best) >= span(jobs):
            return jobs
        jobs = best


def unfinished_populations(specs: dict[str, TrainConfig], finished: set[str], n_workers: int) -> set[str]:
    """Every run of the populations that hold an unfinished run, as an uninterrupted command forms them
    (:func:`population_jobs`, :func:`balance`).

    :param finished: the runs that finished.
    :param n_workers: jobs at once.
    """
    jobs = balance(population_jobs(list(specs), specs), specs, n_workers)
    return {name for job in jobs if not finished.issuperset(job) for name in job}


def job_order(todo: list[str], specs: dict[str, TrainConfig], engine: str, n_workers: int, whole: bool) -> list[list[str]]:
    """The runs ``todo`` as jobs, in the order workers take them (:func:`balance`).

    :param engine: ``process`` (a job per run) or ``population``.
    :param n_workers: jobs at once.
    :param whole: ``todo`` holds whole populations of every run of ``specs``: keep them as an uninterrupted command
        forms them (they are balanced over every run, not over those left).
    """
    if whole:
        return [job for job in balance(population_jobs(list(specs), specs), specs, n_workers) if job[0] in todo]
    grouped = population_jobs(todo, specs) if engine == "population" else [[name] for name in todo]
    return balance(grouped, specs, n_workers)


def spec_json(spec: TrainConfig) -> dict[str, object]:
    """A spec file's content: the run's settings, with where it runs (``out``, ``resume``) made absolute, so that
    ``rl-gns run <spec>`` trains in the same place from any working directory."""

    def absolute(path: Path | None) -> Path | None:
        return None if path is None else Path(os.path.abspath(path))

    return to_json(replace(spec, out=absolute(spec.out), resume=absolute(spec.resume)))


def say_outcome(
    collection: str, outcome: dict[str, str], run_dirs: dict[str, RunDir], unwritten: dict[str, str], signum: int | None
) -> None:
    """Print how a collection of runs ended: how many finished, how many to go on with, and why each failed run
    failed.

    :param collection: what the lines call it (``sweep runs/sweep``).
    :param outcome: every run's outcome (:func:`record_outcome`), by name.
    :param run_dirs: the runs, by name.
    :param unwritten: why a failed run's ``error.txt`` could not be written (a full disk), by name.
    :param signum: the signal that stopped the collection, if one did.
    """
    finished = sum(status in ("done", "skipped") for status in outcome.values())
    print(f"{collection}: {finished}/{len(outcome)} finished", flush=True)
    later = [status for status in outcome.values() if status in ("paused", "waiting")]
    if later:
        why = "before --max-wall-minutes" if signum is None else f"by {signal.Signals(signum).name}"
        print(
            f"  {later.count('paused')} paused {why}, {later.count('waiting')} not started: rerun the same command to go on",
            flush=True,
        )
    for name in sorted(name for name, status in outcome.items() if status == "failed"):
        error = run_dirs[name].file(ERROR)
        why = unwritten.get(name) or (f"see {error}" if error.exists() else "another process writes it")
        print(f"  failed: {name} ({why})", flush=True)


def prepare_runs(
    out: Path, specs: dict[str, TrainConfig], run_dirs: dict[str, RunDir], restart: bool, whole: bool, n_workers: int
) -> tuple[dict[str, str], list[str], list[str]]:
    """Sort the runs of ``specs`` into those finished before and those to run, and make each of these ready: resumed
    from its checkpoint (its old ``error.txt`` removed) or emptied to start again, its spec file written. Return the
    outcome so far (``skipped`` for each finished run), the runs to run, and those of them that resume.

    :param whole: restart whole populations (:func:`run_all`'s ``restart`` with ``--engine population``).
    :param n_workers: jobs at once, which fix the populations.
    """
    finished = {name for name, run in run_dirs.items() if run.status() == "done"}
    outcome = {name: "skipped" for name in finished - (unfinished_populations(specs, finished, n_workers) if whole else set())}
    todo = [name for name in specs if name not in outcome]
    resumed = []
    for name in todo:  # unfinished runs resume from their checkpoint, or restart from scratch
        spec, run = specs[name], run_dirs[name]
        check_unlocked(run.path)  # never touch a run that a live process writes
        if not restart and resumable(spec):
            spec = as_resume(spec)
            run.file(ERROR).unlink(missing_ok=True)
            resumed.append(name)
        else:
            shutil.rmtree(run.path, ignore_errors=True)
            run.path.mkdir(parents=True)
        write_json(out / "specs" / f"{name}.json", spec_json(spec))
    return outcome, todo, resumed


#: A job's spec files and its log (:func:`run_all`).
JobPaths = Callable[[list[str]], tuple[list[Path], Path]]
#: What :func:`run_all` does when a job ends: its runs' outcomes from the job's return code (``None``: killed).
JobEnded = Callable[[list[str], int | None], None]


def run_jobs_locally(jobs: list[list[str]], paths: JobPaths, deadline: float | None, n_workers: int, label: str,
                     ended: JobEnded) -> int | None:  # fmt: skip
    """Run ``jobs`` in a local pool of ``n_workers`` processes at once; return the signal that stopped them (each run
    in flight then stops with a checkpoint), if one did.

    :param deadline: the wall-clock time (``time.time()``) at which the runs in flight pause, if any.
    """
    workers = Workers()
    stopping = "stopping the runs in flight, each with a checkpoint"
    with StopOnSignal(f"rl-gns {label}", stopping, workers.stop) as signals, ThreadPoolExecutor(n_workers) as pool:
        futures = {pool.submit(run_spec, *paths(job), deadline, workers): i for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            ended(jobs[futures[future]], future.result())
    return signals.signum


def run_jobs_on_ray(
    jobs: list[list[str]], paths: JobPaths, deadline: float | None, execution: ExecutionConfig, ended: JobEnded
) -> None:
    """Run ``jobs`` as Ray tasks of ``execution.threads_per_run`` CPUs each, then disconnect from Ray.

    :param deadline: the wall-clock time (``time.time()``) at which the runs in flight pause, if any.
    """
    import ray

    connect(execution)
    remote_run = ray.remote(num_cpus=execution.threads_per_run)(run_spec)
    refs = {}
    for i, job in enumerate(jobs):
        spec_paths, log = paths(job)
        refs[remote_run.remote([str(p) for p in spec_paths], str(log), deadline)] = i  # type: ignore[call-arg]
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        ended(jobs[refs[ready[0]]], ray.get(ready[0]))
    ray.shutdown()  # disconnect now (and stop a local instance) rather than in an exit hook


def raise_unless_all_ended(outcome: dict[str, str], n_runs: int, signum: int | None) -> None:
    """Raise where a signal stopped the ``n_runs`` runs (:class:`Interrupted`) or one failed (:class:`RunsFailedError`)."""
    if signum is not None:
        name = signal.Signals(signum).name
        raise Interrupted(signum, f"stopped by {name}: the runs in flight stopped with checkpoints; rerun to go on")
    failed = sorted(name for name, status in outcome.items() if status == "failed")
    if failed:
        raise RunsFailedError(
            f"{len(failed)} of {n_runs} runs failed (see the lines above); once that is fixed, rerun the same "
            "command to go on: it keeps the finished runs and runs the others again, from their checkpoints where "
            "they have one"
        )


def run_all(
    out: Path, specs: dict[str, TrainConfig], execution: ExecutionConfig, label: str = "sweep", restart: bool = False
) -> dict[str, str]:
    """Run every unfinished run of ``specs``, each in its own process; return ``{run name: outcome}``: ``done``,
    ``skipped`` (finished before), ``failed``, and with ``execution.max_wall_minutes`` ``paused`` (stopped with a
    checkpoint) or ``waiting`` (not started).

    :param out: directory of the spec files (``<out>/specs/<run>.json``); each run writes to its ``spec.out``.
    :param specs: the runs, by name (every ``spec.out`` set).
    :param execution: local pool or Ray, runs at once, threads per run.
    :param label: what the progress lines call the collection of runs (``sweep``, ``bench``).
    :param restart: start every unfinished run again from its start instead of resuming it from a checkpoint (a
        resumed run on a backend that saves no games drops its games in progress); with ``--engine population``, every
        run of a population that holds an unfinished one, finished runs included, in the populations an uninterrupted
        command forms at the same ``--workers``: a population's runs draw their actions from one generator, so a run
        trains as it did only beside the same others. Seeded runs on CPU with one torch thread then end as they would
        have uninterrupted.
    """
    (out / "specs").mkdir(parents=True, exist_ok=True)
    run_dirs = {name: RunDir(spec.out) for name, spec in specs.items() if spec.out is not None}
    n_workers = execution.workers or max(1, (os.cpu_count() or 1) // execution.threads_per_run)
    whole = restart and execution.engine == "population"
    outcome, todo, resumed = prepare_runs(out, specs, run_dirs, restart, whole, n_workers)
    print(
        f"{label} {out}: {len(specs)} runs, {len(outcome)} finished before, {len(resumed)} to resume from checkpoints, "
        f"{len(todo) - len(resumed)} to run from the start",
        flush=True,
    )
    if todo:
        print(f"  {workload([specs[name] for name in todo], n_workers)}", flush=True)
    jobs = job_order(todo, specs, execution.engine, n_workers, whole)
    deadline = None if execution.max_wall_minutes is None else time.time() + 60 * execution.max_wall_minutes
    bar = tqdm(total=len(todo), desc="runs", unit="run", disable=not todo)
    unwritten: dict[str, str] = {}  # failed runs whose error.txt could not be written: why, and where their output is

    def paths(job: list[str]) -> tuple[list[Path], Path]:
        """A job's spec files and its log: a run's ``log.txt``, a population's ``specs/<first run>.population.log``."""
        log = run_dirs[job[0]].path / LOG if len(job) == 1 else out / "specs" / f"{job[0]}.population.log"
        return [out / "specs" / f"{name}.json" for name in job], log

    def ended(job: list[str], returncode: int | None) -> None:
        log = paths(job)[1]
        for name in job:
            try:
                outcome[name] = record_outcome(run_dirs[name], returncode, log)
            except OSError as error:  # a full disk: the run failed, and its error.txt could not say why
                outcome[name] = "failed"
                unwritten[name] = f"its {ERROR} could not be written ({error.strerror or error}); its output is in {log}"
            bar.set_postfix_str(f"{name}: {outcome[name]}")
            bar.update()

    signum = None
    if execution.executor == "local":
        signum = run_jobs_locally(jobs, paths, deadline, n_workers, label, ended)
    else:
        run_jobs_on_ray(jobs, paths, deadline, execution, ended)
    bar.close()
    say_outcome(f"{label} {out}", outcome, run_dirs, unwritten, signum)
    raise_unless_all_ended(outcome, len(specs), signum)
    return outcome
