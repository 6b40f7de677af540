"""Gradient measurements for the noise scale, taken at fixed parameters and outside the optimiser.

Nothing here touches ``param.grad``, the optimiser, NumPy's global RNG or torch's RNG: gradients
are taken with :func:`torch.autograd.grad`, so a measurement leaves training exactly as it was.

Shape glossary: ``N`` samples in a batch, ``K`` small batches, ``*obs`` one observation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import RolloutBufferSamples

from rl_gns.core.agents.ppo_loss import clipped_losses

#: Sums a tensor over the data-parallel ranks in place (``torch.distributed.all_reduce``); ``None``: one process.
SumOverRanks = Callable[[th.Tensor], None] | None


class LossTerms(NamedTuple):
    """The three terms of SB3's PPO loss on one batch, each a mean over the batch (scalar tensors)."""

    policy: th.Tensor
    """Clipped surrogate ``-mean(min(A·r, A·clip(r, 1±ε)))``."""
    value: th.Tensor
    """``mean((returns - V)²)``, with SB3's optional value clipping."""
    entropy: th.Tensor
    """``-mean(entropy)``."""


class GradNorms(NamedTuple):
    """Squared norms of the small- and big-batch mean gradients of one loss."""

    g2_small: float
    """``|G_small|²`` averaged over the ``K`` small batches."""
    g2_big: float
    """``|G_big|²`` of the mean of the ``K`` small-batch gradients (the big batch)."""


def rollout_samples(buffer: RolloutBuffer, flat_indices: np.ndarray) -> RolloutBufferSamples:
    """Gather samples of a filled, not yet flattened :class:`RolloutBuffer` as torch tensors.

    Flat index ``i`` is step ``i % n_steps`` of env ``i // n_steps``, the order SB3's
    ``swap_and_flatten`` gives, so contiguous runs of ``n_steps`` indices are one env's trajectory.
    The buffer itself is not modified (``buffer.get()`` still flattens and shuffles it as usual).

    :param buffer: a full rollout buffer whose returns and advantages are computed.
    :param flat_indices: ``(N,)`` integer indices into the ``n_envs * n_steps`` samples.
    :return: ``N`` samples on the buffer's device; advantages are **not** normalised.
    """
    if buffer.generator_ready:
        raise RuntimeError("rollout buffer is already flattened: measure before buffer.get() is called")
    env_idx, step_idx = np.divmod(np.asarray(flat_indices), buffer.buffer_size)
    observations = buffer.observations
    obs: th.Tensor | dict[str, th.Tensor]
    if isinstance(observations, dict):  # DictRolloutBuffer
        obs = {key: buffer.to_torch(array[step_idx, env_idx]) for key, array in observations.items()}
    else:
        obs = buffer.to_torch(observations[step_idx, env_idx])
    # actions as float32, as SB3's RolloutBuffer._get_samples gives them (MultiBinary actions are stored as int8)
    actions = buffer.to_torch(buffer.actions[step_idx, env_idx].astype(np.float32, copy=False))
    per_step = [
        buffer.to_torch(array[step_idx, env_idx])
        for array in (buffer.values, buffer.log_probs, buffer.advantages, buffer.returns)
    ]
    # values, log_probs, advantages and returns are stored as (n_steps, n_envs): flatten to (N,)
    return RolloutBufferSamples(obs, actions, *(t.flatten() for t in per_step))  # type: ignore[arg-type]


def split_samples(samples: RolloutBufferSamples, n_parts: int) -> list[RolloutBufferSamples]:
    """Split ``N`` samples into ``n_parts`` contiguous parts of ``N / n_parts`` samples each."""
    n = len(samples.advantages)
    if n % n_parts:
        raise ValueError(f"{n} samples do not split into {n_parts} equal parts")
    size = n // n_parts

    def part(x: th.Tensor | dict[str, th.Tensor], i: int) -> th.Tensor | dict[str, th.Tensor]:
        if isinstance(x, dict):
            return {key: value[i * size : (i + 1) * size] for key, value in x.items()}
        return x[i * size : (i + 1) * size]

    return [RolloutBufferSamples(*(part(t, i) for t in samples)) for i in range(n_parts)]  # type: ignore[arg-type]


