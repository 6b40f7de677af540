"""The fixed-parameter noise-scale measurement of every member of a population at once: the same big and small batches
each member would measure alone (:func:`rl_gns.core.agents.measure.measure_rollout`), with one batched forward pass per small
batch and one :func:`torch.autograd.grad` call per loss for all members.

The gradients are taken with respect to a detached copy of the stacked parameters, so nothing of training changes:
no ``param.grad``, no optimiser state, no RNG but each member's own measurement generator (which draws its batches).

Shape glossary: ``K`` members, ``B`` samples of a member's big batch, ``S`` small batches, ``*obs`` one observation.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch as th

from rl_gns.core.agents.measure import GradNorms, rollout_samples
from rl_gns.core.agents.population_policy import PopulationPolicy, ppo_losses
from rl_gns.core.agents.ppo import Measured, NoiseScalePPO


def normalized_advantages(advantages: th.Tensor) -> th.Tensor:
    """Each member's advantages normalised over its big batch, ``(A - mean A) / (std A + 1e-8)`` along the last axis,
    as SB3 normalises a minibatch (not for one sample).

    :param advantages: ``(K, B)``.
    """
    if advantages.shape[-1] < 2:
        return advantages
    return (advantages - advantages.mean(-1, keepdim=True)) / (advantages.std(-1, keepdim=True) + 1e-8)


def population_grad_norms(
    population: PopulationPolicy,
    big_batches: dict[str, th.Tensor],
    n_small: int,
    losses: Sequence[str],
    eps: th.Tensor,
    eps_vf: th.Tensor | None,
    ent_coef: float,
    vf_coef: float,
) -> list[dict[str, GradNorms]]:
    """``|G_small|²`` and ``|G_big|²`` of each loss for every member (:func:`rl_gns.core.agents.measure.two_batch_grad_norms`
    for K members): its big batch split into ``S`` contiguous small batches, the big-batch gradient the mean of theirs.

    :param population: the members' policies, at the parameters to measure.
    :param big_batches: ``observations`` ``(K, B, *obs)``, ``actions``, ``old_log_prob``, ``advantages`` (prepared for
        the big batch), ``old_values``, ``returns``, each ``(K, B)``.
    :param n_small: ``S``, small batches per big batch (``B / b_small``).
    :param losses: names from :data:`~rl_gns.core.maths.names.LOSSES`.
    :param eps: ``(K, 1)`` ratio clip of each member.
    :param eps_vf: ``(K, 1)`` value clip, or ``None``.
    :param ent_coef: entropy coefficient of the total loss.
    :param vf_coef: value coefficient of the total loss.
    :return: per member, squared norms per loss name.
    """
    params = {name: tensor.detach().requires_grad_() for name, tensor in population.stacked_parameters().items()}
    leaves = list(params.values())
    k_members = population.size
    grad_sums = {name: [th.zeros_like(p) for p in leaves] for name in losses}
    g2_small_sums = {name: th.zeros(k_members, device=leaves[0].device) for name in losses}
    parts = {name: tensor.tensor_split(n_small, dim=1) for name, tensor in big_batches.items()}
    for part in range(n_small):
        small = {name: split[part] for name, split in parts.items()}
        logits, values = population.logits_and_values(small.pop("observations"), params)
        terms = ppo_losses(logits, values, small, eps, eps_vf, False, ent_coef, vf_coef)
        for i, name in enumerate(losses):
            loss = getattr(terms, name)  # (K,): members are independent, so d(sum)/d(member k) is member k's gradient
            grads = th.autograd.grad(loss.sum(), leaves, retain_graph=i < len(losses) - 1, allow_unused=True)
            for acc, g in zip(grad_sums[name], grads, strict=True):
                if g is not None:
                    acc.add_(g)
                    g2_small_sums[name] += g.square().flatten(1).sum(1)
    norms: list[dict[str, GradNorms]] = [{} for _ in range(k_members)]
    for name in losses:
        g2_big = sum(acc.square().flatten(1).sum(1) for acc in grad_sums[name]) / n_small**2
        g2_small = g2_small_sums[name] / n_small
        for k in range(k_members):
            norms[k][name] = GradNorms(g2_small=float(g2_small[k]), g2_big=float(g2_big[k]))  # type: ignore[index]
    return norms


def measure_population(members: Sequence[NoiseScalePPO], population: PopulationPolicy) -> tuple[list[Measured], float]:
    """The noise-scale measurement due now for every member (each :meth:`NoiseScalePPO.measurement_due`), taken
    together: each member's batches (:meth:`NoiseScalePPO.measurement_batches`, its own generator) of its filled
    rollout, advantages normalised over each big batch as PPO would, then :func:`population_grad_norms` per scheme.

    :param members: K agents of one population with filled, unflattened rollout buffers, every one due to measure
        (one process each: no data-parallel ranks).
    :param population: their policies, in the same order.
    :return: each member's measurement, and each member's share of the seconds it took.
    """
    start = time.perf_counter()
    first = members[0]
    assert first.noise_scale is not None
    population.set_training_mode(True)  # as PPO.train does first: the same forward pass
    progress = [member._current_progress_remaining for member in members]
    eps = th.tensor([float(m.clip_range(p)) for m, p in zip(members, progress, strict=True)])[:, None]  # type: ignore[operator]
    eps_vf = (
        None
        if first.clip_range_vf is None
        else th.tensor([float(m.clip_range_vf(p)) for m, p in zip(members, progress, strict=True)])[:, None]  # type: ignore[operator,misc]
    )
    plans = [member.measurement_batches() for member in members]
    measured: list[Measured] = [{} for _ in members]
    for scheme in first.noise_scale.schemes:
        n_small = plans[0][scheme][0]
        samples = [
            rollout_samples(m.rollout_buffer, plan[scheme][1])._asdict() for m, plan in zip(members, plans, strict=True)
        ]
        batches = {name: th.stack([sample[name] for sample in samples]) for name in samples[0]}
        batches["actions"] = batches["actions"].long().flatten(1)
        if first.normalize_advantage:
            batches["advantages"] = normalized_advantages(batches["advantages"])
        norms = population_grad_norms(
            population,
            batches,
            n_small,
            first.noise_scale.losses,
            eps.to(first.device),
            None if eps_vf is None else eps_vf.to(first.device),
            float(first.ent_coef),
            first.vf_coef,
        )
        for k, member_norms in enumerate(norms):
            measured[k][scheme] = member_norms
    return measured, (time.perf_counter() - start) / len(members)


def measure_due(members: Sequence[NoiseScalePPO], population: PopulationPolicy) -> dict[int, tuple[Measured, float]]:
    """:func:`measure_population` for the members due to measure this iteration; ``{index: (measurement, seconds)}``."""
    due = [k for k, member in enumerate(members) if member.measurement_due()]
    if not due:
        return {}
    if len(due) == len(members):
        measured, seconds = measure_population(members, population)
    else:
        measured, seconds = measure_population([members[k] for k in due], PopulationPolicy([members[k].policy for k in due]))
    return {k: (m, seconds) for k, m in zip(due, measured, strict=True)}
