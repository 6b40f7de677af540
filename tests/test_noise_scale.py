"""The estimator maths against hand-computed values and synthetic gradients of known statistics."""

import math

import numpy as np
import pytest

from rl_gns.core.maths.names import gns_key
from rl_gns.core.maths.noise_scale import (
    NoiseScaleEMA,
    NoiseScaleTracker,
    NoiseSums,
    b_simple,
    b_simple_interval,
    cumulative_b_simple,
    fieller_interval,
    g2_and_trace,
    student_t2,
)


@pytest.mark.parametrize(("dof", "t"), [(1, 12.7062047), (4, 2.7764451), (10**9, 1.9599640)])
def test_student_t2_is_the_squared_two_sided_quantile(dof, t):
    """Tabled 97.5 % Student quantiles: 1 and 4 degrees of freedom, and the normal limit."""
    assert student_t2(0.95, dof) == pytest.approx(t**2, rel=1e-7)


@pytest.mark.parametrize(
    ("g2_small", "g2_big", "b_small", "b_big", "g2", "trace_sigma"),
    [
        # g2 = (4*2 - 1*5) / 3 = 1;  trace = (5 - 2) / (1 - 1/4) = 4
        (5.0, 2.0, 1, 4, 1.0, 4.0),
        # g2 = (64*1.5 - 16*3.5) / 48 = 5/6;  trace = 2 / (1/16 - 1/64) = 128/3
        (3.5, 1.5, 16, 64, 5.0 / 6.0, 128.0 / 3.0),
        # noise-dominated: small-batch norm barely above big-batch norm, g2 comes out negative
        (1.0, 0.9, 32, 64, (64 * 0.9 - 32 * 1.0) / 32, 0.1 / (1 / 32 - 1 / 64)),
    ],
)
def test_g2_and_trace_hand_computed(g2_small, g2_big, b_small, b_big, g2, trace_sigma):
    assert g2_and_trace(g2_small, g2_big, b_small, b_big) == pytest.approx((g2, trace_sigma))


@pytest.mark.parametrize(("b_small", "b_big"), [(4, 4), (8, 4), (0, 4)])
def test_g2_and_trace_rejects_bad_sizes(b_small, b_big):
    with pytest.raises(ValueError, match="b_big > b_small"):
        g2_and_trace(1.0, 1.0, b_small, b_big)


def test_b_simple_is_nan_without_signal():
    assert b_simple(2.0, 10.0) == 5.0
    assert math.isnan(b_simple(0.0, 10.0))
    assert math.isnan(b_simple(-1.0, 10.0))


def test_ema_bias_correction_and_ratio_of_averages():
    ema = NoiseScaleEMA(beta=0.9)
    assert math.isnan(ema.b_simple)
    ema.update(2.0, 10.0)
    # bias-corrected: after one update the average is the value itself
    assert (ema.g2, ema.trace_sigma) == pytest.approx((2.0, 10.0))
    ema.update(-1.0, 30.0)
    # m = 0.9*0.1*2 + 0.1*(-1) = 0.08, debiased by 1 - 0.81 = 0.19; likewise 0.09*10 + 0.1*30 = 3.9
    assert ema.g2 == pytest.approx(0.08 / 0.19)
    assert ema.trace_sigma == pytest.approx(3.9 / 0.19)
    # the ratio of the averages, not the average of the ratios (5 and -30)
    assert ema.b_simple == pytest.approx(3.9 / 0.08)
    with pytest.raises(ValueError, match="non-finite"):
        ema.update(float("nan"), 1.0)


def synthetic_estimates(rng, mean, scale, b_big, n_small, n_trials):
    """Per-example gradients ~ N(mean, diag(scale²)); returns (g2, trace) of each trial."""
    b_small = b_big // n_small
    estimates = np.empty((n_trials, 2))
    for t in range(n_trials):
        per_example = mean + scale * rng.standard_normal((b_big, mean.size))
        small_means = per_example.reshape(n_small, b_small, -1).mean(axis=1)  # means, not sums
        g2_small = np.mean(np.sum(small_means**2, axis=1))
        g2_big = np.sum(small_means.mean(axis=0) ** 2)
        estimates[t] = g2_and_trace(g2_small, g2_big, b_small, b_big)
    return estimates


