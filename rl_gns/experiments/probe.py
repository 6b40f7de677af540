"""``rl-gns probe``: measure the critical rollout size directly at one point of a run.

From an agent a run holds (a snapshot of ``train --snapshot-steps`` chosen with ``--at``; else its ``model.zip`` if
finished, or its newest checkpoint), the probe does two things:

1. **The anchor** (``<out>/anchor``): the agent plays ``anchor_steps`` agent steps at the source's env count with its
   learning rate at 0, so its parameters stay fixed. Its games give the **start score**: every game is played by the
   agent of the branch point itself, so the mean has no lag and its standard error is known. Its measurements, every
   iteration, both schemes, every loss, give the noise scale **at fixed parameters** there.
2. **The branches** (``<out>/runs``): from the same agent, training at several rollout sizes (env counts, or
   ``n_steps`` at one env count with ``n_steps_grid``) and seeds, each until its running score reaches the start
   score plus ``delta``. Unless given, ``delta`` is ``delta_noise``
   standard errors of the running score (:func:`rl_gns.core.maths.targets.resolvable_improvement`): the smallest
   improvement that the score measure tells from noise, so that the probe stays local in training at every stage
   and every game. Several ``delta_noise`` make a ladder of targets: the branches run to the highest, and the report
   fits each. ``rl-gns probe-report`` fits ``S(B) = S_min (1 + B_crit / B)`` to the iterations the branches
   took (:func:`rl_gns.core.maths.tradeoff.fit_local_tradeoff`): the local critical rollout size of McCandlish et al.'s
   App. D, far cheaper than sweeps from scratch late in training.

How a branch starts:

- the source's policy **and** Adam moments (``set_parameters``): the optimiser state is part of where training is,
  and a fresh Adam's first steps would add a transient that depends on the rollout size;
- a constant learning rate per size, re-tuned on the sweep's grid around the source's rate at the source's env count
  (square-root rule by default), and a constant clip range (no annealing: a branch must not depend on its budget);
- new games on new envs (seeded per branch), scored by the same running score as every sweep.

A probe is a sweep (:mod:`rl_gns.experiments.sweep`) of branches: ``<out>/sweep.json``, ``runs/``, and ``rl-gns
analyze`` reads it too; ``<out>/probe.json`` records the branch point, the anchor's start score and the target. The
probe keeps its own copy of the branch point's agent (``<out>/branch_point.zip``), which the anchor and the branches
start from, so that its source may train on and prune its checkpoints. Rerun after an interruption, it keeps the
finished runs and starts the others again from their start rather than resuming them from checkpoints (a run resumed
on a backend that saves no games drops its games in progress): on CPU with one torch thread per run, its report is
then an uninterrupted probe's.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import time
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tyro

from rl_gns.core.envs.atari import FRAME_SKIP
from rl_gns.core.maths.batching import Batching
from rl_gns.core.maths.criterion import fastest
from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.sequential import next_round, precise_enough, too_few_reached
from rl_gns.core.maths.targets import (
    DEFAULT_WINDOW,
    GAIN_GAMES,
    StepsMeasure,
    censored_by,
    expected_games,
    game_length,
    null_crossing,
    null_floor,
    null_max_running_scores,
    null_max_running_scores_envs,
    pilot_gain,
    reach_steps,
    resolvable_improvement,
    running_score,
    spaced_targets,
    window_midpoint,
)
from rl_gns.core.maths.tradeoff import LocalTradeoffFit, fit_local_tradeoff, fit_with_censored
from rl_gns.experiments.config import EnvSettings, PPOSettings, TrainConfig, to_json, train_config_from_json
from rl_gns.experiments.console import duration
from rl_gns.experiments.plan import check_inert, largest_seed
from rl_gns.experiments.runner import ExecutionConfig, check_directory, check_runs, connect, run_all
from rl_gns.experiments.sweep import SweepConfig, recorded_edge_rates, sweep
from rl_gns.experiments.sweep import check as check_sweep
from rl_gns.records.checkpoint import latest_checkpoint, sha256
from rl_gns.records.lock import RunLock, check_unlocked
from rl_gns.records.logs import RunFileError, check_regular
from rl_gns.records.rundir import (
    ANCHOR,
    CONFIG,
    MODEL,
    PILOT,
    PROBE,
    RunDir,
    read_json,
    read_record,
    snapshots,
    write_json,
)
from rl_gns.records.schema import PROBE_FIELDS

#: Seeds of the anchors' envs start here, apart from the branches' seeds (0, 1, ...).
ANCHOR_SEED = 1_000_000
#: Seeds of the pilots' envs start here, apart from the anchors' and the branches'.
PILOT_SEED = 2_000_000


#: The probe's own copy of the agent it branches from, in its directory: the anchor and every branch start from it.
HELD = "branch_point.zip"


@dataclass(frozen=True)
class BranchPoint:
    """Where the branches of a probe start.

    :param model: the agent (``model.zip``) the branches load.
    :param env_steps: agent steps the source had trained there.
    :param sha256: the SHA-256 of ``model``, recorded so that a rerun refuses an agent replaced since.
    :param source: where ``model`` is the probe's copy (:data:`HELD`), the source's agent it was copied from.
    """

    model: Path
    env_steps: int
    sha256: str
    source: Path | None = None


def held_snapshots(steps: list[int]) -> str:
    """The agent steps of a run's snapshots, for one line: all of a few; the count, the first and the last of many."""
    if not steps:
        return "none (train with --snapshot-steps to keep some)"
    if len(steps) <= 6:
        return ", ".join(f"{step:,}" for step in steps)
    return f"{len(steps)} snapshots, from {steps[0]:,} to {steps[-1]:,} agent steps"


def branch_point(source: Path, at: int | None = None) -> BranchPoint:
    """The agent of a run directory: its first snapshot at or past ``at`` agent steps; with ``at=None`` its
    ``model.zip`` if finished, else its newest checkpoint. Its path is a full one, as ``probe.json`` and every spec
    and run of the probe name it: ``rl-gns run <spec>`` finds it from any working directory (a Ray worker's).

    :raises ValueError: if the run holds no such agent.
    """
    point = _branch_point(source, at)
    return replace(point, model=Path(os.path.abspath(point.model)))


def _branch_point(source: Path, at: int | None) -> BranchPoint:
    """:func:`branch_point`, with the agent's path as found under ``source``."""
    run = RunDir(source)
    if not run.is_started():
        raise ValueError(f"{source}: not a run directory (no config.json)")
    if at is not None:
        kept = snapshots(source)
        later = [steps for steps in kept if steps >= at]
        if not later:
            raise ValueError(f"{source}: no snapshot at or past {at:,} agent steps; it keeps {held_snapshots(list(kept))}")
        return BranchPoint(kept[later[0]], later[0], sha256(kept[later[0]]))
    if run.status() == "done":
        check_regular(run.file(MODEL), "a saved agent")
        if not run.file(MODEL).is_file():
            raise ValueError(f"{source}: the run finished but keeps no {MODEL}; probe one of its snapshots with --at")
        return BranchPoint(run.file(MODEL), run.summary().env_steps, sha256(run.file(MODEL)))
    checkpoint = latest_checkpoint(source)
    if checkpoint is None:
        raise ValueError(f"{source}: the run holds no agent yet (not finished, no checkpoint)")
    return BranchPoint(checkpoint.model, checkpoint.env_steps, sha256(checkpoint.model))


