"""The sequential probe design's rule (rl_gns.core.maths.sequential) on hand-made fits, and on steps exactly on
``S(B) = S_min (1 + B_crit / B)``, whose fit bounds B_crit to a point."""

import math

import numpy as np
import pytest

from rl_gns.core.maths.sequential import next_round, precise_enough, sizes_around, too_few_reached
from rl_gns.core.maths.tradeoff import LocalTradeoffFit, fit_local_tradeoff

SIZES = [128, 256, 512, 1024, 2048, 4096]


def fit(b_crit: float, low: float, high: float) -> LocalTradeoffFit:
    """A fit of ``S_min`` 10 with ``B_crit`` and its interval as given."""
    return LocalTradeoffFit(s_min=10.0, e_min=10.0 * b_crit, b_crit_low=low, b_crit_high=high, level=0.95, n_points=6)


def test_sizes_around_are_the_neighbours_of_b_crit_and_the_grid_ends_outside_it():
    assert sizes_around(SIZES, 700.0) == (2, 3)  # 512 below, 1,024 above
    assert sizes_around(SIZES, 512.0) == (1, 2)  # at a size: the one below and that size
    assert sizes_around(SIZES, 50.0) == (0, 1) and sizes_around(SIZES, 9_000.0) == (4, 5)
    assert sizes_around([128, 256], 200.0) == (0, 1)


def test_precise_enough_is_an_identified_interval_within_the_ratio():
    assert precise_enough(fit(700, 200, 1_600), 8.0) and not precise_enough(fit(700, 200, 1_700), 8.0)
    assert not precise_enough(fit(700, 0.0, 1_000), 8.0) and not precise_enough(fit(700, math.nan, math.nan), 8.0)
    assert not precise_enough(fit(700, 200, math.inf), 1e9) and not precise_enough(None, 8.0)


def test_next_round_every_size_first_then_around_b_crit_then_stop():
    none = [0] * 6
    assert next_round(SIZES, none, None, 8.0, 3) == [0, 1, 2, 3, 4, 5]  # the first round
    ones = [1] * 6
    assert next_round(SIZES, ones, fit(700, 50, 3_000), 8.0, 3) == [2, 3]  # identified, 60x wide
    assert next_round(SIZES, ones, fit(700, 50, math.inf), 8.0, 3) == [0, 1, 2, 3, 4, 5]  # not bounded above
    assert next_round(SIZES, [1, 1, 3, 2, 1, 1], fit(700, 50, 3_000), 8.0, 3) == [3]  # 512 holds its 3 seeds
    assert next_round(SIZES, [1, 1, 3, 3, 1, 1], fit(700, 50, 3_000), 8.0, 3) == []  # both full: the design stops
    assert next_round(SIZES, ones, fit(700, 300, 2_000), 8.0, 3) == []  # bounded within 8x
    with pytest.raises(ValueError, match="ascending"):
        next_round(SIZES[::-1], ones, None, 8.0, 3)


def test_too_few_sizes_at_the_target_stop_the_design_for_futility():
    """The stop counts sizes, not branches: two seeds at one size are one size at the target."""
    assert too_few_reached([False] * 5, 2) and too_few_reached([False, True, False, False, False], 2)
    assert not too_few_reached([False, True, True, False, False], 2) and too_few_reached([True, True, False], 3)
    assert not too_few_reached([False] * 5, 0) and not too_few_reached([], 0) and too_few_reached([], 1)
    with pytest.raises(ValueError, match="least_sizes must be 0 or more"):
        too_few_reached([True], -1)


def test_steps_on_the_curve_stop_the_design_after_its_first_round():
    """One seed per size, steps exactly ``S_min (1 + B_crit / B)``: the fit recovers B_crit = 700 with an interval of
    zero width, so the design stops."""
    batch = np.array(SIZES, dtype=float)
    result = fit_local_tradeoff(batch, 40.0 * (1 + 700.0 / batch))
    assert result.b_crit == pytest.approx(700.0) and result.b_crit_high / result.b_crit_low == pytest.approx(1.0)
    assert next_round(SIZES, [1] * 6, result, 8.0, 3) == []


