"""The one-step regime (``--regime one-step``): one gradient step per rollout equals SB3's A2C; measuring does not
change it; the regime is one named setting that flags given still override."""

import json

import pytest
import torch as th
from stable_baselines3 import A2C

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.cli import main
from rl_gns.core.maths.advice import DEFAULT_PREDICTOR, VALIDATED
from rl_gns.experiments.config import REGIMES, TrainConfig, apply_regime
from rl_gns.experiments.sweep import SweepConfig
from rl_gns.experiments.train import ppo_kwargs
from rl_gns.records.rundir import RunDir
from rl_gns.reports.advise import run_advice
from tests.conftest import rl_gns

N_ENVS, SEED = 4, 5


def one_step_config(**given) -> TrainConfig:
    config = TrainConfig(env="Breakout", backend="ram", regime="one-step", n_envs=N_ENVS, seed=SEED, **given)
    return apply_regime(config, given={"env", "backend", "regime", "n_envs", "seed", *given})


def one_step_agent(noise_scale: NoiseScaleConfig | None, **given) -> NoiseScalePPO:
    kwargs = {**ppo_kwargs(one_step_config(**given)), "noise_scale": noise_scale, "channels_last": False}
    return NoiseScalePPO("MlpPolicy", make_atari_vec_env("Breakout", N_ENVS, seed=SEED, backend="ram"), **kwargs)


def a2c_agent() -> A2C:
    """SB3's A2C with its own defaults (RMSprop α 0.99, ε 1e-5; GAE λ 1; no advantage normalisation; 5 steps), the
    entropy coefficient and learning rate of OpenAI baselines' A2C, which the regime takes."""
    env = make_atari_vec_env("Breakout", N_ENVS, seed=SEED, backend="ram")
    return A2C("MlpPolicy", env, learning_rate=7e-4, ent_coef=0.01, seed=SEED, device="cpu")


def trained(agent, iterations: int = 3):
    agent.learn(iterations * N_ENVS * 5)
    return agent


def parameters(agent) -> list[th.Tensor]:
    return [p.detach().clone() for p in agent.policy.parameters()]


def test_regime_sets_the_recipe_and_given_flags_win():
    config = one_step_config()
    assert (config.n_steps, config.n_epochs, config.minibatch_size) == (5, 1, N_ENVS * 5)
    assert (config.optimizer, config.normalize_advantage, config.gae_lambda, config.anneal) == ("rmsprop", False, 1.0, False)
    assert one_step_config(n_epochs=4, learning_rate=1e-3).n_epochs == 4
    assert one_step_config(learning_rate=1e-3).learning_rate == 1e-3
    assert apply_regime(TrainConfig(), given=()) == TrainConfig()  # ppo: the defaults, rl-zoo3's recipe
    sweep = apply_regime(SweepConfig(regime="one-step"), given=("regime",))
    assert (sweep.n_steps, sweep.n_minibatches, sweep.lr_ref, sweep.n_envs_ref) == (5, 1, 7e-4, 16)
    assert set(REGIMES["one-step"]) <= {f for cls in (TrainConfig, SweepConfig) for f in cls.__dataclass_fields__}


@pytest.mark.atari
def test_one_step_update_equals_a2c():
    """Three updates on the same rollouts: the parameters and RMSprop's state equal SB3 A2C's to float rounding (PPO's
    ratio is exactly 1 where the gradient is taken), and a second epoch makes them differ."""
    ours, theirs = trained(one_step_agent(None)), trained(a2c_agent())
    initial = parameters(one_step_agent(None))
    for a, b, start in zip(parameters(ours), parameters(theirs), initial, strict=True):
        step = (b - start).abs().max()
        assert step > 0
        assert (a - b).abs().max() <= 1e-3 * step
    assert isinstance(ours.policy.optimizer, th.optim.RMSprop)
    for p_ours, p_theirs in zip(ours.policy.parameters(), theirs.policy.parameters(), strict=True):
        state_ours, state_theirs = ours.policy.optimizer.state[p_ours], theirs.policy.optimizer.state[p_theirs]
        th.testing.assert_close(state_ours["square_avg"], state_theirs["square_avg"], rtol=1e-4, atol=1e-12)
    two_epochs = parameters(trained(one_step_agent(None, n_epochs=2)))
    assert max(float((a - b).abs().max()) for a, b in zip(two_epochs, parameters(theirs), strict=True)) > 1e-5


@pytest.mark.atari
@pytest.mark.parametrize("scheme", ["envs", "minibatch"])
def test_measuring_does_not_change_one_step_training(scheme):
    """Measurement on (every iteration, every loss) and off: bit-identical parameters."""
    on = parameters(trained(one_step_agent(NoiseScaleConfig(schemes=(scheme,), every=1))))
    off = parameters(trained(one_step_agent(None)))
    assert all(th.equal(a, b) for a, b in zip(on, off, strict=True))


@pytest.mark.atari
def test_train_cli_records_the_regime(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--env", "Breakout", "--backend", "ram", "--regime", "one-step", "--n-envs", 4, "--n-epochs", 2]
    status, err = rl_gns(capsys, *args, "--total-steps", 200, "--gns-every", 1, "--out", out)
    assert status == 0, err
    settings = json.loads((out / "config.json").read_text())
    settings = settings.get("settings", settings)
    recipe = (settings["regime"], settings["n_steps"], settings["n_epochs"], settings["minibatch_size"])
    assert recipe == ("one-step", 5, 2, 20)
    assert settings["optimizer"] == "rmsprop" and settings["normalize_advantage"] is False
    # the advice of its 10 measurements (enough for an interval): the default predictor, without the error band criterion
    # v8 checked for the one-step regime (envs/predictors.toml), since 2 epochs depart from the recipe it checked
    advice = json.loads((out / "summary.json").read_text())["advice"]
    assert advice["predictor"] == VALIDATED["one-step"].predictor == DEFAULT_PREDICTOR
    assert advice["n_measurements"] == 10 and advice["b_crit_ci95"] is not None
    assert advice["b_crit_with_predictor_error"] is None
    # advise reads the same coverage back from the run's files; with the recipe criterion v8 checked, the band
    assert main(["advise", str(out)]) == 0
    assert "\n".join(advice["text"]) + "\n" == capsys.readouterr().out
    run = RunDir(out)
    assert run_advice(run.logged_progress(), run.config()).with_predictor_error() is None
    stored = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**stored, "n_epochs": 1}))
    assert run_advice(run.logged_progress(), run.config()).validated == VALIDATED["one-step"]