def held_point(directory: Path) -> BranchPoint | None:
    """The branch point a probe directory holds: its copy of the source's agent (:data:`HELD`), as ``probe.json``
    records it; ``None`` for a new probe, one started before probes kept a copy, or one stopped before its copy was
    whole (it is copied again).

    :raises ValueError: if the copy is not the agent ``probe.json`` records (its SHA-256 differs).
    """
    if not (directory / PROBE).is_file():
        return None
    record = read_record(directory / PROBE, PROBE_FIELDS)
    held = directory / HELD
    if not isinstance(record.get("source_model"), str) or not held.is_file():
        return None
    if sha256(held) != record.get("model_sha256"):
        raise ValueError(f"{held} is not the agent this probe started from (its SHA-256 differs); use another --out")
    source = Path(record["source_model"])
    return BranchPoint(Path(os.path.abspath(held)), int(record["env_steps"]), str(record["model_sha256"]), source)


def probe_point(config: ProbeConfig) -> BranchPoint:
    """The branch point of a probe: the copy of the agent its directory holds once it started (:func:`held_point`),
    so that a rerun goes on from it whatever its source has pruned or trained since; else the source's agent
    (:func:`branch_point`), which another process training the source could prune as the probe reads it.

    The one file this writes: where ``probe.json`` says the probe held a copy that is gone (a probe directory kept
    without it, as a repository keeps results), the copy is made again from the source's agent, if that agent has
    the recorded SHA-256 (else the probe is refused, naming the digest). Its finished runs started from that copy.

    :raises ValueError: if the source holds no such agent, or another process writes it.
    """
    if config.out is not None and (held := held_point(config.out)) is not None:
        return held
    check_unlocked(config.source)  # a run in training prunes the checkpoints and snapshots a probe branches from
    point = branch_point(config.source, config.at)
    directory = config.directory(point)
    if (held := held_point(directory)) is not None:
        return held
    record = read_record(directory / PROBE, PROBE_FIELDS) if (directory / PROBE).is_file() else {}
    if isinstance(record.get("source_model"), str) and record.get("model_sha256") == point.sha256:
        return hold(point, directory)
    return point


def hold(point: BranchPoint, directory: Path) -> BranchPoint:
    """Keep the branch point's agent in the probe directory (:data:`HELD`, whole or not at all) and return the branch
    point of that copy: a hard link where both lie on one filesystem (rl-gns replaces an agent's file, never rewrites
    it, so the link keeps the agent the probe read), else a copy.

    :raises ValueError: if the agent changed since the probe read it (its SHA-256 differs).
    """
    held = directory / HELD
    partial = held.with_name(f".{HELD}.tmp")
    partial.unlink(missing_ok=True)  # left by a kill
    try:
        os.link(point.model, partial)
    except OSError:  # another filesystem, or one without hard links
        shutil.copyfile(point.model, partial)
    if sha256(partial) != point.sha256:
        partial.unlink()
        raise ValueError(f"{point.model} changed while the probe copied it; probe again")
    os.replace(partial, held)
    return BranchPoint(Path(os.path.abspath(held)), point.env_steps, point.sha256, point.model)


@dataclass(frozen=True)
class StartScore:
    """The score of the branch point's agent, from the games its anchor played at fixed parameters.

    :param mean: mean raw game score.
    :param sd: standard deviation of one game's score (Bessel-corrected).
    :param games: games finished.
    """

    mean: float
    sd: float
    games: int


class AnchorGamesError(ValueError):
    """The anchor's games cannot set a target (bad input: ``--anchor-steps``, or ``--delta`` where they all scored
    the same)."""


def start_score(anchor: Path, window: int, spread_needed: bool) -> StartScore:
    """The anchor's games as a :class:`StartScore`.

    :param spread_needed: whether the target is set in standard errors of the score (no ``--delta``).
    :raises AnchorGamesError: if it finished fewer than ``max(window, 2)`` games (too few to set a target the
        branches' running score can be compared with, or to estimate the games' spread), or, with
        ``spread_needed``, if every game scored the same (a standard error of 0 sets an improvement of 0, which
        every branch reaches with its first window).
    """
    scores = RunDir(anchor).episodes()["score"]
    needed = max(window, 2)
    if len(scores) < needed:
        why = f"--window {window}" if window >= 2 else "the 2 that a standard deviation needs"
        raise AnchorGamesError(
            f"{anchor}: the anchor finished {len(scores)} games, fewer than {why}; probe again with a larger "
            f"--anchor-steps and another --out ({anchor.parent} keeps these settings)"
        )
    if spread_needed and np.all(scores == scores[0]):
        raise AnchorGamesError(
            f"{anchor}: every one of the anchor's {len(scores)} games scored {scores[0]:g}, so an improvement in "
            f"standard errors is 0; probe again with --delta (a raw-score improvement) and another --out "
            f"({anchor.parent} keeps these settings)"
        )
    return StartScore(float(np.mean(scores)), float(np.std(scores, ddof=1)), len(scores))


