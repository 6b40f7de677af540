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
import time
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

import tyro

from rl_gns.core.maths.batching import Batching
from rl_gns.core.maths.criterion import beyond_edge, fastest
from rl_gns.core.maths.targets import DEFAULT_WINDOW, first_reached, steps_and_experience
from rl_gns.core.maths.tradeoff import MIN_FIT_SIZES
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
from rl_gns.records.rundir import SWEEP, RunDir, read_json, read_record, write_json
from rl_gns.records.schema import Count, Positive


@dataclass(frozen=True)
class EdgeRate:
    """A learning rate that criterion v8's edge rule added to the grid of one size (``sweep.json``'s
    :data:`EDGE_KEY`, as ``[n_envs, n_steps, learning_rate, round]``)."""

    n_envs: int
    n_steps: int
    learning_rate: float
    """The rate, rounded to the 3 significant digits runs are named by."""
    round: int
    """The edge round (1, 2, ...) that added it."""


#: A sweep's directory of races (``--race``): one file per size and seed, which its learning rates race to the highest
#: target (:class:`~rl_gns.experiments.callbacks.EpisodeLogger`).
RACES = "races"
#: ``sweep.json``'s list of the learning rates added by edge rounds (absent: none, as in sweeps written before).
EDGE_KEY = "edge_learning_rates"
#: What ``sweep.json`` may hold under :data:`EDGE_KEY`.
EDGE_KIND = list[tuple[Count, Count, Positive, Count]]


@dataclass
class SweepConfig(ExecutionConfig, MeasureSettings, PPOSettings, EnvSettings):
    """Train PPO at several env counts, learning rates and seeds, each run until the highest target or its budget."""

    # Not a flag of a sweep: one big batch cannot fit every rollout size, so each run's follows its own (the default).
    gns_b_big: Annotated[int | None, tyro.conf.Suppress] = None
    """Big-batch size in samples: each run's default."""
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
    edge_rounds: int = 0
    """Once all runs finish, add a rate --lr-factor beyond a grid edge most seeds kept, for every seed; at most N times."""
    race: bool = False
    """Stop a run once another learning rate of its size and seed reached the highest target sooner than it can (races/)."""

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

    def runs(self, added: Sequence[EdgeRate] = ()) -> dict[str, TrainConfig]:
        """Every run of the sweep, by run name ``n<envs>_lr<rate>_s<seed>`` (``n<envs>_t<n_steps>_lr<rate>_s<seed>``
        where the sizes vary ``n_steps``).

        :param added: learning rates the edge rule added to the grid (:func:`edge_rates`), each trained for every seed.
        """
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
            extra = [entry.learning_rate for entry in added if (entry.n_envs, entry.n_steps) == (n_envs, n_steps)]
            for lr in self.learning_rates(batching.rollout_size) + extra:
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
                            "race_file": self.out / RACES / f"{size}_s{seed}" if self.race else None,
                        }
                    )
        return specs


def recorded_edge_rates(out: Path) -> list[EdgeRate]:
    """The learning rates earlier edge rounds added to the sweep in ``out`` (none for a new sweep).

    :raises RecordError: naming ``sweep.json``, if its :data:`EDGE_KEY` is not a list of
        ``[n_envs, n_steps, learning_rate, round]``.
    """
    if not (out / SWEEP).exists():
        return []
    entries = read_record(out / SWEEP, {EDGE_KEY: EDGE_KIND | None}).get(EDGE_KEY) or []
    return [EdgeRate(int(n_envs), int(n_steps), float(lr), int(rnd)) for n_envs, n_steps, lr, rnd in entries]


def edge_rates(config: SweepConfig, specs: dict[str, TrainConfig], round_: int) -> list[EdgeRate]:
    """Criterion v8's edge rule over the finished runs ``specs``: for each size and target, the kept run of each seed
    (:func:`~rl_gns.core.maths.criterion.fastest` in PPO iterations to the target, each run's games read back), and the rate
    one ``lr_factor`` beyond an edge that a majority of the sweep's seeds kept
    (:func:`~rl_gns.core.maths.criterion.beyond_edge`). A rate already tried, or outside the rates a run may have, is left out.

    :param config: the sweep (its targets, window, seeds and factor).
    :param specs: every run of the sweep so far, finished.
    :param round_: the round these rates are added in.
    """
    grids: dict[tuple[int, int], set[float]] = {}
    steps: dict[tuple[int, int, float, int], dict[str, float]] = {}  # (n_envs, n_steps, target, seed) -> {run: S}
    for name, spec in specs.items():
        size = (spec.n_envs, spec.n_steps)
        grids.setdefault(size, set()).add(spec.learning_rate)
        games = RunDir(spec.out).episodes()  # type: ignore[arg-type]  # every spec of a sweep has its out
        for target in config.targets:
            game = first_reached(games["env_steps"], games["score"], target, config.window)
            if game is not None:
                iterations, _ = steps_and_experience(int(games["env_steps"][game]), spec.rollout_size)
                steps.setdefault((*size, target, spec.seed), {})[name] = iterations
    added: list[EdgeRate] = []
    for size, grid in grids.items():
        for target in config.targets:
            kept = [specs[fastest(by_run)].learning_rate for key, by_run in steps.items() if key[:3] == (*size, target)]
            rate = beyond_edge(sorted(grid), kept, config.seeds, config.lr_factor)
            if rate is None:
                continue
            rate = float(f"{rate:.3g}")
            new = EdgeRate(*size, rate, round_)
            if rate not in grid and SMALLEST_LEARNING_RATE <= rate <= MAX_LEARNING_RATE and new not in added:
                added.append(new)
    return added


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


