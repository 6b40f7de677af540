"""``rl-gns probe``: measure the critical rollout size directly at one point of a run.

From the agent a run holds (its ``model.zip`` if finished, else its newest checkpoint), branches train at several
rollout sizes (env counts) and seeds, each until the running score has improved by ``delta`` over the run's own
running score there. The local fit of ``S(B) = S_min (1 + B_crit / B)`` to the branches' PPO iterations
(:func:`rl_gns.core.tradeoff.fit_local_tradeoff`) gives ``B_crit`` at that point of training: the local quantity of
McCandlish et al.'s App. D, and far cheaper than sweeps from scratch late in training.

How a branch starts:

- the source's policy **and** Adam moments (``set_parameters``): the optimiser state is part of where training is,
  and a fresh Adam's first steps would add a transient that depends on the rollout size;
- a constant learning rate per size, re-tuned on the sweep's grid around the source's rate at the source's env count
  (square-root rule by default), and a constant clip range (no annealing: a branch must not depend on its budget);
- new games on new envs (seeded per branch); its own running score over its own games, the same measure as the
  source's running score at the branch point, which sets the target ``start + delta``.

A probe is a sweep (:mod:`rl_gns.experiments.sweep`) of branches: ``<out>/sweep.json``, ``runs/``, resumable, and
``rl-gns analyze`` reads it too; ``<out>/probe.json`` records the branch point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro

from rl_gns.core.batching import Batching
from rl_gns.core.targets import DEFAULT_WINDOW, running_score
from rl_gns.experiments.config import train_config_from_json
from rl_gns.experiments.runner import ExecutionConfig
from rl_gns.experiments.sweep import SweepConfig, sweep
from rl_gns.experiments.sweep import check as check_sweep
from rl_gns.records.checkpoint import latest_checkpoint
from rl_gns.records.rundir import MODEL, PROBE, RunDir, write_json


@dataclass(frozen=True)
class BranchPoint:
    """Where the branches of a probe start.

    :param model: the agent (``model.zip``) the branches load.
    :param env_steps: agent steps the source had trained there.
    :param start_score: the source's running score there: mean raw score of its last ``window`` games.
    """

    model: Path
    env_steps: int
    start_score: float


def branch_point(source: Path, window: int) -> BranchPoint:
    """The agent of a run directory (``model.zip`` if finished, else its newest checkpoint) and its running score.

    :raises ValueError: if the run holds no agent yet or fewer than ``window`` games up to it.
    """
    run = RunDir(source)
    if not run.is_started():
        raise ValueError(f"{source}: not a run directory (no config.json)")
    if run.status() == "done":
        model, env_steps = run.file(MODEL), run.summary().env_steps
    else:
        checkpoint = latest_checkpoint(source)
        if checkpoint is None:
            raise ValueError(f"{source}: the run holds no agent yet (not finished, no checkpoint)")
        model, env_steps = checkpoint.model, checkpoint.env_steps
    games = run.episodes()
    scores = games["score"][games["env_steps"] <= env_steps]
    if len(scores) < window:
        raise ValueError(f"{source}: {len(scores)} games up to {env_steps:,} agent steps, the running score needs {window}")
    return BranchPoint(model, env_steps, float(running_score(scores, window)[-1]))


@dataclass(kw_only=True)
class ProbeConfig(ExecutionConfig):
    """Branch a run at its agent (finished: model.zip; else its newest checkpoint) at several rollout sizes and seeds,
    each until its running score improves by --delta, and fit the critical rollout size there."""

    source: tyro.conf.Positional[Path]
    """The run directory to probe."""
    delta: float = 100.0
    """Improvement of the running score over the source's at the branch point that a branch must reach (raw score)."""
    n_envs: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    """Env counts of the branches (rollout size = n_envs * the source's n_steps); at least 2."""
    seeds: int = 3
    """Seeds per (env count, learning rate)."""
    first_seed: int = 0
    """The first seed: a retest of the same branch point with disjoint seeds starts past the first probe's."""
    lr_rule: Literal["sqrt", "linear", "constant"] = "sqrt"
    """Learning rate at each size: the source's, scaled by (n_envs / source n_envs)^p, p = 0.5, 1 or 0."""
    lr_points: int = 1
    """Learning rates per size, spaced by lr_factor around the rule (the fastest per seed is kept)."""
    lr_factor: float = 2.0
    """Ratio between neighbouring learning rates of the grid."""
    window: int = DEFAULT_WINDOW
    """Games in the running score, of the source at the branch point and of every branch."""
    budget_steps: int = 2_000_000
    """Budget per branch in agent steps, if it does not reach its target first."""
    out: Path | None = None
    """Probe directory (default: probes/<source name>_at<agent steps>_d<delta>)."""

    def sweep_config(self, point: BranchPoint) -> SweepConfig:
        """The sweep of branches: the source's game, observations, PPO and measurement settings, its minibatches per
        epoch, and its learning rate at its env count; constant rates, every iteration measured."""
        source = train_config_from_json(RunDir(self.source).config().settings)
        out = self.out or Path("probes") / f"{self.source.name}_at{point.env_steps}_d{self.delta:g}"
        shared = {name: getattr(source, name) for name in SHARED}
        own = {name: getattr(self, name) for name in (*ExecutionConfig.__dataclass_fields__, *GRID)}
        batching = Batching.of_minibatch_size(source.n_envs, source.n_steps, source.minibatch_size)
        return SweepConfig(
            **shared,
            **own,
            gns_every=1,
            targets=(point.start_score + self.delta,),
            out=out,
            n_minibatches=batching.n_minibatches,
            lr_ref=source.learning_rate,
            n_envs_ref=source.n_envs,
            init_from=point.model,
        )


#: Settings a probe passes on to its sweep of branches as they are.
GRID = ("n_envs", "seeds", "first_seed", "budget_steps", "lr_rule", "lr_points", "lr_factor", "window")
#: Settings a branch takes from its source: the game and how it is observed, PPO's and the measurement's.
SHARED = (
    "env",
    "backend",
    "sticky_actions",
    "n_steps",
    "n_epochs",
    "clip_range",
    "ent_coef",
    "vf_coef",
    "gamma",
    "gae_lambda",
    "max_grad_norm",
    "gns",
    "gns_scheme",
    "gns_losses",
    "gns_ema_beta",
)


def check(config: ProbeConfig) -> tuple[BranchPoint, SweepConfig]:
    """Check the probe without writing anything; return its branch point and its sweep.

    :raises ValueError: with the reason.
    """
    if not math.isfinite(config.delta) or config.delta <= 0:
        raise ValueError(f"--delta must be a finite improvement > 0, got {config.delta}")
    if len(set(config.n_envs)) < 2:
        raise ValueError("a probe needs at least 2 distinct --n-envs to fit S(B)")
    if config.window < 1:
        raise ValueError(f"--window must be >= 1, got {config.window}")
    point = branch_point(config.source, config.window)
    branches = config.sweep_config(point)
    check_sweep(branches)
    return point, branches


def probe(config: ProbeConfig) -> Path:
    """Run every unfinished branch of the probe and return its directory (``probe.json`` records the branch point)."""
    point, branches = check(config)
    branches.out.mkdir(parents=True, exist_ok=True)
    record = {
        "source": str(config.source),
        "model": str(point.model),
        "env_steps": point.env_steps,
        "start_score": point.start_score,
        "window": config.window,
        "delta": config.delta,
        "target": point.start_score + config.delta,
        "rollout_sizes": sorted({n * branches.n_steps for n in config.n_envs}),
    }
    write_json(branches.out / PROBE, record)
    sweep(branches)
    return branches.out