@pytest.mark.parametrize("n_small", [2, 4, 16])
def test_unbiased_on_synthetic_gradients(n_small):
    """|G|² and tr(Σ) recovered within 4 standard errors, whatever the number of small batches."""
    rng = np.random.default_rng(0)
    dim = 40
    mean = rng.normal(0.0, 0.1, dim)  # |G|² ≈ 0.4
    scale = rng.uniform(0.5, 1.5, dim)  # tr(Σ) ≈ 40, B_simple ≈ 100 samples
    true_g2, true_trace = float(mean @ mean), float(np.sum(scale**2))
    est = synthetic_estimates(rng, mean, scale, b_big=64, n_small=n_small, n_trials=4000)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert abs(est[:, 0].mean() - true_g2) < 4 * se[0]
    assert abs(est[:, 1].mean() - true_trace) < 4 * se[1]
    # the stated tolerance is meaningful: a few percent of the truth
    assert 4 * se[1] < 0.05 * true_trace


def test_sums_instead_of_means_are_off_by_batch_size():
    """Feeding summed gradients biases tr(Σ) by orders of magnitude: the estimator needs means."""
    rng = np.random.default_rng(1)
    mean, scale, b_big, n_small = np.full(10, 0.2), np.ones(10), 64, 4
    b_small = b_big // n_small
    trace_means, trace_sums = [], []
    for _ in range(500):
        x = mean + scale * rng.standard_normal((b_big, 10))
        small = x.reshape(n_small, b_small, -1)
        for reduce, out in ((np.mean, trace_means), (np.sum, trace_sums)):
            g_small = reduce(small, axis=1)
            g_big = reduce(x, axis=0)
            out.append(g2_and_trace(np.mean(np.sum(g_small**2, 1)), np.sum(g_big**2), b_small, b_big)[1])
    assert np.mean(trace_means) == pytest.approx(10.0, rel=0.1)
    assert not 0.5 < np.mean(trace_sums) / 10.0 < 2.0


def test_ema_ratio_converges_to_true_b_simple():
    rng = np.random.default_rng(2)
    dim = 30
    mean = np.full(dim, 0.15)  # |G|² = 0.675
    scale = np.full(dim, 1.5)  # tr(Σ) = 67.5, B_simple = 100
    true_b_simple = float(np.sum(scale**2) / (mean @ mean))
    ema = NoiseScaleEMA(beta=0.999)
    single_ratios = []
    for g2, trace in synthetic_estimates(rng, mean, scale, b_big=64, n_small=4, n_trials=3000):
        ema.update(g2, trace)
        single_ratios.append(trace / g2)
    assert ema.b_simple == pytest.approx(true_b_simple, rel=0.08)  # spread over seeds is ~2 %
    # single-estimate ratios are useless on their own (negative g2 happens): why the EMAs are separate
    assert min(single_ratios) < 0


def test_cumulative_b_simple_is_a_ratio_of_sums():
    g2 = np.array([2.0, np.nan, -1.0, 3.0])
    trace = np.array([10.0, np.nan, 30.0, 20.0])
    # sums after each measurement: g2 2, 2, 1, 4; trace 10, 10, 40, 60
    np.testing.assert_allclose(cumulative_b_simple(g2, trace), [5.0, 5.0, 40.0, 15.0])
    assert np.isnan(cumulative_b_simple(np.array([-1.0, 0.5]), np.array([1.0, 1.0]))).all()