#: The env counts of a probe's branches, unless given: the run's own times each of these that makes a whole count >= 1.
ENV_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass(kw_only=True)
class ProbeConfig(ExecutionConfig):
    """Branch a run at one of its agents at several rollout sizes and seeds, each until its running score improves by
    delta over the agent's own score (measured by an anchor at fixed parameters), and fit the critical rollout size
    there."""

    source: tyro.conf.Positional[Path]
    """The run directory to probe."""
    at: int | None = None
    """Branch from the run's first snapshot at or past this many agent steps; if unset, its model.zip or newest checkpoint."""
    anchor_steps: int = 100_000
    """Agent steps the anchor plays at fixed parameters for the start score and noise scale; must finish --window games."""
    delta: float | None = None
    """With --target-rule noise: raw-score improvement over the start score a branch must reach; else --delta-noise."""
    delta_noise: tuple[float, ...] = (3.0,)
    """With --target-rule noise, without --delta: improvements in standard errors of the running score (ascending)."""
    target_rule: Literal["noise", "pilot"] = "pilot"
    """pilot: targets from the null floor to a pilot's best (criterion v8's); noise: the start score plus --delta(-noise)."""
    lowest_target_only: bool = True
    """With --target-rule pilot: keep only the lower of its two targets; branches stop there, so a probe costs less."""
    n_envs: tuple[int, ...] = ()
    """Env counts of the branches at the run's n_steps; none: the run's own x 1/4 to 8. One, with --n-steps-grid."""
    n_steps_grid: tuple[int, ...] = ()
    """Vary n_steps instead: steps per env per rollout, one per size, at one --n-envs (default: the run's)."""
    seeds: int = 3
    """Seeds per (env count, learning rate); with --design sequential, the most per env count."""
    first_seed: int = 0
    """First seed of the branches, the anchor and the pilot; a retest of the same point starts past the first probe's."""
    lr_rule: Literal["sqrt", "linear", "constant"] = "sqrt"
    """Learning rate at each size: the source's, scaled by (rollout size / the source's)^p, p = 0.5, 1 or 0."""
    lr_points: int = 1
    """Learning rates per size, spaced by lr_factor around the rule (the fastest per seed is kept)."""
    lr_factor: float = 2.0
    """Ratio between neighbouring learning rates of the grid."""
    edge_rounds: int = 0
    """Rounds of criterion v8's edge rule over the branches' learning rates (as rl-gns sweep --edge-rounds)."""
    race: bool = False
    """Stop a branch once another learning rate of its size and seed reached the highest target sooner than it can."""
    window: int = DEFAULT_WINDOW
    """Games in the running score of every branch."""
    steps: StepsMeasure = "trend"
    """A branch's S: passage (its running score reaches the target), midpoint (of those games), trend (docs/probe.md)."""
    budget_steps: int | None = None
    """Agent steps per branch (and pilot) if it does not reach its target first; unset: half the run's at the branch point."""
    gns_every: int = 4
    """The branches measure the noise scale (both schemes, every loss) every this many PPO iterations."""
    out: Path | None = None
    """Probe directory; if unset, probes/<source name>_at<agent steps>."""
    null_level: float | None = 0.01
    """Raise targets to the score a branch that learns nothing reaches with at most this probability (None: keep them)."""
    least_pilot_gain: float | None = None
    """With --target-rule pilot: no target unless the pilot ended 20+ games, its later ones this many SEs over the anchor's."""
    max_cost: float | None = 10.0
    """A cap on agent steps, as a multiple of the run's at the branch point (a sequential probe stops before it)."""
    design: Literal["fixed", "sequential"] = "sequential"
    """fixed: every size, --seeds seeds; sequential: one seed per size, then seeds around the fitted B_crit (docs/probe.md)."""
    stop_ratio: float = 8.0
    """Sequential design: stop once B_crit's 95 % interval is within this ratio (high / low)."""
    held_back: int = 0
    """Sequential design: the grid's largest sizes that train only once the fit puts B_crit past every size trained."""
    least_sizes: int = 0
    """Sequential design: stop after a round at whose end fewer rollout sizes than this reached the target (0: never)."""
    censored: bool = True
    """Fit B_crit with the branches that did not reach the target as censored, in the rules and report (docs/probe.md)."""

    def directory(self, point: BranchPoint) -> Path:
        """The probe directory."""
        return self.out or Path("probes") / f"{self.source.name}_at{point.env_steps}"

    def source_config(self) -> TrainConfig:
        """The source run's settings."""
        return train_config_from_json(RunDir(self.source).config().settings, self.source / CONFIG)

    def anchor_config(self, point: BranchPoint) -> TrainConfig:
        """The anchor: the source's settings at its env count, from the branch point's agent, learning rate 0, every
        iteration measured with both schemes and every loss, on the branches' device."""
        return replace(
            self.source_config(),
            learning_rate=0.0,
            anneal=False,
            init_from=point.model,
            total_steps=self.anchor_steps,
            seed=ANCHOR_SEED + self.first_seed,
            nproc=1,
            adaptive_r=None,
            gns=True,
            gns_scheme=("minibatch", "envs"),
            gns_losses=LOSSES,
            gns_every=1,
            gns_b_big=None,
            gns_b_small=None,
            stop_score=None,
            score_window=self.window,
            out=self.directory(point) / ANCHOR,
            overwrite=True,
            resume=None,
            device=self.device,
            torch_threads=self.threads_per_run,
            progress_bar=False,
            verbose=False,
            checkpoint_minutes=self.checkpoint_minutes,
            checkpoint_steps=None,
            max_wall_minutes=None,
            snapshot_steps=None,
        )

    def pilot_config(self, point: BranchPoint) -> TrainConfig:
        """The pilot of criterion v8's targets: the branch point's agent training on at the source's settings and
        learning rate (constant) for one branch budget, measured as the branches are."""
        return replace(
            self.anchor_config(point),
            learning_rate=self.source_config().learning_rate,
            total_steps=self.branch_budget,
            seed=PILOT_SEED + self.first_seed,
            gns_every=self.gns_every,
            out=self.directory(point) / PILOT,
        )

    @property
    def branch_budget(self) -> int:
        """``budget_steps``, which :func:`settled` sets where it is unset (the probe's settings from :func:`check` on)."""
        if self.budget_steps is None:
            raise ValueError("--budget-steps is set from the branch point: settle the probe's settings first")
        return self.budget_steps

    def before_branches(self) -> int:
        """Agent steps the probe spends before its branches: the anchor's, and the pilot's whole budget (``pilot`` rule)."""
        return self.anchor_steps + (self.branch_budget if self.target_rule == "pilot" else 0)

    def most_rates(self) -> int:
        """The most learning rates a size may try: the grid, and at each edge round one rate beyond each edge."""
        return self.lr_points + 2 * self.edge_rounds

    def recorded(self) -> dict[str, object]:
        """What ``probe.json`` records of the settings (:data:`RECORDED`), as JSON values."""
        return {name: value for name, value in to_json(self).items() if name in RECORDED}

    def targets(self, start: StartScore) -> tuple[float, ...]:
        """The scores every branch is timed to, ascending: the start score plus ``delta``, or plus each of
        ``delta_noise`` standard errors of the running score."""
        if self.delta is not None:
            return (start.mean + self.delta,)
        return tuple(start.mean + resolvable_improvement(start.sd, self.window, n) for n in self.delta_noise)

    def branch_n_envs(self, source_n_envs: int) -> tuple[int, ...]:
        """The env counts of the branches: ``n_envs`` where given; else, with ``n_steps_grid``, the run's own; else the
        run's own times each of :data:`ENV_FACTORS` that gives a whole count of at least 1."""
        if self.n_envs:
            return self.n_envs
        if self.n_steps_grid:
            return (source_n_envs,)
        scaled = (source_n_envs * factor for factor in ENV_FACTORS)
        return tuple(int(n_envs) for n_envs in scaled if n_envs >= 1 and n_envs.is_integer())

    def sweep_config(self, point: BranchPoint, targets: tuple[float, ...]) -> SweepConfig:
        """The sweep of branches: the source's game, observations and PPO settings, its minibatches per epoch, and its
        learning rate at its env count; constant rates; the noise scale measured every ``gns_every`` iterations."""
        source = self.source_config()
        shared = {name: getattr(source, name) for name in SHARED}
        own = {name: getattr(self, name) for name in (*ExecutionConfig.__dataclass_fields__, *GRID)}
        own["n_envs"] = self.branch_n_envs(source.n_envs)
        own["budget_steps"] = self.branch_budget
        batching = Batching.of_minibatch_size(source.n_envs, source.n_steps, source.minibatch_size)
        return SweepConfig(
            **shared,
            **own,
            gns=True,
            gns_scheme=("minibatch", "envs"),
            gns_losses=LOSSES,
            targets=targets,
            out=self.directory(point),
            n_minibatches=batching.n_minibatches,
            lr_ref=source.learning_rate,
            n_envs_ref=source.n_envs,
            init_from=point.model,
        )


#: Settings a probe passes on to its sweep of branches as they are (its budget, once settled: ``branch_budget``).
GRID = (
    "n_envs",
    "n_steps_grid",
    "seeds",
    "first_seed",
    "lr_rule",
    "lr_points",
    "lr_factor",
    "edge_rounds",
    "race",
    "window",
    "gns_every",
)
#: Settings a branch takes from its source: the game and how it is observed, and PPO's (its regime included).
SHARED = (*(f.name for f in fields(EnvSettings)), *(f.name for f in fields(PPOSettings)), "gns_ema_beta")

#: What ``probe.json`` records of the settings; a probe directory refuses a rerun with others.
RECORDED = (
    "source",
    "at",
    "anchor_steps",
    "delta",
    "delta_noise",
    "window",
    "first_seed",
    "steps",
    "null_level",
    "target_rule",
    "lowest_target_only",
    "design",
    "stop_ratio",
    "held_back",
    "least_sizes",
    "censored",
    "least_pilot_gain",
)


#: Null branches resampled from the anchor's games to set the null floor.
NULL_DRAWS = 20_000


#: How the null branches order their games: ``envs``, as ``n_envs`` envs that reset together end them (shortest first,
#: :func:`~rl_gns.core.maths.targets.null_max_running_scores_envs`) at each env count of the grid; ``any``, in any
#: order (:func:`~rl_gns.core.maths.targets.null_max_running_scores`), the rule of the probes that set their floor
#: before the first came in (2026-12-05), which keep it when rerun (``probe.json`` without ``null_order``).
NullOrder = Literal["envs", "any"]


