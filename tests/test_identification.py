"""When a sweep's sizes identify B_crit: a fit through 2 points, or one that puts B_crit far beyond the sizes that
reached the target, is reported as "not identified" with its reason, never as a number."""

import numpy as np
import pytest

from rl_gns.reports.sweep_analysis import Reach, RunRecord, analyze_target, unidentified

TARGET = 500.0


def runs_with_steps(steps_by_size: dict[int, list[float]]) -> list[RunRecord]:
    """One run per (size, seed) that reached TARGET in the given PPO iterations."""
    runs = []
    for size, steps in steps_by_size.items():
        for seed, s in enumerate(steps):
            reach = Reach(int(s), int(s) * size, 1.0)
            runs.append(RunRecord(f"n{size}_s{seed}", size // 32, size, size // 4, 4, 1e-3, seed, "done", int(s) * size,
                                  {TARGET: reach}))  # fmt: skip
    return runs


def analyze(steps_by_size: dict[int, list[float]]):
    rng = np.random.default_rng(0)
    return analyze_target(
        runs_with_steps(steps_by_size), TARGET, 4, 200, rng, np.random.default_rng(1), 0.25, np.random.default_rng(2)
    )


def test_a_curve_through_two_sizes_is_not_a_fit():
    result = analyze({64: [400.0, 420.0], 128: [230.0, 240.0]})
    assert result.fit is None
    assert unidentified(result) == "only rollout sizes 64 and 128 reached target 500 (3 needed): B_crit not identified"


def test_perfect_scaling_at_every_size_does_not_identify_b_crit():
    """S ∝ 1/B at every size: S_min collapses to 0 and B_crit runs off far beyond the sizes swept."""
    result = analyze({size: [100_000.0 / size * f for f in (1.0, 1.02)] for size in (64, 128, 256, 512)})
    assert result.fit is None and "more than 10x above the rollout sizes that reached it (64-512)" in unidentified(result)


def test_sizes_around_b_crit_identify_it():
    result = analyze({size: [50.0 + 50_000.0 / size * f for f in (0.97, 1.03)] for size in (128, 256, 512, 1024, 2048, 4096)})
    assert unidentified(result) is None and result.fit.b_crit == pytest.approx(1000.0, rel=0.1)
