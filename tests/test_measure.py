"""Gradient measurement on a real PPO rollout, against exact per-example gradients (torch.func)."""

import copy

import numpy as np
import pytest
import torch as th
from conftest import collect_one_rollout, tiny_model
from torch.func import functional_call, grad, vmap

from rl_gns import NoiseScaleConfig
from rl_gns.core.agents.measure import (
    GradNormTap,
    normalize_advantages,
    ppo_loss_terms,
    rollout_samples,
    split_samples,
    two_batch_grad_norms,
)
from rl_gns.core.maths.noise_scale import g2_and_trace

pytestmark = pytest.mark.atari


class EvaluateActions(th.nn.Module):
    """Exposes ``policy.evaluate_actions`` as ``forward`` so torch.func can call it functionally."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def forward(self, obs, actions):
        return self.policy.evaluate_actions(obs, actions)


def per_example_policy_grads(model, samples) -> th.Tensor:
    """``(N, P)``: gradient of each sample's clipped-surrogate term, by ``vmap(grad(...))``.

    Works on a copy: ``functional_call`` does not restore SB3's shared (tied) feature extractor
    reliably, which would leave the model's CNN detached from its parameters.
    """
    module = EvaluateActions(copy.deepcopy(model.policy))
    params = {k: v.detach() for k, v in module.named_parameters()}
    clip = model.clip_range(1.0)

    def surrogate(p, obs, action, old_log_prob, adv):
        _, log_prob, _ = functional_call(module, p, (obs[None], action[None]))
        ratio = th.exp(log_prob - old_log_prob)
        return -th.min(adv * ratio, adv * th.clamp(ratio, 1 - clip, 1 + clip)).sum()

    actions = samples.actions.long().flatten()
    th.distributions.Distribution.set_default_validate_args(False)  # no data-dependent checks under vmap
    try:
        grads = vmap(grad(surrogate), in_dims=(None, 0, 0, 0, 0))(
            params, samples.observations, actions, samples.old_log_prob, samples.advantages
        )
    finally:
        th.distributions.Distribution.set_default_validate_args(True)
    return th.cat([g.reshape(len(actions), -1) for g in grads.values()], dim=1).double()


def flat_param_count(model):
    return sum(p.numel() for p in model.policy.parameters())


def test_rollout_samples_match_sb3_flattening(rollout_model):
    """Flat index i is step i % n_steps of env i // n_steps, as in RolloutBuffer.get()."""
    buffer = rollout_model.rollout_buffer
    idx = np.array([0, 5, 31, 32, 63])
    samples = rollout_samples(buffer, idx)
    assert not buffer.generator_ready  # the buffer is left as training will find it
    next(buffer.get(batch_size=None))  # SB3 flattens its arrays in place, env-major
    np.testing.assert_array_equal(samples.observations.numpy(), buffer.observations[idx])
    np.testing.assert_array_equal(samples.actions.numpy(), buffer.actions[idx])
    np.testing.assert_array_equal(samples.advantages.numpy(), buffer.advantages[idx].flatten())
    np.testing.assert_array_equal(samples.returns.numpy(), buffer.returns[idx].flatten())
    with pytest.raises(RuntimeError, match="already flattened"):
        rollout_samples(buffer, idx)


def test_big_gradient_and_trace_match_exact_per_example_computation():
    # NCHW weights: torch.func.vmap cannot reorder tensors channels-last (the estimator does not depend on layout)
    model = tiny_model(NoiseScaleConfig(every=1), channels_last=False)
    collect_one_rollout(model)
    samples = normalize_advantages(rollout_samples(model.rollout_buffer, np.arange(64)))
    per_example = per_example_policy_grads(model, samples)  # (64, P)
    assert per_example.shape == (64, flat_param_count(model))
    exact_mean = per_example.mean(dim=0)
    # unbiased tr(Σ) from the 64 exact per-example gradients
    exact_trace = per_example.var(dim=0, unbiased=True).sum().item()

    # the big-batch gradient is the mean of the small-batch gradients: |G_big|² is exact
    norms = two_batch_grad_norms(model.policy, split_samples(samples, 4), ["policy"], 0.1, None, 0.01, 0.5)["policy"]
    assert norms.g2_big == pytest.approx(exact_mean.pow(2).sum().item(), rel=1e-4)

    # tr(Σ) from small batches of 16 is unbiased for the per-example value: average random partitions
    rng = np.random.default_rng(0)
    traces = []
    for _ in range(40):
        perm = th.as_tensor(rng.permutation(64))
        shuffled = type(samples)(*(t[perm] for t in samples))
        n = two_batch_grad_norms(model.policy, split_samples(shuffled, 4), ["policy"], 0.1, None, 0.01, 0.5)["policy"]
        traces.append(g2_and_trace(n.g2_small, n.g2_big, 16, 64)[1])
    standard_error = np.std(traces, ddof=1) / np.sqrt(len(traces))
    assert abs(np.mean(traces) - exact_trace) < 4 * standard_error
    assert standard_error < 0.2 * exact_trace  # and the check is not vacuous


@pytest.mark.parametrize("n_small", [2, 4, 8])
def test_number_of_small_batches_does_not_change_the_big_gradient(rollout_model, n_small):
    """Means, not sums: |G_big|² is the same whatever the split, and equals autograd on the whole batch."""
    model = rollout_model
    samples = normalize_advantages(rollout_samples(model.rollout_buffer, np.arange(64)))
    norms = two_batch_grad_norms(model.policy, split_samples(samples, n_small), ["total"], 0.1, None, 0.01, 0.5)
    terms = ppo_loss_terms(model.policy, samples, 0.1)
    whole = th.autograd.grad(terms.policy + 0.01 * terms.entropy + 0.5 * terms.value, list(model.policy.parameters()))
    assert norms["total"].g2_big == pytest.approx(sum(g.pow(2).sum() for g in whole).item(), rel=1e-4)


def test_measurement_leaves_grads_and_parameters_untouched(rollout_model):
    model = rollout_model
    before = [p.detach().clone() for p in model.policy.parameters()]
    samples = normalize_advantages(rollout_samples(model.rollout_buffer, np.arange(64)))
    two_batch_grad_norms(model.policy, split_samples(samples, 4), ["policy", "value", "total"], 0.1, None, 0.01, 0.5)
    assert all(p.grad is None for p in model.policy.parameters())
    assert all(th.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))


def test_grad_norm_tap_sees_gradients_before_clipping():
    net = th.nn.Linear(3, 2)
    opt = th.optim.SGD(net.parameters(), lr=0.1)
    tap = GradNormTap(list(net.parameters()), opt)
    x = th.full((4, 3), 10.0)
    opt.zero_grad()
    net(x).pow(2).sum().backward()
    raw = th.sqrt(sum(p.grad.pow(2).sum() for p in net.parameters())).item()
    th.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()
    assert raw > 0.5
    assert tap.pop() == pytest.approx([raw])
    assert tap.pop() == []
    tap.remove()
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
    assert tap.pop() == []