def normalize_advantages(samples: RolloutBufferSamples, sum_over_ranks: SumOverRanks = None) -> RolloutBufferSamples:
    """SB3's per-minibatch advantage normalisation ``(A - mean A) / (std A + 1e-8)`` over all ``N`` samples.

    Apply it to the big batch **before** splitting it, so that the small-batch losses are parts
    of the big-batch loss and their mean gradient is exactly the big-batch gradient.

    :param sum_over_ranks: with a big batch spread over data-parallel ranks, normalise with the mean and
        standard deviation (Bessel-corrected, as ``torch.std``) of every rank's part.
    """
    adv = samples.advantages
    if sum_over_ranks is None:
        if len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        return samples._replace(advantages=adv)
    adv64 = adv.double()
    sums = th.stack([adv64.sum(), adv64.square().sum(), adv64.new_tensor(float(len(adv)))])
    sum_over_ranks(sums)
    total, total_sq, n = sums.tolist()
    if n > 1:
        mean = total / n
        variance = max(total_sq - n * mean**2, 0.0) / (n - 1)
        adv = (adv - mean) / (variance**0.5 + 1e-8)
    return samples._replace(advantages=adv)


def ppo_loss_terms(
    policy: ActorCriticPolicy,
    samples: RolloutBufferSamples,
    clip_range: float,
    clip_range_vf: float | None = None,
) -> LossTerms:
    """The terms of ``stable_baselines3.PPO``'s loss on a batch whose advantages are already prepared
    (:func:`~rl_gns.core.agents.ppo_loss.clipped_losses` of the policy's outputs).

    Mirrors ``PPO.train`` for one minibatch, so the measured gradients are those training follows.

    :param policy: the actor-critic being trained.
    :param samples: ``N`` rollout samples (advantages normalised as training would).
    :param clip_range: PPO's ratio clip ``ε`` at the current progress.
    :param clip_range_vf: value clip, or ``None`` (SB3's default) for no value clipping.
    """
    actions = samples.actions
    if isinstance(policy.action_space, spaces.Discrete):
        actions = actions.long().flatten()
    values, log_prob, entropy = policy.evaluate_actions(samples.observations, actions)
    losses = clipped_losses(
        log_prob,
        -log_prob if entropy is None else entropy,
        values.flatten(),
        samples.old_log_prob,
        samples.advantages,
        samples.old_values,
        samples.returns,
        clip_range,
        clip_range_vf,
    )
    return LossTerms(losses.policy, losses.value, losses.entropy)


def two_batch_grad_norms(
    policy: ActorCriticPolicy,
    small_batches: Sequence[RolloutBufferSamples],
    losses: Sequence[str],
    clip_range: float,
    clip_range_vf: float | None,
    ent_coef: float,
    vf_coef: float,
    sum_over_ranks: SumOverRanks = None,
) -> dict[str, GradNorms]:
    """``|G_small|²`` and ``|G_big|²`` of each loss, the big batch being the union of the small ones.

    Each small batch gets one forward pass and one :func:`torch.autograd.grad` call per loss; the
    big-batch gradient is the mean of the small-batch gradients (equal sizes, mean losses), so it
    costs nothing extra. Parameters are not changed and ``param.grad`` is not touched. With
    ``sum_over_ranks``, the small batches of every data-parallel rank make the big batch: the sums of
    their gradients and squared norms are all-reduced (one vector per loss).

    :param policy: the actor-critic, at the parameters to measure.
    :param small_batches: ``K >= 2`` batches of equal size, advantages prepared for the big batch.
    :param losses: names from :data:`~rl_gns.core.maths.names.LOSSES`.
    :param clip_range: PPO ratio clip at the current progress.
    :param clip_range_vf: value clip or ``None``.
    :param ent_coef: entropy coefficient of the total loss.
    :param vf_coef: value coefficient of the total loss.
    :param sum_over_ranks: sums a tensor over the ranks in place, or ``None`` for this process's batches alone.
    :return: squared norms per loss name (floats; may be non-finite if the gradients are).
    """
    params = [p for p in policy.parameters() if p.requires_grad]
    grad_sums = {name: [th.zeros_like(p) for p in params] for name in losses}
    g2_small_sums = {name: th.zeros((), device=policy.device) for name in losses}
    for batch in small_batches:
        terms = ppo_loss_terms(policy, batch, clip_range, clip_range_vf)
        by_name = {
            "policy": terms.policy,
            "value": terms.value,
            "total": terms.policy + ent_coef * terms.entropy + vf_coef * terms.value,
        }
        for i, name in enumerate(losses):
            grads = th.autograd.grad(by_name[name], params, retain_graph=i < len(losses) - 1, allow_unused=True)
            for acc, g in zip(grad_sums[name], grads, strict=True):
                if g is not None:
                    acc.add_(g)
                    g2_small_sums[name] += g.pow(2).sum()
    k = len(small_batches)
    norms = {}
    for name in losses:
        sums = th.cat(
            [*(acc.flatten() for acc in grad_sums[name]), g2_small_sums[name].reshape(1), g2_small_sums[name].new_tensor([k])]
        )
        if sum_over_ranks is not None:
            sum_over_ranks(sums)
        grad_sum, g2_small_sum, k_all = sums[:-2], sums[-2], sums[-1]
        norms[name] = GradNorms(g2_small=float(g2_small_sum / k_all), g2_big=float(grad_sum.square().sum() / k_all**2))
    return norms


