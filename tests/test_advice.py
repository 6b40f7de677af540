"""The advice maths against the tradeoff model's closed forms."""

import math

import numpy as np
import pytest

from rl_gns.core.maths.advice import (
    DEFAULT_PREDICTOR,
    VALIDATED,
    Advice,
    Validated,
    advise,
    covering,
    env_count,
    experience_factor,
    iterations_factor,
    load_predictors,
    parse_predictor,
    predictor_for,
    run_settings,
)
from rl_gns.core.maths.noise_scale import RatioInterval
from rl_gns.core.maths.schemes import Candidate
from rl_gns.core.maths.tradeoff import TradeoffFit


def recipe(regime: str) -> dict:
    """The settings of a run of ``regime`` made with the recipe its predictor was checked with."""
    return {"regime": regime, **VALIDATED[regime].recipe}


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
    advice = advise("mb_xM_total", g2_T, trace_T, n_envs=2, n_steps=32, n_minibatches=4, settings=recipe("ppo"))
    assert advice.b_crit.point == pytest.approx(4 * trace_T.sum() / g2_T.sum())
    assert advice.b_crit.low < advice.b_crit.point < advice.b_crit.high
    assert advice.n_envs_critical[0] == pytest.approx(advice.b_crit.point / 32)
    assert advice.n_measurements == 100
    # the predictor validated in PPO (envs/predictors.toml) gets its checked error; another gets none
    assert advice.with_predictor_error() is None and "is not validated" in advice.lines()[1]
    advice = advise("env_value", g2_T, trace_T, n_envs=1, n_steps=16, n_minibatches=4, settings=recipe("ppo"))
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
    few = advise("env_value", g2_T[:3], trace_T[:3], n_envs=2, n_steps=32, n_minibatches=4, settings=recipe("ppo"))
    assert few.lines() == [
        "critical rollout size (env_value): not enough data: 3 noise-scale measurements, 8 needed "
        "(train longer, or measure more often with --gns-every)"
    ]


def test_each_regime_gets_the_error_its_own_criterion_validated():
    """A predictor's checked error belongs to the regime and recipe it was checked in (envs/predictors.toml): a
    one-step run gets the one-step error band; a predictor or regime without an entry, or a run whose gradient step
    departs from the checked recipe (a rung of the ladder to PPO: Adam in the one-step regime), gets the measured noise
    scale, with no error band and no verdict on more envs, and is told where it departs."""
    signs = np.tile([1.0, -1.0], 20)  # sums exactly 40 and 16,000: B_simple 400
    g2, trace = 1.0 + 0.1 * signs, 400.0 + 10.0 * signs[::-1]
    for regime in ("ppo", "one-step"):
        advice = advise(predictor_for(recipe(regime)), g2, trace, 16, 5, 1, settings=recipe(regime))
        low, high = VALIDATED[regime].error
        assert advice.with_predictor_error() == (advice.b_crit.low / high, advice.b_crit.high / low)
        assert f"the predictor's error where it was checked ({low}-{high}x)" in advice.lines()[2]
        assert VALIDATED[regime].checked in advice.lines()[2]
    outside = (
        ("env_policy", recipe("one-step"), ""),
        ("env_value", {"regime": "a regime nobody checked"}, ""),
        (
            "env_value",
            {**recipe("one-step"), "optimizer": "adam"},
            " with this run's recipe: optimizer adam (checked: rmsprop)",
        ),
        (
            "env_value",
            {**recipe("ppo"), "n_steps": 128, "anneal": True},
            " with this run's recipe: n_steps 128 (checked: 32), anneal True (checked: False)",
        ),
    )
    for predictor, settings, departs in outside:
        advice = advise(predictor, g2, trace, 16, 5, 1, settings=settings)
        lines = advice.lines()
        assert advice.with_predictor_error() is None and advice.validated is None
        assert lines[0].startswith(f"noise scale ({predictor}):") and "= 80 envs at n_steps 5" in lines[0]
        assert f"{predictor} is not validated" in lines[1] and f"{settings['regime']} regime{departs}" in lines[1]
        entry = VALIDATED.get(settings["regime"])  # where the regime's own predictor was checked, said as it stands
        assert entry is None or f"where the regime's {entry.predictor} was checked: {entry.checked}" in lines[1]
        assert not any("predictor's error" in line or "more envs" in line for line in lines)


