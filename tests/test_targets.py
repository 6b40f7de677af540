"""Steps to target on hand-built score curves."""

import numpy as np
import pytest

from rl_gns.core.targets import (
    first_reached,
    resolvable_improvement,
    running_score,
    steps_and_experience,
    window_midpoint,
)


def test_running_score_hand_computed():
    np.testing.assert_allclose(running_score([1, 2, 3, 4], window=2), [np.nan, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(running_score([5, 1], window=3), [np.nan, np.nan])
    with pytest.raises(ValueError):
        running_score([1.0], window=0)


def test_first_reached():
    env_steps = np.array([100, 250, 400, 410, 800, 1200])
    scores = np.array([0, 10, 20, 30, 0, 50])
    # running means of 2: nan, 5, 15, 25, 15, 25
    assert first_reached(env_steps, scores, target=15, window=2) == 2
    assert first_reached(env_steps, scores, target=25, window=2) == 3
    assert first_reached(env_steps, scores, target=26, window=2) is None  # censored: never reached
    # a single great game does not count before the window is full
    assert first_reached(env_steps, scores, target=20, window=1) == 2
    assert first_reached([], [], target=0, window=1) is None
    with pytest.raises(ValueError, match="order"):
        first_reached([5, 3], [1, 1], target=0, window=1)


def test_steps_and_experience_round_up_to_whole_iterations():
    assert steps_and_experience(1000, rollout_size=256) == (4, 1024)
    assert steps_and_experience(512, rollout_size=256) == (2, 512)
    assert steps_and_experience(1, rollout_size=4096) == (1, 4096)


def test_resolvable_improvement_is_n_standard_errors_of_the_running_score():
    assert resolvable_improvement(score_sd=100.0, window=25, n_noise=3.0) == pytest.approx(60.0)
    rng = np.random.default_rng(0)  # the standard error it names: the spread of window-game means
    means = rng.normal(0.0, 100.0, size=(20_000, 25)).mean(axis=1)
    assert np.std(means) == pytest.approx(resolvable_improvement(100.0, 25, 1.0), rel=0.02)
    with pytest.raises(ValueError):
        resolvable_improvement(100.0, 0, 3.0)


def test_window_midpoint_is_the_mean_midpoint_of_the_games():
    """Two games on 4 envs: one of 100 agent steps ending at 1,000 (its env played while all 4 took 400: midpoint
    800), one of 50 ending at 1,200 (midpoint 1,100)."""
    assert window_midpoint(np.array([1000, 1200]), np.array([100, 50]), 4) == pytest.approx(950.0)
    # one env: a game's midpoint is half its length before its end
    assert window_midpoint(np.array([300]), np.array([300]), 1) == pytest.approx(150.0)
    with pytest.raises(ValueError):
        window_midpoint(np.array([1, 2]), np.array([1]), 1)