def measure_rollout(
    policy: ActorCriticPolicy,
    buffer: RolloutBuffer,
    indices: np.ndarray,
    n_small: int,
    losses: Sequence[str],
    normalize_advantage: bool,
    clip_range: float,
    clip_range_vf: float | None,
    ent_coef: float,
    vf_coef: float,
    sum_over_ranks: SumOverRanks = None,
) -> dict[str, GradNorms]:
    """One measurement: the big batch ``indices`` of a filled rollout, advantages normalised over it as PPO
    normalises a minibatch, split into ``n_small`` contiguous small batches (:func:`two_batch_grad_norms`).

    :param indices: ``(b_big,)`` flat indices (:meth:`~rl_gns.core.maths.schemes.SchemeSpec.indices`); with
        ``sum_over_ranks``, this rank's part of the big batch.
    :param n_small: small batches, ``b_big / b_small`` (with ``sum_over_ranks``, this rank's).
    :param sum_over_ranks: sums a tensor over data-parallel ranks in place; the big batch is then the union of
        every rank's part (advantages normalised over all of it).
    """
    samples = rollout_samples(buffer, indices)
    if normalize_advantage:
        samples = normalize_advantages(samples, sum_over_ranks)
    small_batches = split_samples(samples, n_small)
    return two_batch_grad_norms(policy, small_batches, losses, clip_range, clip_range_vf, ent_coef, vf_coef, sum_over_ranks)


class GradNormTap:
    """Records the norm of every training gradient **before** clipping, through tensor hooks.

    SB3's ``PPO.train`` clips inside the loop and discards the norm; an optimiser step pre-hook
    would see clipped gradients. This tap adds ``|grad|²`` of each parameter when its gradient is
    accumulated (``register_post_accumulate_grad_hook``) and closes one norm per optimiser step.

    :param params: the parameters the optimiser updates.
    :param optimizer: the optimiser whose steps delimit gradients.
    """

    def __init__(self, params: Sequence[th.nn.Parameter], optimizer: th.optim.Optimizer) -> None:
        self._sq_norm: th.Tensor | float = 0.0
        self._norms: list[th.Tensor] = []
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params if p.requires_grad]
        self._handles.append(optimizer.register_step_pre_hook(self._on_step))

    def _on_grad(self, param: th.Tensor) -> None:
        assert param.grad is not None
        self._sq_norm = self._sq_norm + th.linalg.vector_norm(param.grad.detach()).square()

    def _on_step(self, *_: object) -> None:
        if isinstance(self._sq_norm, th.Tensor):
            self._norms.append(self._sq_norm.sqrt())
        self._sq_norm = 0.0

    def add(self, norm: th.Tensor) -> None:
        """A pre-clip norm of one optimiser step taken outside this tap's optimiser (a population clips and steps its
        members' gradients together)."""
        self._norms.append(norm)

    def pop(self) -> list[float]:
        """Pre-clip norms of the gradients applied since the last call, in order."""
        norms = th.stack(self._norms).tolist() if self._norms else []
        self._norms = []
        return norms

    def remove(self) -> None:
        """Remove all hooks."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