def test_a_run_outside_its_regimes_recipe_gets_the_default_predictor():
    """The printed candidate follows the same coverage: the regime's validated predictor where its recipe covers the
    run, else the default; a run written before a setting existed reads as what it trained with (PPO, Adam)."""
    for regime, entry in VALIDATED.items():
        assert covering(recipe(regime)) == (regime, entry, ())
        assert predictor_for(recipe(regime)) == entry.predictor
        first = next(iter(entry.recipe))
        assert covering({**recipe(regime), first: "another"})[2] == (f"{first} another (checked: {entry.recipe[first]})",)
    assert covering({"regime": "nobody's"}) == ("nobody's", None, ())
    assert predictor_for({"regime": "nobody's"}) == DEFAULT_PREDICTOR
    before = {
        name: value for name, value in recipe("ppo").items() if name not in ("regime", "optimizer", "normalize_advantage")
    }
    assert covering(run_settings(before)) == ("ppo", VALIDATED["ppo"], ())


def test_a_lower_bound_below_one_env_reads_as_a_fraction_of_one():
    """A fresh PPO run whose |G|² is not resolved has a lower bound below one env's rollout: "at least a fraction of
    one env's rollout", not "at least less than one env's rollout"."""
    signs = np.tile([1.0, -1.0], 10)
    lines = advise(
        "env_value", 0.5 * signs, 10.0 + signs, n_envs=8, n_steps=128, n_minibatches=4, settings=recipe("ppo")
    ).lines()
    assert "  = at least a fraction of one env's rollout at n_steps 128; this run: 8 envs" in lines[1]
    assert not any("at least less" in line for line in lines)


def test_a_one_step_run_whose_gradient_is_not_resolved_gets_its_lower_bound():
    """Σ g2 below zero leaves no point estimate (NaN): a one-step run's advice gives the interval's lower end rather
    than fail (a Breakout run of the one-step sweep lost its summary to it), with the validated predictor and with
    one that is not."""
    signs = np.tile([1.0, -1.0], 10)
    g2, trace = signs - 0.01, 10.0 + signs
    lines = advise("env_value", g2, trace, n_envs=8, n_steps=5, n_minibatches=1, settings=recipe("one-step")).lines()
    assert lines[0].startswith("critical rollout size (env_value): at least ") and "no point estimate" in lines[0]
    lines = advise("env_policy", g2, trace, n_envs=8, n_steps=5, n_minibatches=1, settings=recipe("one-step")).lines()
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
    for entry in validated.values():
        assert entry.error[0] <= 1 <= entry.error[1] and entry.recipe
    good = {"predictor": '"env_value"', "error": "[0.5, 2.0]", "checked": '"here"', "recipe": "{ n_epochs = 1 }"}
    table = tmp_path / "predictors.toml"

    def load(**entry: str) -> dict:
        table.write_text('default = "env_value"\n[regimes.r]\n' + "".join(f"{k} = {v}\n" for k, v in entry.items()))
        return load_predictors(table)[1]

    assert load(**good)["r"] == Validated("env_value", (0.5, 2.0), "here", {"n_epochs": 1})
    bad = {"error": ("[2.0, 3.5]", "[0.5]"), "predictor": ('"mb_policy_xM"',), "recipe": ("{}", "1"), "extra": ("1",)}
    for key, values in bad.items():
        for value in values:
            with pytest.raises(ValueError, match=r"regimes\.r"):
                load(**{**good, key: value})
    with pytest.raises(ValueError, match=r"regimes\.r"):
        load(**{k: v for k, v in good.items() if k != "recipe"})
