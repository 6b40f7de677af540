"""``rl-gns targets NULL PILOT``: target scores that a run which learns nothing reaches with probability at most 1 %.

Criterion v8's rule (``docs/prediction-criterion.md``): a null run (learning rate 0, the policy fixed) gives the
scores of games played without learning; the running score of a sweep's run is looked at after every finished game,
and the fastest of ``L`` learning rates is kept, so the chance that noise alone reaches a target ``T`` counts every
look and every rate (:func:`rl_gns.core.maths.targets.null_crossing`). The null floor ``F`` is the lowest safe target; the
targets are spaced between it and the pilot's best running score (:func:`rl_gns.core.maths.targets.spaced_targets`).
Reads only the two run directories (``episodes.csv``); writes ``--out`` (JSON) if given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.targets import (
    DEFAULT_WINDOW,
    game_length,
    null_crossing,
    null_floor,
    null_max_running_scores,
    running_score,
    spaced_targets,
)
from rl_gns.records.rundir import RunDir, write_json


@dataclass
class TargetsConfig:
    """Set target scores out of noise's reach from a null run (learning rate 0) and a pilot run of the same settings."""

    null: tyro.conf.Positional[Path]
    """Run directory of the null run: the same settings at learning rate 0 (rl-gns train --learning-rate 0)."""
    pilot: tyro.conf.Positional[Path]
    """Run directory of the pilot: the settings to sweep at one size, learning."""
    budget_steps: int = 500_000
    """Budget of each run of the sweep, agent steps: with the null run's game length, how many looks a run takes."""
    learning_rates: int = 3
    """Learning rates tried per size and seed (the fastest is kept): L in p_null = 1 - (1 - p_one_run)^L."""
    level: float = 0.01
    """Largest false-crossing probability of a target."""
    count: int = 2
    """Targets, spaced evenly between the null floor and the pilot's best running score."""
    window: int = DEFAULT_WINDOW
    """Games in the running score (the sweep's --window)."""
    draws: int = 20_000
    """Null runs resampled from the null run's games."""
    seed: int = 0
    """Seed of the resampling."""
    given: tuple[float, ...] = ()
    """Targets set before: give their false-crossing probabilities at this --learning-rates instead of choosing new ones."""
    out: Path | None = None
    """Write the targets and their false-crossing probabilities here (JSON); if unset, print only."""


def check(config: TargetsConfig) -> None:
    """Refuse settings that mean nothing (one line each), and run directories without enough games."""
    for name in ("budget_steps", "learning_rates", "count", "window", "draws"):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    if not 0 < config.level < 1:
        raise ValueError(f"--level must be in (0, 1), got {config.level}")
    for path in (config.null, config.pilot):
        if not RunDir(path).is_started():
            raise ValueError(f"{path}: no run there (no config.json)")
        games = len(RunDir(path).episodes()["score"])
        if games < config.window + 1:
            raise ValueError(f"{path}: {games} finished games, fewer than --window {config.window} + 1")


def targets(config: TargetsConfig) -> dict:
    """Print the null floor, the targets and each one's false-crossing probability; return them (and write ``--out``)."""
    null, pilot = RunDir(config.null).episodes(), RunDir(config.pilot).episodes()
    length = game_length(null["env_steps"], null["length_frames"], at=int(null["env_steps"][-1]), games=len(null["score"]))
    assert length is not None  # check() saw more than window + 1 games
    n_games = max(config.window, math.ceil(config.budget_steps / length[0]))
    maxima = null_max_running_scores(null["score"], n_games, config.window, config.draws, np.random.default_rng(config.seed))
    floor = null_floor(maxima, config.learning_rates, config.level)
    best = float(np.nanmax(running_score(pilot["score"], config.window)))
    chosen = list(config.given) or [float(f"{t:.4g}") for t in spaced_targets(floor, best, config.count)]
    false_crossing = [null_crossing(maxima, t, config.learning_rates) for t in chosen]
    result = {
        "null": str(config.null),
        "pilot": str(config.pilot),
        "null_games": len(null["score"]),
        "null_mean": float(np.mean(null["score"])),
        "null_game_length": length[0],
        "looks_per_run": n_games,
        "learning_rates": config.learning_rates,
        "level": config.level,
        "draws": config.draws,
        "null_floor": floor,
        "pilot_best": best,
        "targets": chosen,
        "false_crossing": false_crossing,
    }
    print(
        f"null run: {result['null_games']} games, mean {result['null_mean']:.3g}, {length[0]:.0f} agent steps a game "
        f"-> {n_games:,} looks per run of {config.budget_steps:,} agent steps, best of {config.learning_rates} rates"
    )
    print(f"null floor (p_null <= {config.level:g}): {floor:.4g}; pilot's best running score: {best:.4g}")
    if not chosen:  # only where none was given
        print("no target: the pilot did not pass the null floor (the run does not improve measurably within the budget)")
    for target, p in zip(chosen, false_crossing, strict=True):
        print(f"target {target:.4g}: p_null {p:.2g}")
    if config.out is not None:
        write_json(config.out, result)
    return result
