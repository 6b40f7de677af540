"""The steps-experience tradeoff of McCandlish et al. 2018 (§2.3, eq. 2.11-2.12) and its fit.

For a fixed target, training with batch ``B`` takes ``S(B) = S_min + E_min / B`` optimiser steps
and ``E(B) = B·S = B·S_min + E_min`` examples, i.e. ``(S/S_min − 1)(E/E_min − 1) = 1``, with the
critical batch ``B_crit = E_min / S_min``. In rl-gns, ``B`` is the rollout size (agent steps per
PPO iteration), ``S`` PPO iterations and ``E`` agent steps.

Shape glossary: ``K`` batch sizes, ``R`` seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import t as student_t

from rl_gns.core.maths.noise_scale import fieller_interval

#: Fewest distinct sizes whose steps identify ``S_min`` and ``E_min``: the two-parameter curve passes exactly through
#: any two points, so two sizes fit with no residual and test nothing.
MIN_FIT_SIZES = 3


@dataclass(frozen=True)
class TradeoffFit:
    """A fitted ``S(B) = s_min + e_min / B``."""

    s_min: float
    """Fewest steps (PPO iterations) to the target, as ``B → ∞``."""
    e_min: float
    """Least experience (agent steps) to the target, as ``B → 0``."""
    rms_log_residual: float
    """Root mean square of ``log S − log S(B)`` over the fitted points (0.1 ≈ 10 % scatter)."""

    @property
    def b_crit(self) -> float:
        """Critical batch ``B_crit = E_min / S_min`` (eq. 2.12): 2·S_min steps and 2·E_min experience there."""
        return self.e_min / self.s_min

    @property
    def b_crit_20pct(self) -> float:
        """Zhang et al. (2410.21676): the batch where steps exceed perfect linear scaling by 20 %;
        ``0.2 · B_crit`` under this model."""
        return 0.2 * self.b_crit

    def steps(self, batch: np.ndarray | float) -> np.ndarray:
        """``S(B) = s_min + e_min / B``."""
        return self.s_min + self.e_min / np.asarray(batch, dtype=float)

    def experience(self, batch: np.ndarray | float) -> np.ndarray:
        """``E(B) = B·s_min + e_min``."""
        return np.asarray(batch, dtype=float) * self.s_min + self.e_min


def fit_tradeoff(batch_K: np.ndarray, steps_K: np.ndarray) -> TradeoffFit:
    """Least-squares fit of ``log S`` against ``log(S_min + E_min / B)`` (McCandlish et al., App. D).

    Fitting in log space weighs every batch size equally whatever its step count. The parameters
    are fitted as logs, so both stay positive.

    :param batch_K: ``(K,)`` batch sizes ``B`` (rollout sizes, agent steps), ``K >= 2`` distinct.
    :param steps_K: ``(K,)`` steps ``S`` to the target at each batch size (PPO iterations), all > 0.
    """
    batch_K = np.asarray(batch_K, dtype=float)
    steps_K = np.asarray(steps_K, dtype=float)
    if batch_K.shape != steps_K.shape or batch_K.ndim != 1:
        raise ValueError(f"batch_K and steps_K must be 1-d of equal length, got {batch_K.shape} and {steps_K.shape}")
    if len(np.unique(batch_K)) < 2:
        raise ValueError("need at least 2 distinct batch sizes to fit S_min and E_min")
    if np.any(batch_K <= 0) or np.any(steps_K <= 0):
        raise ValueError("batch sizes and steps must be positive")
    log_s = np.log(steps_K)

    def residuals(log_params: np.ndarray) -> np.ndarray:
        s_min, e_min = np.exp(log_params)
        return np.log(s_min + e_min / batch_K) - log_s

    # start from the two regimes: S_min ~ the fewest steps, E_min ~ the least experience
    start = np.log([0.5 * steps_K.min(), 0.5 * (batch_K * steps_K).min()])
    result = least_squares(residuals, start, method="lm")
    s_min, e_min = np.exp(result.x)
    return TradeoffFit(float(s_min), float(e_min), float(np.sqrt(np.mean(result.fun**2))))


def tradeoff_curve(fit: TradeoffFit, e_over_e_min: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(E, S)`` on the hyperbola ``(S/S_min − 1)(E/E_min − 1) = 1`` for ``E/E_min > 1``."""
    x = np.asarray(e_over_e_min, dtype=float)
    if np.any(x <= 1):
        raise ValueError("E/E_min must exceed 1 on the hyperbola")
    return fit.e_min * x, fit.s_min * (1.0 + 1.0 / (x - 1.0))


