"""Criterion v8's metrics on hand-computed cases."""

import math

import numpy as np
import pytest

from rl_gns.core.criterion import leave_one_game_out, log_errors, median_log_error, rank_correlation, winners, within


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
