"""The tradeoff model and fit against closed forms and noisy points generated on the hyperbola."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm
from scipy.stats import t as student_t

from rl_gns.core.maths.tradeoff import (
    TradeoffFit,
    censored_profile,
    experience_falls,
    fit_censored_tradeoff,
    fit_local_tradeoff,
    fit_tradeoff,
    fit_with_censored,
    seed_scatter,
    tradeoff_curve,
)


def test_closed_form_at_b_crit():
    fit = TradeoffFit(s_min=100.0, e_min=1e5, rms_log_residual=0.0)
    assert fit.b_crit == 1000.0
    assert fit.b_crit_20pct == 200.0
    # at B = B_crit training takes twice the minimal steps and twice the minimal experience
    assert fit.steps(1000.0) == 200.0 and fit.experience(1000.0) == 2e5
    # at B = 0.2 B_crit steps are 6 S_min = (1 + 1/0.2) S_min, experience 1.2 E_min
    assert fit.steps(200.0) == pytest.approx(600.0) and fit.experience(200.0) == pytest.approx(1.2e5)


def test_curve_is_the_hyperbola():
    fit = TradeoffFit(s_min=50.0, e_min=2e4, rms_log_residual=0.0)
    e, s = tradeoff_curve(fit, np.array([1.5, 2.0, 11.0]))
    np.testing.assert_allclose((s / fit.s_min - 1) * (e / fit.e_min - 1), 1.0)
    np.testing.assert_allclose(s, [150.0, 100.0, 55.0])
    with pytest.raises(ValueError):
        tradeoff_curve(fit, np.array([1.0]))


def test_fit_recovers_exact_points():
    batch = np.geomspace(64, 16384, 7)
    fit = fit_tradeoff(batch, 80.0 + 3e5 / batch)
    assert fit.s_min == pytest.approx(80.0, rel=1e-6)
    assert fit.e_min == pytest.approx(3e5, rel=1e-6)
    assert fit.rms_log_residual < 1e-8


def test_fit_recovers_parameters_from_noisy_points():
    """10 % log-normal scatter, 6 sizes spanning 64x, 50 draws: estimates centred on the truth."""
    rng = np.random.default_rng(0)
    batch = np.geomspace(128, 8192, 6)
    s_min, e_min = 40.0, 2e5  # B_crit = 5000: the sizes straddle it
    fits = [fit_tradeoff(batch, (s_min + e_min / batch) * np.exp(rng.normal(0, 0.1, batch.size))) for _ in range(50)]
    b_crit = np.array([f.b_crit for f in fits])
    assert np.median([f.s_min for f in fits]) == pytest.approx(s_min, rel=0.15)
    assert np.median([f.e_min for f in fits]) == pytest.approx(e_min, rel=0.1)
    assert np.median(b_crit) == pytest.approx(e_min / s_min, rel=0.2)
    assert np.median([f.rms_log_residual for f in fits]) == pytest.approx(0.1, rel=0.5)


@pytest.mark.parametrize(
    ("batch", "steps", "message"),
    [([100, 100], [5, 6], "2 distinct"), ([100, 200], [5, -1], "positive"), ([100, 200, 300], [5, 6], "equal length")],
)
def test_fit_rejects_bad_input(batch, steps, message):
    with pytest.raises(ValueError, match=message):
        fit_tradeoff(np.array(batch), np.array(steps))


def test_local_fit_recovers_exact_steps_and_its_interval_collapses():
    batch_N = np.repeat(128 * 2.0 ** np.arange(6), 2)
    fit = fit_local_tradeoff(batch_N, 50.0 + 50_000.0 / batch_N)
    assert fit.s_min == pytest.approx(50.0) and fit.e_min == pytest.approx(50_000.0) and fit.b_crit == pytest.approx(1000.0)
    assert fit.b_crit_low == pytest.approx(1000.0) and fit.b_crit_high == pytest.approx(1000.0) and fit.identified


@pytest.mark.parametrize(("b_crit", "sigma"), [(300.0, 0.15), (1000.0, 0.3), (5000.0, 0.05)])
def test_local_fit_interval_covers_at_its_level_with_three_seeds(b_crit, sigma):
    """6 sizes spanning 32x, 3 seeds each, log-normal scatter of the steps: the 95 % Fieller interval covers the
    true B_crit in 93-97 % of 2,000 simulated probes (binomial sd 0.5 %)."""
    rng = np.random.default_rng(0)
    batch_N = np.repeat(128 * 2.0 ** np.arange(6), 3)
    covered = 0
    for _ in range(2000):
        steps_N = (50.0 + 50.0 * b_crit / batch_N) * np.exp(rng.normal(0.0, sigma, len(batch_N)))
        fit = fit_local_tradeoff(batch_N, steps_N)
        covered += fit.b_crit_low <= b_crit <= fit.b_crit_high
    assert 0.93 <= covered / 2000 <= 0.97


def test_local_fit_says_when_b_crit_is_not_bounded():
    """Every size in the perfect-scaling regime (S ∝ 1/B): S_min is not resolved from zero, no upper bound."""
    batch_N = np.repeat([64.0, 128.0, 256.0], 2)
    steps_N = 100_000.0 / batch_N * np.array([1.0, 1.05, 0.97, 1.02, 1.01, 0.96])
    fit = fit_local_tradeoff(batch_N, steps_N)
    assert not fit.identified and math.isinf(fit.b_crit_high) and fit.b_crit_low > 256


def test_local_fit_says_when_the_data_reject_every_b_crit():
    """Steps that fall faster than 1/B (the experience to the target shrinks as the rollout grows, as when the largest
    rollouts reach a target within their first window of games): S_min lies significantly below zero, no B_crit >= 0
    fits, and the interval is empty rather than [0, a negative number]."""
    batch_N = np.repeat([128.0, 512.0, 2048.0], 3)
    steps_N = 200_000.0 / batch_N**1.5 * 40 * np.array([1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 0.9, 1.1, 1.0])
    fit = fit_local_tradeoff(batch_N, steps_N)
    assert fit.s_min < 0 and math.isnan(fit.b_crit_low) and math.isnan(fit.b_crit_high)
    assert not fit.identified and math.isinf(fit.b_crit)


def test_local_fit_weighs_by_the_steps_where_its_first_pass_predicts_none():
    """Alien's probe at 1.95M, its second target: the first pass (weights from the data) fits S_min < 0, so it predicts
    negative steps at 4,096. Weights from those would be infinite and the second pass singular; there the branch's own
    steps weigh it, and the fit ends in an interval, here unbounded."""
    batch_N = np.array([128, 128, 256, 256, 256, 512, 512, 2048, 2048, 4096, 4096, 4096], dtype=float)
    steps_N = np.array([891.55, 687.24, 263.49, 540.8, 1355.86, 294.01, 182.43, 4.02, 178.73, 11.23, 60.77, 51.74])
    fit = fit_local_tradeoff(batch_N, steps_N)
    assert math.isfinite(fit.s_min) and fit.e_min > 0 and not fit.identified and math.isinf(fit.b_crit_high)


def test_censored_profile_is_the_tobit_maximum():
    """The maximised log-likelihood and its ``a`` against a general-purpose optimiser on the same likelihood."""
    x_N = np.array([1.0, 1.4, 0.7, 1.2, 2.0, 1.9, 0.9])
    cens_N = np.array([False, False, False, False, True, True, False])

    def negative(params: np.ndarray, x: np.ndarray) -> float:
        a, log_sd = params
        z = (x - a) / math.exp(log_sd)
        return -float(np.sum(np.where(cens_N, norm.logsf(z), -log_sd - 0.5 * z**2)))

    rows = np.stack([x_N, 3.0 * x_N - 1.0])
    value_G, a_G = censored_profile(rows, cens_N)
    for g, x in enumerate(rows):
        best = minimize(
            negative,
            [x.mean(), math.log(x.std())],
            args=(x,),
            method="Nelder-Mead",
            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000},
        )
        assert value_G[g] == pytest.approx(-best.fun, abs=1e-7) and a_G[g] == pytest.approx(best.x[0], abs=1e-4)


def test_censored_fit_without_censoring_is_least_squares_in_log_steps_with_the_f_interval():
    """No branch censored: the point is :func:`fit_tradeoff`'s, and at each end of the interval the residual sum of
    squares of ``log S`` with ``b`` fixed (``a`` its mean residual) has grown by the F quantile."""
    rng = np.random.default_rng(3)
    batch_N = np.repeat(128 * 2.0 ** np.arange(6), 3)
    steps_N = 40.0 * (1 + 900.0 / batch_N) * np.exp(rng.normal(0.0, 0.25, len(batch_N)))
    fit = fit_censored_tradeoff(batch_N, steps_N, np.zeros(len(batch_N), dtype=bool))
    least = fit_tradeoff(batch_N, steps_N)
    assert fit.b_crit == pytest.approx(least.b_crit, rel=1e-5) and fit.s_min == pytest.approx(least.s_min, rel=1e-5)

    def ssr(b: float) -> float:
        residual_N = np.log(steps_N) - np.log1p(b / batch_N)
        return float(np.sum((residual_N - residual_N.mean()) ** 2))

    n = len(steps_N)
    f_quantile = student_t.ppf(0.975, n - 2) ** 2
    for end in (fit.b_crit_low, fit.b_crit_high):
        assert ssr(end) == pytest.approx(ssr(fit.b_crit) * (1 + f_quantile / (n - 2)), rel=1e-5)


def test_censored_fit_bounds_b_crit_with_the_branches_that_did_not_reach():
    """Steps at the three largest sizes exceed what one budget lets them train: dropping those branches leaves the
    lucky ones, and the fit of the reaching branches cannot bound B_crit above; taken as censored, they do."""
    batch_N = np.repeat(256 * 2.0 ** np.arange(6), 3)
    true_N = 30.0 * (1 + 2_000.0 / batch_N)
    scatter_N = np.tile([0.8, 1.0, 1.25], 6)
    steps_N = true_N * scatter_N
    budget = 30.0 * (8_192 + 2_000) * 0.9  # agent steps: below the largest size's steps, above the smaller sizes'
    censored_N = steps_N * batch_N > budget
    trained_N = np.where(censored_N, budget / batch_N, steps_N)
    assert 0 < censored_N.sum() < len(batch_N) - 3
    reached = fit_local_tradeoff(batch_N[~censored_N], steps_N[~censored_N])
    censored = fit_censored_tradeoff(batch_N, trained_N, censored_N)
    assert censored.identified and censored.b_crit_low <= 2_000.0 <= censored.b_crit_high
    assert censored.b_crit_high < reached.b_crit_high


@pytest.mark.parametrize(("b_crit", "sigma", "budget_over_largest"), [(4000.0, 0.3, 1.2), (1000.0, 0.4, 1.0)])
def test_censored_fit_covers_at_its_level_when_a_budget_cuts_the_slow_branches(b_crit, sigma, budget_over_largest):
    """6 sizes spanning 32x, 3 seeds each, log-normal scatter; every branch trains at most ``budget_over_largest``
    times the expected experience at the largest size, and the slow ones stop there without reaching. The 95 %
    profile interval with those branches censored covers the true B_crit in 93-97.5 % of 600 simulated probes
    (binomial sd 0.9 %)."""
    rng = np.random.default_rng(0)
    batch_N = np.repeat(128 * 2.0 ** np.arange(6), 3)
    budget = budget_over_largest * 50.0 * (batch_N.max() + b_crit)
    covered = fitted = 0
    for _ in range(600):
        steps_N = 50.0 * (1 + b_crit / batch_N) * np.exp(rng.normal(0.0, sigma, len(batch_N)))
        censored_N = steps_N * batch_N > budget
        if (~censored_N).sum() < 3 or len(np.unique(batch_N[~censored_N])) < 2:
            continue
        fit = fit_censored_tradeoff(batch_N, np.where(censored_N, budget / batch_N, steps_N), censored_N)
        covered += fit.b_crit_low <= b_crit <= fit.b_crit_high
        fitted += 1
    assert fitted >= 550 and 0.93 <= covered / fitted <= 0.975


@pytest.mark.parametrize(
    ("batch", "steps", "censored", "message"),
    [
        ([128, 256, 512], [10.0, 8.0, 7.0], [False, False, True], "at least 3 reaching"),
        ([128, 128, 128, 256], [10.0, 8.0, 7.0, 6.0], [False, False, False, True], "2 or more distinct"),
        ([128, 256, 512], [10.0, 0.0, 7.0], [False, False, False], "positive"),
        ([128, 256], [10.0, 8.0, 7.0], [False, False, False], "equal length"),
    ],
)
def test_censored_fit_rejects_bad_input(batch, steps, censored, message):
    with pytest.raises(ValueError, match=message):
        fit_censored_tradeoff(np.array(batch, dtype=float), np.array(steps), np.array(censored))


@pytest.mark.parametrize("level", [0.0, 1.0, math.nan, -0.5])
def test_censored_fit_rejects_a_level_outside_0_1(level):
    with pytest.raises(ValueError, match="level must lie in"):
        fit_censored_tradeoff(np.array([128.0, 256.0, 512.0]), np.array([10.0, 8.0, 7.0]), np.zeros(3, dtype=bool), level)


def test_fit_with_censored_appends_the_censored_branches_after_the_reaching_ones():
    batch_N, steps_N = np.array([128.0, 256.0, 512.0, 1024.0]), np.array([90.0, 50.0, 31.0, 22.0])
    joined = fit_with_censored(batch_N, steps_N, [(2048.0, 18.0), (4096.0, 12.0)])
    direct = fit_censored_tradeoff(
        np.array([128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0]),
        np.array([90.0, 50.0, 31.0, 22.0, 18.0, 12.0]),
        np.array([False, False, False, False, True, True]),
    )
    assert joined == direct and joined.n_points == 6


def test_seed_scatter_pools_the_spread_within_each_size_whatever_the_curve():
    """Two sizes on any S(B): seeds at e^±1 about each size's own level give ss = 2 + 2, df = 2; a lone size adds
    nothing, and 6,000 log-normal seeds give back their σ."""
    batch = np.array([64, 64, 1024, 1024, 4096])
    steps = np.array([900 * math.e, 900 / math.e, 40 * math.e, 40 / math.e, 7.0])
    assert seed_scatter(batch, steps) == pytest.approx((4.0, 2))
    rng = np.random.default_rng(0)
    sizes = np.repeat([128, 512, 2048], 2000)
    ss, df = seed_scatter(sizes, 1e5 / sizes * np.exp(0.7 * rng.normal(size=sizes.size)))
    assert df == 5997 and math.sqrt(ss / df) == pytest.approx(0.7, rel=0.03)


def test_experience_falls_names_the_small_sizes_that_learn_slower_per_agent_step_than_the_scatter_allows():
    """E = B S at 64, 256, 1,024 with seeds at e^±0.5 about each size's level (σ̂ = 0.5 · sqrt(2) = 0.707 from the
    pairs): 64 at 8x the experience of 1,024 lies (ln 8 = 2.08) / (0.707 · 1) = 2.9 standard errors above it, 256 at
    1.5x only 0.57; on S(B) itself, whose E only grows with B, nothing is named."""
    batch = np.repeat([64.0, 256.0, 1024.0], 2)
    level_E = np.repeat([8 * 30_000.0, 1.5 * 30_000.0, 30_000.0], 2)
    E = level_E * np.exp(np.tile([0.5, -0.5], 3))
    assert experience_falls(batch, E / batch) == ([64.0], 1024.0)
    assert experience_falls(batch, E / batch, z=3.0) is None  # 2.9 standard errors: not past 3
    on_the_curve = 100.0 * (1 + 512 / batch) * np.exp(np.tile([0.5, -0.5], 3))
    assert experience_falls(batch, on_the_curve) is None
    assert experience_falls(np.array([64.0, 256.0, 1024.0]), np.array([5_000.0, 100.0, 20.0])) is None  # no scatter


def test_experience_falls_takes_the_least_experience_among_sizes_where_a_branch_reached_the_target():
    """Seeds that did not reach the target enter at the iterations they trained, a lower bound: at a size where none
    reached it, the least experience is that of the budget, not of learning, so it is no ``k*``. Every branch
    stopped by a budget of 250,000 agent steps (none reached): nothing is named, whatever the quantized budgets'
    scatter; 1,024 reached by none below the others' experience: ``k*`` is 256, where both seeds reached it."""
    batch = np.repeat([64.0, 256.0], 3)
    budget = np.array([3_861.0, 3_860.0, 3_860.0, 954.0, 954.0, 953.0])  # iterations of 64 and 256 near 250k
    assert experience_falls(batch, budget) == ([64.0], 256.0)  # taken as reaches, the budgets' tiny scatter names 64
    assert experience_falls(batch, budget, reached_N=np.zeros(6, dtype=bool)) is None
    batch = np.repeat([64.0, 256.0, 1024.0], 2)
    E = np.repeat([8 * 30_000.0, 30_000.0, 20_000.0], 2) * np.exp(np.tile([0.5, -0.5], 3))
    reached = np.array([True, True, True, True, False, False])
    assert experience_falls(batch, E / batch) == ([64.0], 1024.0)
    assert experience_falls(batch, E / batch, reached_N=reached) == ([64.0], 256.0)
