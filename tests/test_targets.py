"""Steps to target on hand-built score curves."""

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rl_gns.core.maths.targets import (
    censored_by,
    expected_games,
    first_reached,
    game_length,
    game_midpoints,
    null_crossing,
    null_floor,
    null_max_running_scores,
    null_max_running_scores_envs,
    pilot_gain,
    reach_steps,
    resolvable_improvement,
    running_score,
    score_gain,
    spaced_targets,
    steps_and_experience,
    trend_crossing,
    window_midpoint,
)
from rl_gns.records.rundir import RunDir
from rl_gns.reports.sweep_analysis import iterations_to, load_run
from rl_gns.reports.targets_report import TargetsConfig, targets

#: Breakout's committed null run (learning rate 0) and pilot of the one-step regime, and their targets.json.
BREAKOUT = Path(__file__).resolve().parents[1] / "results" / "table1" / "Breakout" / "R0"


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


def test_score_gain_is_the_mean_gain_with_the_games_standard_error():
    """Closed form: two runs, first games [0, 2] and [1, 3] (means 1, 2; variances 2, 2), last games [4, 6] and
    [5, 9] (means 5, 7; variances 2, 8): gain ((5 - 1) + (7 - 2)) / 2 = 4.5, se = sqrt(2/2 + 2/2 + 2/2 + 8/2) / 2."""
    first = [np.array([0.0, 2.0]), np.array([1.0, 3.0])]
    last = [np.array([4.0, 6.0]), np.array([5.0, 9.0])]
    gain, low, high = score_gain(first, last)
    half = 1.96 * math.sqrt(1 + 1 + 1 + 4) / 2
    assert (gain, low, high) == pytest.approx((4.5, 4.5 - half, 4.5 + half))
    # coverage on games drawn with no gain: the 95 % interval holds 0 about 95 % of the time
    rng = np.random.default_rng(1)
    holds = [low <= 0 <= high for low, high in (score_gain(*rng.normal(10, 3, (2, 3, 20)).tolist())[1:] for _ in range(4_000))]
    assert np.mean(holds) == pytest.approx(0.95, abs=0.015)
    with pytest.raises(ValueError):
        score_gain([np.array([1.0])], [np.array([1.0, 2.0])])
    with pytest.raises(ValueError):
        score_gain([], [])


def test_window_midpoint_is_the_mean_midpoint_of_the_games():
    """Two games on 4 envs: one of 100 agent steps ending at 1,000 (its env played while all 4 took 400: midpoint
    800), one of 50 ending at 1,200 (midpoint 1,100)."""
    assert window_midpoint(np.array([1000, 1200]), np.array([100, 50]), 4) == pytest.approx(950.0)
    # one env: a game's midpoint is half its length before its end
    assert window_midpoint(np.array([300]), np.array([300]), 1) == pytest.approx(150.0)
    with pytest.raises(ValueError):
        window_midpoint(np.array([1, 2]), np.array([1]), 1)


def test_game_midpoints_are_each_games_middle_in_agent_steps_of_all_envs():
    assert np.allclose(game_midpoints(np.array([1000, 1200]), np.array([100, 50]), 4), [800.0, 1100.0])
    with pytest.raises(ValueError):
        game_midpoints(np.array([]), np.array([]), 1)


def test_trend_crossing_is_where_the_least_squares_line_meets_the_target():
    """Scores on a line ``2 + 0.5 t`` meet 12 at t = 20, whatever residuals orthogonal to (1, t) are added; a score
    that does not rise, too few games, or games at one midpoint have no crossing to time (inf)."""
    t = np.arange(10.0)
    assert trend_crossing(t, 2 + 0.5 * t, 12.0) == pytest.approx(20.0)
    design = np.stack([np.ones_like(t), t], axis=1)
    noise = np.random.default_rng(0).normal(size=10)
    orthogonal = noise - design @ np.linalg.lstsq(design, noise, rcond=None)[0]  # no part along 1 or t
    assert trend_crossing(t, 2 + 0.5 * t + 3 * orthogonal, 12.0) == pytest.approx(20.0)
    assert trend_crossing(t, 2 + 0.5 * t, 2.0) == pytest.approx(0.0)  # already there at t = 0
    for scores in (np.full(10, 5.0), 10 - t):
        assert trend_crossing(t, scores, 12.0) == math.inf
    assert trend_crossing(t[:2], t[:2], 1.0) == math.inf and trend_crossing(np.ones(5), t[:5], 1.0) == math.inf
    with pytest.raises(ValueError):
        trend_crossing(t, t[:3], 1.0)


