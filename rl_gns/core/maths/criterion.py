"""Criterion v8's metrics of a predictor of the critical rollout size (``docs/prediction-criterion.md``).

Shape glossary: ``P`` pairs (a game's fitted ``B_crit`` at one target, and each predictor's value there).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import spearmanr

#: A primary metric lower than both baselines' by no more than this is a tie, and a tie does not win.
TIE = 0.05
#: Games with a counted pair that a ranking needs, per regime.
GAMES_TO_RANK = 3
#: The constant baselines fixed in advance, agent steps per rollout, by regime.
CONSTANT_BASELINE = {"one-step": 450.0, "ppo": 746.0}


def log_errors(predicted_P: np.ndarray, fitted_P: np.ndarray) -> np.ndarray:
    """``(P,)`` ``|log10(predicted / fitted)|``; +∞ where a prediction is not a finite positive number (v8 counts a
    pair without a finite prediction as infinitely wrong)."""
    predicted_P, fitted_P = np.asarray(predicted_P, dtype=float), np.asarray(fitted_P, dtype=float)
    finite = np.isfinite(predicted_P) & (predicted_P > 0)
    safe = np.where(finite, predicted_P, 1.0)
    return np.where(finite, np.abs(np.log10(safe / fitted_P)), math.inf)


def median_log_error(predicted_P: np.ndarray, fitted_P: np.ndarray) -> float:
    """The primary metric: ``median_P |log10(predicted / fitted)|`` (:func:`log_errors`)."""
    return float(np.median(log_errors(predicted_P, fitted_P)))


def within(predicted_P: np.ndarray, fitted_P: np.ndarray, factor: float = 2.0) -> float:
    """The tertiary metric: the fraction of pairs whose prediction lies within ``factor`` of the fitted value."""
    return float(np.mean(log_errors(predicted_P, fitted_P) <= math.log10(factor)))


def rank_correlation(predicted_P: np.ndarray, fitted_P: np.ndarray) -> float:
    """The secondary metric: Spearman's rank correlation; NaN for a constant prediction or fewer than 3 pairs."""
    predicted_P = np.asarray(predicted_P, dtype=float)
    if len(predicted_P) < 3 or len(set(predicted_P.tolist())) < 2:
        return math.nan
    return float(spearmanr(predicted_P, fitted_P).statistic)


def leave_one_game_out(games_P: list[str], fitted_P: np.ndarray) -> np.ndarray:
    """``(P,)`` the leave-one-game-out constant: for each pair, the geometric mean of the fitted values of every pair
    of the other games (NaN where there is none)."""
    fitted_P = np.asarray(fitted_P, dtype=float)
    out = np.full(len(games_P), math.nan)
    for p, game in enumerate(games_P):
        others = [math.log10(b) for g, b in zip(games_P, fitted_P, strict=True) if g != game]
        if others:
            out[p] = 10 ** float(np.mean(others))
    return out


def ratio_range(predicted_P: np.ndarray, fitted_P: np.ndarray) -> tuple[float, float]:
    """``(min_P, max_P)`` of ``predicted / fitted``, rounded outward to 2 decimals: the validated error of a winner,
    so that a prediction ``P`` leaves ``B_crit`` within ``[P / max, P / min]`` on every pair it was judged on.

    :raises ValueError: where a prediction is not a finite positive number (a winner has none such).
    """
    ratio_P = np.asarray(predicted_P, dtype=float) / np.asarray(fitted_P, dtype=float)
    if not (np.all(np.isfinite(ratio_P)) and np.all(ratio_P > 0)):
        raise ValueError(f"predicted / fitted must be finite and positive on every pair, got {ratio_P}")
    return math.floor(100 * float(ratio_P.min())) / 100, math.ceil(100 * float(ratio_P.max())) / 100


def ratio_spread(predicted_P: np.ndarray, fitted_P: np.ndarray) -> tuple[float, float, float]:
    """``(median, min, max)`` over the pairs of ``predicted / fitted``: where a predictor sits against the fitted
    ``B_crit`` and how far its pairs spread. The median is ``10 ** median_P log10(predicted / fitted)`` (the middle
    ratio, or the geometric mean of the two middle ones). A prediction that is not a finite positive number counts as
    ``+∞`` (no finite prediction, as :func:`log_errors` counts it).

    :raises ValueError: for no pairs.
    """
    predicted_P, fitted_P = np.asarray(predicted_P, dtype=float), np.asarray(fitted_P, dtype=float)
    if len(predicted_P) == 0:
        raise ValueError("a spread needs at least one pair")
    finite = np.isfinite(predicted_P) & (predicted_P > 0)
    log_ratio_P = np.where(finite, np.log10(np.where(finite, predicted_P, 1.0) / fitted_P), math.inf)
    return float(10 ** np.median(log_ratio_P)), float(10 ** log_ratio_P.min()), float(10 ** log_ratio_P.max())


def winners(primary: dict[str, float], baselines: dict[str, float]) -> list[str]:
    """Candidates whose primary metric beats every baseline's by more than :data:`TIE`, best first."""
    bar = min(baselines.values(), default=math.inf)
    won = [name for name, value in primary.items() if value < bar - TIE]
    return sorted(won, key=lambda name: primary[name])


def fastest(steps_by_run: Mapping[str, float]) -> str:
    """The kept run of one seed at one size and target: the run that reached the target in fewest steps, the first
    in name order among equals (v8: the fastest learning rate per seed).

    :param steps_by_run: steps to the target (PPO iterations) of every run that reached it, by run name (at least one).
    """
    return min(sorted(steps_by_run), key=lambda name: steps_by_run[name])


def at_edge(rate: float, grid_R: Sequence[float]) -> bool:
    """Whether a kept learning ``rate`` is the lowest or highest of its size's grid of at least 3 rates (a grid of 1 or
    2 has no inside): the best rate may then lie outside the grid, and the size's steps ``S`` be too high.

    :param rate: the kept rate (:func:`fastest`).
    :param grid_R: ``(R,)`` every learning rate tried at the size.
    """
    return len(grid_R) >= 3 and rate in (min(grid_R), max(grid_R))


def beyond_edge(grid_R: Sequence[float], kept_S: Sequence[float], n_seeds: int, factor: float) -> float | None:
    """Criterion v8's edge rule at one size and target: the learning rate one ``factor`` beyond the grid's lowest rate
    (``grid[0] / factor``) or highest (``grid[-1] · factor``) where a majority of the ``n_seeds`` seeds kept that
    rate; ``None`` where neither end holds a majority, or the grid has fewer than 3 rates (it has no inside).

    :param grid_R: ``(R,)`` every learning rate tried at the size.
    :param kept_S: the kept rate of each seed that reached the target (:func:`fastest`), ``S <= n_seeds``.
    :param n_seeds: seeds run at the size: a majority is more than half of them, reached or not.
    :param factor: the ratio between neighbouring rates of the grid (> 1).
    """
    grid = sorted(grid_R)
    if len(grid) < 3:
        return None
    for end, beyond in ((grid[0], grid[0] / factor), (grid[-1], grid[-1] * factor)):
        if 2 * sum(rate == end for rate in kept_S) > n_seeds:
            return beyond
    return None
