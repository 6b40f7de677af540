"""SB3 callbacks of rl-gns."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, ProgressBarCallback

from rl_gns.core.agents.distributed import DataParallelPPO, agree
from rl_gns.core.maths.targets import DEFAULT_WINDOW, running_score
from rl_gns.records.logs import append_line, format_row, read_rows, rewrite
from rl_gns.records.rundir import EPISODE_FIELDS, snapshot_path


class EpisodeLogger(BaseCallback):
    """Appends every finished game to ``episodes.csv`` and optionally stops at a target score.

    Rows: ``env_steps`` (agent steps when the game finished), ``score`` (raw whole-game score from
    ``info["episode"]``), ``length_frames``, ``wall_s`` (seconds of training, over every slice of a resumed
    run). Each row is appended whole (:mod:`rl_gns.records.logs`), so a killed run keeps every game it
    finished. An existing file is continued: a resumed run reloads its scores, so the running score goes on.

    With a :class:`~rl_gns.core.agents.distributed.DataParallelPPO` on several ranks, the games of every rank are gathered
    at the end of each rollout; rank 0 writes them, and every rank stops at the next step once the target is
    reached (after that rollout's update).

    **A race** (``race``, one file shared by the learning rates of one size and seed of a sweep): a run that reaches
    ``stop_score`` writes there the agent step of its reaching game (the smallest, where several did); a run that has
    not reached it stops at the first PPO iteration it would start at or past that step. It can then no longer reach
    the target in as few iterations (its reaching game would end in a later iteration), so the fastest rate, at the
    stop score and at any lower target, is the one it would have been by passage (``docs/probe.md``).

    :param path: the CSV file to create or continue.
    :param stop_score: stop training once the mean of the last ``window`` scores reaches this; ``None``: never.
    :param window: games in the running score (:func:`rl_gns.core.maths.targets.running_score`).
    :param wall_offset_s: wall time of the earlier slices of a resumed run, seconds.
    :param race: the race's file; ``None``: the run races no other.
    """

    def __init__(
        self,
        path: str | Path,
        stop_score: float | None = None,
        window: int = DEFAULT_WINDOW,
        wall_offset_s: float = 0.0,
        race: Path | None = None,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.stop_score = stop_score
        self.window = window
        self.wall_offset_s = wall_offset_s
        self.race = race
        header, rows = read_rows(self.path)
        if header and header != list(EPISODE_FIELDS):
            raise ValueError(f"{self.path} has columns {header}, expected {list(EPISODE_FIELDS)}")
        self.scores: list[float] = [float(row[EPISODE_FIELDS.index("score")]) for row in rows]
        self.reached_at: int | None = None
        self.raced_at: int | None = None
        """Agent steps at which the race stopped the run, if it did."""

    def _on_training_start(self) -> None:
        self._gathered = isinstance(self.model, DataParallelPPO) and self.model.world_size > 1
        self._writes = not self._gathered or self.model.rank == 0  # type: ignore[attr-defined]
        if self._writes and not self.path.exists():
            rewrite(self.path, EPISODE_FIELDS, [])
        self._start, self._start_unix = time.perf_counter(), time.time()

    def _on_rollout_start(self) -> None:
        if self.race is None or self.reached_at is not None:
            return
        won_at = race_record(self.race)
        if won_at is not None and self.num_timesteps >= won_at:
            self.raced_at = self.num_timesteps

    def _on_step(self) -> bool:
        if self._gathered:
            return self.reached_at is None
        if self.raced_at is not None:
            return False
        for info in self.locals["infos"]:
            episode = info.get("episode")
            if episode is not None:
                self._add_game(self.num_timesteps, float(episode["r"]), int(episode["l"]), time.perf_counter() - self._start)
        return self.reached_at is None

    def _on_rollout_end(self) -> None:
        if self._gathered:
            for env_steps, score, length, finished_unix in self.model.gather_games():  # type: ignore[attr-defined]
                self._add_game(env_steps, score, length, finished_unix - self._start_unix)

    def _add_game(self, env_steps: int, score: float, length: int, wall_s: float) -> None:
        """Log one finished game, ``wall_s`` seconds into this slice, and check the target after it."""
        self.scores.append(score)
        if self._writes:
            append_line(self.path, format_row((env_steps, score, length, round(self.wall_offset_s + wall_s, 3))))
        if self.reached_at is None and self.stop_score is not None and len(self.scores) >= self.window:
            if running_score(np.asarray(self.scores[-self.window :]), self.window)[-1] >= self.stop_score:
                self.reached_at = env_steps
                if self.race is not None:
                    record_race(self.race, env_steps)


def race_record(race: Path) -> int | None:
    """The agent step of the first reaching game of a race (:class:`EpisodeLogger`); ``None`` before any run reached."""
    try:
        return int(race.read_text())
    except FileNotFoundError:
        return None


def record_race(race: Path, env_steps: int) -> None:
    """Record in a race's file that a run reached its target with the game that ended at ``env_steps`` agent steps,
    unless one got there sooner; whole or not at all (written aside, then renamed)."""
    won_at = race_record(race)
    if won_at is not None and won_at <= env_steps:
        return
    race.parent.mkdir(parents=True, exist_ok=True)
    partial = race.with_name(f".{race.name}.{os.getpid()}.tmp")
    partial.write_text(f"{env_steps}\n")
    os.replace(partial, race)


class CheckpointClock:
    """When a run writes a checkpoint and when it stops, decided at PPO iteration boundaries: a checkpoint is due when
    ``every_s`` seconds or ``every_steps`` agent steps have passed since the last one, when the next iteration might
    not finish before ``deadline_s``, or when ``stop_requested`` says so (a signal); in those two cases the run stops
    after writing it.

    :param every_s: wall seconds between checkpoints; ``0``: after every iteration; ``None``: no time trigger.
    :param every_steps: agent steps between checkpoints; ``None``: no step trigger.
    :param deadline_s: stop before this many wall seconds from the start of training; ``None``: no deadline.
    :param stop_requested: whether to stop at the next iteration boundary (:class:`~rl_gns.experiments.signals.StopOnSignal`).
    """

    def __init__(
        self,
        every_s: float | None,
        every_steps: int | None,
        deadline_s: float | None,
        stop_requested: Callable[[], bool] = lambda: False,
    ) -> None:
        self.every_s, self.every_steps, self.deadline_s = every_s, every_steps, deadline_s
        self.stop_requested = stop_requested
        self.stopped = False
        self.n_saved = 0
        self.save_s = 0.0  # wall seconds spent writing checkpoints

    def start(self, steps: int) -> None:
        """Training starts at ``steps`` agent steps."""
        self._start = self._last_save = time.perf_counter()
        self._last_boundary: float | None = None
        self._last_steps = steps
        self._iteration_s = self._save_s = 0.0  # the longest iteration so far; the last checkpoint's cost

    def due(self, steps: int, agree: Callable[[bool, bool], tuple[bool, ...]] = lambda *flags: flags) -> bool:
        """At an iteration boundary, ``steps`` agent steps in: whether to write a checkpoint now (sets
        :attr:`stopped` when the run must stop after it).

        :param agree: makes the clock's own decisions (time due, late) common to several processes.
        """
        now = time.perf_counter()
        if self._last_boundary is not None:
            self._iteration_s = max(self._iteration_s, now - self._last_boundary)
        self._last_boundary = now
        if steps == self._last_steps:
            return False  # nothing trained since the start or the last checkpoint
        due_time = self.every_s is not None and now - self._last_save >= self.every_s
        due_steps = self.every_steps is not None and steps - self._last_steps >= self.every_steps
        late = self.deadline_s is not None and now - self._start + 1.5 * self._iteration_s + self._save_s >= self.deadline_s
        due_time, late = agree(due_time, late or self.stop_requested())
        self.stopped = late
        return due_time or due_steps or late

    def saved(self, steps: int, began: float) -> None:
        """A checkpoint at ``steps`` agent steps was written, begun at ``began`` (``time.perf_counter()``)."""
        self.n_saved += 1
        self._save_s = time.perf_counter() - began
        self.save_s += self._save_s
        self._last_save, self._last_steps = time.perf_counter(), steps

    @property
    def saved_at(self) -> int:
        """Agent steps of the last checkpoint written (or of the start of training, before the first)."""
        return self._last_steps

    def lifecycle(self) -> dict[str, Any]:
        """What a run's summary records of its checkpoints: how many, and their mean cost in seconds."""
        return {
            "checkpoints_written": self.n_saved,
            "checkpoint_s_mean": round(self.save_s / self.n_saved, 3) if self.n_saved else None,
        }


class Checkpointer(BaseCallback):
    """Writes checkpoints between PPO iterations and stops training cleanly before a wall-clock deadline or when asked,
    as its :class:`CheckpointClock` decides at the start of each rollout (the previous update and its log row are
    done, nothing of the next iteration has happened). Once the clock says stop, training stops at the next env step
    (SB3's ``on_step`` seam), whose step the checkpoint does not hold. In a data-parallel run, rank 0 decides for
    every rank (:func:`~rl_gns.core.agents.distributed.agree`).

    :param save: writes a checkpoint of the model as it is now.
    :param clock: when to write one and when to stop.
    """

    def __init__(self, save: Callable[[], None], clock: CheckpointClock) -> None:
        super().__init__()
        self.save = save
        self.clock = clock

    def _on_training_start(self) -> None:
        self.clock.start(self.num_timesteps)

    def _on_rollout_start(self) -> None:
        if self.clock.due(self.num_timesteps, agree):
            began = time.perf_counter()
            self.save()
            self.clock.saved(self.num_timesteps, began)

    def _on_step(self) -> bool:
        return not self.clock.stopped


class Snapshots(BaseCallback):
    """Keeps the agent (policy and Adam state) at the first PPO iteration boundary at or past every multiple of
    ``every_steps`` agent steps, as ``snapshots/<agent steps>.zip`` (:func:`~rl_gns.records.rundir.snapshot_path`).
    Unlike checkpoints, snapshots are not pruned as the run trains: they are the points of training ``rl-gns probe
    --at`` branches from (a resumed run drops those past its checkpoint, ``--overwrite`` all of them). Writing one
    changes nothing of the training (no random numbers are drawn).

    :param run_path: the run directory.
    :param every_steps: agent steps between snapshots.
    """

    def __init__(self, run_path: Path, every_steps: int) -> None:
        super().__init__()
        self.run_path, self.every_steps = run_path, every_steps

    def _on_training_start(self) -> None:
        self._next = (self.num_timesteps // self.every_steps + 1) * self.every_steps

    def _on_rollout_start(self) -> None:
        if self.num_timesteps < self._next:
            return
        path = snapshot_path(self.run_path, self.num_timesteps)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}")
        self.model.save(tmp)
        os.replace(tmp, path)
        self._next = (self.num_timesteps // self.every_steps + 1) * self.every_steps

    def _on_step(self) -> bool:
        return True


class RanksProgressBar(ProgressBarCallback):
    """SB3's progress bar, counting the agent steps of every rank of a data-parallel run (this rank's envs times
    the ranks; the ranks step in lockstep)."""

    def __init__(self, world_size: int) -> None:
        super().__init__()
        self.world_size = world_size

    def _on_step(self) -> bool:
        self.pbar.update(self.training_env.num_envs * self.world_size)
        return True
