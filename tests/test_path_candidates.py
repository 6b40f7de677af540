"""Criterion v8's path averages and start values: pooled over the kept runs only (the fastest learning rate per size
and seed), their ratio of sums exact on hand-built sums, and the minibatch scheme's M and n_epochs · M corrections."""

import math

import numpy as np

from rl_gns.core.maths.noise_scale import NoiseSums
from rl_gns.reports.sweep_analysis import Reach, RunRecord, path_candidates, pooled_candidate

TARGET = 10.0


def run(size: int, seed: int, lr: float, iterations: int, path: tuple[float, float], start: tuple[float, float]) -> RunRecord:
    """A run that reached TARGET after ``iterations``, its pooled (Σ g2, Σ tr Σ) along the path and at its start."""
    noise = {"minibatch/value": NoiseSums(*path, 4), "envs/value": NoiseSums(*path, 4)}
    start_noise = {key: NoiseSums(*start, 1) for key in noise}
    reach = Reach(iterations, iterations * size, 1.0, noise, start_noise=start_noise)
    return RunRecord(f"n{size}_lr{lr}_s{seed}", size // 5, size, size, 1, lr, seed, "done", iterations * size, {TARGET: reach})


def test_path_candidates_pool_the_kept_runs_only():
    runs = [
        run(40, 0, 1e-3, 10, (1.0, 100.0), (1.0, 10.0)),  # kept (faster than the other rate of seed 0)
        run(40, 0, 2e-3, 20, (1.0, 1e6), (1.0, 1e6)),  # slower: not kept, so its huge noise never counts
        run(80, 0, 1e-3, 6, (3.0, 500.0), (2.0, 30.0)),  # kept
    ]
    candidates = path_candidates(runs, TARGET, [40, 80], n_minibatches=4, reps=200, rng=np.random.default_rng(0))
    assert math.isclose(candidates["path_env_value"].value, 600.0 / 4.0)
    assert math.isclose(candidates["start_env_value"].value, 40.0 / 3.0)
    assert math.isclose(candidates["path_mb_value"].value, 150.0)
    assert math.isclose(candidates["path_mb_xM_value"].value, 4 * 150.0)
    assert math.isclose(candidates["path_mb_xEM_value"].value, 4 * 1 * 150.0)
    assert "path_env_xM_value" not in candidates  # the envs scheme is in rollout units already
    low, high = candidates["path_env_value"].ci
    assert 100.0 <= low <= 150.0 <= high <= 500.0 / 3.0  # the bootstrap's draws lie between the runs' own ratios


def test_an_unresolved_pool_is_infinite():
    candidate = pooled_candidate([NoiseSums(-1.0, 5.0, 1), NoiseSums(0.5, 5.0, 1)], 1.0, 100, np.random.default_rng(1))
    assert candidate.value == math.inf and candidate.ci is not None and candidate.ci[1] == math.inf
