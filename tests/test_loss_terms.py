"""``ppo_loss_terms`` against what Stable-Baselines3's ``PPO.train`` actually optimises.

The noise-scale measurement and the ground-truth oracle both take their gradients from
:func:`rl_gns.core.agents.measure.ppo_loss_terms`, so agreeing with each other says nothing about whether
they measure PPO's loss. Here a real SB3 ``PPO`` collects one rollout and runs ``train()`` on it as
a single minibatch (one epoch, ``batch_size`` = the whole rollout, gradient clipping off); the
gradient it hands to ``optimizer.step()`` is captured and compared with the autograd gradient of
``ppo_loss_terms``'s total loss on the same samples in the same order. The logged loss values are
compared too. Perturbing the parameters after the rollout makes the ratios differ from one, so the
ratio clip and the value clip are exercised (the test checks that some samples, not all, are clipped).
"""

import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from rl_gns.core.agents import measure

N_ENVS, N_STEPS = 2, 32
N = N_ENVS * N_STEPS
ENT_COEF, VF_COEF = 0.05, 0.5
RTOL = 1e-5


def rollout_model(env_id: str, clip_range: float, clip_range_vf: float | None, normalize_advantage: bool) -> PPO:
    """A tiny PPO whose ``train()`` is one gradient step on the whole rollout, with one rollout collected."""
    env = make_vec_env(env_id, n_envs=N_ENVS, seed=0)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=N_STEPS,
        batch_size=N,  # one minibatch: the whole rollout
        n_epochs=1,
        clip_range=clip_range,
        clip_range_vf=clip_range_vf,
        normalize_advantage=normalize_advantage,
        ent_coef=ENT_COEF,
        vf_coef=VF_COEF,
        max_grad_norm=1e30,  # clip_grad_norm_ does nothing
        policy_kwargs=dict(net_arch=[16]),
        seed=0,
        device="cpu",
    )
    _, callback = model._setup_learn(N, callback=None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=N_STEPS)
    return model


def perturb(model: PPO, scale: float) -> None:
    """Move the parameters away from those that collected the rollout, so that ratios are not one."""
    gen = th.Generator().manual_seed(1)
    with th.no_grad():
        for p in model.policy.parameters():
            p.add_(scale * th.randn(p.shape, generator=gen))


def sb3_train_step(model: PPO) -> list[th.Tensor]:
    """Run ``model.train()`` and return the gradient it passes to ``optimizer.step()`` (the step is skipped)."""
    captured: list[list[th.Tensor]] = []

    def capture_step(*args, **kwargs):
        captured.append([p.grad.detach().clone() for p in model.policy.parameters()])

    model.policy.optimizer.step = capture_step
    model.train()
    assert len(captured) == 1, "train() should take exactly one gradient step"
    return captured[0]


CASES = [
    # env, parameter perturbation, ratio clip, value clip, normalise advantages
    ("CartPole-v1", 0.0, 0.2, None, True),
    ("CartPole-v1", 0.0, 0.2, 0.1, True),
    ("CartPole-v1", 0.0, 0.2, None, False),
    ("CartPole-v1", 0.1, 0.06, None, True),
    ("CartPole-v1", 0.1, 0.06, 0.4, True),
    ("CartPole-v1", 0.1, 0.06, 0.4, False),
    ("Pendulum-v1", 0.0, 0.2, None, True),
    ("Pendulum-v1", 0.1, 0.06, None, True),
    ("Pendulum-v1", 0.1, 0.06, 0.4, True),
]


@pytest.mark.parametrize(("env_id", "scale", "clip_range", "clip_range_vf", "normalize_advantage"), CASES)
def test_total_loss_gradient_is_the_one_ppo_train_applies(env_id, scale, clip_range, clip_range_vf, normalize_advantage):
    model = rollout_model(env_id, clip_range, clip_range_vf, normalize_advantage)
    perturb(model, scale)
    params = list(model.policy.parameters())

    # the minibatch train() will draw: buffer.get() permutes with NumPy's global RNG, so replay that draw
    rng_state = np.random.get_state()
    order = np.random.permutation(N)
    np.random.set_state(rng_state)
    samples = measure.rollout_samples(model.rollout_buffer, order)
    if normalize_advantage:
        samples = measure.normalize_advantages(samples)

    terms = measure.ppo_loss_terms(model.policy, samples, clip_range, clip_range_vf)
    total = terms.policy + ENT_COEF * terms.entropy + VF_COEF * terms.value
    ours = th.autograd.grad(total, params)

    # the perturbed cases must exercise the clips: some samples clipped, not all
    with th.no_grad():
        values, log_prob, _ = model.policy.evaluate_actions(
            samples.observations,
            samples.actions.long().flatten() if env_id == "CartPole-v1" else samples.actions,
        )
        ratio_clipped = ((th.exp(log_prob - samples.old_log_prob) - 1).abs() > clip_range).float().mean().item()
        if clip_range_vf is not None:
            value_clipped = ((values.flatten() - samples.old_values).abs() > clip_range_vf).float().mean().item()
    if scale > 0:
        assert 0.1 < ratio_clipped < 0.9
        if clip_range_vf is not None:
            assert 0.1 < value_clipped < 0.9
    else:
        assert ratio_clipped == 0.0

    theirs = sb3_train_step(model)

    for name_param, mine, sb3 in zip(model.policy.named_parameters(), ours, theirs, strict=True):
        scale_of_grad = sb3.abs().max().item()
        th.testing.assert_close(mine, sb3, rtol=RTOL, atol=RTOL * scale_of_grad, msg=lambda m, n=name_param[0]: f"{n}: {m}")
    assert any(g.abs().max() > 0 for g in theirs)

    logged = model.logger.name_to_value
    assert logged["train/clip_fraction"] == pytest.approx(ratio_clipped)
    assert logged["train/policy_gradient_loss"] == pytest.approx(terms.policy.item(), rel=RTOL, abs=1e-7)
    assert logged["train/value_loss"] == pytest.approx(terms.value.item(), rel=RTOL)
    assert logged["train/entropy_loss"] == pytest.approx(terms.entropy.item(), rel=RTOL)
    assert logged["train/loss"] == pytest.approx(total.item(), rel=RTOL, abs=1e-7)
