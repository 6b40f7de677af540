"""``rl-gns sweep``: train at many rollout sizes (env counts), seeds and learning rates.

Stage one of two (sweep -> analyze), talking through files: each run is a ``rl-gns train`` run
directory under ``<out>/runs/``, launched by :func:`rl_gns.experiments.runner.run_all` (local pool or
Ray; rerunning skips finished runs). ``<out>/sweep.json`` records the settings; a directory made
with other settings is refused.

Protocol (McCandlish et al.'s, mapped onto PPO as in Hilton et al.): ``n_steps``, the number of
minibatches per epoch ``M`` and ``n_epochs`` are fixed, so both PPO batch sizes scale with ``n_envs``
(or, with ``n_steps_grid``, ``n_envs`` is fixed and they scale with ``n_steps``); the learning rate is
re-tuned at every size on a grid around a scaling rule on the rollout size; learning rate and clip
range are constant, so that a run does not depend on its budget.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from rl_gns.core.batching import Batching
from rl_gns.core.targets import DEFAULT_WINDOW
from rl_gns.core.tradeoff import MIN_FIT_SIZES
from rl_gns.experiments.config import EnvSettings, MeasureSettings, PPOSettings, TrainConfig, base_train_config, to_json
from rl_gns.experiments.plan import (
    MAX_LEARNING_RATE,
    MAX_SEED,
    SMALLEST_LEARNING_RATE,
    check_inert,
    check_learning_rate,
    check_no_repeats,
    flag,
    largest_seed,
)
from rl_gns.experiments.runner import (
    EXECUTION_FIELDS,
    ExecutionConfig,
    check_directory,
    check_run_count,
    check_runs,
    connect,
    run_all,
)
from rl_gns.records.checkpoint import sha256
from rl_gns.records.lock import RunLock
from rl_gns.records.rundir import SWEEP, write_json


@dataclass
class SweepConfig(ExecutionConfig, MeasureSettings, PPOSettings, EnvSettings):
    """Train PPO at several env counts, learning rates and seeds, each run until the highest target or its budget."""

    targets: tuple[float, ...] = (600.0, 800.0, 1000.0)
    """Target scores (mean raw score of the last --window games); runs stop at the highest."""
    n_envs: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    """Env counts; the rollout size is n_envs * n_steps agent steps."""
    n_steps_grid: tuple[int, ...] = ()
    """Steps per env per rollout, one per size, at the one --n-envs (sizes by n_steps); empty: every size at --n-steps."""
    seeds: int = 2
    """Seeds per (env count, learning rate): first_seed .. first_seed + seeds - 1."""
    first_seed: int = 0
    """The first seed (a second sweep with disjoint seeds starts past the first's)."""
    out: Path = Path("runs/sweep")
    """Sweep directory (sweep.json, specs/, runs/<run>/)."""
    budget_steps: int = 5_000_000
    """Budget per run in agent steps, if the highest target is not reached first."""
    n_minibatches: int = 4
    """M, minibatches per epoch: minibatch_size = rollout_size / M (fixed, so the minibatch grows with n_envs)."""
    lr_ref: float = 2.5e-4
    """Adam step size at n_envs_ref envs (rl-zoo3 Atari)."""
    n_envs_ref: int = 8
    """Env count at which lr_ref applies."""
    lr_rule: Literal["sqrt", "linear", "constant"] = "sqrt"
    """Grid centre: lr_ref * (n_envs / n_envs_ref)^p with p = 0.5 (Adam's square-root rule), 1 or 0."""
    lr_points: int = 3
    """Learning rates per rollout size, spaced by lr_factor around the centre."""
    lr_factor: float = 2.0
    """Ratio between neighbouring learning rates of the grid."""
    window: int = DEFAULT_WINDOW
    """Games averaged by the score measure (the same at every size)."""
    init_from: Path | None = None
    """Every run starts from the policy and Adam state of this saved agent (a model.zip; rl-gns probe branches so)."""

    def sizes(self) -> list[tuple[int, int]]:
        """``(n_envs, n_steps)`` of every size: each env count at ``n_steps``, or each of ``n_steps_grid`` at the one
        env count."""
        if self.n_steps_grid:
            return [(self.n_envs[0], n_steps) for n_steps in self.n_steps_grid]
        return [(n_envs, self.n_steps) for n_envs in self.n_envs]

    def learning_rates(self, rollout_size: int) -> list[float]:
        """The grid at one rollout size: centre * lr_factor^k for k symmetric around 0, the centre
        lr_ref * (rollout_size / (n_envs_ref * n_steps))^p."""
        power = {"sqrt": 0.5, "linear": 1.0, "constant": 0.0}[self.lr_rule]
        centre = self.lr_ref * (rollout_size / (self.n_envs_ref * self.n_steps)) ** power
        offsets = [k - (self.lr_points - 1) / 2 for k in range(self.lr_points)]
        return [float(f"{centre * self.lr_factor**k:.3g}") for k in offsets]

    def init_agent(self) -> Path | None:
        """The agent every run starts from (``init_from``) as a full path, as ``sweep.json``, the specs and the runs'
        ``config.json`` name it: ``rl-gns run <spec>`` then finds it from any working directory (a Ray worker's)."""
        return None if self.init_from is None else Path(os.path.abspath(self.init_from))

    def record(self) -> dict:
        """What ``sweep.json`` records: the settings, and the SHA-256 of the ``init_from`` agent (where it is a file),
        so that a rerun refuses an agent replaced since: the sweep's later runs would start from another point."""
        settings = to_json(replace(self, init_from=self.init_agent()))
        if self.init_from is not None and self.init_from.is_file():
            settings["init_from_sha256"] = sha256(self.init_from)
        return settings

    def runs(self) -> dict[str, TrainConfig]:
        """Every run of the sweep, by run name ``n<envs>_lr<rate>_s<seed>`` (``n<envs>_t<n_steps>_lr<rate>_s<seed>``
        where the sizes vary ``n_steps``)."""
        base = base_train_config(
            self,
            total_steps=self.budget_steps,
            overwrite=True,
            anneal=False,
            stop_score=max(self.targets),
            score_window=self.window,
            torch_threads=self.threads_per_run,
            progress_bar=False,
            init_from=self.init_agent(),
        )
        specs = {}
        for n_envs, n_steps in self.sizes():
            batching = Batching(n_envs, n_steps, self.n_minibatches)
            size = f"n{n_envs:04d}_t{n_steps:04d}" if self.n_steps_grid else f"n{n_envs:04d}"
            for lr in self.learning_rates(batching.rollout_size):
                for seed in range(self.first_seed, self.first_seed + self.seeds):
                    name = f"{size}_lr{lr:.2e}_s{seed}"
                    specs[name] = TrainConfig(
                        **{
                            **vars(base),
                            "n_envs": n_envs,
                            "n_steps": n_steps,
                            "minibatch_size": batching.minibatch_size,
                            "learning_rate": lr,
                            "seed": seed,
                            "out": self.out / "runs" / name,
                        }
                    )
        return specs


def check_lr_span(lr_points: int, lr_factor: float) -> None:
    """Refuse a grid of learning rates wider than the range any learning rate may have
    (:data:`~rl_gns.experiments.plan.SMALLEST_LEARNING_RATE` to :data:`~rl_gns.experiments.plan.MAX_LEARNING_RATE`):
    at least one of its rates would be refused, and its ends may not even be floats.

    :param lr_points: learning rates per size.
    :param lr_factor: the ratio between neighbours (> 0).
    """
    span = (lr_points - 1) * abs(math.log(lr_factor))  # log of the ratio of the grid's ends
    if span > math.log(MAX_LEARNING_RATE / SMALLEST_LEARNING_RATE):
        raise ValueError(
            f"--lr-points {lr_points} spaced by --lr-factor {lr_factor:g} span more than the learning rates a run may "
            f"have ([{SMALLEST_LEARNING_RATE:.2e}, {MAX_LEARNING_RATE:g}]); use fewer points or a factor nearer 1"
        )


def check_lr_grid(config: SweepConfig) -> None:
    """Refuse a grid with a learning rate that no run may have, naming the flags that made it (before a run is
    enumerated: its check would name ``--learning-rate``, which the user did not give)."""
    for n_envs, n_steps in config.sizes():
        rollout_size = n_envs * n_steps
        for lr in config.learning_rates(rollout_size):
            try:
                check_learning_rate(lr)
            except ValueError:
                raise ValueError(
                    f"the learning-rate grid (--lr-ref {config.lr_ref:g}, --lr-rule {config.lr_rule}, --n-envs-ref "
                    f"{config.n_envs_ref}, --lr-factor {config.lr_factor:g}, --lr-points {config.lr_points}) holds "
                    f"{lr:g} at rollout size {rollout_size:,}, outside [{SMALLEST_LEARNING_RATE:.2e}, {MAX_LEARNING_RATE:g}]"
                ) from None


def check_nonempty(config: SweepConfig) -> None:
    """Refuse a sweep of no runs: no target, no env count, an env count below 1, or fewer than one seed, learning rate
    or minibatch."""
    for name in ("targets", "n_envs"):
        if not getattr(config, name):
            raise ValueError(f"{flag(name)} must name at least one value")
    for name in ("seeds", "lr_points", "n_minibatches"):
        if getattr(config, name) < 1:
            raise ValueError(f"{flag(name)} must be >= 1, got {getattr(config, name)}")
    if min(config.n_envs) < 1:  # before a size's learning rate is computed: a negative one has no square root
        raise ValueError(f"--n-envs must be >= 1, got {list(config.n_envs)}")


def check(config: SweepConfig, restart: bool = False) -> None:
    """Validate the sweep without writing anything (raises ``ValueError`` with the reason).

    :param restart: unfinished runs start again from their start rather than resume (:func:`sweep`).
    """
    check_nonempty(config)
    for name in ("targets", "lr_ref", "lr_factor"):
        values = getattr(config, name)
        if not all(math.isfinite(v) for v in (values if isinstance(values, tuple) else (values,))):
            raise ValueError(f"{flag(name)} must be finite numbers, got {values}")
    for name in ("lr_ref", "lr_factor"):
        if not getattr(config, name) > 0:
            raise ValueError(f"{flag(name)} must be > 0, got {getattr(config, name)}")
    check_inert(config, {"lr_factor": "with --lr-points 1"} if config.lr_points == 1 else {})
    if config.n_steps_grid and len(config.n_envs) != 1:
        raise ValueError(f"--n-steps-grid needs one --n-envs, got {config.n_envs}")
    if config.n_steps_grid and min(config.n_steps_grid) < 1:
        raise ValueError(f"--n-steps-grid must be >= 1, got {config.n_steps_grid}")
    for name in ("n_envs_ref", "budget_steps"):
        if getattr(config, name) < 1:
            raise ValueError(f"{flag(name)} must be >= 1, got {getattr(config, name)}")
    largest = largest_seed(config.budget_steps, max(config.n_envs))
    if largest < 0:
        most = MAX_SEED - max(config.n_envs)
        raise ValueError(f"--budget-steps must be at most {most:,} agent steps, got {config.budget_steps:,}")
    if config.first_seed < 0 or config.first_seed + config.seeds - 1 > largest:
        raise ValueError(
            f"--first-seed and --seeds: the seeds {config.first_seed}..{config.first_seed + config.seeds - 1} must lie in "
            f"[0, {largest:,}] for this budget"
        )
    check_no_repeats(config, ("targets", "n_envs", "n_steps_grid"))
    check_run_count({"sizes": len(config.sizes()), "--lr-points": config.lr_points, "--seeds": config.seeds}, "sweep")
    check_lr_span(config.lr_points, config.lr_factor)
    check_lr_grid(config)
    if len(config.runs()) < len(config.sizes()) * config.lr_points * config.seeds:
        raise ValueError(
            f"--lr-factor {config.lr_factor} with --lr-points {config.lr_points}: the learning rates of a size coincide "
            "(to the 3 significant digits runs are named by); use a factor further from 1"
        )
    config.check_execution()
    check_directory(config.out, "sweep", config.record(), EXECUTION_FIELDS, shares=("probe",))
    check_runs(config.runs().values(), restart)


def warn_unfittable(config: SweepConfig) -> None:
    """Warn of a sweep with fewer rollout sizes than a fit of the tradeoff needs: ``analyze`` then identifies no
    ``B_crit`` (a probe's local fit needs fewer, so its sweep is not warned of)."""
    rollout_sizes = {n_envs * n_steps for n_envs, n_steps in config.sizes()}
    if len(rollout_sizes) < MIN_FIT_SIZES:
        grid = "--n-steps-grid" if config.n_steps_grid else "--n-envs"
        warnings.warn(
            f"rl-gns: a sweep of {len(rollout_sizes)} rollout size(s): rl-gns analyze identifies B_crit only where "
            f"{MIN_FIT_SIZES} or more sizes reach a target; give {grid} {MIN_FIT_SIZES} or more values",
            stacklevel=2,
        )


def sweep_command(config: SweepConfig) -> dict[str, str]:
    """``rl-gns sweep`` once its settings are checked: the Ray cluster it names reached, a sweep too small to fit
    warned of (:func:`warn_unfittable`), then :func:`sweep`."""
    connect(config)
    warn_unfittable(config)
    return sweep(config)


def sweep(config: SweepConfig, restart: bool = False) -> dict[str, str]:
    """Run every unfinished run of the sweep, holding its directory's lock; return ``{run name: "done" | "skipped" |
    "failed"}``.

    :param restart: start unfinished runs again from their start rather than resume them (:func:`run_all`).

    :raises rl_gns.records.lock.RunLockedError: if another process writes the sweep.
    """
    check(config, restart)
    connect(config)  # a cluster that does not answer leaves nothing written
    with RunLock(config.out).acquire():
        # again, under the lock, what another command may have written since check(): the directory, not every run
        record = config.record()
        check_directory(config.out, "sweep", record, EXECUTION_FIELDS, shares=("probe",))
        specs = config.runs()
        (config.out / "runs").mkdir(parents=True, exist_ok=True)
        if not (config.out / SWEEP).exists():  # a rerun (its settings checked equal) leaves the record as it was
            write_json(config.out / SWEEP, {**record, "runs": sorted(specs)})
        return run_all(config.out, specs, config, label="sweep", restart=restart)