@dataclass(frozen=True)
class NullFloor:
    """Criterion v8's rule at a probe: the anchor's games are those of a branch that learns nothing.

    :param floor: the lowest target such a branch reaches with at most the probe's ``null_level``, at every env count.
    :param looks: games a branch plays within its budget (each a look at its running score).
    :param targets: the probe's targets, each raised to ``floor`` (ascending, without repeats).
    :param false_crossing: each target's probability of being reached by the best of the most learning rates a size may
        try (:meth:`ProbeConfig.most_rates`) null branches, at the env count where it is highest.
    :param order: how the null branches order their games (:data:`NullOrder`).
    :param n_envs: with ``order`` ``envs``, the env count whose floor is highest (the one that sets ``floor``).
    """

    floor: float
    looks: int
    targets: tuple[float, ...]
    false_crossing: tuple[float, ...]
    order: NullOrder
    n_envs: int | None

    def record(self) -> dict[str, object]:
        """What ``probe.json`` records of the floor (its targets' false crossings apart)."""
        binding = {"null_n_envs": self.n_envs} if self.n_envs is not None else {}
        return {"null_floor": self.floor, "null_looks": self.looks, "null_order": self.order, **binding}


def null_maxima(
    config: ProbeConfig, anchor: Path, n_envs_K: tuple[int, ...], order: NullOrder
) -> tuple[int, dict[int | None, np.ndarray]]:
    """The looks of a null branch (games it plays within ``budget_steps``) and, per env count of ``n_envs_K`` (``None``
    with ``order`` ``any``), ``(NULL_DRAWS,)`` its highest running scores, the anchor's games resampled
    (:func:`~rl_gns.core.maths.targets.null_max_running_scores_envs`, or in any order
    :func:`~rl_gns.core.maths.targets.null_max_running_scores`)."""
    games = RunDir(anchor).episodes()
    ends = games["env_steps"]
    length = game_length(ends, games["length_frames"], at=int(ends[-1]), games=len(ends))
    per_game = length[0] if length else float(ends[-1]) / len(ends)
    looks = max(config.window, math.ceil(config.branch_budget / per_game))
    rng = np.random.default_rng(config.first_seed)
    if order == "any":
        return looks, {None: null_max_running_scores(games["score"], looks, config.window, NULL_DRAWS, rng)}
    frame_skip = RunDir(config.source).config().settings.get("frame_skip", FRAME_SKIP)
    lengths = np.asarray(games["length_frames"], dtype=float) / frame_skip
    return looks, {
        n_envs: null_max_running_scores_envs(
            games["score"], lengths, n_envs, config.branch_budget, config.window, NULL_DRAWS, rng
        )
        for n_envs in sorted(set(n_envs_K))
    }


def null_floor_of(
    config: ProbeConfig, anchor: Path, targets: tuple[float, ...], n_envs_K: tuple[int, ...], order: NullOrder
) -> NullFloor:
    """The :class:`NullFloor` of the anchor's games (:func:`~rl_gns.core.maths.targets.null_floor`), targets raised to
    it: with ``order`` ``envs``, the highest of the floors of null branches at each env count ``n_envs_K`` of the grid,
    each of ``budget_steps`` agent steps from a reset of all its envs (:func:`null_maxima`)."""
    assert config.null_level is not None
    looks, maxima = null_maxima(config, anchor, n_envs_K, order)
    binding, floor = highest_floor(maxima, config.most_rates(), config.null_level)
    raised = tuple(sorted({max(target, floor) for target in targets}))
    crossing = worst_crossing(maxima, raised, config.most_rates())
    return NullFloor(floor, looks, raised, crossing, order, binding)


def highest_floor(maxima: dict[int | None, np.ndarray], rates: int, level: float) -> tuple[int | None, float]:
    """The env count of :func:`null_maxima`'s draws whose null floor (:func:`~rl_gns.core.maths.targets.null_floor`,
    the best of ``rates`` runs, at most ``level``) is highest, and that floor."""
    floors = {n_envs: null_floor(drawn, rates, level) for n_envs, drawn in maxima.items()}
    binding = max(floors, key=lambda n_envs: floors[n_envs])
    return binding, floors[binding]


def worst_crossing(maxima: dict[int | None, np.ndarray], targets: tuple[float, ...], rates: int) -> tuple[float, ...]:
    """Each target's highest false-crossing probability (:func:`~rl_gns.core.maths.targets.null_crossing`, the best of
    ``rates`` runs) over the env counts of :func:`null_maxima`'s draws."""
    return tuple(max(null_crossing(drawn, t, rates) for drawn in maxima.values()) for t in targets)


def no_target(record: dict[str, Any]) -> str | None:
    """Why criterion v8's pilot set a probe no target, from what ``probe.json`` records (``record``), or ``None``
    where it set one or has not yet run: its best running score did not pass the null floor, or, under
    ``--least-pilot-gain``, its later games did not beat the anchor's by that many standard errors
    (:func:`~rl_gns.core.maths.targets.pilot_gain`), or it finished too few games for that gain to be measured."""
    floor, best = record.get("null_floor"), record.get("pilot_best")
    if floor is None or best is None:
        return None
    if best <= floor:
        return f"the pilot's best running score, {best:.4g}, does not pass the null floor {floor:.4g}"
    least, gain, games = record.get("least_pilot_gain"), record.get("pilot_gain"), record.get("pilot_games")
    if least is not None and gain is None and games is not None:
        return (
            f"the pilot finished {games} games, fewer than the {GAIN_GAMES} --least-pilot-gain {least:g} measures "
            f"its gain over: its best running score, {best:.4g}, passed the null floor {floor:.4g} with no gain to judge"
        )
    if least is not None and gain is not None and gain < least:
        return (
            f"the pilot's later games beat the anchor's by {gain:.2f} standard errors (its drift counted), fewer than "
            f"--least-pilot-gain {least:g}: its best running score, {best:.4g}, passed the null floor {floor:.4g} "
            "without a measurable gain"
        )
    return None


class NoTargetError(ValueError):
    """Criterion v8's pilot set no target (:func:`no_target` says why): the game has no target at this point of the run.

    :param record: what ``probe.json`` records of it: the null floor, its looks, the pilot's best running score and,
        under ``--least-pilot-gain``, its gain.
    """

    def __init__(self, message: str, record: dict[str, object]) -> None:
        super().__init__(message)
        self.record = record