def test_reach_steps_by_every_measure_hand_computed():
    """Games ending at agent steps 10..40 of 4 agent steps each over 2 envs (midpoints 6, 16, 26, 36), scoring 0, 0,
    10, 10: a 2-game running score reaches 5 with game 2, in iteration ceil(30 / 8) = 4 of rollouts of 8; its window
    stands for (16 + 26) / 2 = 21; the line through (6, 0), (16, 0), (26, 10) has slope 0.5 and meets 5 at
    16 + (5 - 10 / 3) / 0.5 = 58 / 3."""
    ends, scores, lengths = np.array([10, 20, 30, 40]), np.array([0.0, 0.0, 10.0, 10.0]), np.full(4, 4.0)
    reach = reach_steps(ends, scores, lengths, n_envs=2, rollout_size=8, target=5.0, window=2)
    assert reach is not None and (reach.game, reach.iterations, reach.env_steps) == (2, 4, 32)
    assert reach.midpoint_iterations == pytest.approx(21 / 8) and reach.trend_iterations == pytest.approx(58 / 3 / 8)
    assert [reach.steps(m) for m in ("passage", "midpoint", "trend")] == [4.0, 21 / 8, reach.trend_iterations]
    assert reach_steps(ends, scores, lengths, n_envs=2, rollout_size=8, target=11.0, window=2) is None
    # a line met before the first game is timed at the first game's midpoint, 6 agent steps
    early = reach_steps(ends, np.array([9.0, 10, 10, 10]), lengths, n_envs=2, rollout_size=8, target=5.0, window=3)
    assert early is not None and early.trend_iterations == pytest.approx(6 / 8)


def test_trend_crossing_is_not_drawn_early_by_a_window_of_noise():
    """A score rising slowly against game noise (a large rollout: many games per iteration): the first window of 20
    games to reach the target stands for a midpoint about 17 % before the true crossing (median of 500 seeded runs),
    while the line through the games meets the target within 5 % of it (the true crossing is at t = 1)."""
    rng = np.random.default_rng(1)
    first, trend = [], []
    for _ in range(500):
        t = np.sort(rng.uniform(0, 1.5, size=600))  # 400 games to the true crossing
        scores = 1.5 * t + rng.normal(size=600)  # the target 1.5 is 1.5 game sds above the start
        hit = first_reached(t, scores, 1.5, 20)
        first.append(np.mean(t[hit - 19 : hit + 1]))
        trend.append(trend_crossing(t[: hit + 1], scores[: hit + 1], 1.5))
    assert np.median(first) < 0.9 and abs(np.median(trend) - 1) < 0.05


def test_game_length_is_agent_steps_per_game_just_before_the_point():
    ends = np.arange(1, 301) * 50  # 4 envs, each finishing a game every 200 of its own steps: one every 50 agent steps
    lengths = np.where(np.arange(300) % 2, 150.0, 250.0)  # frames: a coefficient of variation about 0.25
    length, cv = game_length(ends, lengths, at=15_000)
    assert length == pytest.approx(50.0) and cv == pytest.approx(np.std(lengths[-101:], ddof=1) / np.mean(lengths[-101:]))
    ends[200:] = ends[199] + np.arange(1, 101) * 80  # later, games last longer: only the games up to the point count
    assert game_length(ends, lengths, at=int(ends[199]))[0] == pytest.approx(50.0)
    assert game_length(ends, lengths, at=int(ends[-1]))[0] == pytest.approx(80.0)  # the last 100 games
    assert game_length(ends, lengths, at=int(ends[-1]), games=150)[0] == pytest.approx((100 * 80 + 50 * 50) / 150)
    assert game_length(ends, np.full(300, np.nan), at=15_000)[1] == 0.0  # lengths not recorded
    assert game_length(ends[:10], lengths[:10], at=10**9) is None  # fewer than 11 game ends tell nothing


