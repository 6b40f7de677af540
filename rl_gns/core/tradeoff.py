"""The steps-experience tradeoff of McCandlish et al. 2018 (§2.3, eq. 2.11-2.12) and its fit.

For a fixed target, training with batch ``B`` takes ``S(B) = S_min + E_min / B`` optimiser steps
and ``E(B) = B·S = B·S_min + E_min`` examples, i.e. ``(S/S_min − 1)(E/E_min − 1) = 1``, with the
critical batch ``B_crit = E_min / S_min``. In rl-gns, ``B`` is the rollout size (agent steps per
PPO iteration), ``S`` PPO iterations and ``E`` agent steps.

Shape glossary: ``K`` batch sizes, ``R`` seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares


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
