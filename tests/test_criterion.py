"""Criterion v8's metrics on hand-computed cases."""

import math

import numpy as np
import pytest

from rl_gns.core.maths.criterion import (
    at_edge,
    beyond_edge,
    fastest,
    leave_one_game_out,
    log_errors,
    median_log_error,
    rank_correlation,
    ratio_range,
    ratio_spread,
    winners,
    within,
)


def test_errors_and_their_summaries():
    fitted = np.array([100.0, 1000.0, 10.0])
    predicted = np.array([200.0, 1000.0, math.inf])
    np.testing.assert_allclose(log_errors(predicted, fitted), [math.log10(2), 0.0, math.inf])
    assert median_log_error(predicted, fitted) == pytest.approx(math.log10(2))
    assert within(predicted, fitted) == pytest.approx(2 / 3)
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([10.0, 30.0, 20.0])) == pytest.approx(0.5)
    assert math.isnan(rank_correlation(np.array([5.0, 5.0, 5.0]), fitted))


def test_leave_one_game_out_is_the_other_games_geometric_mean():
    constant = leave_one_game_out(["a", "a", "b"], np.array([10.0, 1000.0, 100.0]))
    np.testing.assert_allclose(constant, [100.0, 100.0, 100.0])
    assert math.isnan(leave_one_game_out(["a"], np.array([5.0]))[0])


def test_a_winner_beats_both_baselines_by_more_than_the_tie():
    assert winners({"x": 0.2, "y": 0.36, "z": 0.1}, {"constant": 0.4, "logo": 0.3}) == ["z", "x"]
    assert winners({"x": 0.26}, {"constant": 0.3}) == []


def test_the_kept_run_is_the_fastest_and_the_first_in_name_order_among_equals():
    assert fastest({"b": 3.0, "a": 5.0, "c": 1.0}) == "c"
    assert fastest({"n8_lr2e-4_s0": 7.0, "n8_lr1e-4_s0": 7.0, "n8_lr4e-4_s0": 9.0}) == "n8_lr1e-4_s0"
    assert fastest({"only": math.inf}) == "only"


GRID = [1e-4, 2e-4, 4e-4]


@pytest.mark.parametrize(
    ("kept", "n_seeds", "expected"),
    [
        ([1e-4, 1e-4, 2e-4], 3, 0.5e-4),  # 2 of 3 seeds kept the lowest: one rate below it
        ([4e-4, 4e-4], 3, 8e-4),  # 2 of 3 kept the highest, the third seed never reached the target
        ([4e-4], 3, None),  # 1 of 3 is no majority, though every seed that reached kept the edge
        ([1e-4, 4e-4, 2e-4], 3, None),  # one seed at each end
        ([2e-4, 2e-4, 2e-4], 3, None),  # inside
        ([], 3, None),  # no seed reached
        ([1e-4, 1e-4], 4, None),  # half of 4 is no majority
        ([1e-4, 1e-4, 1e-4], 4, 0.5e-4),
        ([4e-4, 4e-4, 4e-4], 3, 8e-4),
    ],
)
def test_a_rate_beyond_an_edge_that_a_majority_of_seeds_kept(kept, n_seeds, expected):
    rate = beyond_edge(GRID, kept, n_seeds, factor=2.0)
    assert rate == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("rate", "grid", "expected"),
    [
        (1e-4, [4e-4, 1e-4, 2e-4], True),  # the lowest, the grid in any order
        (4e-4, [4e-4, 1e-4, 2e-4], True),  # the highest
        (2e-4, [4e-4, 1e-4, 2e-4], False),  # inside
        (1e-4, [1e-4, 2e-4], False),  # a grid of 2 has no inside
        (2e-4, [2e-4], False),
        (2e-4, [1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3], False),  # inside an extended grid
        (1.6e-3, [1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3], True),
    ],
)
def test_a_kept_rate_is_at_an_edge_of_a_grid_with_an_inside(rate, grid, expected):
    assert at_edge(rate, grid) is expected


def test_the_edge_rule_needs_a_grid_with_an_inside_and_reads_it_in_any_order():
    assert beyond_edge([1e-4, 2e-4], [1e-4, 1e-4, 1e-4], 3, 2.0) is None
    assert beyond_edge([4e-4, 1e-4, 2e-4], [4e-4, 4e-4, 1e-4], 3, 3.0) == pytest.approx(1.2e-3)


def test_the_validated_error_is_the_range_of_ratios_rounded_outward():
    fitted = np.array([100.0, 200.0, 400.0])
    assert ratio_range(np.array([51.8, 200.0, 1569.6]), fitted) == (0.51, 3.93)  # 0.518 down, 3.924 up
    assert ratio_range(np.array([100.0, 200.0, 400.0]), fitted) == (1.0, 1.0)
    for bad in (math.inf, 0.0, math.nan):
        with pytest.raises(ValueError):
            ratio_range(np.array([100.0, bad, 400.0]), fitted)


def test_ratio_spread_is_the_middle_ratio_and_its_ends():
    fitted = np.array([100.0, 200.0, 400.0, 800.0])
    assert ratio_spread(np.array([50.0, 400.0, 400.0, 3200.0]), fitted) == pytest.approx(
        (math.sqrt(2), 0.5, 4.0)
    )  # ratios 0.5 2 1 4: between 1 and 2
    assert ratio_spread(np.array([25.0, 100.0, 400.0]), fitted[:3]) == pytest.approx((0.5, 0.25, 1.0))  # odd: the middle one
    middle, low, high = ratio_spread(np.array([100.0, math.inf, 0.0, 800.0]), fitted)  # ratios 1, ∞, ∞, 1
    assert (middle, low, high) == (math.inf, 1.0, math.inf)
    with pytest.raises(ValueError, match="at least one pair"):
        ratio_spread(np.array([]), np.array([]))
