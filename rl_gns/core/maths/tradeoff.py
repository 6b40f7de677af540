"""The steps-experience tradeoff of McCandlish et al. 2018 (§2.3, eq. 2.11-2.12) and its fit.

For a fixed target, training with batch ``B`` takes ``S(B) = S_min + E_min / B`` optimiser steps
and ``E(B) = B·S = B·S_min + E_min`` examples, i.e. ``(S/S_min − 1)(E/E_min − 1) = 1``, with the
critical batch ``B_crit = E_min / S_min``. In rl-gns, ``B`` is the rollout size (agent steps per
PPO iteration), ``S`` PPO iterations and ``E`` agent steps.

Shape glossary: ``K`` batch sizes, ``R`` seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.special import log_ndtr
from scipy.stats import norm
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
        """Whether the data bound ``B_crit`` on both sides: a finite upper end and a positive estimate (a plain
        ``bool``, also where the fields are NumPy scalars, so that the records hold ``true`` or ``false``)."""
        return bool(math.isfinite(self.b_crit_high) and self.s_min > 0 and self.e_min > 0)


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


def censored_profile(offset_GN: np.ndarray, censored_N: np.ndarray, iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Profile log-likelihood of the normal model ``x_n = a + σ·ε_n`` with ``x_n`` a lower bound where ``censored_N``
    (Tobit): for each row ``g`` of ``offset_GN``, the maximum over ``a`` and ``σ`` of

    ``Σ_observed [−log σ − ½ ((x − a) / σ)²] + Σ_censored log Φ̄((x − a) / σ)`` (the constant ``−½ log 2π`` dropped).

    In Olsen's parameters ``δ = a / σ``, ``γ = 1 / σ`` the log-likelihood is concave, so damped Newton steps, all rows
    at once, find the maximum.

    :param offset_GN: ``(G, N)`` the values ``x``, one row per model.
    :param censored_N: ``(N,)`` bool, where ``x`` only bounds the value from below.
    :param iterations: Newton steps.
    :returns: ``(G,)`` maximised log-likelihoods and ``(G,)`` the ``a`` that maximises each.
    """
    x_GN = np.asarray(offset_GN, dtype=float)
    cens_N = np.asarray(censored_N, dtype=bool)
    observed = x_GN[:, ~cens_N]
    sd_G = np.maximum(observed.std(axis=1), 1e-6 * (1.0 + np.abs(observed).mean(axis=1)))
    gamma_G, delta_G = 1.0 / sd_G, observed.mean(axis=1) / sd_G

    def loglik(delta: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        z = gamma[:, None] * x_GN - delta[:, None]
        return np.where(cens_N, log_ndtr(-z), np.log(gamma)[:, None] - 0.5 * z**2).sum(axis=1)

    value_G = loglik(delta_G, gamma_G)
    for _ in range(iterations):
        z = gamma_G[:, None] * x_GN - delta_G[:, None]
        mills = np.exp(norm.logpdf(z) - log_ndtr(-z))  # φ(z) / Φ̄(z), the censored points' pull
        curve = mills * (mills - z)  # in (0, 1)
        d_delta = np.where(cens_N, mills, z).sum(axis=1)
        d_gamma = np.where(cens_N, -mills * x_GN, -z * x_GN).sum(axis=1) + (~cens_N).sum() / gamma_G
        h_dd = -np.where(cens_N, curve, 1.0).sum(axis=1)
        h_dg = np.where(cens_N, curve * x_GN, x_GN).sum(axis=1)
        h_gg = -np.where(cens_N, curve * x_GN**2, x_GN**2).sum(axis=1) - (~cens_N).sum() / gamma_G**2
        det = h_dd * h_gg - h_dg**2
        step_d = -(h_gg * d_delta - h_dg * d_gamma) / det
        step_g = -(h_dd * d_gamma - h_dg * d_delta) / det
        scale = np.ones_like(gamma_G)
        for _ in range(30):  # halve each row's step until it stays at γ > 0 and does not lower the likelihood
            new_g = gamma_G + scale * step_g
            new_d = delta_G + scale * step_d
            ok = new_g > 0
            new_value = np.where(ok, loglik(new_d, np.where(ok, new_g, 1.0)), -np.inf)
            better = new_value >= value_G
            if better.all():
                break
            scale = np.where(better, scale, 0.5 * scale)
        take = new_value >= value_G
        gamma_G, delta_G = np.where(take, new_g, gamma_G), np.where(take, new_d, delta_G)
        gain = np.where(take, new_value - value_G, 0.0)
        value_G = np.where(take, new_value, value_G)
        if gain.max() < 1e-10:
            break
    return value_G, delta_G / gamma_G


def _golden_max(function: Callable[[float], float], lo: float, hi: float, steps: int = 20) -> float:
    """The argument in ``[lo, hi]`` that maximises a unimodal ``function``, by golden sections."""
    for _ in range(steps):
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        lo, hi = (lo, m2) if function(m1) >= function(m2) else (m1, hi)
    return 0.5 * (lo + hi)


def _crossing(function: Callable[[float], float], floor: float, inside: float, outside: float, steps: int = 16) -> float:
    """Where ``function`` of ``log b`` falls to ``floor`` between ``b = inside`` (at or above it) and ``b = outside``
    (below), by bisection on ``log b``; the last point found at or above it."""
    lo, hi = math.log(inside), math.log(outside)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if function(mid) >= floor else (lo, mid)
    return math.exp(lo)


def fit_censored_tradeoff(
    batch_N: np.ndarray, steps_N: np.ndarray, censored_N: np.ndarray, level: float = 0.95
) -> LocalTradeoffFit:
    """Fit ``S = s_min (1 + b / B)`` with ``b = B_crit`` to branches that reached the target (``S`` observed) and to
    branches that did not (``S`` above the steps they trained: right-censored), with log-normal scatter of ``S``, and
    give ``B_crit`` its profile-likelihood interval.

    ``log S_n = a + log(1 + b / B_n) + σ ε_n``; for each ``b`` on a grid (``0``, log-spaced, and the limit ``b → ∞``,
    ``S = E_min / B``) the likelihood is maximised over ``a = log s_min`` and ``σ`` (:func:`censored_profile`), and the
    interval is ``{b : 2 (ℓ_max − ℓ(b)) <= N log(1 + t²/(N − 2))}``, with Student's ``t`` on ``N − 2`` degrees of
    freedom: without censoring this is the exact F interval of a model linear in ``a`` for fixed ``b``. Without
    censoring the point estimate is :func:`fit_tradeoff`'s least squares in ``log S``.

    A branch at a large size that did not reach the target is evidence that the steps there exceed its budget: a fit
    of the reaching branches alone drops it, and keeps the lucky seeds that did reach.

    :param batch_N: ``(N,)`` batch (rollout) sizes, agent steps.
    :param steps_N: ``(N,)`` PPO iterations to the target, or for a censored branch the iterations it trained.
    :param censored_N: ``(N,)`` bool, the branches that did not reach the target.
    :param level: confidence level.
    :raises ValueError: for fewer than 3 reaching branches or fewer than 2 distinct sizes among them, non-positive
        values, or a level outside (0, 1).
    """
    batch_N, steps_N = np.asarray(batch_N, dtype=float), np.asarray(steps_N, dtype=float)
    cens_N = np.asarray(censored_N, dtype=bool)
    if not (batch_N.shape == steps_N.shape == cens_N.shape) or batch_N.ndim != 1:
        raise ValueError("batch_N, steps_N and censored_N must be 1-d of equal length")
    if (~cens_N).sum() < 3 or len(np.unique(batch_N[~cens_N])) < 2:
        raise ValueError("need at least 3 reaching branches at 2 or more distinct batch sizes")
    if np.any(batch_N <= 0) or np.any(steps_N <= 0):
        raise ValueError("batch sizes and steps must be positive")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    n = len(steps_N)
    log_s = np.log(steps_N)

    def profile(b_G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # ℓ(b) and log s_min (log e_min at b = ∞)
        finite = np.isfinite(b_G)[:, None]
        bend_GN = np.where(finite, np.log1p(np.where(finite, b_G[:, None], 0.0) / batch_N), -np.log(batch_N))
        return censored_profile(log_s - bend_GN, cens_N)

    def at_log(log_b: float) -> float:
        return float(profile(np.array([math.exp(log_b)]))[0][0])

    # the grid's ends lie 1,000x past the sizes, and its limits b = 0 and b = ∞ are the two regimes' own models
    grid = np.concatenate([[0.0], np.geomspace(batch_N.min() / 1e3, batch_N.max() * 1e3, 121), [math.inf]])
    value = profile(grid)[0]
    best = int(np.argmax(value))
    inner = 0 < best < len(grid) - 1
    b_hat = math.exp(_golden_max(at_log, math.log(grid[max(best - 1, 1)]), math.log(grid[best + 1]))) if inner else grid[best]
    top, intercept = profile(np.array([b_hat]))
    value_max, a_hat = max(float(top[0]), float(value[best])), float(intercept[0])
    t2 = float(student_t.ppf(0.5 + level / 2, n - 2)) ** 2
    floor = value_max - 0.5 * n * math.log1p(t2 / (n - 2))
    inside = value >= floor
    first, last = int(np.argmax(inside)), len(grid) - 1 - int(np.argmax(inside[::-1]))
    # an end of the interval between two finite grid points is bisected; next to b = 0 or ∞ it is the grid point
    low = 0.0 if first == 0 else grid[1] if first == 1 else _crossing(at_log, floor, grid[first], grid[first - 1])
    high = (
        math.inf
        if last == len(grid) - 1
        else grid[-2]
        if last == len(grid) - 2
        else _crossing(at_log, floor, grid[last], grid[last + 1])
    )
    s_min = 0.0 if math.isinf(b_hat) else math.exp(a_hat)
    e_min = math.exp(a_hat) if math.isinf(b_hat) else b_hat * s_min
    return LocalTradeoffFit(s_min, e_min, low, high, level, n)


def fit_with_censored(
    batch_N: np.ndarray, steps_N: np.ndarray, censored: Sequence[tuple[float, float]], level: float = 0.95
) -> LocalTradeoffFit:
    """:func:`fit_censored_tradeoff` of the branches that reached the target and of those that did not.

    :param batch_N: ``(N,)`` batch (rollout) sizes of the branches that reached it, agent steps.
    :param steps_N: ``(N,)`` their PPO iterations to it.
    :param censored: ``(batch size, bound)`` of each branch that did not: a lower bound on its PPO iterations.
    :param level: confidence level.
    """
    batch = np.concatenate([np.asarray(batch_N, dtype=float), [size for size, _ in censored]])
    steps = np.concatenate([np.asarray(steps_N, dtype=float), [bound for _, bound in censored]])
    return fit_censored_tradeoff(batch, steps, np.arange(len(batch)) >= len(batch_N), level)


def seed_scatter(batch_N: np.ndarray, steps_N: np.ndarray) -> tuple[float, int]:
    """The scatter of ``ln S`` between seeds at one rollout size, as its pooled sum of squares and degrees of freedom.

    ``ss = Σ_k Σ_{n ∈ k} (ln S_n − mean_{n' ∈ k} ln S_{n'})²`` over the sizes ``k``, ``df = N − K`` (a size with one
    branch adds nothing); ``sqrt(ss / df)``, pooled over sizes and probes, is the standard deviation of ``ln S``
    between seeds that the fit of ``S(B)`` sees, whatever the bend.

    :param batch_N: ``(N,)`` rollout sizes of the branches, agent steps.
    :param steps_N: ``(N,)`` their PPO iterations to the target (> 0).
    :return: ``(ss, df)``.
    """
    batch, log_S = np.asarray(batch_N, dtype=float), np.log(np.asarray(steps_N, dtype=float))
    ss, df = 0.0, 0
    for size in np.unique(batch):
        at_size = log_S[batch == size]
        ss, df = ss + float(np.sum((at_size - at_size.mean()) ** 2)), df + len(at_size) - 1
    return ss, df


def experience_falls(
    batch_N: np.ndarray, steps_N: np.ndarray, z: float = 2.0, reached_N: np.ndarray | None = None
) -> tuple[list[float], float] | None:
    """The rollout sizes below the one that reached the target with the least experience, whose experience exceeds it
    by more than the seeds' scatter allows: there ``S`` falls faster than ``1 / B``, which ``S(B) = S_min (1 + B_crit
    / B)`` does not allow (its ``E = B S`` never falls as ``B`` grows).

    With ``ℓ_k`` the mean of ``ln E_n = ln(B_n S_n)`` over the ``n_k`` branches of size ``k``, ``k*`` the size of the
    least ``ℓ_k`` among those where a branch reached the target, and ``σ̂² = ss / df`` the scatter between seeds
    (:func:`seed_scatter`), a size ``k`` with ``B_k < B_k*`` is returned where
    ``(ℓ_k − ℓ_k*) / (σ̂ sqrt(1 / n_k + 1 / n_k*)) > z``.

    :param batch_N: ``(N,)`` rollout sizes of the branches, agent steps.
    :param steps_N: ``(N,)`` their PPO iterations to the target (> 0); a branch that did not reach it may be given
        at the iterations it trained, a lower bound that only makes its size look faster.
    :param z: standard errors of the difference (2: about 2.3 % one-sided for one size, by chance).
    :param reached_N: ``(N,)`` whether each branch reached the target (default: every one did); a size none of whose
        branches reached it is no ``k*``, as its experience is a lower bound.
    :return: ``(the sizes, ascending; B_k*)``, or ``None`` where no size is returned, no branch reached the target,
        or there is no scatter to judge by (no size with two branches).
    """
    batch, log_E = np.asarray(batch_N, dtype=float), np.log(np.asarray(batch_N, dtype=float) * np.asarray(steps_N))
    reached = np.ones(batch.shape, dtype=bool) if reached_N is None else np.asarray(reached_N, dtype=bool)
    ss, df = seed_scatter(batch, np.asarray(steps_N, dtype=float))
    if df == 0 or ss == 0 or not reached.any():
        return None
    sigma = math.sqrt(ss / df)
    sizes = np.unique(batch)
    mean_K = np.array([log_E[batch == size].mean() for size in sizes])
    count_K = np.array([np.sum(batch == size) for size in sizes])
    best = int(np.argmin(np.where([reached[batch == size].any() for size in sizes], mean_K, np.inf)))
    standard_K = sigma * np.sqrt(1 / count_K + 1 / count_K[best])
    falls = [float(sizes[k]) for k in range(best) if (mean_K[k] - mean_K[best]) / standard_K[k] > z]
    return (falls, float(sizes[best])) if falls else None