def ar1_measurements(rng, T, phi, g2, trace, noise_g2, noise_trace):
    """``T`` correlated pairs: AR(1) noise with coefficient ``phi`` around the true ``(g2, trace)``."""
    eps = rng.normal(size=(T, 2)) * np.sqrt(1 - phi**2)
    noise = np.empty((T, 2))
    noise[0] = rng.normal(size=2)
    for t in range(1, T):
        noise[t] = phi * noise[t - 1] + eps[t]
    return g2 + noise_g2 * noise[:, 0], trace + noise_trace * noise[:, 1]


@pytest.mark.parametrize(("phi", "noise_g2"), [(0.0, 2.0), (0.7, 2.0), (0.7, 20.0)])
def test_b_simple_interval_covers_the_truth_95_percent_of_the_time(phi, noise_g2):
    """Correlated measurements, true B_simple = 100 / 1: resolved (noise 2) and mostly unresolved (noise 20)."""
    rng = np.random.default_rng(1)
    covered = 0
    reps = 600
    for _ in range(reps):
        g2_T, trace_T = ar1_measurements(rng, 100, phi, 1.0, 100.0, noise_g2, 30.0)
        interval = b_simple_interval(g2_T, trace_T)
        covered += interval.low <= 100.0 <= interval.high
    assert 0.92 <= covered / reps <= 0.985  # 95 % nominal; 600 reps give a standard error of 0.9 %


def test_b_simple_interval_without_batches_undercovers_correlated_data():
    """The check can fail: treating correlated measurements as independent (batches of one) covers far less."""
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(300):
        g2_T, trace_T = ar1_measurements(rng, 100, 0.9, 1.0, 100.0, 0.5, 30.0)
        x = trace_T
        y = g2_T
        r = x.mean() / y.mean()
        se = np.std(x - r * y, ddof=1) / np.sqrt(len(x)) / y.mean()
        covered += abs(r - 100.0) <= 1.96 * se
    assert covered / 300 < 0.8
    interval = b_simple_interval(g2_T, trace_T)
    assert interval.resolved and interval.low < interval.point < interval.high


def test_b_simple_interval_holds_its_own_point_whatever_the_first_measurements():
    """Every measurement is in a batch, so a point pulled by early measurements (the first iterations of a run, far
    from the rest) stays inside its interval, for lengths that are and are not multiples of the batch count."""
    rng = np.random.default_rng(5)
    for T in [4, 5, 9, 10, 28, 29, 100, 127, 873]:
        for _ in range(50):
            g2_T, trace_T = ar1_measurements(rng, T, 0.5, 1.0, 100.0, 0.3, 10.0)
            early = rng.integers(1, 4)
            trace_T[:early] *= rng.uniform(0.0, 20.0)
            interval = b_simple_interval(g2_T, trace_T)
            assert interval.low <= interval.point <= interval.high, (T, interval)


def test_b_simple_interval_reports_a_lower_bound_when_g2_is_not_resolved():
    rng = np.random.default_rng(3)
    g2_T, trace_T = rng.normal(0.0, 5.0, 400), rng.normal(100.0, 10.0, 400)
    interval = b_simple_interval(g2_T, trace_T)
    assert not interval.resolved and interval.low >= 0.0 and math.isinf(interval.high)
    few = b_simple_interval(np.array([1.0, 2.0, np.nan]), np.array([10.0, 20.0, np.nan]))
    assert few.point == pytest.approx(10.0) and (few.low, few.high) == (0.0, math.inf)


