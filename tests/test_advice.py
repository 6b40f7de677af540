"""The advice maths against the tradeoff model's closed forms."""

import math

import numpy as np
import pytest

from rl_gns.core.advice import (
    DEFAULT_PREDICTOR,
    PREDICTORS_FILE,
    VALIDATED,
    Advice,
    advise,
    env_count,
    experience_factor,
    iterations_factor,
    load_predictors,
    parse_predictor,
    predictor_for,
)
from rl_gns.core.noise_scale import RatioInterval
from rl_gns.core.schemes import Candidate
from rl_gns.core.shipped import shipped_path
from rl_gns.core.tradeoff import TradeoffFit


def test_doubling_factors_follow_the_fitted_hyperbola():
    fit = TradeoffFit(s_min=50.0, e_min=40_000.0, rms_log_residual=0.0)  # B_crit = 800
    for rollout in (100.0, 800.0, 5_000.0):
        assert iterations_factor(rollout, fit.b_crit) == pytest.approx(fit.steps(2 * rollout) / fit.steps(rollout))
        assert experience_factor(rollout, fit.b_crit) == pytest.approx(fit.experience(2 * rollout) / fit.experience(rollout))
    assert iterations_factor(800.0, 800.0) == pytest.approx(0.75)  # at B_crit: 2·S_min -> 1.5·S_min
    assert experience_factor(800.0, 800.0) == pytest.approx(1.5)


def test_predictor_names():
    assert parse_predictor("mb_xM_policy") == Candidate("minibatch", "policy", "xM")
    assert parse_predictor("env_total") == Candidate("envs", "total")
    # candidates that a run's own measurements do not give (pooled elsewhere, or times the epochs) are no predictors
    for bad in ("mb_policy_xM", "envs_total", "mb_xM_advantage", "policy", "path_env_value", "mb_xEM_total"):
        with pytest.raises(ValueError):
            parse_predictor(bad)


def test_advise_scales_by_m_and_states_where_the_run_stands():
    rng = np.random.default_rng(0)
    g2_T, trace_T = rng.normal(1.0, 0.2, 100), rng.normal(100.0, 10.0, 100)  # B_simple ≈ 100 per gradient step
    advice = advise("mb_xM_total", g2_T, trace_T, n_envs=2, n_steps=32, n_minibatches=4)
    assert advice.b_crit.point == pytest.approx(4 * trace_T.sum() / g2_T.sum())
    assert advice.b_crit.low < advice.b_crit.point < advice.b_crit.high
    assert advice.n_envs_critical[0] == pytest.approx(advice.b_crit.point / 32)
    assert advice.n_measurements == 100
    # the predictor validated in PPO (envs/predictors.toml) gets its checked error; another gets none
    assert advice.with_predictor_error() is None and "is not validated" in advice.lines()[1]
    advice = advise("env_value", g2_T, trace_T, n_envs=1, n_steps=16, n_minibatches=4)
    text = "\n".join(advice.lines())
    assert advice.b_crit.point == pytest.approx(trace_T.sum() / g2_T.sum()) and "cuts the PPO iterations" in text
    # 16 agent steps per rollout lie below even the lower end widened by the predictor's error (low / 3.5)
    assert advice.with_predictor_error()[0] == pytest.approx(advice.b_crit.low / 3.5) and "save iterations" in text
    above = Advice("env_value", RatioInterval(100.0, 80.0, 120.0), n_envs=16, n_steps=32, n_measurements=50)
    assert "mostly burn experience" in "\n".join(above.lines())  # 512 > 120 / 0.41
    inside = Advice("env_value", RatioInterval(100.0, 80.0, 120.0), n_envs=4, n_steps=32, n_measurements=50)
    assert "not decided" in "\n".join(inside.lines()) and "burn" not in "\n".join(inside.lines())  # 128 in [23, 293]
    for point in (math.nan, 4_000.0):  # |G|² not resolved: a lower bound only, whatever the ratio of sums is
        unresolved = Advice("env_value", RatioInterval(point, 5_000.0, math.inf), n_envs=8, n_steps=128, n_measurements=50)
        text = "\n".join(unresolved.lines())
        assert unresolved.lines()[0].endswith("at least 5,000 agent steps at 95 % (|G|² not resolved: no upper bound and "
                                              "no point estimate)")  # fmt: skip
        assert "4,000" not in text and "at least 39 envs" in text and "B_crit at least 1,429 agent steps" in text
        cut, extra = unresolved.doubling(5_000.0)
        assert f"by at least {cut:.0%} for at most {extra:.0%} more experience" in text
        assert "mostly save iterations" in text  # 1,024 agent steps < 5,000 / 3.5
    nothing = Advice("env_value", RatioInterval(53.0, 0.0, math.inf), n_envs=2, n_steps=32, n_measurements=16)
    assert nothing.lines() == [
        "critical rollout size (env_value): not resolved: after 16 noise-scale measurements its 95 % interval still "
        "runs from 0 to infinity (train longer, or measure more often with --gns-every)"
    ]
    few = advise("env_value", g2_T[:3], trace_T[:3], n_envs=2, n_steps=32, n_minibatches=4)
    assert few.lines() == [
        "critical rollout size (env_value): not enough data: 3 noise-scale measurements, 8 needed "
        "(train longer, or measure more often with --gns-every)"
    ]


