"""NoiseScalePPO on real Beam Rider with tiny budgets: training unchanged, logs aligned, bad input handled."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import TINY_PPO, tiny_model
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.policies import ChannelsLastCnnPolicy
from rl_gns.core.maths.schemes import SCHEMES
from rl_gns.core.maths.schemes import scheme as scheme_named
from rl_gns.records.rundir import read_csv as read_progress

pytestmark = pytest.mark.atari


def params_after(model, steps):
    model.learn(steps)
    return [p.detach().clone() for p in model.policy.parameters()]


def test_measuring_does_not_change_training():
    """Same seed: parameters after 3 iterations are bit-identical with measurement on and off; with NCHW
    weights they are bit-identical to plain SB3 PPO (the rollout thread count does not change a bit); channels-last
    weights, the default on a CPU, change the rounding. How far that moves a run depends on the CPU (a rounding
    difference can flip a sampled action or a clipped ratio, and the runs part): benchmarks/determinism.py
    measures it."""
    steps = 3 * 64
    on = params_after(tiny_model(NoiseScaleConfig(every=1)), steps)
    off = params_after(tiny_model(None), steps)
    nchw = params_after(tiny_model(NoiseScaleConfig(every=1), channels_last=False), steps)
    plain = params_after(PPO("CnnPolicy", make_atari_vec_env("BeamRider", 2, seed=3), device="cpu", **TINY_PPO), steps)
    initial = [p.detach() for p in tiny_model(None).policy.parameters()]
    assert not all(th.equal(a, b) for a, b in zip(on, initial, strict=True))  # it did train
    assert all(th.equal(a, b) for a, b in zip(on, off, strict=True))
    assert all(th.equal(a, b) for a, b in zip(nchw, plain, strict=True))
    assert not all(th.equal(a, b) for a, b in zip(on, plain, strict=True))  # the layout does change rounding


def test_rollout_threads_are_restored_for_the_update():
    threads = th.get_num_threads()
    seen = []
    model = tiny_model(None, rollout_threads=1)
    train = model.train
    model.train = lambda: (seen.append(th.get_num_threads()), train())[1]
    model.learn(64)
    assert seen == [threads] and th.get_num_threads() == threads
    with pytest.raises(ValueError, match="rollout_threads"):
        tiny_model(None, rollout_threads=0)


def test_log_rows_carry_their_own_rollouts_env_steps(tmp_path):
    """train/ and gns/ values of an update share the row (and env step) of the rollout they were computed on."""
    model = tiny_model(NoiseScaleConfig(schemes=("minibatch",), every=2, losses=("policy", "total")))
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(4 * 64)
    progress = read_progress(tmp_path / "progress.csv")
    np.testing.assert_array_equal(progress["time/total_timesteps"], [64, 128, 192, 256])
    # every iteration has its update's train/ values, including the first and the last one
    assert np.all(np.isfinite(progress["train/value_loss"]))
    assert np.all(np.isfinite(progress["gns/grad_norm_preclip"]))
    # measured on iterations 1 and 3 (every=2); raw estimates only where measured
    assert np.isfinite(progress["gns/minibatch/g2_policy_raw"]).tolist() == [True, False, True, False]
    assert "gns/minibatch/b_simple_value" not in progress
    assert progress["gns/minibatch/b_small"][0] == 8 and progress["gns/minibatch/b_big"][0] == 32


def test_non_finite_gradients_are_skipped_and_counted(tmp_path):
    """A loss whose measured gradients are NaN is dropped and counted; the others are kept; training goes on."""
    model = tiny_model(NoiseScaleConfig(schemes=("minibatch",), every=1, losses=("policy", "value")))
    b_small = 8

    def poison_small_batches(module, inputs, output):
        # only the measurement's small batches have 8 samples (rollout steps: 2, training: 32)
        return output * math.nan if output.shape[0] == b_small else output

    model.policy.value_net.register_forward_hook(poison_small_batches)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2 * 64)
    progress = read_progress(tmp_path / "progress.csv")
    assert progress["gns/n_skipped"].tolist() == [1, 2]
    assert "gns/minibatch/b_simple_value" not in progress
    assert np.all(np.isfinite(progress["gns/minibatch/trace_sigma_policy_raw"]))
    assert model.num_timesteps == 128
    assert all(th.isfinite(p).all() for p in model.policy.parameters())


@pytest.mark.parametrize(
    ("noise_scale", "message"),
    [
        (NoiseScaleConfig(schemes=("minibatch",), b_small=32, b_big=32), "0 < b_small < b_big"),
        (NoiseScaleConfig(schemes=("minibatch",), b_small=64, b_big=32), "0 < b_small < b_big"),
        (NoiseScaleConfig(schemes=("minibatch",), b_small=12, b_big=32), "must divide"),
        (NoiseScaleConfig(schemes=("minibatch",), b_big=1), "b_small < b_big"),
        (NoiseScaleConfig(b_big=128), "exceeds the rollout size"),
        (NoiseScaleConfig(b_big=32), "at least 2 env trajectories"),
        (NoiseScaleConfig(schemes=("envs",), b_small=48), "multiples of n_steps"),
        (NoiseScaleConfig(losses=("policy", "advantage")), "losses must be distinct names from"),
        (NoiseScaleConfig(losses=("value", "value")), "losses must be distinct names from"),
        (NoiseScaleConfig(schemes=()), "schemes must be distinct names from"),
        (NoiseScaleConfig(every=0), "every"),
        (NoiseScaleConfig(schemes=("minibatch", "minibatch")), "distinct"),
        (NoiseScaleConfig(schemes=("minibatch", "envs"), b_big=32), "single noise scale scheme"),
    ],
)
def test_invalid_settings_fail_when_the_agent_is_built(noise_scale, message):
    with pytest.raises(ValueError, match=message):
        tiny_model(noise_scale)


def test_a_small_batch_below_one_is_refused_under_its_settings_name():
    with pytest.raises(ValueError, match="gns_b_small must be >= 1, got 0"):
        NoiseScaleConfig(schemes=("minibatch",), b_small=0).check()


def test_envs_scheme_groups_whole_trajectories(tmp_path):
    model = tiny_model(NoiseScaleConfig(schemes=("envs",), every=1), n_envs=4)
    assert model.gns_sizes == {"envs": (32, 128)}  # one env's 32 steps per small batch, the whole rollout
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(128)
    idx = SCHEMES["envs"].indices(model.n_envs, model.n_steps, 128, np.random.default_rng(0))
    assert sorted(idx.reshape(4, 32)[:, 0] // 32) == [0, 1, 2, 3]
    assert np.all(np.diff(idx.reshape(4, 32), axis=1) == 1)
    assert np.isfinite(read_progress(tmp_path / "progress.csv")["gns/envs/trace_sigma_policy_raw"][0])
    with pytest.raises(ValueError, match="unknown noise-scale scheme 'env'"):  # not read as envs
        scheme_named("env")


def test_two_schemes_in_one_run_each_logged_under_its_name(tmp_path):
    model = tiny_model(NoiseScaleConfig(schemes=("minibatch", "envs"), losses=("total",), every=1), n_envs=4)
    assert model.gns_sizes == {"minibatch": (8, 32), "envs": (32, 128)}
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(128)
    progress = read_progress(tmp_path / "progress.csv")
    for scheme in ("minibatch", "envs"):
        assert np.isfinite(progress[f"gns/{scheme}/g2_total_raw"][0]), scheme
        assert model.gns_trackers[f"{scheme}/total"].ema.n_updates == 1
        # one measurement: the average is the single ratio, and no interval yet
        assert progress[f"gns/{scheme}/b_simple_total_avg_low"][0] == 0.0
        assert np.isinf(progress[f"gns/{scheme}/b_simple_total_avg_high"][0])


def test_save_load_keeps_averages_and_continues(tmp_path):
    model = tiny_model(NoiseScaleConfig(every=1))
    model.learn(128)
    model.save(tmp_path / "model.zip")
    loaded = NoiseScalePPO.load(tmp_path / "model.zip", env=make_atari_vec_env("BeamRider", 2, seed=4))
    assert loaded.gns_trackers["envs/policy"].ema.n_updates == 2
    assert loaded.gns_trackers["envs/policy"].ema.g2 == model.gns_trackers["envs/policy"].ema.g2
    loaded.learn(64, reset_num_timesteps=False)
    assert loaded.gns_trackers["envs/policy"].ema.n_updates == 3


def test_drop_in_for_any_env_and_policy():
    """Whatever PPO accepts: a Gymnasium id, an MLP policy, a callback, SB3's own logging."""
    seen = []

    class Count(gym.Wrapper):
        def step(self, action):
            seen.append(action)
            return super().step(action)

    model = NoiseScalePPO("MlpPolicy", Count(gym.make("CartPole-v1")), n_steps=64, batch_size=32, seed=0, device="cpu")
    model.learn(128)
    assert len(seen) == 128
    assert model.gns_trackers["minibatch/policy"].ema.n_updates == 1  # every=4 by default: iteration 1 measured, 2 not
    assert model.gns_sizes == {"minibatch": (8, 32)}  # one env: the default falls back to the minibatch scheme