@dataclass(frozen=True)
class LocalTradeoffFit:
    """``S(B) = s_min + e_min / B`` fitted to the steps of several seeds at each batch size, with the interval of
    ``B_crit = e_min / s_min`` from Fieller's theorem (:func:`fit_local_tradeoff`)."""

    s_min: float
    """Fewest steps (PPO iterations) to the target, as ``B → ∞``."""
    e_min: float
    """Least experience (agent steps) to the target, as ``B → 0``."""
    b_crit_low: float
    """Lower end of the ``level`` interval of ``B_crit``, agent steps; NaN where the data reject every ``B_crit >= 0``
    (``s_min`` significantly below zero: the steps fall faster than ``1 / B``, which the model cannot)."""
    b_crit_high: float
    """Upper end (``inf`` where ``s_min`` is not resolved from zero: the data do not bound ``B_crit`` above; NaN
    with ``b_crit_low``)."""
    level: float
    """Confidence level of the interval."""
    n_points: int
    """Branches fitted (batch sizes times seeds)."""

    @property
    def b_crit(self) -> float:
        """``e_min / s_min``; ``inf`` where ``s_min <= 0`` (every size still in the perfect-scaling regime)."""
        return self.e_min / self.s_min if self.s_min > 0 else math.inf

    @property
    def identified(self) -> bool:
        """Whether the data bound ``B_crit`` on both sides."""
        return math.isfinite(self.b_crit_high) and self.s_min > 0 and self.e_min > 0


def fit_local_tradeoff(batch_N: np.ndarray, steps_N: np.ndarray, level: float = 0.95) -> LocalTradeoffFit:
    """Fit ``S = s_min + e_min / B`` to ``N`` branches (every seed its own point) by weighted least squares, linear in
    ``(s_min, e_min)`` on the regressor ``1 / B``, with weights ``1 / Ŝ(B)²`` (steps scatter in proportion to
    their size; two passes), and give ``B_crit = e_min / s_min`` its interval by Fieller's theorem
    (:func:`~rl_gns.core.maths.noise_scale.fieller_interval`) with Student's ``t`` on ``N − 2`` degrees of freedom.

    Unlike a bootstrap over a few seeds, the interval keeps its level at small seed counts when the scatter is
    close to log-normal (``tests/test_tradeoff.py`` checks the coverage by simulation).

    :param batch_N: ``(N,)`` batch (rollout) sizes, agent steps; at least 2 distinct.
    :param steps_N: ``(N,)`` PPO iterations each branch took to its target, all > 0.
    :param level: confidence level.
    :raises ValueError: for fewer than 3 points or 2 distinct sizes, or non-positive values.
    """
    batch_N, steps_N = np.asarray(batch_N, dtype=float), np.asarray(steps_N, dtype=float)
    if batch_N.shape != steps_N.shape or batch_N.ndim != 1 or len(batch_N) < 3 or len(np.unique(batch_N)) < 2:
        raise ValueError("need at least 3 branches at 2 or more distinct batch sizes to fit S_min and E_min")
    if np.any(batch_N <= 0) or np.any(steps_N <= 0):
        raise ValueError("batch sizes and steps must be positive")
    design_N2 = np.stack([np.ones_like(batch_N), 1.0 / batch_N], axis=1)
    fitted_N = steps_N
    for _ in range(2):  # weights from the previous pass's fitted steps (the data's own in the first)
        # where that fit is not positive (s_min < 0 at large B) it gives no scale: the branch's own steps do
        weight_N = 1.0 / np.where(fitted_N > 0, fitted_N, steps_N) ** 2
        gram_22 = design_N2.T @ (weight_N[:, None] * design_N2)
        coef_2 = np.linalg.solve(gram_22, design_N2.T @ (weight_N * steps_N))
        fitted_N = design_N2 @ coef_2
    residual_N = steps_N - fitted_N
    dof = len(steps_N) - 2
    sigma2 = float(np.sum(weight_N * residual_N**2) / dof) if dof > 0 else math.inf
    cov_22 = sigma2 * np.linalg.inv(gram_22)
    t2 = float(student_t.ppf(0.5 + level / 2, max(dof, 1))) ** 2
    s_min, e_min = float(coef_2[0]), float(coef_2[1])
    low, high = fieller_interval(e_min, s_min, cov_22[1, 1], cov_22[0, 1], cov_22[0, 0], t2)
    return LocalTradeoffFit(s_min, e_min, low, high, level, len(steps_N))