def test_each_regime_gets_the_error_its_own_criterion_validated():
    """A predictor's checked error belongs to the regime it was checked in (envs/predictors.toml): a one-step run
    gets the one-step error band, and a predictor or regime without an entry gets the measured noise scale, with no
    error band and no verdict on more envs."""
    signs = np.tile([1.0, -1.0], 20)  # sums exactly 40 and 16,000: B_simple 400
    g2, trace = 1.0 + 0.1 * signs, 400.0 + 10.0 * signs[::-1]
    for regime in ("ppo", "one-step"):
        advice = advise(predictor_for(regime), g2, trace, 16, 5, 1, regime=regime)
        low, high = VALIDATED[regime].error
        assert advice.with_predictor_error() == (advice.b_crit.low / high, advice.b_crit.high / low)
        assert f"the predictor's error where it was checked ({low}-{high}x)" in advice.lines()[2]
        assert VALIDATED[regime].checked in advice.lines()[2]
    for predictor, regime in (("env_policy", "one-step"), ("env_value", "a regime nobody checked")):
        lines = advise(predictor, g2, trace, 16, 5, 1, regime=regime).lines()
        assert lines[0].startswith(f"noise scale ({predictor}):") and "= 80 envs at n_steps 5" in lines[0]
        assert f"{predictor} is not validated" in lines[1] and f"{regime} regime" in lines[1]
        assert not any("predictor's error" in line or "more envs" in line for line in lines)


def test_a_lower_bound_below_one_env_reads_as_a_fraction_of_one():
    """A fresh PPO run whose |G|² is not resolved has a lower bound below one env's rollout: "at least a fraction of
    one env's rollout", not "at least less than one env's rollout"."""
    signs = np.tile([1.0, -1.0], 10)
    lines = advise("env_value", 0.5 * signs, 10.0 + signs, n_envs=8, n_steps=128, n_minibatches=4).lines()
    assert "  = at least a fraction of one env's rollout at n_steps 128; this run: 8 envs" in lines[1]
    assert not any("at least less" in line for line in lines)


def test_a_one_step_run_whose_gradient_is_not_resolved_gets_its_lower_bound():
    """Σ g2 below zero leaves no point estimate (NaN): a one-step run's advice gives the interval's lower end rather
    than fail (a Breakout run of the one-step sweep lost its summary to it), with the validated predictor and with
    one that is not."""
    signs = np.tile([1.0, -1.0], 10)
    g2, trace = signs - 0.01, 10.0 + signs
    lines = advise("env_value", g2, trace, n_envs=8, n_steps=5, n_minibatches=1, regime="one-step").lines()
    assert lines[0].startswith("critical rollout size (env_value): at least ") and "no point estimate" in lines[0]
    lines = advise("env_policy", g2, trace, n_envs=8, n_steps=5, n_minibatches=1, regime="one-step").lines()
    assert lines[0].startswith("noise scale (env_policy): no point estimate [95 % interval ")
    assert "= at least " in lines[0] and lines[0].endswith("this run: 8 envs")


def test_env_counts_read_as_english():
    assert (env_count(1), env_count(1.3), env_count(63.0), env_count(0.2)) == (
        "1 env",
        "1 env",
        "63 envs",
        "less than one env's rollout",
    )


def test_the_validated_predictors_are_data_that_are_checked(tmp_path):
    """The findings the advice rests on live in envs/predictors.toml: each regime's predictor with its checked error;
    a regime without an entry gets the default candidate and no error band."""
    default, validated = load_predictors()
    assert default == DEFAULT_PREDICTOR and set(validated) <= {"ppo", "one-step"}
    for regime, entry in validated.items():
        assert predictor_for(regime) == entry.predictor and entry.error[0] <= 1 <= entry.error[1]
    assert predictor_for("a regime nobody validated") == DEFAULT_PREDICTOR
    table = tmp_path / "predictors.toml"
    for bad in ("error = [2.0, 3.5]", "error = [0.5]", 'predictor = "mb_policy_xM"', "extra = 1"):
        key = bad.split(" = ")[0]
        lines = [line for line in shipped_path(PREDICTORS_FILE).read_text().splitlines() if not line.startswith(f"{key} =")]
        table.write_text("\n".join([*lines, bad, ""]))
        with pytest.raises(ValueError):
            load_predictors(table)