def test_sizes_held_back_open_one_at_a_time_while_b_crit_lies_past_the_sizes_trained():
    """With the 2 largest held back, the first round trains the 4 others; a fit unbounded above whose estimate lies
    at or past the largest open size (1,024) opens the next size alone; one whose estimate lies inside adds seeds
    at the open sizes only; an identified one looks around B_crit among the open sizes."""
    first = next_round(SIZES, [0] * 6, None, 8.0, 3, held_back=2)
    assert first == [0, 1, 2, 3]
    trained = [1, 1, 1, 1, 0, 0]
    assert next_round(SIZES, trained, fit(3_000, 900, math.inf), 8.0, 3, held_back=2) == [4]  # past 1,024: open 2,048
    assert next_round(SIZES, trained, fit(800, 100, math.inf), 8.0, 3, held_back=2) == [0, 1, 2, 3]  # inside: seeds
    assert next_round(SIZES, trained, fit(9_000, 50, 30_000), 8.0, 3, held_back=2) == [2, 3]  # the two largest open
    opened = [1, 1, 1, 1, 1, 0]
    assert next_round(SIZES, opened, fit(math.inf, 3_000, math.inf), 8.0, 3, held_back=2) == [5]  # then 4,096
    assert next_round(SIZES, [1] * 6, fit(math.inf, 3_000, math.inf), 8.0, 3, held_back=2) == list(range(6))
    past = fit(math.inf, 3_000, math.inf)  # a size open but not yet trained trains first
    assert next_round(SIZES, [1, 1, 1, 0, 0, 0], past, 8.0, 3, held_back=2) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="held_back must leave at least 2 of the 6 sizes open"):
        next_round(SIZES, [0] * 6, None, 8.0, 3, held_back=5)


def run_design(sizes: list[int], held_back: int) -> tuple[list[list[int]], LocalTradeoffFit, float]:
    """The design's rounds on steps ``40 (1 + 3,000 / B)`` with a fixed scatter per seed and size (up to 15 %), its
    last fit, and the agent steps its branches took (steps times rollout size)."""
    scatter = np.array(
        [[1.15, 0.9, 1.1, 0.88, 1.05, 0.95], [0.9, 1.12, 0.92, 1.1, 0.97, 1.04], [1.05, 0.95, 1.0, 1.08, 0.93, 1.02]]
    )
    rollout = np.array(sizes, dtype=float)
    steps = 40.0 * (1 + 3_000.0 / rollout) * scatter[:, : len(sizes)]  # (seed, size)
    seeds, rounds, last = [0] * len(sizes), [], None
    while picks := next_round(sizes, seeds, last, 8.0, 3, held_back):
        rounds.append(picks)
        for k in picks:
            seeds[k] += 1
        trained = [(seed, k) for k in range(len(sizes)) for seed in range(seeds[k])]
        last = fit_local_tradeoff(rollout[[k for _, k in trained]], np.array([steps[seed, k] for seed, k in trained]))
    assert last is not None
    return rounds, last, sum(steps[seed, k] * rollout[k] for k in range(len(sizes)) for seed in range(seeds[k]))


def test_a_bend_past_the_first_sizes_is_bounded_sooner_by_opening_the_sizes_held_back():
    """B_crit = 3,000 lies past the first 4 sizes (128-1,024): their first fit leaves it unbounded above. Held back,
    2,048 and 4,096 open one by one and bound it within 8x at one seed a size; on the 4 sizes alone, the rule adds
    seeds at every size until each holds 3, for more agent steps and no narrower an interval."""
    rounds, held, cost_held = run_design(SIZES, held_back=2)
    assert rounds == [[0, 1, 2, 3], [4], [5]] and held.b_crit_low <= 3_000 <= held.b_crit_high
    assert held.b_crit_high / held.b_crit_low <= 8.0
    rounds, alone, cost_alone = run_design(SIZES[:4], held_back=0)
    assert rounds == [[0, 1, 2, 3]] * 3 and cost_held < 0.7 * cost_alone
    assert alone.b_crit_high / alone.b_crit_low > held.b_crit_high / held.b_crit_low
