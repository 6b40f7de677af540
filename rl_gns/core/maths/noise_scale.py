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
from dataclasses import dataclass
from functools import cache

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


@dataclass(frozen=True)
class NoiseSums:
    """Pooled raw estimates: ``Σ g2``, ``Σ trace_sigma`` and their count, added across measurements, runs and seeds.

    The pooled noise scale is the ratio of the sums (:attr:`b_simple`), the paper's "averaged over
    training", never an average of per-measurement ratios.
    """

    g2: float = 0.0
    """``Σ g2`` of the pooled raw estimates."""
    trace_sigma: float = 0.0
    """``Σ trace_sigma`` of the pooled raw estimates."""
    count: int = 0
    """Measurements pooled."""

    @classmethod
    def of(cls, g2_T: np.ndarray, trace_sigma_T: np.ndarray) -> NoiseSums:
        """Pool ``(T,)`` raw estimates; NaN entries (iterations without a measurement) are skipped."""
        g2_T, trace_sigma_T = np.asarray(g2_T, dtype=float), np.asarray(trace_sigma_T, dtype=float)
        measured = np.isfinite(g2_T) & np.isfinite(trace_sigma_T)
        return cls(float(g2_T[measured].sum()), float(trace_sigma_T[measured].sum()), int(measured.sum()))

    def __add__(self, other: NoiseSums) -> NoiseSums:
        return NoiseSums(self.g2 + other.g2, self.trace_sigma + other.trace_sigma, self.count + other.count)

    @property
    def b_simple(self) -> float:
        """``Σ trace_sigma / Σ g2`` (:func:`b_simple`): NaN where ``Σ g2 <= 0`` (not resolved)."""
        return b_simple(self.g2, self.trace_sigma)


def pool(sums: list[NoiseSums] | tuple[NoiseSums, ...]) -> NoiseSums:
    """The sum of several :class:`NoiseSums` (empty: nothing measured)."""
    return sum(sums, NoiseSums())


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


@dataclass(frozen=True)
class RatioInterval:
    """A pooled ``B_simple`` with its confidence interval (see :func:`b_simple_interval`), in samples."""

    point: float
    """``Σ trace_sigma / Σ g2``; NaN where ``Σ g2 <= 0``."""
    low: float
    """Lower bound (0 when the data bound nothing; NaN when they reject every ``B_simple >= 0``: ``Σ trace_sigma``
    significantly below 0)."""
    high: float
    """Upper bound; ``inf`` when ``|G|²`` is not resolved (then only ``B_simple > low`` is known); NaN with ``low``."""
    level: float = 0.95
    """Confidence level."""

    @property
    def resolved(self) -> bool:
        """Whether the interval is bounded: ``|G|²`` is resolved from zero at this level."""
        return math.isfinite(self.high)


def b_simple_interval(
    g2_T: np.ndarray, trace_sigma_T: np.ndarray, level: float = 0.95, n_batches: int | None = None
) -> RatioInterval:
    """Confidence interval of the pooled ``B_simple = Σ trace_sigma / Σ g2`` from correlated measurements.

    Consecutive measurements are correlated (parameters move slowly), so the ``T`` measurements are
    cut into ``k = round(T^(1/3))`` (at least 2) contiguous batches of ``floor(T/k)`` or ``ceil(T/k)``
    measurements, every measurement in one, and the batch sums ``x_b`` (of ``trace_sigma``) and ``y_b``
    (of ``g2``) are treated as independent. Few long batches keep the coverage near nominal under strong
    correlation (``benchmarks/interval_coverage.py``), at the price of a wider interval. Each batch has
    ``E[x_b - R y_b] = 0`` at the true ``R`` whatever its length, and Fieller's theorem gives the set of
    ratios ``R`` with

    .. math::

        (\\bar x - R \\bar y)^2 \\le t^2 (s_{xx} - 2 R s_{xy} + R^2 s_{yy}) / k,

    ``t`` the Student quantile with ``k - 1`` degrees of freedom and ``s`` the sample (co)variances of the
    batch sums. ``\\bar x / \\bar y`` is the pooled point, so the interval holds it whenever it is ``>= 0``.
    Where ``|G|²`` is resolved from zero (``\\bar y^2 > t^2 s_{yy}/k``) that set is a bounded interval;
    otherwise it is unbounded above and only the lower bound ``B_simple > low`` is reported.

    :param g2_T: ``(T,)`` raw ``g2`` estimates in measurement order; NaN entries (no measurement) are skipped.
    :param trace_sigma_T: ``(T,)`` raw ``trace_sigma`` estimates.
    :param level: confidence level.
    :param n_batches: ``k``; default ``max(2, round(T^(1/3)))``.
    :return: the pooled point and its interval; ``low = 0, high = inf`` with fewer than 4 measurements.
    """
    g2_T, trace_sigma_T = np.asarray(g2_T, dtype=float), np.asarray(trace_sigma_T, dtype=float)
    measured = np.isfinite(g2_T) & np.isfinite(trace_sigma_T)
    y, x = g2_T[measured], trace_sigma_T[measured]
    point = b_simple(float(y.sum()), float(x.sum())) if len(y) else math.nan
    k = max(2, round(len(y) ** (1 / 3))) if n_batches is None else min(n_batches, len(y))
    if k < 2 or len(y) < 4:
        return RatioInterval(point, 0.0, math.inf, level)
    x_b = np.array([batch.sum() for batch in np.array_split(x, k)])
    y_b = np.array([batch.sum() for batch in np.array_split(y, k)])
    cov = np.cov(np.stack([x_b, y_b]), ddof=1) / k
    t2 = student_t2(level, k - 1)
    low, high = fieller_interval(float(x_b.mean()), float(y_b.mean()), cov[0, 0], cov[0, 1], cov[1, 1], t2)
    return RatioInterval(point, low, high, level)


