"""The answer a user gets: the predicted critical rollout size and what more environments buy.

With the tradeoff model of McCandlish et al. (eq. 2.11) and a critical rollout size ``B*``, a run at
rollout size ``B`` needs ``S(B) = S_min (1 + B*/B)`` PPO iterations and ``E(B) = E_min (1 + B/B*)`` agent
steps to a target. Doubling the envs therefore multiplies the iterations by ``(1 + B*/2B) / (1 + B*/B)``
and the experience by ``(1 + 2B/B*) / (1 + B/B*)``: below ``B*`` it buys nearly halved iterations for
little experience, above it mostly experience.

The predictor of ``B*`` is a measured noise scale (``docs/prediction-criterion.md`` lists the
candidates and how the default is chosen).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rl_gns.core.maths.noise_scale import RatioInterval, b_simple_interval
from rl_gns.core.maths.schemes import Candidate
from rl_gns.core.shipped import shipped_path


@dataclass(frozen=True)
class Validated:
    """A regime's predictor of the critical rollout size, with its error where a committed criterion checked it."""

    predictor: str
    """The candidate, ``<scheme tag>_[xM_]<loss>`` (:func:`parse_predictor`)."""
    error: tuple[float, float]
    """The range of predicted / fitted ``B_crit`` where it was checked: a prediction ``P`` leaves ``B_crit`` within
    ``[P / error[1], P / error[0]]``."""
    checked: str
    """Where that error was measured: the regime outside which it says nothing."""
    recipe: Mapping[str, Any]
    """The settings that made the regime's gradient step where it was checked (``config.json``'s names and values): a
    run of the regime that differs in any is outside the check, and gets no error band."""

    def departures(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """Each setting of :attr:`recipe` in which a run differs, as ``optimizer adam (checked: rmsprop)``.

        :param settings: the run's settings (:func:`run_settings`).
        """
        differ = [(name, value) for name, value in self.recipe.items() if settings.get(name) != value]
        return tuple(f"{name} {settings.get(name)} (checked: {value})" for name, value in differ)


#: The findings this advice rests on, as data (docs/prediction-criterion.md gives the verdicts behind them).
PREDICTORS_FILE = "predictors.toml"


def load_predictors(path: Path | None = None) -> tuple[str, dict[str, Validated]]:
    """The default candidate and ``{regime: Validated}`` of the predictors table (``envs/predictors.toml``).

    :param path: the table; if unset, the one shipped with rl-gns.
    :raises ValueError: naming the file and the entry, for a table that does not hold them.
    """
    path = shipped_path(PREDICTORS_FILE) if path is None else path
    table = tomllib.loads(path.read_text())
    validated = {}
    for regime, entry in table.get("regimes", {}).items():
        error = entry.get("error")
        if (
            set(entry) != {"predictor", "error", "checked", "recipe"}
            or not (isinstance(error, list) and len(error) == 2 and 0 < error[0] <= 1 <= error[1])
            or not (isinstance(entry["recipe"], dict) and entry["recipe"])
        ):
            raise ValueError(
                f"{path}: regimes.{regime}: needs predictor, checked, error = [low <= 1, high >= 1] and a recipe table"
            )
        try:
            parse_predictor(entry["predictor"])
        except ValueError as e:
            raise ValueError(f"{path}: regimes.{regime}: {e}") from None
        error = (float(error[0]), float(error[1]))
        validated[regime] = Validated(entry["predictor"], error, str(entry["checked"]), entry["recipe"])
    parse_predictor(table["default"])
    return table["default"], validated


#: Measurements below which the advice gives no number (its interval needs several batches of them).
MIN_MEASUREMENTS = 8
#: The units factors a predictor may carry: a run's B_simple as measured, or times its minibatches per epoch.
PREDICTOR_FACTORS = ("", "xM")


def parse_predictor(name: str) -> Candidate:
    """The predictor called ``name``: a candidate that a run's own measurements give, ``<tag>[_xM]_<loss>``
    (``mb_xM_policy``: the minibatch scheme's policy-loss B_simple times M).

    :raises ValueError: for a name outside those candidates.
    """
    candidate = Candidate.parse(name)
    if candidate.where or candidate.factor not in PREDICTOR_FACTORS:
        raise ValueError(f"unknown predictor {name!r}: use <mb|env>[_xM]_<policy|value|total>, e.g. env_value")
    return candidate


#: The default candidate (what a run measures and prints where its regime validates none) and the validated predictor
#: of each regime, from the shipped table.
DEFAULT_PREDICTOR, VALIDATED = load_predictors()
#: The default predictor as a candidate: its scheme and loss.
DEFAULT_CANDIDATE = Candidate.parse(DEFAULT_PREDICTOR)


#: What a run written before a setting existed trained with (``config.json`` names): PPO, with Adam and normalised
#: advantages.
SETTINGS_BEFORE_RECORDED: dict[str, Any] = {"regime": "ppo", "optimizer": "adam", "normalize_advantage": True}


def run_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A run's settings as the predictors table reads them: ``config.json``'s, with what runs written before a setting
    existed trained with (:data:`SETTINGS_BEFORE_RECORDED`).

    :param settings: ``config.json``'s fields, with ``n_minibatches`` (minibatches per epoch).
    """
    return {**SETTINGS_BEFORE_RECORDED, **settings}


def covering(settings: Mapping[str, Any]) -> tuple[str, Validated | None, tuple[str, ...]]:
    """The run's regime, its entry in the predictors table (``None`` where it has none) and the settings of the entry's
    recipe in which the run departs from it (:meth:`Validated.departures`; the entry covers the run where there are
    none).

    :param settings: the run's settings (:func:`run_settings`).
    """
    regime = str(settings["regime"])
    validated = VALIDATED.get(regime)
    return regime, validated, () if validated is None else validated.departures(settings)


def predictor_for(settings: Mapping[str, Any]) -> str:
    """The candidate that ``train`` and ``advise`` print for a run: its regime's validated predictor where the entry's
    recipe covers the run, else the default.

    :param settings: the run's settings (:func:`run_settings`).
    """
    _, validated, departures = covering(settings)
    return validated.predictor if validated is not None and not departures else DEFAULT_PREDICTOR


def at_least_envs(n_envs: float) -> str:
    """A lower bound on an env count as a sentence says it: ``at least 3 envs``, or ``at least a fraction of one env's
    rollout`` below half an env."""
    return "at least " + ("a fraction of one env's rollout" if n_envs < 0.5 else env_count(n_envs))


def env_count(n_envs: float) -> str:
    """An env count as a sentence says it: ``1 env``, ``63 envs``, or ``less than one env's rollout`` below 0.5."""
    if n_envs < 0.5:
        return "less than one env's rollout"
    return f"{n_envs:,.0f} env" + ("" if round(n_envs) == 1 else "s")


def iterations_factor(rollout_size: float, b_crit: float, factor: float = 2.0) -> float:
    """``S(f·B) / S(B) = (1 + B*/(f·B)) / (1 + B*/B)``: iterations to a target after multiplying the rollout by ``f``."""
    return (1.0 + b_crit / (factor * rollout_size)) / (1.0 + b_crit / rollout_size)


def experience_factor(rollout_size: float, b_crit: float, factor: float = 2.0) -> float:
    """``E(f·B) / E(B) = (1 + f·B/B*) / (1 + B/B*)``: agent steps to a target after multiplying the rollout by ``f``."""
    return (1.0 + factor * rollout_size / b_crit) / (1.0 + rollout_size / b_crit)


@dataclass(frozen=True)
class Advice:
    """What a run's measured noise scale says about its env count."""

    predictor: str
    """The candidate used, e.g. ``mb_xM_policy``."""
    b_crit: RatioInterval
    """Predicted critical rollout size with its 95 % interval of measurement noise, agent steps."""
    n_envs: int
    n_steps: int
    n_measurements: int
    """Measurements the prediction pools."""
    regime: str = "ppo"
    """The run's training regime (``--regime``): the predictor's error is known only where :data:`VALIDATED` gives it
    for that regime."""
    departures: tuple[str, ...] = ()
    """The settings in which the run departs from the recipe its regime's predictor was checked with
    (:meth:`Validated.departures`): with any, the error is not known."""

    @property
    def validated(self) -> Validated | None:
        """The error of this predictor where it was checked in this run's regime and recipe; ``None`` where it was not."""
        validated = VALIDATED.get(self.regime)
        if validated is None or validated.predictor != self.predictor or self.departures:
            return None
        return validated

    @property
    def rollout_size(self) -> int:
        return self.n_envs * self.n_steps

    @property
    def n_envs_critical(self) -> tuple[float, float, float]:
        """``B* / n_steps``: the env count at the predicted critical size, and at its interval's ends."""
        return self.b_crit.point / self.n_steps, self.b_crit.low / self.n_steps, self.b_crit.high / self.n_steps

    def doubling(self, b_crit: float) -> tuple[float, float]:
        """``(iterations cut, experience added)`` by doubling ``n_envs``, as fractions, if ``B* = b_crit``."""
        return 1.0 - iterations_factor(self.rollout_size, b_crit), experience_factor(self.rollout_size, b_crit) - 1.0

    def lines(self) -> list[str]:
        """The advice as printed by ``rl-gns train`` and ``rl-gns advise``."""
        b, size = self.b_crit, self.rollout_size
        if self.n_measurements < MIN_MEASUREMENTS:
            return [
                f"critical rollout size ({self.predictor}): not enough data: {self.n_measurements} noise-scale "
                f"measurements, {MIN_MEASUREMENTS} needed (train longer, or measure more often with --gns-every)"
            ]
        if b.resolved and not (math.isfinite(b.point) and b.point > 0):  # |G|² resolved, tr(Σ) not positive
            return [f"critical rollout size ({self.predictor}): not resolved (measure longer or more often)"]
        if not b.resolved and not b.low > 0:  # the interval is [0, inf]: the point says nothing
            return [
                f"critical rollout size ({self.predictor}): not resolved: after {self.n_measurements} noise-scale "
                f"measurements its 95 % interval still runs from 0 to infinity (train longer, or measure more often "
                "with --gns-every)"
            ]
        envs, envs_low, envs_high = self.n_envs_critical
        validated = self.validated
        if validated is None:
            high = f"{b.high:,.0f}" if b.resolved else "inf"
            if math.isfinite(b.point) and b.point > 0:
                value, count = f"{b.point:,.0f} agent steps", env_count(envs)
            else:  # |G|² not resolved: the lower end is all there is
                value, count = "no point estimate", at_least_envs(envs_low)
            entry = VALIDATED.get(self.regime)
            checked = "" if entry is None else f"; where the regime's {entry.predictor} was checked: {entry.checked}"
            return [
                f"noise scale ({self.predictor}): {value} [95 % interval {b.low:,.0f}, {high}] "
                f"= {count} at n_steps {self.n_steps}; this run: {env_count(self.n_envs)}",
                f"  {self.predictor} is not validated as a predictor of the critical rollout size in the {self.regime} "
                f"regime{self.recipe_note()} (docs/prediction-criterion.md{checked}); rl-gns sweep or rl-gns probe "
                "measures it directly",
            ]
        error_low, error_high = self.widened(validated)
        checked = f"the predictor's error where it was checked ({validated.error[0]}-{validated.error[1]}x)"
        regime = f"({validated.checked}; rl-gns probe measures it directly)"
        if b.resolved:
            cut, extra = self.doubling(b.point)
            lines = [
                f"critical rollout size ({self.predictor}): {b.point:,.0f} agent steps [95 % interval {b.low:,.0f}, "
                f"{b.high:,.0f}]",
                f"  = {envs:,.0f} envs [{envs_low:,.0f}, {envs_high:,.0f}] at n_steps {self.n_steps}; "
                f"this run: {env_count(self.n_envs)} ({size:,} agent steps per rollout)",
                f"  with {checked}: B_crit in [{error_low:,.0f}, {error_high:,.0f}] agent steps {regime}",
                f"  if B_crit = {b.point:,.0f}: doubling the envs cuts the PPO iterations to a target by about {cut:.0%} "
                f"for {extra:.0%} more experience (S = S_min(1 + B*/B), E = E_min(1 + B/B*))",
            ]
        else:  # |G|² not resolved: a lower bound only, and the ratio of sums is no estimate
            cut, extra = self.doubling(b.low)
            lines = [
                f"critical rollout size ({self.predictor}): at least {b.low:,.0f} agent steps at 95 % (|G|² not "
                "resolved: no upper bound and no point estimate)",
                f"  = {at_least_envs(envs_low)} at n_steps {self.n_steps}; "
                f"this run: {env_count(self.n_envs)} ({size:,} agent steps per rollout)",
                f"  with {checked}: B_crit at least {error_low:,.0f} agent steps {regime}",
                f"  if B_crit is at least {b.low:,.0f}: doubling the envs cuts the PPO iterations to a target by at "
                f"least {cut:.0%} for at most {extra:.0%} more experience (S = S_min(1 + B*/B), E = E_min(1 + B/B*))",
            ]
        if size > error_high:
            lines.append(
                "  this run is past the critical size even at the interval's upper end: more envs mostly burn experience"
            )
        elif size < error_low:
            lines.append(
                "  this run is below the critical size even at the interval's lower end: more envs mostly save iterations"
            )
        else:
            lines.append("  this run's rollout size lies inside the interval: whether more envs pay is not decided")
        return lines

    def recipe_note(self) -> str:
        """`` with this run's recipe: optimizer adam (checked: rmsprop)``, where the run departs from the checked recipe."""
        return f" with this run's recipe: {', '.join(self.departures)}" if self.departures else ""

    def with_predictor_error(self) -> tuple[float, float] | None:
        """The interval of ``B_crit`` with the measurement noise and the predictor's error where it was checked in this
        run's regime, ``[low / error[1], high / error[0]]`` agent steps (:attr:`Validated.error`); ``None`` where it was
        not checked."""
        validated = self.validated
        return None if validated is None else self.widened(validated)

    def widened(self, validated: Validated) -> tuple[float, float]:
        """The 95 % interval widened by ``validated``'s error: ``[low / error[1], high / error[0]]`` agent steps."""
        return self.b_crit.low / validated.error[1], self.b_crit.high / validated.error[0]


def advise(
    predictor: str,
    g2_T: np.ndarray,
    trace_sigma_T: np.ndarray,
    n_envs: int,
    n_steps: int,
    n_minibatches: int,
    settings: Mapping[str, Any],
) -> Advice:
    """Advice from one run's raw measurements of the predictor's scheme and loss.

    :param predictor: candidate name (:func:`parse_predictor`).
    :param g2_T: ``(T,)`` raw ``g2`` estimates of that scheme and loss, in measurement order (NaN: none).
    :param trace_sigma_T: ``(T,)`` raw ``trace_sigma`` estimates.
    :param n_envs: the run's env count.
    :param n_steps: agent steps per env per rollout.
    :param n_minibatches: M, minibatches per epoch (the factor of ``_xM_`` predictors).
    :param settings: the run's settings (:func:`run_settings`): its regime, and the recipe its predictor's error needs.
    """
    b = b_simple_interval(g2_T, trace_sigma_T)
    factor = parse_predictor(predictor).times(n_epochs=1, n_minibatches=n_minibatches)
    n_measurements = int(
        np.sum(np.isfinite(np.asarray(g2_T, dtype=float)) & np.isfinite(np.asarray(trace_sigma_T, dtype=float)))
    )
    interval = RatioInterval(factor * b.point, factor * b.low, factor * b.high, b.level)
    regime, _, departures = covering(settings)
    return Advice(predictor, interval, n_envs, n_steps, n_measurements, regime, departures)
