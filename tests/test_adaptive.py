"""Adaptive rollout size: the rule against hand-computed values, and a tiny real-ALE run that grows."""

import json
import math

import numpy as np
import pytest

from rl_gns.adaptive import adaptive_n_envs, scaled_learning_rate
from rl_gns.compare_adaptive import fit_steps, steps_and_experience_logged
from rl_gns.progress import read_progress
from rl_gns.targets import steps_and_experience
from rl_gns.tradeoff import TradeoffFit
from rl_gns.train import TrainConfig, check, train


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
    check(TrainConfig(**base, adaptive_r=64.0))
    bad = [
        (dict(adaptive_r=0.0), "must be > 0"),
        (dict(adaptive_r=64.0, max_n_envs=48), "power of 2"),
        (dict(adaptive_r=64.0, max_n_envs=2), ">= n_envs"),
        (dict(adaptive_r=64.0, anneal=True), "--no-anneal"),
        (dict(adaptive_r=64.0, gns=False), "must be measured"),
        (dict(adaptive_r=64.0, adaptive_loss="value", gns_losses=("policy", "total")), "must be measured"),
    ]
    for overrides, message in bad:
        with pytest.raises(ValueError, match=message):
            check(TrainConfig(**{**base, **overrides}))


@pytest.mark.atari
def test_tiny_adaptive_run_grows_and_keeps_training(tmp_path):
    """Real Beam Rider from RAM: n_envs grows from 2, training continues at the new size, logs show the schedule."""
    config = TrainConfig(
        env="BeamRider", backend="ram", n_envs=2, n_steps=32, minibatch_size=16, n_epochs=2, learning_rate=3e-4,
        anneal=False, gns_scheme="envs", gns_every=1, adaptive_r=4096.0, max_n_envs=8, adaptive_min_measurements=2,
        total_steps=3000, torch_threads=1, progress_bar=False, out=tmp_path / "run",
    )  # fmt: skip
    out = train(config)
    progress = read_progress(out / "progress.csv")
    n_envs = progress["gns/n_envs"]
    assert n_envs[0] == 2 and n_envs[-1] == 8 and np.all(np.diff(n_envs) >= 0)
    np.testing.assert_array_equal(progress["train/rollout_size"], 32 * n_envs)
    np.testing.assert_allclose(progress["train/learning_rate"], 3e-4 * np.sqrt(n_envs / 2))
    np.testing.assert_array_equal(np.diff(progress["time/total_timesteps"]), progress["train/rollout_size"][1:])
    assert np.sum(n_envs == 8) >= 3  # several updates at the grown size
    np.testing.assert_array_equal(progress["gns/b_big"], 32 * n_envs)  # envs scheme: the whole (grown) rollout
    assert np.all(np.isfinite(progress["train/value_loss"]))
    assert progress["gns/games_abandoned"][-1] == 2 + (4 if 4 in n_envs else 0)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_envs_final"] == 8 and summary["env_steps"] >= 3000