@cache
def student_t2(level: float, dof: int) -> float:
    """``t²``: the squared two-sided Student quantile of ``level`` with ``dof`` degrees of freedom (cached: a run
    logs an interval at every measurement, and SciPy's quantile costs more than the rest of the interval).

    :param level: confidence level, e.g. 0.95.
    :param dof: degrees of freedom, at least 1.
    """
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + level / 2, dof)) ** 2


def fieller_interval(num: float, den: float, v_num: float, v_num_den: float, v_den: float, t2: float) -> tuple[float, float]:
    """Fieller's confidence set for a ratio ``R = num / den`` of two estimates with covariance
    ``[[v_num, v_num_den], [v_num_den, v_den]]``: the ratios with

    .. math::

        (num - R \\cdot den)^2 \\le t^2 (v_{num} - 2 R v_{num,den} + R^2 v_{den}),

    clipped to ``R >= 0``: the ``R`` with ``a R^2 - 2 b R + c <= 0``, ``a = den^2 - t^2 v_{den}``,
    ``b = num \\cdot den - t^2 v_{num,den}``, ``c = num^2 - t^2 v_{num}``. Where ``den`` is resolved from zero
    (``a > 0``) the set is a bounded interval, which may lie wholly below 0: the data then reject every ratio
    ``R >= 0`` (``num / den`` significantly negative) and the set clipped to ``R >= 0`` is empty. Otherwise it is
    unbounded: every ratio (no real root), or two rays ``R <= r_-`` and ``R >= r_+``. When the lower ray reaches
    ``R >= 0`` the set clipped to ``R >= 0`` is ``[0, r_-] ∪ [r_+, ∞)``, reported as its hull ``(0, inf)``; else
    only the upper ray, ``(max(r_+, 0), inf)``. The returned interval holds every ratio of the set, ``num / den``
    among them when it is ``>= 0``.

    :param t2: the squared Student (or normal) quantile of the level.
    :return: ``(low, high)``; ``(nan, nan)`` for the empty set.
    """
    a = den**2 - t2 * v_den
    b = num * den - t2 * v_num_den
    c = num**2 - t2 * v_num
    disc = b * b - a * c
    if a > 0:  # a bounded interval (disc >= 0 here: the set contains num / den)
        root = math.sqrt(max(disc, 0.0))
        low, high = (b - root) / a, (b + root) / a
        return (max(low, 0.0), high) if high >= 0.0 else (math.nan, math.nan)
    if a == 0:  # one linear inequality, 2 b R >= c: an upper ray where b > 0, a lower one where b < 0
        if b > 0:
            return max(c / (2 * b), 0.0), math.inf
        if b < 0:
            return (0.0, c / (2 * b)) if c / (2 * b) >= 0.0 else (math.nan, math.nan)
        return (0.0, math.inf) if c <= 0 else (math.nan, math.nan)
    if disc < 0:  # every ratio is compatible with the data
        return 0.0, math.inf
    root = math.sqrt(disc)
    lower_ray_end, upper_ray_start = (b + root) / a, (b - root) / a  # a < 0: R <= lower_ray_end or R >= upper_ray_start
    if lower_ray_end >= 0.0:
        return 0.0, math.inf
    return max(upper_ray_start, 0.0), math.inf


class NoiseScaleTracker:
    """Everything measured of one (scheme, loss): the moving averages, every raw estimate in order, and their pooled
    sums, the one place an agent keeps them.

    :param scheme: how the batches were drawn (``envs``, ``minibatch``, ``ranks``, ...).
    :param loss: the measured loss (``policy``, ``value``, ``total``).
    :param beta: decay of the moving averages per measurement, in ``[0, 1)``.
    """

    def __init__(self, scheme: str, loss: str, beta: float = 0.95) -> None:
        self.scheme, self.loss = scheme, loss
        self.ema = NoiseScaleEMA(beta)
        self.g2_T: list[float] = []
        self.trace_sigma_T: list[float] = []

    def update(self, g2: float, trace_sigma: float) -> None:
        """Fold in one unbiased pair of estimates (both finite)."""
        self.ema.update(g2, trace_sigma)
        self.g2_T.append(g2)
        self.trace_sigma_T.append(trace_sigma)

    @property
    def n_measurements(self) -> int:
        return len(self.g2_T)

    @property
    def b_simple(self) -> float:
        """``B_simple`` of the moving averages (NaN before the first measurement)."""
        return self.ema.b_simple

    @property
    def sums(self) -> NoiseSums:
        """Every estimate so far, pooled."""
        return NoiseSums.of(np.asarray(self.g2_T), np.asarray(self.trace_sigma_T))

    def run_average(self) -> RatioInterval:
        """``Σ tr(Σ) / Σ |G|²`` over every measurement so far, with its 95 % interval (:func:`b_simple_interval`)."""
        return b_simple_interval(np.asarray(self.g2_T), np.asarray(self.trace_sigma_T))