def probe_targets(
    config: ProbeConfig, directory: Path, start: StartScore, n_envs_K: tuple[int, ...], order: NullOrder = "envs"
) -> tuple[tuple[float, ...], dict[str, object]]:
    """The targets every branch is timed to, ascending, and what ``probe.json`` records of the null rule.

    With ``null_level``, each target of ``target_rule`` noise is raised to the null floor (:func:`null_floor_of`); with
    ``pilot``, the targets are criterion v8's, a third and two thirds of the way from the floor to the pilot's best
    running score (:func:`~rl_gns.core.maths.targets.spaced_targets`), or only the first (``lowest_target_only``).

    :param n_envs_K: the env counts of the branches, at which null branches are drawn with ``order`` ``envs``.
    :param order: how the null branches order their games (:data:`NullOrder`).
    :raises NoTargetError: if the pilot sets no target (:func:`no_target`).
    """
    targets = config.targets(start)
    if config.null_level is None:
        return targets, {}
    floor = null_floor_of(config, directory / ANCHOR, targets, n_envs_K, order)
    pilot: dict[str, object] = {}
    how = "targets raised to it where below"
    if config.target_rule == "pilot":
        scores = RunDir(directory / PILOT).episodes()["score"]
        best = float(np.nanmax(running_score(scores, config.window), initial=-math.inf))
        targets = spaced_targets(floor.floor, best)[: 1 if config.lowest_target_only else None]
        pilot = {"pilot_best": best}
        if config.least_pilot_gain is not None:
            pilot["pilot_games"] = len(scores)
            if len(scores) >= GAIN_GAMES:
                pilot["pilot_gain"] = pilot_gain(RunDir(directory / ANCHOR).episodes()["score"], scores)
        reason = no_target({**floor.record(), **pilot, "least_pilot_gain": config.least_pilot_gain})
        if reason is not None:
            raise NoTargetError(
                f"{directory / PILOT}: {reason}: no target at this point of the run, which does not improve measurably "
                f"within --budget-steps from here (docs/probe.md, targets from a pilot)",
                {**floor.record(), **pilot},
            )
        floor = null_floor_of(config, directory / ANCHOR, targets, n_envs_K, order)
        thirds = "its target a third" if config.lowest_target_only else "targets a third and two thirds"
        how = f"{thirds} of the way from it to the pilot's best running score, {best:.4g}"
        if "pilot_gain" in pilot:
            how += f" (its later games beat the anchor's by {pilot['pilot_gain']:.2f} standard errors)"
    print(
        f"probe {directory}: a branch that learns nothing reaches {floor.floor:.4g} with probability at most "
        f"{config.null_level:g} ({floor.looks:,} looks, the best of {config.most_rates()} rates"
        + (f", its {floor.n_envs} envs reset together" if floor.n_envs is not None else "")
        + f"): {how}",
        flush=True,
    )
    return floor.targets, {**floor.record(), "false_crossing": list(floor.false_crossing), **pilot}


def null_order(before: dict[str, object]) -> NullOrder:
    """The null rule's order for a probe whose ``probe.json`` held ``before`` when it started: the one it records;
    ``any`` where an earlier rl-gns set its null floor without recording one (a rerun keeps its targets); else ``envs``."""
    recorded = before.get("null_order")
    if recorded == "envs" or recorded == "any":
        return recorded
    return "any" if "null_floor" in before else "envs"