def test_fieller_interval_holds_every_ratio_of_its_set():
    """Against the set's definition on a grid: every R >= 0 with (num - R den)^2 <= t^2 (v_num - 2 R v_nd + R^2 v_den)
    lies in the returned interval, num / den among them, for resolved, unresolved and sign-changing denominators."""
    rng = np.random.default_rng(4)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, 1e6, 4000)])
    lower_ray_cases = empty_cases = 0
    for _ in range(2000):
        num, den = rng.normal(1.0, 1.0), rng.normal(1.0, 1.0)
        sd_num, sd_den = rng.uniform(0.05, 2.0, 2)
        v_nd = rng.uniform(-0.9, 0.9) * sd_num * sd_den
        t2 = 1.96**2
        low, high = fieller_interval(num, den, sd_num**2, v_nd, sd_den**2, t2)
        inside = (num - grid * den) ** 2 <= t2 * (sd_num**2 - 2 * grid * v_nd + grid**2 * sd_den**2)
        assert np.all((grid[inside] >= low * (1 - 1e-9)) & (grid[inside] <= high * (1 + 1e-9)))
        if num / den >= 0:
            assert low <= num / den <= high
        if math.isnan(low):  # the empty set: no ratio >= 0 fits, so none of the grid does
            assert math.isnan(high) and not inside.any()
            empty_cases += 1
        else:
            assert 0.0 <= low <= high
        lower_ray_cases += den**2 < t2 * sd_den**2 and (low, high) == (0.0, math.inf)
    assert lower_ray_cases > 0 and empty_cases > 0


def test_fieller_interval_is_empty_where_the_data_reject_every_ratio_at_least_zero():
    """num / den = -5 with both well resolved: the bounded set lies below 0, so nothing is left of it at R >= 0 (the
    interval was returned as [0, r_+] with r_+ < 0)."""
    assert all(math.isnan(end) for end in fieller_interval(-5.0, 1.0, 0.25, 0.0, 0.01, 1.96**2))
    assert all(math.isnan(end) for end in fieller_interval(1.0, 0.0, 0.01, 0.1, 0.0, 1.96**2))  # a = 0, b < 0: R <= -1.25


def test_fieller_interval_keeps_both_rays_when_the_lower_one_reaches_zero():
    """num and den both unresolved and strongly correlated: R <= r_- reaches positive ratios, so the hull is [0, inf)
    (reporting the upper ray alone claimed a lower bound above num / den = 0.5)."""
    num, den, v_num, v_nd, v_den, t2 = 0.5, 1.0, 4.0, 1.9, 1.0, 4.0
    a, b, c = den**2 - t2 * v_den, num * den - t2 * v_nd, num**2 - t2 * v_num
    r_minus, r_plus = (b + math.sqrt(b * b - a * c)) / a, (b - math.sqrt(b * b - a * c)) / a
    assert a < 0 and 0.5 < r_minus < r_plus
    assert fieller_interval(num, den, v_num, v_nd, v_den, t2) == (0.0, math.inf)


def test_noise_sums_pool_by_adding_numerators_and_denominators():
    a = NoiseSums.of(np.array([1.0, np.nan, 3.0]), np.array([10.0, np.nan, 50.0]))
    assert a == NoiseSums(4.0, 60.0, 2) and a.b_simple == pytest.approx(15.0)
    assert (a + NoiseSums(-4.0, 1.0, 1)).b_simple != (a + NoiseSums(-4.0, 1.0, 1)).b_simple  # Σ g2 = 0: NaN


def test_tracker_holds_the_moving_averages_every_estimate_and_their_pooled_sums():
    tracker = NoiseScaleTracker("envs", "value", beta=0.5)
    for g2, trace_sigma in ((1.0, 10.0), (3.0, 20.0)):
        tracker.update(g2, trace_sigma)
    assert tracker.n_measurements == 2 and tracker.sums == NoiseSums(4.0, 30.0, 2)
    # debiased EMAs with beta 0.5: g2 (0.25 + 1.5) / 0.75, trace_sigma (2.5 + 10) / 0.75, so B_simple = 12.5 / 1.75
    assert tracker.ema.g2 == pytest.approx(1.75 / 0.75) and tracker.b_simple == pytest.approx(12.5 / 1.75)
    assert tracker.run_average().point == pytest.approx(30.0 / 4.0)


def test_noise_scale_keys_are_formatted_in_one_place():
    assert gns_key("envs", "g2", "value", "raw") == "gns/envs/g2_value_raw"
    assert gns_key("minibatch", "b_simple", "policy") == "gns/minibatch/b_simple_policy"
