"""The sequential design of a probe: where its next seeds go (docs/probe.md, "A sequential probe").

A fixed probe trains every size with every seed. A sequential one trains in rounds: one seed at every size first;
then, after each round, it fits ``S(B) = S_min (1 + B_crit / B)`` to the branches so far and, unless the fit already
bounds ``B_crit`` within ``stop_ratio`` (``b_crit_high / b_crit_low``), trains one more seed at the two sizes around
the fitted ``B_crit``, where a point moves the bend most, or at every size while the fit bounds nothing. A size takes
at most ``most_seeds`` seeds; the design stops when no size it would add to has one left. Sizes held back at the top
of the grid train only once the fit puts ``B_crit`` past every size trained.

Shape glossary: ``K`` rollout sizes, ascending.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rl_gns.core.maths.tradeoff import LocalTradeoffFit


def precise_enough(fit: LocalTradeoffFit | None, stop_ratio: float) -> bool:
    """Whether ``fit`` identifies ``B_crit`` with a 95 % interval no wider than ``b_crit_high / b_crit_low <=
    stop_ratio``; an interval whose low end is 0 or NaN is not."""
    if fit is None or not fit.identified or not fit.b_crit_low > 0:
        return False
    return fit.b_crit_high / fit.b_crit_low <= stop_ratio


def too_few_reached(reached_K: Sequence[bool], least_sizes: int) -> bool:
    """Whether fewer than ``least_sizes`` rollout sizes have a branch that reached the target: a stop for futility.

    ``S(B) = S_min (1 + B_crit / B)`` places its bend from steps at two sizes or more; a branch that did not reach the
    target bounds its steps from below only. Where, after a round, fewer than two sizes reached the target, the
    target lies at the edge of what the branches reach, and further seeds at those sizes chase the chance of
    crossing it rather than the bend.

    :param reached_K: ``(K,)`` for each rollout size trained so far, whether any of its branches reached the target.
    :param least_sizes: the fewest sizes at the target with which the design goes on (0: it never stops for this).
    """
    if least_sizes < 0:
        raise ValueError(f"least_sizes must be 0 or more, got {least_sizes}")
    return sum(map(bool, reached_K)) < least_sizes


def sizes_around(rollout_K: Sequence[int], b_crit: float) -> tuple[int, int]:
    """The indices of the two neighbouring sizes around ``b_crit``: the largest below it and the next one up; the two
    smallest where ``b_crit`` lies below the grid, the two largest where above.

    :param rollout_K: ``(K,)`` rollout sizes, ascending, ``K >= 2``.
    :param b_crit: a fitted critical rollout size, agent steps.
    """
    above = int(np.searchsorted(np.asarray(rollout_K, dtype=float), b_crit))
    lower = min(max(above - 1, 0), len(rollout_K) - 2)
    return lower, lower + 1


def next_round(
    rollout_K: Sequence[int],
    seeds_K: Sequence[int],
    fit: LocalTradeoffFit | None,
    stop_ratio: float,
    most_seeds: int,
    held_back: int = 0,
) -> list[int]:
    """The sizes that train one more seed in the next round, as ascending indices; empty: the design stops.

    - none where ``fit`` bounds ``B_crit`` within ``stop_ratio`` (:func:`precise_enough`);
    - the next size held back, alone, where every open size has trained and ``fit`` leaves ``B_crit`` unbounded above
      with its estimate at or past the largest open size: the bend lies past the sizes trained, where more seeds would
      not find it;
    - where ``fit`` identifies ``B_crit``: :func:`sizes_around` it, among the open sizes;
    - else (no fit yet, or ``B_crit`` unbounded): every open size;

    each leaving out the sizes that hold ``most_seeds`` seeds already. The open sizes are all but the ``held_back``
    largest, and those of them opened since.

    :param rollout_K: ``(K,)`` rollout sizes, ascending, ``K >= 2``.
    :param seeds_K: ``(K,)`` seeds each size has trained so far.
    :param fit: the fit of every branch so far (each seed its own point), ``None`` where too few reached the target.
    :param stop_ratio: the widest ``b_crit_high / b_crit_low`` at which the design stops (> 1).
    :param most_seeds: the most seeds a size may train.
    :param held_back: the largest sizes that train only once opened (at most ``K − 2``: two sizes start).
    """
    if len(rollout_K) != len(seeds_K) or len(rollout_K) < 2 or list(rollout_K) != sorted(set(rollout_K)):
        raise ValueError("rollout_K must hold 2 or more ascending sizes, and seeds_K one count per size")
    if not 0 <= held_back <= len(rollout_K) - 2:
        raise ValueError(f"held_back must leave at least 2 of the {len(rollout_K)} sizes open, got {held_back}")
    trained = [k for k, seeds in enumerate(seeds_K) if seeds > 0]
    n_open = max(len(rollout_K) - held_back, trained[-1] + 1 if trained else 0)
    if precise_enough(fit, stop_ratio):
        return []
    past = fit is not None and math.isinf(fit.b_crit_high) and fit.b_crit >= rollout_K[n_open - 1]
    if past and n_open < len(rollout_K) and all(seeds_K[k] > 0 for k in range(n_open)):
        return [n_open]
    chosen = sizes_around(rollout_K[:n_open], fit.b_crit) if fit is not None and fit.identified else range(n_open)
    return [k for k in chosen if seeds_K[k] < most_seeds]
