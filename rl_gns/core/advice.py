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
from dataclasses import dataclass

import numpy as np

from rl_gns.core.noise_scale import RatioInterval, b_simple_interval
from rl_gns.core.schemes import Candidate

#: The noise-scale candidate that predicts the critical rollout size, ``<scheme tag>_[xM_]<loss>``: B_simple of the
#: value loss over groups of whole trajectories, the one the pre-registered criterion (docs/prediction-criterion.md)
#: picked on four games (results/validation/predictors.md: median |log10(predicted / fitted)| 0.38).
DEFAULT_PREDICTOR = "env_value"
#: The default predictor as a candidate: its scheme and loss.
DEFAULT_CANDIDATE = Candidate.parse(DEFAULT_PREDICTOR)
#: The default predictor's error where it was checked: predicted / fitted ``B_crit`` ranged over 0.41–3.5 (0.68–3.5
#: on three games at three targets each, 0.41, 0.53 and 1.05 on a Beam Rider sweep outside the validation; Breakout's
#: fits were degenerate), docs/results.md. A prediction ``P`` thus leaves ``B_crit`` within ``[P / 3.5, P / 0.41]``.
PREDICTOR_ERROR = (0.41, 3.5)
#: Where that error was measured: the regime outside which it says nothing.
VALIDATED_REGIME = (
    "Atari from RAM with an MLP, early-training targets, 4 games, where a constant predicted as well; late in "
    "training, probes of 2 games found it 0.045-11x off, further off than a constant"
)
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
        raise ValueError(f"unknown predictor {name!r}: use <mb|env>[_xM]_<policy|value|total>, e.g. {DEFAULT_PREDICTOR}")
    return candidate


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
    """The run's training regime (``--regime``); the predictor's error was checked in ``ppo`` only."""

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
        if self.regime != "ppo":
            high = f"{b.high:,.0f}" if b.resolved else "inf"
            if math.isfinite(b.point) and b.point > 0:
                value, count = f"{b.point:,.0f} agent steps", env_count(envs)
            else:  # |G|² not resolved: the lower end is all there is
                value, count = "no point estimate", at_least_envs(envs_low)
            return [
                f"noise scale ({self.predictor}): {value} [95 % interval {b.low:,.0f}, {high}] "
                f"= {count} at n_steps {self.n_steps}; this run: {env_count(self.n_envs)}",
                f"  no noise scale is validated as a predictor of the critical rollout size in the {self.regime} regime "
                "yet (docs/prediction-criterion.md); rl-gns sweep or rl-gns probe measures it directly",
            ]
        error_low, error_high = self.with_predictor_error()
        checked = f"the predictor's error where it was checked ({PREDICTOR_ERROR[0]}-{PREDICTOR_ERROR[1]}x)"
        regime = f"({VALIDATED_REGIME}; rl-gns probe measures it directly)"
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

    def with_predictor_error(self) -> tuple[float, float]:
        """The interval of ``B_crit`` with the measurement noise and the predictor's error where it was checked:
        ``[low / 3.5, high / 0.41]`` (:data:`PREDICTOR_ERROR`), agent steps."""
        return self.b_crit.low / PREDICTOR_ERROR[1], self.b_crit.high / PREDICTOR_ERROR[0]


def advise(
    predictor: str,
    g2_T: np.ndarray,
    trace_sigma_T: np.ndarray,
    n_envs: int,
    n_steps: int,
    n_minibatches: int,
    regime: str = "ppo",
) -> Advice:
    """Advice from one run's raw measurements of the predictor's scheme and loss.

    :param predictor: candidate name (:func:`parse_predictor`).
    :param g2_T: ``(T,)`` raw ``g2`` estimates of that scheme and loss, in measurement order (NaN: none).
    :param trace_sigma_T: ``(T,)`` raw ``trace_sigma`` estimates.
    :param n_envs: the run's env count.
    :param n_steps: agent steps per env per rollout.
    :param n_minibatches: M, minibatches per epoch (the factor of ``_xM_`` predictors).
    :param regime: the run's training regime (``--regime``).
    """
    b = b_simple_interval(g2_T, trace_sigma_T)
    factor = parse_predictor(predictor).times(n_epochs=1, n_minibatches=n_minibatches)
    n_measurements = int(
        np.sum(np.isfinite(np.asarray(g2_T, dtype=float)) & np.isfinite(np.asarray(trace_sigma_T, dtype=float)))
    )
    interval = RatioInterval(factor * b.point, factor * b.low, factor * b.high, b.level)
    return Advice(predictor, interval, n_envs, n_steps, n_measurements, regime)
