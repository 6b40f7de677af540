"""Adaptive rollout size: the rule against hand-computed values, and tiny real-ALE runs that grow."""

import json
import math
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
from conftest import logged_scalars
from stable_baselines3.common.env_util import unwrap_wrapper
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from rl_gns.core.agents.adaptive import AdaptivePPO, adaptive_n_envs, extend_dummy_vec_env, scaled_learning_rate
from rl_gns.core.envs.atari import make_atari_vec_env
from rl_gns.core.maths.targets import steps_and_experience
from rl_gns.core.maths.tradeoff import TradeoffFit
from rl_gns.experiments.callbacks import EpisodeLogger
from rl_gns.experiments.train import TrainConfig, plan_run, train
from rl_gns.records.rundir import RunDir
from rl_gns.records.rundir import read_csv as read_progress
from rl_gns.reports.adaptive_report import fit_steps, steps_and_experience_logged


@pytest.mark.parametrize(
    ("b_noise", "r", "n_envs", "expected"),
    [
        (4096.0, 256.0, 4, 32),  # sqrt(256·4096) = 1024 agent steps = 32 envs × 32
        (4096.0, 64.0, 4, 16),  # sqrt(64·4096) = 512 = 16 envs
        (1600.0, 64.0, 4, 8),  # sqrt(64·1600) = 320 = 10 envs -> 2^round(3.32) = 8
        (2500.0, 64.0, 4, 16),  # 400 = 12.5 envs -> 2^round(3.64) = 16
        (100.0, 64.0, 4, 4),  # 80 = 2.5 envs -> 2: never shrinks below the current 4
        (1e9, 64.0, 4, 64),  # clipped to max_n_envs
        (math.nan, 64.0, 8, 8),  # not resolved yet: keep
        (-50.0, 64.0, 8, 8),  # negative |G|² average: keep
    ],
)
def test_rule_hand_computed(b_noise, r, n_envs, expected):
    assert adaptive_n_envs(b_noise, r, n_steps=32, n_envs=n_envs, max_n_envs=64) == expected


def test_rule_rejects_non_positive_rate():
    with pytest.raises(ValueError, match="r must be > 0"):
        adaptive_n_envs(1000.0, 0.0, 32, 4, 64)


def test_square_root_learning_rate_rule():
    # the sweep's grid centre: 5e-4 at 8 envs is 3.54e-4 at 4 envs and 1e-3 at 32
    assert scaled_learning_rate(3.5355e-4, 32, 4) == pytest.approx(1e-3, rel=1e-4)
    assert scaled_learning_rate(5e-4, 8, 8) == 5e-4


def test_logged_steps_and_experience_match_fixed_size():
    total = 128 * np.arange(1, 11)
    for env_steps in (1, 128, 129, 640, 1280):
        assert steps_and_experience_logged(env_steps, total) == steps_and_experience(env_steps, 128)
    grown = np.cumsum([128, 128, 256, 512, 512])  # 4, 4, 8, 16, 16 envs × 32 steps
    assert steps_and_experience_logged(300, grown) == (3, 512)
    assert steps_and_experience_logged(1025, grown) == (5, 1536)
    with pytest.raises(ValueError, match="after the last"):
        steps_and_experience_logged(2000, grown)


def test_fit_steps_on_the_hyperbola():
    fit = TradeoffFit(s_min=10.0, e_min=1000.0, rms_log_residual=0.0)
    assert fit_steps(fit, 2000.0) == pytest.approx(20.0)  # at B_crit: 2·S_min, 2·E_min
    assert fit_steps(fit, 1000.0) == math.inf


def test_invalid_adaptive_settings_fail_in_check(tmp_path):
    base = dict(env="BeamRider", backend="ram", n_steps=32, minibatch_size=32, n_envs=4, anneal=False, out=tmp_path / "x")
    plan_run(TrainConfig(**base, adaptive_r=64.0))
    bad = [
        (dict(adaptive_r=0.0), "must be > 0"),
        (dict(adaptive_r=64.0, max_n_envs=48), "power of 2"),
        (dict(adaptive_r=64.0, max_n_envs=2), "must be above --n-envs"),
        (dict(adaptive_r=64.0, max_n_envs=4), "must be above --n-envs \\(4\\): the run only grows"),
        (dict(adaptive_r=64.0, anneal=True), "--no-anneal"),
        (dict(adaptive_r=64.0, gns=False), "must be measured"),
        (dict(adaptive_r=64.0, adaptive_predictor="env_value", gns_losses=("policy", "total")), "must be measured"),
        (dict(adaptive_r=64.0, adaptive_predictor="mb_xM_total"), "must be measured with scheme minibatch"),
        (dict(adaptive_r=64.0, adaptive_predictor="env_advantage"), "unknown"),
    ]
    for overrides, message in bad:
        with pytest.raises(ValueError, match=message):
            plan_run(TrainConfig(**{**base, **overrides}))