def test_channels_last_policy_computes_the_same_function():
    """On a CPU "CnnPolicy" becomes ChannelsLastCnnPolicy: same parameters and outputs as SB3's to float rounding."""
    fast, stock = tiny_model(None), tiny_model(None, channels_last=False)
    assert isinstance(fast.policy, ChannelsLastCnnPolicy) and not isinstance(stock.policy, ChannelsLastCnnPolicy)
    stock.policy.load_state_dict(fast.policy.state_dict())
    conv = fast.policy.features_extractor.cnn[0].weight
    assert conv.is_contiguous(memory_format=th.channels_last)
    obs = th.as_tensor(np.random.default_rng(0).integers(0, 256, size=(16, 4, 84, 84), dtype=np.uint8))
    actions = th.zeros(16, dtype=th.long)
    with th.no_grad():
        for a, b in zip(fast.policy.evaluate_actions(obs, actions), stock.policy.evaluate_actions(obs, actions), strict=True):
            assert th.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_an_agent_takes_the_sizes_its_caller_planned_and_a_loaded_one_resolves_them_for_its_envs(tmp_path):
    """rl-gns train checks the measurement's sizes in its run plan and hands them to the agent, which derives nothing
    again; an agent built directly resolves them by the same rule. The planned sizes are not saved: SB3's ``load``
    takes them as a keyword, or the loaded agent resolves them for the envs it is given."""
    config = NoiseScaleConfig(schemes=("envs", "minibatch"))
    envs = make_vec_env("CartPole-v1", n_envs=4)
    planned = config.all_sizes(4, 16, 32)
    assert planned == {"envs": (16, 64), "minibatch": (8, 32)}
    direct = NoiseScalePPO("MlpPolicy", envs, n_steps=16, batch_size=32, noise_scale=config, seed=0)
    given = NoiseScalePPO("MlpPolicy", envs, n_steps=16, batch_size=32, noise_scale=config, planned_gns_sizes=planned)
    assert direct.gns_sizes == given.gns_sizes == planned and given.planned_gns_sizes == planned
    with pytest.raises(ValueError, match="planned_gns_sizes"):
        NoiseScalePPO("MlpPolicy", envs, n_steps=16, noise_scale=config, planned_gns_sizes={"envs": (16, 64)})
    given.save(tmp_path / "agent")
    eight = NoiseScalePPO.load(tmp_path / "agent", env=make_vec_env("CartPole-v1", n_envs=8))
    assert eight.planned_gns_sizes is None and eight.gns_sizes == {"envs": (32, 128), "minibatch": (8, 32)}
    resumed = NoiseScalePPO.load(tmp_path / "agent", env=envs, planned_gns_sizes=planned)
    assert resumed.gns_sizes == planned