@pytest.mark.parametrize("cv", [0.3, 0.5, 0.8])
@pytest.mark.parametrize("per_env", [130, 330, 670])
def test_expected_games_is_the_renewal_count_of_envs_from_a_reset(cv, per_env):
    """Game lengths gamma-distributed, mean 100 agent steps: the mean count of a simulation, within a twentieth of a
    game per env."""
    rng = np.random.default_rng(0)
    n_envs, shape = 8, 1 / cv**2
    ends = np.cumsum(rng.gamma(shape, 100.0 / shape, size=(20_000, n_envs, 40)), axis=-1)
    finished = (ends <= per_env).sum(axis=(1, 2))
    assert np.mean(finished) == pytest.approx(expected_games(100.0, cv, n_envs * per_env, n_envs), abs=0.05 * n_envs)


def test_expected_games_of_one_length_counts_whole_games():
    # every env finishes floor(T / L), which the renewal count meets at half-integers
    assert expected_games(length=100.0, cv=0.0, agent_steps=8 * 250, n_envs=8) == pytest.approx(8 * 2)
    assert expected_games(length=100.0, cv=0.0, agent_steps=8 * 30, n_envs=8) == 0.0  # none finished


def test_null_maxima_and_crossing_match_closed_forms():
    """Window 1 over games scoring 1 with probability 1/10 (else 0): one run of G games reaches 1 with probability
    1 − 0.9^G, and the best of L runs with 1 − 0.9^(G·L); the resampled estimate is within 4 standard errors."""
    scores = np.array([1.0] + [0.0] * 9)
    maxima = null_max_running_scores(scores, 10, 1, 20_000, np.random.default_rng(0))
    for n_runs in (1, 3):
        exact = 1 - 0.9 ** (10 * n_runs)
        one = 1 - 0.9**10
        se = n_runs * math.sqrt(one * (1 - one) / 20_000)  # delta method, d p_L / d p_1 <= L
        assert abs(null_crossing(maxima, 1.0, n_runs) - exact) < 4 * se
    assert null_crossing(maxima, 1.5, 3) == 0.0


def test_null_of_envs_reset_together_sees_only_the_games_that_end_in_time():
    """Games A (score 0, 2 steps) and B (score 1, 5 steps), window 1: by 4 steps of each env no B has ended, so the
    best score is 0 in every draw, though half the games are B; by 5 steps a B has ended unless every env began with A,
    with probability 2^-E."""
    scores, lengths = np.array([0.0, 1.0]), np.array([2.0, 5.0])
    rng = np.random.default_rng(0)
    assert np.all(null_max_running_scores_envs(scores, lengths, 3, 3 * 4, 1, 2_000, rng) <= 0.0)  # -inf: none ended
    maxima = null_max_running_scores_envs(scores, lengths, 3, 3 * 5, 1, 20_000, rng)
    exact = 1 - 0.5**3
    assert abs(np.mean(maxima >= 1.0) - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000)