def test_extend_dummy_vec_env_keeps_envs_without_reset():
    make = partial(gym.make, "CartPole-v1")
    env = DummyVecEnv([make, make])
    env.seed(0)
    env.reset()
    for _ in range(3):
        env.step(np.zeros(2, dtype=np.int64))
    states = [gym_env.unwrapped.state.copy() for gym_env in env.envs]
    extended = extend_dummy_vec_env(env, DummyVecEnv([make]))
    assert extended.num_envs == 3 and extended.envs[:2] == env.envs  # the same objects, in order
    np.testing.assert_array_equal([gym_env.unwrapped.state for gym_env in extended.envs[:2]], states)  # not reset


def monitor(gym_env: gym.Env) -> Monitor:
    """The ``Monitor`` inside a RAM env's wrappers."""
    found = unwrap_wrapper(gym_env, Monitor)
    assert isinstance(found, Monitor)
    return found


@pytest.mark.atari
def test_ram_growth_keeps_games_in_progress(tmp_path, monkeypatch):
    """Real Breakout from RAM (short games): growing appends envs, and the games in progress in the old envs
    carry on and finish as whole games, logged once each."""
    config = TrainConfig(
        env="Breakout", backend="ram", n_envs=2, n_steps=32, minibatch_size=16, gns_scheme=("envs",), gns_every=1,
        adaptive_r=4096.0, max_n_envs=4, adaptive_min_measurements=2, out=tmp_path / "unused",
    )  # fmt: skip
    make_env = partial(make_atari_vec_env, "breakout", backend="ram")
    env = make_env(2, 0)
    old_envs, old_monitors = list(env.envs), [monitor(gym_env) for gym_env in env.envs]
    model = AdaptivePPO(
        "MlpPolicy", env, noise_scale=config.noise_scale_config(), n_steps=32, batch_size=16, n_epochs=2,
        learning_rate=3e-4, seed=0, device="cpu", make_env=make_env, adaptive=config.adaptive_config(),
    )  # fmt: skip
    at_growth: list[list[tuple[int, int]]] = []  # per growth, per old env: (games finished, steps into the current game)
    grow = model.grow

    def recording_grow(n_envs: int) -> None:
        at_growth.append([(len(m.get_episode_rewards()), len(m.rewards)) for m in old_monitors])
        grow(n_envs)

    monkeypatch.setattr(model, "grow", recording_grow)
    model.learn(total_timesteps=4_000, callback=EpisodeLogger(tmp_path / "episodes.csv"))

    assert len(at_growth) >= 1 and model.n_envs == 4 and model.games_abandoned == 0
    assert isinstance(model.env, DummyVecEnv) and model.env.envs[:2] == old_envs  # the same games, first
    for monitor_, (n_finished, steps_in) in zip(old_monitors, at_growth[0], strict=True):
        assert steps_in > 0  # a game in progress at the first growth ...
        assert len(monitor_.get_episode_lengths()) > n_finished  # ... finished after it ...
        assert monitor_.get_episode_lengths()[n_finished] > steps_in  # ... as one game across the growth
    # episodes.csv holds exactly the whole games the live envs' Monitors finished (raw scores), each once
    finished = [score for gym_env in model.env.envs for score in monitor(gym_env).get_episode_rewards()]
    logged = read_progress(tmp_path / "episodes.csv")["score"]
    np.testing.assert_array_equal(np.sort(logged), np.sort(finished))


@pytest.mark.atari
def test_tiny_adaptive_run_grows_and_keeps_training(tmp_path):
    """Real Beam Rider from RAM: n_envs grows from 2, training continues at the new size, logs show the schedule."""
    config = TrainConfig(
        env="BeamRider", backend="ram", n_envs=2, n_steps=32, minibatch_size=16, n_epochs=2, learning_rate=3e-4,
        anneal=False, gns_scheme=("envs",), gns_every=1, adaptive_r=4096.0, max_n_envs=8, adaptive_min_measurements=2,
        total_steps=3000, torch_threads=1, progress_bar=False, out=tmp_path / "run",
    )  # fmt: skip
    out = train(plan_run(config))
    # the finished run's compact progress.csv.xz, and its TensorBoard events for the columns no reader reads
    progress = {**logged_scalars(out), **RunDir(out).progress()}
    n_envs = progress["gns/n_envs"]
    assert n_envs[0] == 2 and n_envs[-1] == 8 and np.all(np.diff(n_envs) >= 0)
    np.testing.assert_array_equal(progress["train/rollout_size"], 32 * n_envs)
    np.testing.assert_allclose(progress["train/learning_rate"], 3e-4 * np.sqrt(n_envs / 2), rtol=1e-6)  # float32
    np.testing.assert_array_equal(np.diff(progress["time/total_timesteps"]), progress["train/rollout_size"][1:])
    assert np.sum(n_envs == 8) >= 3  # several updates at the grown size
    np.testing.assert_array_equal(progress["gns/envs/b_big"], 32 * n_envs)  # envs scheme: the whole (grown) rollout
    assert np.all(np.isfinite(progress["train/value_loss"]))
    assert np.all(progress["gns/games_abandoned"] == 0)  # a DummyVecEnv grows keeping its games
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_envs_final"] == 8 and summary["env_steps"] >= 3000