def settled(config: ProbeConfig) -> ProbeConfig:
    """``config`` as the probe runs it: its source spelled as its directory records it (:func:`spelled_as_recorded`),
    and, where ``--budget-steps`` is unset, a budget of half the run's agent steps at the branch point (criterion v8's
    probes' budget: a branch spends at most half of what took the run there)."""
    config = spelled_as_recorded(config)
    if config.budget_steps is not None:
        return config
    try:
        point = probe_point(config)
    except ValueError:
        return config  # check() says why
    return replace(config, budget_steps=point.env_steps // 2)


def spelled_as_recorded(config: ProbeConfig) -> ProbeConfig:
    """``config`` with its source spelled as its probe directory records it, where both spellings name the same
    directory: a probe given its source relative in one call and absolute in the next is one probe, and its anchor
    and branches keep the paths they were started with."""
    try:
        record = config.directory(probe_point(config)) / PROBE
    except ValueError:
        return config  # check() says why
    recorded = read_record(record, PROBE_FIELDS)["source"] if record.exists() else None
    if recorded is None or Path(recorded) == config.source or Path(recorded).resolve() != config.source.resolve():
        return config
    return replace(config, source=Path(recorded))


@dataclass(frozen=True)
class ProbeCost:
    """What a probe may spend, before it trains: every branch taken to its whole budget (branches stop at their
    target, so this is an upper bound).

    :param agent_steps: the anchor's agent steps (and the pilot's budget) plus every branch's budget.
    :param branches: sizes × learning rates × seeds.
    :param run_steps: the run's agent steps at the branch point.
    :param steps_per_s: the run's own speed (agent steps per second over its training), NaN if not known.
    :param first_round: with the sequential design, the anchor's agent steps plus its first round's budgets (one seed
        per size); ``None`` for the fixed design.
    :param cap: ``--max-cost`` in agent steps, which a sequential probe stops before passing; ``None`` without it.
    """

    agent_steps: int
    branches: int
    run_steps: int
    steps_per_s: float
    first_round: int | None = None
    cap: int | None = None

    @property
    def multiple(self) -> float:
        """The cost as a multiple of the run's agent steps at the branch point (inf at step 0)."""
        return self.multiple_of(self.agent_steps)

    def multiple_of(self, agent_steps: int) -> float:
        """``agent_steps`` as a multiple of the run's agent steps at the branch point (inf at step 0)."""
        return agent_steps / self.run_steps if self.run_steps else math.inf

    def spend(self, agent_steps: int) -> str:
        """``agent_steps`` as the line gives it: the count, the multiple of the run, and the time at the run's speed."""
        speed = ""
        if self.steps_per_s > 0:
            speed = f", about {duration(agent_steps / self.steps_per_s)} at the run's {self.steps_per_s:,.0f} agent steps/s"
        return f"{agent_steps:,} agent steps ({self.multiple_of(agent_steps):,.1f}x the run's {self.run_steps:,}{speed})"

    def line(self) -> str:
        if self.first_round is not None:
            every = f"{self.branches} branches to their budget, {self.spend(self.agent_steps)}"
            if self.cap is not None and self.cap < self.agent_steps:
                every = f"{self.spend(self.cap)}, where --max-cost stops it (without it: {every})"
            return (
                "probe cost (sequential design): its first round (one seed per size it starts with, and what runs "
                f"before it) at most {self.spend(self.first_round)}; all rounds together at most {every} (a branch "
                "stops at its target, the design once B_crit is bounded)"
            )
        return (
            f"probe cost: at most {self.spend(self.agent_steps)} ({self.branches} branches to their budget, and what "
            "runs before them; a branch stops at its target)"
        )


def probe_cost(config: ProbeConfig, point: BranchPoint, sizes: int) -> ProbeCost:
    """The probe's :class:`ProbeCost`, its speed from the source's summary or its last logged row."""
    run = RunDir(config.source)
    speed = math.nan
    try:
        if run.status() == "done":
            summary = run.summary()
            speed = summary.env_steps / summary.wall_s if summary.wall_s > 0 else math.nan
        else:
            speed = float(run.progress().get("time/fps", [math.nan])[-1])
    except (RunFileError, IndexError, ValueError):
        pass  # the speed is an estimate: without it the cost is given in agent steps only
    per_seed = sizes * config.most_rates()
    most = config.before_branches() + per_seed * config.seeds * config.branch_budget
    first_round = (sizes - config.held_back) * config.most_rates() * config.branch_budget
    first = config.before_branches() + first_round if config.design == "sequential" else None
    cap = None if config.max_cost is None else math.floor(config.max_cost * point.env_steps)
    return ProbeCost(most, per_seed * config.seeds, point.env_steps, speed, first, cap)


def check_numbers(config: ProbeConfig) -> None:
    """Each value flag of the probe on its own (raises ``ValueError`` with the reason)."""
    if config.delta is not None and (not math.isfinite(config.delta) or config.delta <= 0):
        raise ValueError(f"--delta must be a finite improvement > 0, got {config.delta}")
    check_inert(config, {"delta_noise": "with --delta (the target is its raw improvement)"} if config.delta else {})
    noise = config.delta_noise
    if not noise or not all(math.isfinite(n) and n > 0 for n in noise) or list(noise) != sorted(set(noise)):
        raise ValueError(f"--delta-noise must be finite numbers > 0, ascending without repeats, got {list(noise)}")
    if config.n_steps_grid and (len(config.n_envs) > 1 or len(set(config.n_steps_grid)) < 2):
        raise ValueError("--n-steps-grid needs at most one --n-envs and at least 2 distinct n_steps to fit S(B)")
    if not config.n_steps_grid and len(config.n_envs) == 1:
        raise ValueError("a probe needs at least 2 distinct --n-envs (or --n-steps-grid) to fit S(B)")
    if config.null_level is not None and not 0 < config.null_level < 1:
        raise ValueError(f"--null-level must be a probability in (0, 1), got {config.null_level}")
    if config.budget_steps is not None and config.budget_steps < 1:
        raise ValueError(f"--budget-steps must be >= 1 agent step, got {config.budget_steps:,}")
    for name in ("window", "anchor_steps", "gns_every"):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    if config.at is not None and config.at < 0:
        raise ValueError(f"--at must be >= 0 agent steps, got {config.at}")
    check_design(config)
    check_target_rule(config)


def check_target_rule(config: ProbeConfig) -> None:
    """The pilot target rule's settings (raises ``ValueError`` with the reason)."""
    if config.target_rule != "pilot":
        check_inert(config, {"lowest_target_only": "with --target-rule noise (give one --delta-noise)",
                             "least_pilot_gain": "with --target-rule noise"})  # fmt: skip
        return
    if config.least_pilot_gain is not None and not (math.isfinite(config.least_pilot_gain) and config.least_pilot_gain > 0):
        raise ValueError(f"--least-pilot-gain must be a finite count of standard errors > 0, got {config.least_pilot_gain:g}")
    check_inert(config, {"delta": "with --target-rule pilot", "delta_noise": "with --target-rule pilot"})
    if config.null_level is None:
        raise ValueError("--target-rule pilot needs --null-level: its targets start from the null floor")


def check_design(config: ProbeConfig) -> None:
    """The sequential design's settings (raises ``ValueError`` with the reason)."""
    fixed = {"stop_ratio": "with --design fixed", "held_back": "with --design fixed", "least_sizes": "with --design fixed"}
    check_inert(config, fixed if config.design == "fixed" else {})
    if config.least_sizes < 0:
        raise ValueError(f"--least-sizes must be a count of rollout sizes >= 0, got {config.least_sizes}")
    if config.held_back < 0:
        raise ValueError(f"--held-back must be a count of sizes >= 0, got {config.held_back}")
    if not (math.isfinite(config.stop_ratio) and config.stop_ratio > 1):
        raise ValueError(f"--stop-ratio must be a finite ratio > 1, got {config.stop_ratio:g}")
    if config.design == "sequential" and config.edge_rounds:
        raise ValueError("--edge-rounds needs --design fixed: a sequential probe does not train every seed at every size")


def check(config: ProbeConfig) -> BranchPoint:
    """Check the probe without writing anything (but a lost copy of its agent, :func:`probe_point`); return its branch
    point.

    :raises ValueError: with the reason.
    """
    config = settled(config)
    config.check_execution()  # before the anchor's train settings, which carry --threads-per-run as theirs
    check_numbers(config)
    point = probe_point(config)
    source = config.source_config()
    if source.learning_rate == 0:
        raise ValueError(
            f"{config.source} trained at learning rate 0 (a fixed policy, as an anchor plays): the branches scale the "
            "source's learning rate, so probe a run that learns"
        )
    most = largest_seed(0, source.n_envs) - ANCHOR_SEED - config.first_seed  # the anchor's env seeds stay in range
    if config.anchor_steps > most:
        raise ValueError(f"--anchor-steps must be at most {most:,} agent steps, got {config.anchor_steps:,}")
    directory = config.directory(point)
    settings = config.recorded()
    check_directory(directory, "probe", {**settings, **where(directory)}, shares=("sweep",))
    first = [config.anchor_config(point), *([config.pilot_config(point)] if config.target_rule == "pilot" else [])]
    check_runs(first, restart=True)
    record = read_record(directory / PROBE, PROBE_FIELDS) if (directory / PROBE).exists() else {}
    if record.get("model_sha256", point.sha256) != point.sha256:  # probes before 2026-11-24 recorded no digest
        raise ValueError(f"{point.model} is not the agent this probe started from (its SHA-256 differs); use another --out")
    recorded = record.get("targets", [record["target"]] if "target" in record else None)
    branches = config.sweep_config(point, tuple(recorded) if recorded else (0.0,))
    check_sweep(branches, restart=True)
    if config.held_back > len(branches.sizes()) - 2:
        raise ValueError(
            f"--held-back {config.held_back} must leave at least 2 of the probe's {len(branches.sizes())} sizes to start with"
        )
    if config.max_cost is not None:
        if not config.max_cost > 0:
            raise ValueError(f"--max-cost must be a multiple of the run's agent steps > 0, got {config.max_cost:g}")
        cost = probe_cost(config, point, len(branches.sizes()))
        capped = cost.agent_steps if cost.first_round is None else cost.first_round  # a sequential probe stops at it
        if cost.multiple_of(capped) > config.max_cost:
            what = "this probe" if cost.first_round is None else "this probe's first round"
            raise ValueError(
                f"--max-cost {config.max_cost:g}: {what} may spend {capped:,} agent steps, "
                f"{cost.multiple_of(capped):,.1f}x the run's {cost.run_steps:,}; lower --budget-steps, --seeds, "
                "--lr-points, --anchor-steps or the sizes, or raise --max-cost"
            )
    return point


def warn_short_anchor(config: ProbeConfig, point: BranchPoint, n_envs: int) -> None:
    """Warn, before the anchor plays, where the source's games just before the branch point say that
    ``--anchor-steps`` over the anchor's ``n_envs`` envs would finish fewer than ``--window`` games, or 2 (which
    :func:`start_score` then refuses): an estimate, so a warning, not a refusal; none where the source's
    ``episodes.csv`` holds too few games or cannot be read."""
    try:
        games = RunDir(config.source).episodes()
    except RunFileError:
        return  # the probe does not need the source's games: an unreadable file leaves the estimate out, not the probe
    estimate = game_length(games["env_steps"], games["length_frames"], point.env_steps)
    if estimate is None:
        return
    length, cv = estimate
    needed = max(config.window, 2)  # as start_score() needs
    if (expected := expected_games(length, cv, config.anchor_steps, n_envs)) >= needed:
        return
    enough = math.ceil(length * (needed + n_envs) / 1000) * 1000
    warnings.warn(
        f"rl-gns: the source's games before {point.env_steps:,} agent steps lasted about {length:,.0f} agent steps "
        f"each: an anchor of {config.anchor_steps:,} agent steps over {n_envs} envs may finish about {expected:.0f} "
        f"games, fewer than the {needed} it needs; --anchor-steps {enough:,} would finish about "
        f"{expected_games(length, cv, enough, n_envs):.0f}",
        stacklevel=2,
    )


def warn_without_own_size(config: ProbeConfig, sizes: list[tuple[int, int]]) -> None:
    """Warn where the branches' ``(n_envs, n_steps)`` leave out the run's own rollout size: the path averages of the
    noise scale (docs/prediction-criterion.md) are measured at it."""
    own = config.source_config().rollout_size
    if own not in {n_envs * n_steps for n_envs, n_steps in sizes}:
        warnings.warn(
            f"rl-gns: the branches' rollout sizes leave out the run's own ({own:,} agent steps): the path averages of "
            "the noise scale (docs/prediction-criterion.md) are measured at it",
            stacklevel=2,
        )


def probe(config: ProbeConfig) -> Path:
    """Play the anchor, then run every unfinished branch, holding the probe directory's lock; return the directory.

    :raises RunsFailedError: if the anchor or a branch failed.
    :raises rl_gns.records.lock.RunLockedError: if another process writes the probe.
    """
    config = settled(config)
    point = check(config)
    connect(config)  # a cluster that does not answer leaves nothing written
    directory = config.directory(point)
    sizes = config.sweep_config(point, (0.0,)).sizes()
    warn_without_own_size(config, sizes)
    print(probe_cost(config, point, len(sizes)).line(), flush=True)
    with RunLock(directory).acquire():
        # again, under the lock, what another command may have written since check(): the directory, not every run
        check_directory(directory, "probe", {**config.recorded(), **where(directory)}, shares=("sweep",))
        return _probe(config, point, directory)


def _probe(config: ProbeConfig, point: BranchPoint, directory: Path) -> Path:
    """:func:`probe`, with the directory's lock held. The anchor and the branches start from the probe's copy of the
    agent; an unfinished one starts again from its start (an anchor is replayed, a branch restarted from the branch
    point) rather than resuming from a checkpoint, which drops the games in progress on a backend that saves none."""
    settings = config.recorded()
    before = read_record(directory / PROBE, PROBE_FIELDS) if (directory / PROBE).exists() else {}
    if point.source is None and (not before or "source_model" in before):  # not a probe from before copies were kept
        write_json(directory / PROBE, {**settings, **origin(replace(point, source=point.model), directory)})
        point = hold(point, directory)
    restarts = dict(before.get("restarts") or {})
    rounds = {ROUNDS: before[ROUNDS]} if before.get(ROUNDS) else {}  # a sequential probe's: a rerun goes on with them
    order = null_order(before)
    origin_record = {**origin(point, directory), "restarts": restarts, **rounds, "null_order": order}
    write_json(directory / PROBE, {**settings, **origin_record})
    anchor = config.anchor_config(point)
    first = {ANCHOR: anchor, **({PILOT: config.pilot_config(point)} if config.target_rule == "pilot" else {})}
    if RunDir(directory / ANCHOR).status() != "done":
        warn_short_anchor(config, point, anchor.n_envs)
    for name in first:
        restarts[name] = restarts.get(name, 0) + started(directory / name)
    write_json(directory / PROBE, {**settings, **origin_record})
    outcome = run_all(directory, first, config, label="probe anchor", restart=True)
    if any(state not in ("done", "skipped") for state in outcome.values()):
        return directory  # stopped before --max-wall-minutes: rerun to go on
    start = start_score(directory / ANCHOR, config.window, spread_needed=config.delta is None)
    n_envs_K = tuple(n_envs for n_envs, _ in config.sweep_config(point, (0.0,)).sizes())
    try:
        targets, null = probe_targets(config, directory, start, n_envs_K, order)
    except NoTargetError as error:  # the outcome is on disk, as a probe's targets are
        write_json(directory / PROBE, {**settings, **origin_record, **error.record})
        raise
    branches = config.sweep_config(point, targets)
    added = recorded_edge_rates(directory)
    unfinished = sum(started(run.out) for run in branches.runs(added).values() if run.out is not None)
    restarts["branches"] = restarts.get("branches", 0) + unfinished
    write_json(
        directory / PROBE,
        {
            **settings,
            **origin_record,
            "start_score": start.mean,
            "start_score_sd": start.sd,
            "anchor_games": start.games,
            "improvement": targets[0] - start.mean,
            "target": targets[0],
            "improvements": [target - start.mean for target in targets],
            "targets": list(targets),
            "rollout_sizes": sorted({n_envs * n_steps for n_envs, n_steps in branches.sizes()}),
            **null,
        },
    )
    print(
        f"probe {directory}: the agent at {point.env_steps:,} agent steps scores {start.mean:.1f} "
        f"(sd {start.sd:.1f}, {start.games} games at fixed parameters); "
        + ("target " if len(targets) == 1 else "targets ")
        + ", ".join(f"{target:.1f}" for target in targets),
        flush=True,
    )
    if config.design == "sequential":
        sequential(config, branches, directory, point)
    else:
        sweep(branches, restart=True)
    return directory


#: ``probe.json``'s record of a sequential probe: its rounds, each a list of ``[n_envs, n_steps, seed]`` (every learning
#: rate of the size trains that seed), written before the round starts; and why it stopped.
ROUNDS, STOPPED = "rounds", "stopped"


@dataclass(frozen=True)
class Kept:
    """The kept branch of one size and seed: the fastest of its learning rates to a target.

    :param rollout_size: agent steps per PPO iteration.
    :param steps: PPO iterations to the target by the probe's steps measure.
    :param learning_rate: the rate that got there fastest.
    """

    rollout_size: int
    steps: float
    learning_rate: float


def timed(spec: TrainConfig, target: float, window: int, measure: StepsMeasure) -> tuple[float, float]:
    """A finished branch's PPO iterations to ``target`` by ``measure`` (``inf`` where it did not get there, or where
    ``measure`` cannot time it), and where its running score never reached ``target``, a lower bound on them
    (:func:`~rl_gns.core.maths.targets.censored_by`; else 0: none)."""
    run = RunDir(spec.out)  # type: ignore[arg-type]  # every spec of a sweep has its out
    games = run.episodes()
    ends, lengths = games["env_steps"], games["length_frames"] / run.config().settings.get("frame_skip", FRAME_SKIP)
    reach = reach_steps(ends, games["score"], lengths, spec.n_envs, spec.rollout_size, target, window)
    if reach is not None:
        return reach.steps(measure), 0.0
    last = window_midpoint(ends[-window:], lengths[-window:], spec.n_envs) if len(ends) >= window else math.nan
    return math.inf, censored_by(measure, run.env_steps() // spec.rollout_size, last / spec.rollout_size)


def kept_runs(
    specs: dict[str, TrainConfig], target: float, window: int, measure: StepsMeasure
) -> dict[tuple[int, int, int], Kept]:
    """``(n_envs, n_steps, seed)`` -> :class:`Kept`, over the finished runs ``specs`` that reached ``target`` (by
    :func:`~rl_gns.core.maths.targets.reach_steps`), as the report keeps them; a run whose steps ``measure`` cannot
    time counts as not reaching it."""
    reached: dict[tuple[int, int, int], dict[str, float]] = {}  # (n_envs, n_steps, seed) -> {run: steps}
    for name, spec in specs.items():
        steps, _ = timed(spec, target, window, measure)
        if math.isfinite(steps):
            reached.setdefault((spec.n_envs, spec.n_steps, spec.seed), {})[name] = steps
    kept = {key: fastest(by_run) for key, by_run in reached.items()}  # ties as the report breaks them
    return {key: Kept(specs[name].rollout_size, reached[key][name], specs[name].learning_rate) for key, name in kept.items()}


def censored_runs(specs: dict[str, TrainConfig], target: float, window: int, measure: StepsMeasure) -> list[tuple[int, float]]:
    """``(rollout_size, bound)`` of each size and seed of the finished runs ``specs`` at which no learning rate reached
    ``target``: the least of its rates' lower bounds on the steps (:func:`timed`); those without a bound are left out."""
    bounds: dict[tuple[int, int, int], list[float]] = {}
    for spec in specs.values():
        steps, bound = timed(spec, target, window, measure)
        bounds.setdefault((spec.n_envs, spec.n_steps, spec.seed), []).append(bound if math.isinf(steps) else math.inf)
    return [(n_envs * n_steps, min(b)) for (n_envs, n_steps, _), b in bounds.items() if 0 < min(b) < math.inf]


def round_runs(
    specs: dict[str, TrainConfig], units: list[list[int]], tuned: dict[tuple[int, int], float] | None
) -> dict[str, TrainConfig]:
    """The runs of one round of a sequential probe: each unit's seed at its size, at every learning rate of the size's
    grid (``tuned`` None: the first round), else at the size's ``tuned`` rate where it has one."""
    chosen = {tuple(unit) for unit in units}
    return {
        name: spec
        for name, spec in specs.items()
        if (spec.n_envs, spec.n_steps, spec.seed) in chosen
        and (tuned is None or tuned.get((spec.n_envs, spec.n_steps), spec.learning_rate) == spec.learning_rate)
    }


def fit_or_none(
    batch_N: list[int], steps_N: list[float], censored: list[tuple[int, float]] | None = None
) -> LocalTradeoffFit | None:
    """:func:`~rl_gns.core.maths.tradeoff.fit_local_tradeoff` of the branches so far, or with ``censored``
    (``(rollout_size, bound)`` of the branches that did not reach the target, :func:`censored_runs`)
    :func:`~rl_gns.core.maths.tradeoff.fit_with_censored`; ``None`` where too few reached the target (fewer than
    3, or at one size)."""
    if len(batch_N) < 3 or len(set(batch_N)) < 2:
        return None
    if censored is None:
        return fit_local_tradeoff(np.array(batch_N, dtype=float), np.array(steps_N, dtype=float))
    return fit_with_censored(np.array(batch_N, dtype=float), np.array(steps_N, dtype=float), censored)


def sequential(config: ProbeConfig, branches: SweepConfig, directory: Path, point: BranchPoint) -> None:
    """The sequential design (:mod:`rl_gns.core.maths.sequential`): rounds of branches, the first one seed at every
    size at every learning rate of its grid, each next one chosen from the fit of the branches before it at the highest
    target, at the rate the first round kept at the size. Each round is written to ``probe.json`` before it starts, so
    that a rerun goes on with the same rounds; the design stops once ``B_crit`` is bounded within ``stop_ratio``, no
    size it would add to has a seed left (``seeds``), or the next round could take the probe past ``max_cost``."""
    specs = branches.runs()
    sizes = sorted(branches.sizes(), key=lambda size: size[0] * size[1])
    record = read_json(directory / PROBE)
    rounds: list[list[list[int]]] = [list(map(list, units)) for units in record.get(ROUNDS) or []]
    target = max(branches.targets)
    tuned: dict[tuple[int, int], float] | None = None
    trained: dict[str, TrainConfig] = {}
    deadline = None if branches.max_wall_minutes is None else time.time() + 60 * branches.max_wall_minutes
    for index in itertools.count():
        if index == len(rounds):
            units = next_units(config, trained, sizes, point, target)
            if isinstance(units, str):
                write_json(directory / PROBE, {**read_json(directory / PROBE), STOPPED: units})
                print(f"probe {directory}: the sequential design stops after {len(rounds)} rounds: {units}", flush=True)
                return
            rounds.append(units)
            write_json(directory / PROBE, {**read_json(directory / PROBE), ROUNDS: rounds})
        this_round = round_runs(specs, rounds[index], tuned)
        left = None if deadline is None else (deadline - time.time()) / 60  # --max-wall-minutes spans the rounds
        if left is not None and left <= 0:
            return  # rerun to go on
        execution = replace(branches, max_wall_minutes=left)
        outcome = sweep(execution, restart=True, only=list(this_round), label=f"probe round {index + 1}")
        if not all(state in ("done", "skipped") for state in outcome.values()):
            return  # stopped before --max-wall-minutes: rerun to go on
        trained.update(this_round)
        # a size's first seed tunes its learning rate for the seeds after it (the first round's, or a size opened later)
        first_seeds = {name: spec for name, spec in this_round.items() if spec.seed == config.first_seed}
        kept = kept_runs(first_seeds, target, config.window, config.steps)
        tuned = {**(tuned or {}), **{(n_envs, n_steps): run.learning_rate for (n_envs, n_steps, _), run in kept.items()}}


def next_units(
    config: ProbeConfig, trained: dict[str, TrainConfig], sizes: list[tuple[int, int]], point: BranchPoint, target: float
) -> list[list[int]] | str:
    """The next round's ``[n_envs, n_steps, seed]`` after the finished branches ``trained``
    (:func:`~rl_gns.core.maths.sequential.next_round`, fitted at ``target``), or why the design stops."""
    rollout_K = [n_envs * n_steps for n_envs, n_steps in sizes]
    seeds_K = [len({spec.seed for spec in trained.values() if (spec.n_envs, spec.n_steps) == size}) for size in sizes]
    kept = kept_runs(trained, target, config.window, config.steps)
    censored = censored_runs(trained, target, config.window, config.steps) if config.censored else None
    fit = fit_or_none([k.rollout_size for k in kept.values()], [k.steps for k in kept.values()], censored)
    picks = next_round(rollout_K, seeds_K, fit, config.stop_ratio, config.seeds, config.held_back)
    where = (
        "B_crit not identified" if fit is None else f"B_crit {fit.b_crit:,.0f} [{fit.b_crit_low:,.0f}, {fit.b_crit_high:,.0f}]"
    )
    if precise_enough(fit, config.stop_ratio):
        return f"{where}, within {config.stop_ratio:g}x"
    at_target = {k.rollout_size for k in kept.values()}
    reached_K = [size in at_target for size, seeds in zip(rollout_K, seeds_K, strict=True) if seeds]
    if reached_K and too_few_reached(reached_K, config.least_sizes):
        return (
            f"{where}; {sum(reached_K)} of the {len(reached_K)} rollout sizes trained reached the target, fewer than "
            f"--least-sizes {config.least_sizes}"
        )
    if not picks:
        return f"{where}; the sizes it would add to hold --seeds {config.seeds} seeds"
    if config.max_cost is not None:
        trained_steps = [RunDir(spec.out).summary().env_steps for spec in trained.values() if spec.out is not None]
        spent = config.before_branches() + sum(trained_steps)
        if spent + len(picks) * config.most_rates() * config.branch_budget > config.max_cost * point.env_steps:
            return f"{where}; its next round could pass --max-cost {config.max_cost:g}"
    if trained:
        print(f"probe: {where}; one more seed at rollout sizes {', '.join(f'{rollout_K[k]:,}' for k in picks)}", flush=True)
    return [[*sizes[k], config.first_seed + seeds_K[k]] for k in picks]


def where(directory: Path) -> dict[str, str]:
    """What ``probe.json`` records of where it lies (``out``, a full path): a probe moved or cloned whole compares the
    paths it recorded where they lie now (:func:`~rl_gns.records.schema.changed_settings`)."""
    return {"out": os.path.abspath(directory)}


def origin(point: BranchPoint, directory: Path) -> dict[str, object]:
    """What ``probe.json`` records of the branch point and of where it lies (:func:`where`): the agent the anchor and
    the branches start from, its SHA-256 and agent steps, and, for the probe's copy, the source's agent it copies."""
    if point.source is None:
        return {**where(directory), "model": str(point.model), "model_sha256": point.sha256, "env_steps": point.env_steps}
    held = {"model": str(Path(os.path.abspath(directory / HELD))), "source_model": str(point.source)}
    return {**where(directory), **held, "model_sha256": point.sha256, "env_steps": point.env_steps}


def started(run: Path) -> int:
    """1 where a run of the probe started and did not finish (it then starts again from its start), else 0."""
    return int(RunDir(run).is_started() and RunDir(run).status() != "done")