def test_null_of_envs_reset_together_orders_the_first_games_by_length():
    """The first-games floor, exactly: short games (score 0, 10 steps) and long ones (score 1, 19 steps), 40 envs for
    19 steps each. Every env ends one game, the shorts at step 10 and the longs at 19, so the ended games run
    0 … 0 1 … 1 and the best running score of 20 is min(K, 20) / 20, K ~ Binomial(40, 1/2) the longs. Resampled in
    any order, the same 40 games would rarely put 20 longs in one window."""
    scores, lengths = np.array([0.0, 1.0]), np.array([10.0, 19.0])
    maxima = null_max_running_scores_envs(scores, lengths, 40, 40 * 19, 20, 20_000, np.random.default_rng(1))
    for k in (15, 18, 20):
        exact = sum(math.comb(40, j) for j in range(k, 41)) / 2**40  # P(min(K, 20) >= k)
        assert abs(np.mean(maxima >= k / 20 - 1e-9) - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-12
    any_order = null_max_running_scores(np.repeat(scores, 20), 40, 20, 20_000, np.random.default_rng(1))
    assert np.mean(any_order >= 1.0 - 1e-9) < 0.01 < np.mean(maxima >= 1.0 - 1e-9)


def test_null_of_one_env_and_one_length_is_the_null_in_any_order():
    """One env whose games all last 10 steps ends 50 games in 500: the same distribution as 50 games resampled in any
    order (the crossing frequencies of two independent estimates agree within 4 standard errors)."""
    scores = np.arange(10.0)
    envs = null_max_running_scores_envs(scores, np.full(10, 10.0), 1, 500, 5, 20_000, np.random.default_rng(2))
    any_order = null_max_running_scores(scores, 50, 5, 20_000, np.random.default_rng(3))
    for target in (6.0, 7.0):
        p, q = np.mean(envs >= target), np.mean(any_order >= target)
        assert abs(p - q) < 4 * math.sqrt((p * (1 - p) + q * (1 - q)) / 20_000)
    assert np.all(null_max_running_scores_envs(scores, np.full(10, 10.0), 1, 40, 5, 10, np.random.default_rng(4)) == -np.inf)
    with pytest.raises(ValueError, match="length"):
        null_max_running_scores_envs(scores, np.zeros(10), 1, 500, 5, 10, np.random.default_rng(4))


def test_null_floor_is_the_lowest_target_at_the_level():
    """The floor's false-crossing probability is at most the level, and a target just below it exceeds the level."""
    maxima = null_max_running_scores(np.arange(10.0), 50, 5, 4_000, np.random.default_rng(1))
    for n_runs in (1, 3):
        floor = null_floor(maxima, n_runs, 0.01)
        assert null_crossing(maxima, floor, n_runs) <= 0.01
        assert null_crossing(maxima, np.nextafter(floor, -math.inf), n_runs) > 0.01
    assert null_floor(maxima, 3) > null_floor(maxima, 1)  # more rates tried, a higher floor


def test_spaced_targets_lie_between_the_floor_and_the_pilot():
    assert spaced_targets(2.0, 8.0) == (4.0, 6.0)
    assert spaced_targets(2.0, 2.0) == ()


def test_the_committed_targets_reproduce_and_given_targets_are_scored_at_any_count_of_rates(capsys):
    config = TargetsConfig(null=BREAKOUT / "null", pilot=BREAKOUT / "pilot", budget_steps=500_000, learning_rates=3)
    chosen = targets(config)
    committed = json.loads((BREAKOUT / "targets.json").read_text())
    assert (chosen["targets"], chosen["null_floor"]) == (committed["targets"], committed["null_floor"])
    given = (1.9, 2.2)  # below the floor: noise reaches them, so the rates have something to multiply
    one = targets(replace(config, given=given, learning_rates=1))
    assert one["targets"] == list(given) and 0 < one["false_crossing"][0] < 1
    for n_rates in (3, 5):
        scored = targets(replace(config, given=given, learning_rates=n_rates))["false_crossing"]
        assert scored == pytest.approx([1 - (1 - p) ** n_rates for p in one["false_crossing"]])
    assert "target 2.2: p_null" in capsys.readouterr().out


def test_a_runs_trend_steps_are_the_least_squares_crossing_of_its_games():
    """A committed run read back at a target its running score reached after 40 games: the trend measure is where
    numpy's own least-squares line through the scores of its games up to the reaching one, each at its midpoint, meets
    the target, in PPO iterations; :func:`iterations_to` gives it by name."""
    run = RunDir(
        Path(__file__).resolve().parents[1] / "results" / "resume" / "beamrider_ram_sweep" / "runs" / "n0004_lr3.54e-04_s0"
    )
    config, games = run.config(), run.episodes()
    running = running_score(games["score"], 20)
    target = float(np.nanmax(running[:40]))  # first reached at or before game 40, not by the first window
    game = first_reached(games["env_steps"], games["score"], target, 20)
    assert game is not None and 19 < game < 40
    midpoints = games["env_steps"][: game + 1] - config.n_envs * games["length_frames"][: game + 1] / 4 / 2
    slope, intercept = np.polyfit(midpoints, games["score"][: game + 1], 1)
    expected = max((target - intercept) / slope, midpoints[0]) / config.rollout_size
    reach = load_run(run, [target], 20).reached[target]
    assert reach.trend_iterations == pytest.approx(expected) and iterations_to(reach, "trend") == reach.trend_iterations
    assert iterations_to(reach, "midpoint") == reach.midpoint_iterations != reach.trend_iterations


def test_censored_by_bounds_each_measure_from_below():
    """A run that never reached its target: by passage, past the iterations it trained; by midpoint and trend, past
    its last window's midpoint; with fewer games than a window, no bound."""
    assert censored_by("passage", 120, 113.5) == 120.0
    assert censored_by("midpoint", 120, 113.5) == 113.5 and censored_by("trend", 120, 113.5) == 113.5
    assert censored_by("midpoint", 120, math.nan) == 0.0


def test_a_run_that_reaches_later_is_timed_past_its_censored_bound():
    """Games of one env scoring 0 then 10: cut before the running score reaches 5, the bound lies below the steps the
    full run is timed at, by every measure."""
    n_games, window, rollout_size = 60, 10, 8
    lengths_N = np.full(n_games, 20.0)
    ends_N = np.cumsum(lengths_N)  # one env: a game ends every 20 agent steps
    scores_N = np.where(np.arange(n_games) < 40, 0.0, 10.0)
    full = reach_steps(ends_N, scores_N, lengths_N, 1, rollout_size, 5.0, window)
    assert full is not None
    cut = 42  # games finished before the cut: the running score is at most 3
    last = window_midpoint(ends_N[cut - window : cut], lengths_N[cut - window : cut], 1) / rollout_size
    for measure in ("passage", "midpoint", "trend"):
        assert censored_by(measure, int(ends_N[cut - 1]) // rollout_size, last) <= full.steps(measure)


def test_pilot_gain_counts_the_pilots_drift_between_blocks_of_its_later_games():
    """Anchor games 0 and 2 (mean 1, s² 2); a pilot's later 10 games in 5 blocks of means 3, 5, 3, 5, 3 (mean 3.8, s² of
    the block means 1.2): z = 2.8 / √(2/2 + 1.2/5). Its first half does not count. Against a steady anchor at 5, later
    games alternating 0 and 10 are level with it in every block, and later games in runs of 0s then 10s (block means
    0, 0, 10, 10, 10; s² 30) gain 1 with the spread of their blocks as its error."""
    anchor = np.array([0.0, 2.0])
    later = np.array([3, 3, 5, 5, 3, 3, 5, 5, 3, 3], dtype=float)
    assert pilot_gain(anchor, np.concatenate([np.full(10, -50.0), later])) == pytest.approx(2.8 / math.sqrt(1.24))
    blocks = np.concatenate([np.zeros(10), np.repeat([0.0, 0.0, 10.0, 10.0, 10.0], 2)])
    alternating = np.concatenate([np.zeros(10), np.tile([0.0, 10.0], 5)])
    steady = np.array([5.0, 5.0])
    assert pilot_gain(steady, alternating) == 0.0  # every block's mean is 5
    assert pilot_gain(steady, blocks) == pytest.approx(1.0 / math.sqrt(30.0 / 5))  # means 0, 0, 10, 10, 10: s² 30
    assert pilot_gain(steady, np.full(20, 7.0)) == math.inf and pilot_gain(steady, np.full(20, 5.0)) == 0.0
    with pytest.raises(ValueError, match="4 x blocks pilot games"):
        pilot_gain(anchor, np.zeros(19))
    with pytest.raises(ValueError, match="blocks >= 2"):
        pilot_gain(anchor, np.zeros(20), blocks=1)