def test_default_measurement_adapts_or_switches_off_where_sb3_accepts_the_sizes():
    """What SB3's PPO accepts, NoiseScalePPO accepts (SB3's own test_ppo_warnings cases); explicit settings are refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3's own tests require a single-env PPO to build without a warning
        single = NoiseScalePPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, seed=0)
    assert single.gns_sizes == {"minibatch": (8, 32)}  # one env: the minibatch scheme instead of groups of trajectories
    odd = NoiseScalePPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=63, seed=0)
    assert odd.gns_sizes == {"minibatch": (21, 63)}  # one env; 63 is not divisible by 4: three small batches of 21
    three = NoiseScalePPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=3), n_steps=16, batch_size=48, seed=0)
    assert three.gns_sizes == {"envs": (16, 48)}  # the default: three groups of one trajectory
    with pytest.warns(UserWarning, match="no noise-scale measurement"):
        tiny = NoiseScalePPO("MlpPolicy", "CartPole-v1", n_steps=1, batch_size=1, normalize_advantage=False)
    assert tiny.noise_scale is None
    tiny.learn(4)  # trains as plain PPO
    with pytest.raises(ValueError, match="at least 2 env trajectories"):
        NoiseScalePPO(
            "MlpPolicy", "CartPole-v1", n_steps=1, batch_size=1, normalize_advantage=False, noise_scale=NoiseScaleConfig()
        )


def test_an_agent_saved_before_the_core_had_folders_loads():
    """The committed snapshot was saved when the settings and trackers stood in ``rl_gns.core.ppo`` and
    ``rl_gns.core.noise_scale``: it loads, with today's classes."""
    from pathlib import Path

    from rl_gns.core.maths.noise_scale import NoiseScaleTracker

    snapshot = Path(__file__).resolve().parents[1] / "results/demo_probe/run/snapshots/000000100352.zip"
    model = NoiseScalePPO.load(snapshot, device="cpu")
    assert type(model.noise_scale) is NoiseScaleConfig
    assert model.gns_trackers and all(type(t) is NoiseScaleTracker for t in model.gns_trackers.values())
