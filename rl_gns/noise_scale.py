"""The gradient noise scale: unbiased two-batch estimates and their moving averages.

Equations are those of McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch
Training" (arXiv 1812.06162), Appendix A.1. Notation:

- ``G`` the true gradient of the (mean) loss, ``Σ`` the per-example gradient covariance.
- ``g2`` an estimate of ``|G|²``; ``trace_sigma`` an estimate of ``tr(Σ)``.
- ``b_simple = tr(Σ) / |G|²`` (eq. 2.9), in examples (samples per gradient estimate).

For a batch of ``B`` i.i.d. examples, ``E|G_B|² = |G|² + tr(Σ)/B`` (eq. A.1), so two batch sizes
measured **at the same parameters** give one unbiased estimate of each term.
"""

from __future__ import annotations

import math

import numpy as np


def g2_and_trace(g2_small: float, g2_big: float, b_small: float, b_big: float) -> tuple[float, float]:
    """Unbiased estimates of ``|G|²`` and ``tr(Σ)`` from two batch sizes (1812.06162, eq. A.2-A.3).

    .. math::

        g2 = (B_{big}|G_{big}|^2 - B_{small}|G_{small}|^2) / (B_{big} - B_{small})

        trace\\_sigma = (|G_{small}|^2 - |G_{big}|^2) / (1/B_{small} - 1/B_{big})

    Both gradients must be means over their batch (not sums) and taken at the same parameters.
    When the big batch is split into ``k`` small batches, ``g2_small`` is the mean of the ``k``
    squared norms; then ``trace_sigma`` equals ``b_small`` times the unbiased sample variance of
    the ``k`` small-batch gradients.

    :param g2_small: ``|G_small|²``, squared norm of a small-batch mean gradient (mean over the small batches).
    :param g2_big: ``|G_big|²``, squared norm of the big-batch mean gradient.
    :param b_small: examples per small batch (samples).
    :param b_big: examples in the big batch (samples); must exceed ``b_small``.
    :return: ``(g2, trace_sigma)``; single estimates are noisy and ``g2`` can be negative.
    """
    if not b_big > b_small > 0:
        raise ValueError(f"need b_big > b_small > 0, got b_small={b_small}, b_big={b_big}")
    g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small)
    trace_sigma = (g2_small - g2_big) / (1.0 / b_small - 1.0 / b_big)
    return g2, trace_sigma


def b_simple(g2: float, trace_sigma: float) -> float:
    """Simple noise scale ``B_simple = tr(Σ) / |G|²`` (1812.06162, eq. 2.9), in examples.

    Pass averaged numerator and denominator (see :class:`NoiseScaleEMA`), never single
    estimates averaged after the division.

    :param g2: estimate of ``|G|²``.
    :param trace_sigma: estimate of ``tr(Σ)``.
    :return: the ratio, or NaN where ``g2 <= 0`` (the noise swamps the signal: no finite estimate).
    """
    if not g2 > 0:
        return math.nan
    return trace_sigma / g2


def cumulative_b_simple(g2_T: np.ndarray, trace_sigma_T: np.ndarray) -> np.ndarray:
    """``B_simple`` averaged over training so far: ``Σ_{t'<=t} trace_sigma / Σ_{t'<=t} g2`` after each measurement.

    The paper's "averaged over training"; far steadier than a moving average where ``B_simple``
    greatly exceeds ``b_big`` (single ``g2`` estimates are then mostly noise).

    :param g2_T: ``(T,)`` raw ``g2`` estimates in measurement order; NaN entries (no measurement) are skipped.
    :param trace_sigma_T: ``(T,)`` raw ``trace_sigma`` estimates, NaN where ``g2_T`` is.
    :return: ``(T,)`` ratios; NaN while the cumulative ``g2`` is not positive.
    """
    g2_T = np.asarray(g2_T, dtype=float)
    trace_sigma_T = np.asarray(trace_sigma_T, dtype=float)
    measured = np.isfinite(g2_T) & np.isfinite(trace_sigma_T)
    g2_sum = np.cumsum(np.where(measured, g2_T, 0.0))
    trace_sum = np.cumsum(np.where(measured, trace_sigma_T, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(g2_sum > 0, trace_sum / g2_sum, np.nan)


class NoiseScaleEMA:
    """Separate exponential moving averages of ``g2`` and ``trace_sigma``, bias-corrected like Adam's.

    ``m_t = beta * m_{t-1} + (1 - beta) * x_t`` and the reported value is ``m_t / (1 - beta**t)``.
    The noise scale is the ratio of the two averages (the bias corrections cancel in it).

    :param beta: decay per update, in ``[0, 1)``; ``1 / (1 - beta)`` updates is the memory.
    """

    def __init__(self, beta: float = 0.95) -> None:
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"EMA beta must be in [0, 1), got {beta}")
        self.beta = beta
        self.n_updates = 0
        self._g2 = 0.0
        self._trace_sigma = 0.0

    def update(self, g2: float, trace_sigma: float) -> None:
        """Fold in one unbiased pair of estimates (both finite)."""
        if not (math.isfinite(g2) and math.isfinite(trace_sigma)):
            raise ValueError(f"non-finite estimate: g2={g2}, trace_sigma={trace_sigma}")
        self.n_updates += 1
        self._g2 = self.beta * self._g2 + (1.0 - self.beta) * g2
        self._trace_sigma = self.beta * self._trace_sigma + (1.0 - self.beta) * trace_sigma

    def _debias(self, value: float) -> float:
        if self.n_updates == 0:
            return math.nan
        return value / (1.0 - self.beta**self.n_updates)

    @property
    def g2(self) -> float:
        """Bias-corrected moving average of ``|G|²`` (NaN before the first update)."""
        return self._debias(self._g2)

    @property
    def trace_sigma(self) -> float:
        """Bias-corrected moving average of ``tr(Σ)`` (NaN before the first update)."""
        return self._debias(self._trace_sigma)

    @property
    def b_simple(self) -> float:
        """``EMA(trace_sigma) / EMA(g2)`` in examples; NaN while ``EMA(g2) <= 0``."""
        return b_simple(self.g2, self.trace_sigma)
