"""PPO's loss as Stable-Baselines3's ``PPO.train`` computes it, written once as a pure function of tensors: the
noise-scale measurement (:func:`rl_gns.core.agents.measure.ppo_loss_terms`) and the population engine
(:func:`rl_gns.core.agents.population_policy.ppo_losses`, K members at once) both take it from here, and
``tests/test_loss_terms.py`` and ``tests/test_population.py`` check it against ``PPO.train()``.

Shape glossary: ``...`` any leading axes (``K`` members), ``N`` samples, reduced over by the mean.
"""

from __future__ import annotations

from typing import NamedTuple

import torch as th


class ClippedLosses(NamedTuple):
    """PPO's three loss terms, each a mean over the samples (shape ``(...)``), and the ratios they came from."""

    policy: th.Tensor
    """The clipped surrogate ``−mean_i min(A_i r_i, A_i clip(r_i, 1 − ε, 1 + ε))``."""
    value: th.Tensor
    """``mean_i (R_i − V_i)²``, ``V_i`` clipped to ``V_old,i ± ε_V`` where ``ε_V`` is given."""
    entropy: th.Tensor
    """``−mean_i H_i``: the negative entropy that PPO adds with ``ent_coef``."""
    log_ratio: th.Tensor
    """``(..., N)`` ``log r_i = log π(a_i | s_i) − log π_old(a_i | s_i)``."""
    ratio: th.Tensor
    """``(..., N)`` ``r_i = exp(log r_i)``."""


def clipped_losses(
    log_prob: th.Tensor,
    entropy: th.Tensor,
    values: th.Tensor,
    old_log_prob: th.Tensor,
    advantages: th.Tensor,
    old_values: th.Tensor,
    returns: th.Tensor,
    clip_range: float | th.Tensor,
    clip_range_vf: float | th.Tensor | None,
) -> ClippedLosses:
    """PPO's loss terms (Schulman et al. 2017, eq. 7 and 9, as SB3 writes them) on prepared samples.

    :param log_prob: ``(..., N)`` ``log π(a_i | s_i)`` at the current parameters.
    :param entropy: ``(..., N)`` the policy's entropy at ``s_i`` (SB3 uses ``−log π(a_i | s_i)`` where a distribution
        has none).
    :param values: ``(..., N)`` ``V(s_i)`` at the current parameters.
    :param old_log_prob: ``(..., N)`` ``log π_old(a_i | s_i)``, from the rollout.
    :param advantages: ``(..., N)`` ``A_i``, already normalised where training normalises them.
    :param old_values: ``(..., N)`` ``V_old(s_i)``, from the rollout.
    :param returns: ``(..., N)`` ``R_i``, the value targets.
    :param clip_range: the ratio clip ``ε``: a number, or a tensor that broadcasts against ``(..., N)``
        (``(K, 1)``: one per member).
    :param clip_range_vf: the value clip ``ε_V`` (likewise), or ``None`` for none (SB3's default).
    """
    log_ratio = log_prob - old_log_prob
    ratio = th.exp(log_ratio)
    # torch.clamp takes both bounds as numbers or both as tensors; its stubs cannot say so for a union
    clipped = th.clamp(ratio, 1 - clip_range, 1 + clip_range)  # type: ignore[arg-type]
    policy = -th.min(advantages * ratio, advantages * clipped).mean(-1)
    if clip_range_vf is not None:
        values = old_values + th.clamp(values - old_values, -clip_range_vf, clip_range_vf)  # type: ignore[arg-type]
    value = (returns - values).square().mean(-1)
    return ClippedLosses(policy, value, -entropy.mean(-1), log_ratio, ratio)