#: Settings of ``sweep.json`` that a rerun may change: how runs execute, and how many edge rounds to go to.
SWEEP_RERUN_FIELDS = (*EXECUTION_FIELDS, "edge_rounds")


def check_numbers(config: SweepConfig) -> None:
    """Each value flag of the sweep on its own: sizes named, finite targets and rates, counts in range (raises
    ``ValueError`` with the reason)."""
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


def check(config: SweepConfig, restart: bool = False) -> None:
    """Validate the sweep without writing anything (raises ``ValueError`` with the reason).

    :param restart: unfinished runs start again from their start rather than resume (:func:`sweep`).
    """
    check_numbers(config)
    if config.edge_rounds < 0:
        raise ValueError(f"--edge-rounds must be >= 0, got {config.edge_rounds}")
    if config.edge_rounds and config.lr_points < 3:
        raise ValueError(f"--edge-rounds needs a grid with an inside: --lr-points 3 or more, got {config.lr_points}")
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
    check_directory(config.out, "sweep", config.record(), SWEEP_RERUN_FIELDS, shares=("probe",))
    check_runs(config.runs(recorded_edge_rates(config.out)).values(), restart)


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


def sweep(
    config: SweepConfig, restart: bool = False, only: Collection[str] | None = None, label: str = "sweep"
) -> dict[str, str]:
    """Run every unfinished run of the sweep, then its edge rounds (``edge_rounds``), holding its directory's lock;
    return ``{run name: "done" | "skipped" | "failed" | "paused" | "waiting"}``.

    Each edge round runs once every run before it has finished: the rates it adds (:func:`edge_rates`) are written to
    ``sweep.json`` before any of their runs starts, so that a rerun goes on with the same grid. A round's runs form
    their own populations (``--engine population``), as they do on a rerun.

    :param restart: start unfinished runs again from their start rather than resume them (:func:`run_all`).
    :param only: run only these of the sweep's runs, by name, and no edge round (a sequential probe's round).
    :param label: what the progress lines call the runs.

    :raises rl_gns.records.lock.RunLockedError: if another process writes the sweep.
    """
    check(config, restart)
    connect(config)  # a cluster that does not answer leaves nothing written
    with RunLock(config.out).acquire():
        # again, under the lock, what another command may have written since check(): the directory, not every run
        record = config.record()
        check_directory(config.out, "sweep", record, SWEEP_RERUN_FIELDS, shares=("probe",))
        added = recorded_edge_rates(config.out)
        specs = config.runs()
        (config.out / "runs").mkdir(parents=True, exist_ok=True)
        if not (config.out / SWEEP).exists():  # a rerun (its settings checked equal) leaves the record as it was
            write_json(config.out / SWEEP, {**record, "runs": sorted(specs)})
        deadline = None if config.max_wall_minutes is None else time.time() + 60 * config.max_wall_minutes
        todo = specs if only is None else {name: specs[name] for name in only}
        outcome = run_all(config.out, todo, config, label=label, restart=restart)
        for round_ in range(1, (config.edge_rounds if only is None else 0) + 1):
            if not all(state in ("done", "skipped") for state in outcome.values()):
                print(f"sweep: edge round {round_} waits until every run has finished; rerun the same command to go on")
                break
            if not any(entry.round == round_ for entry in added):
                new = edge_rates(config, config.runs(added), round_)
                if not new:
                    print(f"sweep: edge round {round_}: no kept learning rate sits at an edge for a majority of seeds")
                    break
                added += new
                grown = config.runs(added)
                write_json(
                    config.out / SWEEP,
                    {
                        **read_json(config.out / SWEEP),
                        "edge_rounds": config.edge_rounds,
                        "runs": sorted(grown),
                        EDGE_KEY: [[e.n_envs, e.n_steps, e.learning_rate, e.round] for e in added],
                    },
                )
                rates = ", ".join(f"{e.learning_rate:.3g} at {e.n_envs} envs x {e.n_steps}" for e in new)
                print(f"sweep: edge round {round_} adds {rates}")
            earlier = config.runs([e for e in added if e.round < round_])
            upto = config.runs([e for e in added if e.round <= round_])
            this_round = {name: spec for name, spec in upto.items() if name not in earlier}
            left = None if deadline is None else (deadline - time.time()) / 60
            if left is not None and left <= 0:
                outcome.update(dict.fromkeys(this_round, "waiting"))
                break
            execution = replace(config, max_wall_minutes=left)
            outcome.update(run_all(config.out, this_round, execution, label=f"sweep edge round {round_}", restart=restart))
        return outcome
