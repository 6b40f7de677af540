"""``rl-gns probe`` (report): the critical rollout size at the branch point, and the noise scale measured there.

Reads the probe directory only (``probe.json``, ``sweep.json``, the anchor's and the branches' run directories):

- ``S``: PPO iterations each branch took to its target (its running score over ``window`` games reaching the anchor's
  start score plus ``delta``); per seed at each size, the fastest learning rate.
- ``B_crit``: :func:`rl_gns.core.maths.tradeoff.fit_local_tradeoff` over every (size, seed) that reached the target, with
  its Fieller interval; "not identified" where fewer than 2 sizes reached it or the data do not bound it.
- How close each branch came: its best running score against the target.
- The noise scale at the branch point: the anchor measured every iteration at the branch point's parameters
  (learning rate 0); pooled ``Σ tr(Σ) / Σ |G|²`` per scheme and loss, with the batch-means Fieller interval of
  :func:`rl_gns.core.maths.noise_scale.b_simple_interval`.

Shape glossary: ``N`` branches that reached the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.advice import DEFAULT_CANDIDATE, DEFAULT_PREDICTOR
from rl_gns.core.maths.names import LOSSES, tracker_key
from rl_gns.core.maths.noise_scale import RatioInterval, b_simple_interval
from rl_gns.core.maths.targets import StepsMeasure
from rl_gns.core.maths.tradeoff import LocalTradeoffFit, experience_falls, fit_local_tradeoff, fit_with_censored
from rl_gns.records.logs import check_outputs, write_atomically
from rl_gns.records.rundir import ANCHOR, CONFIG, PILOT, PROBE, SWEEP, RunDir, noise_columns, read_record, write_json
from rl_gns.records.schema import PROBE_FIELDS, PROBE_PLAYED_FIELDS, RecordError, relocated, require, same_setting
from rl_gns.reports.figures import Axes, fmt, interval_span, legend, number, plain_log_ticks, plt, save_figure
from rl_gns.reports.sweep_analysis import (
    KeptRates,
    RunRecord,
    best_per_seed,
    censored_iterations,
    iterations_to,
    kept_rates,
    load_sweep,
)

#: The report's files in the probe directory: its figure, its results (what ``validate-probes`` reads) and its text.
FIGURE, RESULTS, REPORT = "steps_vs_rollout_size.png", "probe_results.json", "report.md"
OUTPUTS = (FIGURE, RESULTS, REPORT)


@dataclass
class ProbeReportConfig:
    """Fit the critical rollout size of a probe directory and write report.md, probe_results.json and a figure."""

    probe_dir: tyro.conf.Positional[Path]
    """The probe's directory (rl-gns probe --out)."""


def branch_steps(runs: list[RunRecord], target: float, measure: StepsMeasure = "passage") -> tuple[np.ndarray, np.ndarray]:
    """``(batch_N, steps_N)``: rollout size and PPO iterations to ``target`` (counted by ``measure``) of the fastest
    learning rate of each seed at each size."""
    pairs = [
        (size, iterations_to(run.reached[target], measure))
        for size in sorted({run.rollout_size for run in runs})
        for run in best_per_seed(runs, target, size, measure).values()
    ]
    return np.array([p[0] for p in pairs], dtype=float), np.array([p[1] for p in pairs], dtype=float)


def noise_at_branch_point(anchor: RunDir) -> dict[str, RatioInterval]:
    """``{"<scheme>/<loss>": B_simple}`` pooled over every measurement of the anchor (at the branch point's
    parameters), in agent steps."""
    config, progress = anchor.config(), anchor.progress()
    noise = {}
    for scheme in config.measured_schemes:
        for loss in LOSSES:
            columns = noise_columns(progress, scheme, loss)
            if columns is not None:
                noise[f"{scheme}/{loss}"] = b_simple_interval(columns[1], columns[2])
    return noise


def verdict(fit: LocalTradeoffFit | None, batch_N: np.ndarray, n_reached: int, n_branches: int) -> str:
    """One line: ``B_crit`` with its interval, or why it is not identified.

    :param batch_N: rollout sizes of the kept branches (each seed's fastest learning rate that reached the target).
    :param n_reached: branches that reached the target, at any learning rate.
    :param n_branches: branches of the probe.
    """
    sizes = len(np.unique(batch_N))
    reached = f"{n_reached} of {n_branches} branches reached the target, {len(batch_N)} kept at {sizes} sizes"
    if fit is None:
        return f"B_crit not identified: {reached}"
    interval = f"[{fmt(fit.b_crit_low)}, {fmt(fit.b_crit_high)}]"
    if math.isnan(fit.b_crit_low):
        return (
            f"B_crit not identified: the data reject every B_crit >= 0, as the steps fall faster than 1 / rollout size "
            f"(S_min {fmt(fit.s_min)} < 0) ({reached})"
        )
    if not fit.identified and math.isfinite(fit.b_crit_high):  # [0, high]: E_min at 0, the steps flat in B
        return (
            f"B_crit not identified: at most {fmt(fit.b_crit_high)} agent steps (95 % upper end; the fit puts E_min at "
            f"{fmt(fit.e_min)}: the steps do not fall as the rollout size grows) ({reached})"
        )
    if not fit.identified and not fit.b_crit_low > 0:  # [0, inf]: the data bound it on neither side
        return f"B_crit not identified: the data bound it on neither side ({reached})"
    if not fit.identified:
        return f"B_crit not identified: at least {fmt(fit.b_crit_low)} agent steps (95 % lower end; the data set no upper end)"
    return f"B_crit {fmt(fit.b_crit)} agent steps, 95 % interval {interval} ({fit.n_points} branches at {sizes} sizes)"


def edge_note(rates: list[KeptRates]) -> str | None:
    """One line naming the sizes where every seed kept the same end of the learning-rate grid (the best rate likely
    lies beyond it), or ``None``."""
    edged = [r for r in rates if r.one_edge is not None]
    if not edged:
        return None
    sizes = ", ".join(f"{r.rollout_size:,} ({r.one_edge})" for r in edged)
    return f"every seed kept the same end of the learning-rate grid at rollout sizes {sizes}"


def single_rate_note(rates: list[KeptRates]) -> str | None:
    """One line where every rollout size tried one learning rate (``--lr-points 1``), or ``None``: the rate then
    changes with the size by the rule alone, so a size's ``S`` mixes the effect of its rollout size with that of its
    learning rate, and a slow size may only have a poor rate."""
    if not rates or any(len(r.grid) > 1 for r in rates):
        return None
    return (
        "one learning rate per rollout size (the rule's, no grid): a size that is slow may be slow for its learning "
        "rate, not its rollout size; --lr-points 3 re-tunes the rate at each size"
    )


def first_window_note(rates: list[KeptRates], window: int) -> str | None:
    """One line counting the kept branches whose first full running score was already at the target (their steps
    are upper bounds: the probe cannot time progress faster than one window of games), or ``None``."""
    first, kept = sum(r.first_window for r in rates), sum(len(r.kept) for r in rates)
    if not first:
        return None
    sizes = ", ".join(f"{r.rollout_size:,} ({r.first_window} of {len(r.kept)})" for r in rates if r.first_window)
    return (
        f"{first} of {kept} kept branches reached the target with their first {window} games (rollout sizes {sizes}): "
        "their steps are upper bounds, as the score cannot time progress faster than one window of games"
    )


#: The correlation of the anchor's game scores with their lengths above which a probe that varies ``n_envs`` warns of
#: the first-games floor (Seaquest's games correlate at 0.95).
LENGTH_CORRELATION = 0.5


def first_games_note(anchor: RunDir, by_envs: bool) -> str | None:
    """One line where a probe varies ``n_envs`` and the anchor's game scores grow with their lengths (correlation above
    :data:`LENGTH_CORRELATION`), or ``None``: all envs of a branch reset together, so its first games finish in order of
    length and its running score rises for about one game length with no learning (docs/probe.md)."""
    games = anchor.episodes()
    if not by_envs or len(games["score"]) < 3 or np.ptp(games["score"]) == 0 or np.ptp(games["length_frames"]) == 0:
        return None
    r = float(np.corrcoef(games["score"], games["length_frames"])[0, 1])
    if not r > LENGTH_CORRELATION:
        return None
    return (
        f"the anchor's game scores correlate with their lengths at {r:.2f}: a branch's first games over many envs end in "
        "order of length, so its running score rises with no learning for about one game length; the large sizes may "
        "sit on that floor (--n-steps-grid at a few envs avoids it)"
    )


#: How far above the earliest timeable agent step (:func:`measure_floor`) the fitted ``E_min`` must lie for the probe
#: to time learning rather than its own score measure: below it, the branches at the large sizes, whose experience
#: is close to ``E_min``, are timed within a factor 2 of when their first running score could tell. It decides the
#: report's note, which target of a ladder is reported (:func:`headline`), and which pairs ``validate-probes`` counts
#: as floored; it does not change a fit.
RESOLVED = 2.0


def censored_note(chosen: Rung) -> str:
    """How a censored fit used the branches that did not reach the target."""
    sizes = ", ".join(f"{size:,}" for size in sorted({size for size, _ in chosen.censored})) or "none"
    return (
        f"Censored fit: {len(chosen.censored)} seeds and sizes that did not reach the target are in the fit as taking "
        f"more steps than they trained (rollout sizes {sizes}); the interval is the profile likelihood's"
    )


def with_censored(chosen: Rung) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(batch_N, steps_N, reached_N)`` of a rung's kept branches and, after them, of its censored seeds at the
    iterations they trained (a lower bound, which only makes their size look faster; ``reached_N`` false)."""
    batch_N = np.array([*chosen.batch_N, *(size for size, _ in chosen.censored)], dtype=float)
    steps_N = np.array([*chosen.steps_N, *(bound for _, bound in chosen.censored)], dtype=float)
    reached_N = np.arange(batch_N.size) < len(chosen.batch_N)
    return batch_N, steps_N, reached_N


def experience_note(chosen: Rung) -> str | None:
    """One line naming the rollout sizes below the one that reached the target with the least experience whose
    branches took more agent steps than the seeds' scatter allows (:func:`experience_falls`; a seed that did not reach
    it counts at the iterations it trained, where the fit is censored), or ``None``: ``S(B)`` cannot fit steps that
    fall faster than ``1 / B``, so those sizes hide the bend from the fit."""
    batch_N, steps_N, reached_N = with_censored(chosen)
    found = experience_falls(batch_N, steps_N, reached_N=reached_N)
    if found is None:
        return None
    falls, best = found

    def median_experience(size: float) -> str:
        return f"{float(np.median(size * steps_N[batch_N == size])):,.0f}"

    sizes = ", ".join(f"{size:,.0f} ({median_experience(size)})" for size in falls)
    return (
        f"the branches took more agent steps to the target at rollout sizes {sizes} than at {best:,.0f} "
        f"({median_experience(best)}; medians over seeds, a seed that did not reach it at what it trained), by more "
        "than their seeds scatter: steps fall faster than 1 / B there, which S(B) does not allow, so the fit cannot "
        f"place the bend by them (the fit from {best:,.0f} up leaves them out)"
    )


def from_least_experience(chosen: Rung, censored: bool) -> Rung:
    """The rung cut to the rollout sizes at or above the size of least experience (``B_k*`` of
    :func:`experience_falls`, on the branches :func:`experience_note` reads) and fitted again as :func:`rung` fits;
    where no smaller size took more experience than the seeds' scatter allows, the rung itself.

    ``S(B) = S_min (1 + B_crit / B)`` describes the sizes whose experience ``E = B S`` does not fall as ``B`` grows;
    below ``B_k*`` it does, by more than chance, so those sizes are left out of this second fit. ``B_k*`` is chosen by
    the data (its experience is the least by selection), which the fit's interval does not allow for.

    :param censored: whether the rung's fit takes the branches that did not reach the target as censored.
    """
    batch_N, steps_N, reached_N = with_censored(chosen)
    found = experience_falls(batch_N, steps_N, reached_N=reached_N)
    if found is None:
        return chosen
    keep_N = chosen.batch_N >= found[1]
    bounds = [(size, bound) for size, bound in chosen.censored if size >= found[1]]
    batch_N, steps_N = chosen.batch_N[keep_N], chosen.steps_N[keep_N]
    rates = [r for r in chosen.rates if r.rollout_size >= found[1]]
    return Rung(chosen.target, batch_N, steps_N, fit_branches(batch_N, steps_N, bounds, censored), rates, bounds)


def measure_floor(runs: list[RunRecord]) -> float:
    """The agent step a branch's first full running score stands for (:attr:`RunRecord.first_window_midpoint`),
    median over the branches (at one env count, about the same for every size): no reach is timed earlier. NaN if
    no branch played a full window."""
    floors = [run.first_window_midpoint for run in runs if math.isfinite(run.first_window_midpoint)]
    return float(np.median(floors)) if floors else math.nan


def resolution_note(fit: LocalTradeoffFit | None, floor: float, window: int) -> str | None:
    """One line where the fitted ``E_min`` lies below :data:`RESOLVED` times the measure's floor, or ``None``."""
    if fit is None or not math.isfinite(floor) or not fit.e_min < RESOLVED * floor:
        return None
    return (
        f"E_min ({fmt(fit.e_min)} agent steps) is {fit.e_min / floor:.1f}x the agent step a branch's first {window} "
        f"games stand for ({fmt(floor)}): the target is reached about as soon as the running score can tell, so the "
        "fit times the score measure more than learning (a larger improvement would resolve it)"
    )


def probe_x_limits(
    batch_N: np.ndarray,
    fit: LocalTradeoffFit | None,
    b_simple: RatioInterval | None,
    second: LocalTradeoffFit | None = None,
) -> tuple[float, ...]:
    """The x limits of :func:`plot_probe`, agent steps: a factor 1.5 beyond the branches' rollout sizes and every
    value a line or the start of an open span marks (``B_crit`` of the fit and of a ``second`` fit, where not
    identified the lower end of the fit's interval and the finite upper end of either's, ``B_simple`` or its lower
    end), so that what the legend names is drawn; empty where there is none."""
    values = [float(b) for b in batch_N]
    for each in (fit, second):
        if each is not None:
            values.append(each.b_crit if each.identified else each.b_crit_high)
    if fit is not None and not fit.identified:
        values.append(fit.b_crit_low)
    if b_simple is not None:
        values.append(b_simple.point if math.isfinite(b_simple.point) and b_simple.point > 0 else b_simple.low)
    positive = [v for v in values if math.isfinite(v) and v > 0]
    return (min(positive) / 1.5, max(positive) * 1.5) if positive else ()


def plot_probe(
    batch_N: np.ndarray,
    steps_N: np.ndarray,
    fit: LocalTradeoffFit | None,
    b_simple: RatioInterval | None,
    ax: Axes,
    censored: list[tuple[int, float]] | None = None,
    upper: tuple[int, LocalTradeoffFit | None] | None = None,
) -> Axes:
    """PPO iterations to the target against rollout size (log-log), one point per branch (a triangle at its bound for a
    ``censored`` one, ``(rollout_size, bound)``), the fitted ``S(B)`` over the rollout sizes branched at, and ``B_crit``
    and the default predictor's ``B_simple`` with their intervals (spans, clipped to the panel), the x axis wide enough
    for each (:func:`probe_x_limits`). Without a branch that reached the target the panel says so, its y axis blank
    unless censored branches mark their bounds.

    :param upper: ``(smallest size, fit)`` of a second fit over the sizes from there up
        (:func:`from_least_experience`), drawn dashed over them, with its ``B_crit`` where it identifies one."""
    sizes_N = draw_branches(ax, batch_N, steps_N, censored or [])
    if fit is not None and fit.s_min > 0 and len(batch_N):
        grid = np.geomspace(sizes_N.min(), sizes_N.max(), 100)
        ax.plot(grid, fit.s_min + fit.e_min / grid, color="tab:blue", label="fit S = S_min + E_min / B")
    second = upper[1] if upper is not None else None
    x_limits = probe_x_limits(sizes_N, fit, b_simple, second)
    if x_limits:  # a log axis needs limits; set them before the spans that run to its right edge
        ax.set_xscale("log")
        ax.set_xlim(*x_limits)
        plain_log_ticks(ax.xaxis)
    if fit is not None:
        fit_bounds(ax, fit)
    if upper is not None and len(batch_N):
        second_fit(ax, upper[0], upper[1], float(sizes_N.max()))
    if b_simple is not None and b_simple.low > 0:
        name = f"B_simple ({DEFAULT_PREDICTOR}) at fixed parameters"
        if math.isfinite(b_simple.point) and b_simple.point > 0:
            ax.axvline(b_simple.point, color="tab:orange", ls=":", label=f"{name} {number(b_simple.point)}")
            interval_span(ax, b_simple.low, b_simple.high, "tab:orange", label="B_simple's 95 % interval")
        else:
            interval_span(ax, b_simple.low, b_simple.high, "tab:orange", label=f"{name}: ≥ {number(b_simple.low)}")
    ax.set(xlabel="rollout size B (agent steps per PPO iteration)", ylabel="PPO iterations to the target")
    legend(ax, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    return ax


def draw_branches(ax: Axes, batch_N: np.ndarray, steps_N: np.ndarray, censored: list[tuple[int, float]]) -> np.ndarray:
    """The branches of :func:`plot_probe`: a dot per branch that reached the target, a triangle at its bound per
    ``censored`` one, on a log y axis; without a branch that reached the target, the panel says so (its y axis blank
    where nothing is drawn). Returns the rollout sizes drawn, ``(N + C,)`` agent steps."""
    sizes_N = np.concatenate([batch_N, [size for size, _ in censored]])
    if len(batch_N):
        ax.scatter(batch_N, steps_N, color="black", s=18, label="branches (fastest learning rate per seed)", zorder=3)
    if censored:
        bounds = [bound for _, bound in censored]
        ax.scatter(sizes_N[len(batch_N) :], bounds, color="gray", marker="^", s=24, label="did not reach: more steps "
                   "than this", zorder=3)  # fmt: skip
    if len(sizes_N):
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
    else:
        ax.set_yticks([])
    if not len(batch_N):  # at the top where bounds are drawn, as they fall from the left
        y = 0.95 if len(sizes_N) else 0.5
        ax.text(0.5, y, "no branch reached the target", transform=ax.transAxes, ha="center", va="center", color="gray")
    return sizes_N


def fit_bounds(ax: Axes, fit: LocalTradeoffFit) -> None:
    """The fit's ``B_crit`` of :func:`plot_probe`: its line and interval where identified, else the open span from its
    lower end where that is above 0, else the upper end of its interval where that is finite."""
    if fit.identified:
        ax.axvline(fit.b_crit, color="tab:blue", ls="--", label=f"B_crit {number(fit.b_crit)} agent steps")
        interval_span(ax, fit.b_crit_low, fit.b_crit_high, "tab:blue", label="its 95 % interval")
    elif fit.b_crit_low > 0:
        interval_span(ax, fit.b_crit_low, math.inf, "tab:blue", label=f"B_crit not identified: ≥ {number(fit.b_crit_low)}")
    elif math.isfinite(fit.b_crit_high):
        ax.axvline(fit.b_crit_high, color="tab:blue", ls="-.", label=f"B_crit ≤ {number(fit.b_crit_high)} (95 %)")


def second_fit(ax: Axes, smallest: int, fit: LocalTradeoffFit | None, largest: float) -> None:
    """A second fit of :func:`plot_probe`, over the sizes from ``smallest`` to ``largest`` (agent steps): its ``S(B)``
    dashed, and its ``B_crit`` with its interval where it identifies one, else the upper end of its interval where
    that is finite."""
    if fit is None:
        return
    if fit.s_min > 0:
        grid = np.geomspace(smallest, largest, 100)
        ax.plot(grid, fit.s_min + fit.e_min / grid, color="tab:green", ls="--", label=f"fit from B = {number(smallest)} up")
    if fit.identified:
        ax.axvline(fit.b_crit, color="tab:green", ls="-.", label=f"its B_crit {number(fit.b_crit)} agent steps")
        interval_span(ax, fit.b_crit_low, fit.b_crit_high, "tab:green", label="the second fit's 95 % interval")
    elif math.isfinite(fit.b_crit_high):
        ax.axvline(fit.b_crit_high, color="tab:green", ls="-.", label=f"its B_crit ≤ {number(fit.b_crit_high)} (95 %)")


@dataclass
class Rung:
    """One target of a probe (a rung of its ladder) and the fit of its branches' steps.

    Shape glossary: ``N`` branches that reached the target.
    """

    target: float
    """The score, raw."""
    batch_N: np.ndarray
    """Rollout size of each kept branch (the fastest learning rate per seed at each size)."""
    steps_N: np.ndarray
    """Its PPO iterations to the target."""
    fit: LocalTradeoffFit | None
    """``S(B)`` fitted to them; ``None`` with fewer than 3 branches or 2 sizes."""
    rates: list[KeptRates]
    """Per size, the learning rates tried and kept."""
    censored: list[tuple[int, float]] = field(default_factory=list)
    """``(rollout_size, bound)`` of each seed and size that did not reach the target, where the fit takes them as
    censored (:func:`censored_branches`); empty where it leaves them out."""

    @property
    def n_sizes(self) -> int:
        """Rollout sizes with a kept branch."""
        return len(np.unique(self.batch_N))

    @property
    def smallest_size(self) -> int | None:
        """The smallest rollout size with a kept or censored branch, agent steps; ``None`` without one."""
        sizes = [int(size) for size in (*self.batch_N, *(size for size, _ in self.censored))]
        return min(sizes) if sizes else None

    def resolved(self, floor: float) -> bool:
        """``B_crit`` identified, and ``E_min`` at least :data:`RESOLVED` times the measure's floor."""
        return self.fit is not None and self.fit.identified and self.fit.e_min >= RESOLVED * floor


def censored_branches(runs: list[RunRecord], target: float, measure: StepsMeasure) -> list[tuple[int, float]]:
    """``(rollout_size, bound)`` of each seed at each size whose every learning rate finished without reaching
    ``target``: the least of their lower bounds on the PPO iterations (:func:`censored_iterations`); those without a
    bound are left out."""
    cells: dict[tuple[int, int], list[RunRecord]] = {}
    for run in runs:
        cells.setdefault((run.rollout_size, run.seed), []).append(run)
    bounds = [
        (size, min(censored_iterations(run, measure) for run in group))
        for (size, _), group in sorted(cells.items())
        if all(run.status == "done" and target not in run.reached for run in group)
    ]
    return [(size, bound) for size, bound in bounds if bound > 0]


def rung(runs: list[RunRecord], target: float, measure: StepsMeasure, censored: bool = False) -> Rung:
    """The kept branches' steps to ``target`` and their fit: with ``censored``, the branches that did not reach it are
    in the fit as censored (:func:`~rl_gns.core.maths.tradeoff.fit_with_censored`), else it leaves them out
    (:func:`~rl_gns.core.maths.tradeoff.fit_local_tradeoff`)."""
    batch_N, steps_N = branch_steps(runs, target, measure)
    bounds = censored_branches(runs, target, measure) if censored else []
    rates = [kept_rates(runs, target, size, measure) for size in sorted({run.rollout_size for run in runs})]
    return Rung(target, batch_N, steps_N, fit_branches(batch_N, steps_N, bounds, censored), rates, bounds)


def fit_branches(
    batch_N: np.ndarray, steps_N: np.ndarray, bounds: list[tuple[int, float]], censored: bool
) -> LocalTradeoffFit | None:
    """``S(B)`` fitted to the kept branches (and with ``censored`` to the ``(rollout_size, bound)`` of those that did
    not reach the target); ``None`` with fewer than 3 kept branches or 2 sizes."""
    if len(np.unique(batch_N)) < 2 or len(batch_N) < 3:
        return None
    return fit_with_censored(batch_N, steps_N, bounds) if censored else fit_local_tradeoff(batch_N, steps_N)


def headline(rungs: list[Rung], floor: float) -> Rung:
    """The rung a probe reports: the lowest target whose fit is resolved (:meth:`Rung.resolved`), else the lowest
    target (a probe of one target: that one)."""
    return next((r for r in rungs if r.resolved(floor)), rungs[0])


def null_lines(probe: dict) -> list[str]:
    """The null rule's line where the probe applied it (``probe.json``'s ``null_floor``): the floor, and each target's
    chance of being reached by a branch that learns nothing."""
    if probe.get("null_floor") is None:
        return []
    chances = ", ".join(f"{t:.4g}: {p:.2g}" for t, p in zip(probe["targets"], probe.get("false_crossing", []), strict=False))
    if probe.get("null_order") == "envs":
        how = (
            f"the anchor's games resampled, score and length together, and ended as envs that reset together end them, "
            f"at each env count of the grid, highest at {probe.get('null_n_envs')}; about {probe.get('null_looks', 0):,} looks"
        )
    else:
        how = f"the anchor's games resampled in any order, {probe.get('null_looks', 0):,} looks"
    return [
        f"Null rule: a branch that learns nothing ({how}, the best of the learning rates) reaches "
        f"{probe['null_floor']:.4g} with probability at most the probe's level; each target's false-crossing "
        f"probability: {chances}.",
        "",
    ]


def design_lines(probe: dict) -> list[str]:
    """The sequential design's line where the probe ran it (``probe.json``'s ``rounds``): its rounds and why it
    stopped; none for a fixed probe."""
    if probe.get("design") != "sequential":
        return []
    rounds = probe.get("rounds") or []
    sizes = ", ".join("[" + ", ".join(f"{n_envs * n_steps:,}" for n_envs, n_steps, _ in units) + "]" for units in rounds)
    stopped = probe.get("stopped") or "not yet (rerun the probe to go on)"
    return [
        f"Design: sequential (docs/probe.md), {len(rounds)} rounds, each one more seed at the rollout sizes {sizes}; "
        f"stopped: {stopped}.",
        "",
    ]


def ladder_lines(rungs: list[Rung], chosen: Rung, floor: float, start: float) -> list[str]:
    """The report's table of every target of a ladder and its fit, the reported one marked; none for one target."""
    if len(rungs) < 2:
        return []
    rows = [
        f"| {r.target:.1f} | {r.target - start:.1f} | {len(r.batch_N)} at {r.n_sizes} sizes | "
        + ("–" if r.fit is None else f"{fmt(r.fit.b_crit)} [{fmt(r.fit.b_crit_low)}, {fmt(r.fit.b_crit_high)}]")
        + f" | {'–' if r.fit is None else fmt(r.fit.e_min / floor, 2)} | {'yes' if r.resolved(floor) else 'no'} |"
        + (" reported |" if r is chosen else " |")
        for r in rungs
    ]
    return [
        f"Targets: the branches ran to the highest. This report is of the lowest target whose B_crit is identified and "
        f"whose E_min is at least {RESOLVED:g}x the agent step a branch's first running score stands for (else of the "
        "lowest target):",
        "",
        "| target | improvement | kept branches | B_crit [95 %] | E_min / first window's step | resolved | |",
        "|---:|---:|---|---|---:|---|---|",
        *rows,
        "",
    ]


def interruption_notes(probe_dir: Path, probe: dict) -> list[str]:
    """What interruptions changed of the numbers against an uninterrupted probe with the same seeds, one note per
    cause; none where the probe was not interrupted, or its replays repeat an uninterrupted probe exactly.

    - An anchor or branch that resumed from a checkpoint without its games (a probe started before unfinished runs
      were started again, or ``rl-gns train --resume`` on one of its runs whose checkpoint held no games) lost its
      games in progress: the anchor's start score and targets move, a branch's steps to the target grow.
    - ``rl-gns probe`` replays an unfinished anchor and restarts an unfinished branch from the branch point
      (``probe.json``'s ``restarts``): the same seeds repeat the same games on CPU with one torch thread per run,
      but not necessarily on another device or with more threads.

    :param probe: ``probe.json``.
    """
    notes = []
    anchor = RunDir(probe_dir / ANCHOR)
    if anchor.status() == "done" and (summary := anchor.summary()).games_dropped:
        notes.append(
            f"the anchor resumed {summary.resumes} time(s) from checkpoints, losing {summary.games_dropped} games in "
            "progress: its start score and targets differ from those of an uninterrupted anchor with the same seeds"
        )
    resumed = [run for run in sorted((probe_dir / "runs").glob("*")) if RunDir(run).status() == "done"]
    resumed = [run for run in resumed if RunDir(run).summary().games_dropped]
    if resumed:
        notes.append(
            f"{len(resumed)} branches resumed from checkpoints, losing their games in progress, which delays their "
            f"running score: their steps differ from an uninterrupted probe's ({', '.join(run.name for run in resumed)})"
        )
    restarts = {key: int(count) for key, count in (probe.get("restarts") or {}).items() if count}
    settings = anchor.config().settings if anchor.is_started() else {}
    device, threads = settings.get("device", "cpu"), settings.get("torch_threads")
    if restarts and (device != "cpu" or threads != 1):
        done = " and ".join(f"{what} {count} time(s)" for what, count in sorted(restarts.items()))
        notes.append(
            f"interrupted runs started again from the branch point ({done}) on {device} with {threads or 'all'} torch "
            "threads per run, where a replay need not repeat the same numbers (it does on CPU with one thread): they "
            "may differ from an uninterrupted probe's"
        )
    return notes


def fit_record(fit: LocalTradeoffFit | None) -> dict[str, float | bool] | None:
    """A fit as ``probe_results.json`` holds it: its fields, ``b_crit`` and ``identified``."""
    return None if fit is None else {**fit.__dict__, "b_crit": fit.b_crit, "identified": fit.identified}


@dataclass
class ProbeResult:
    """What a probe's files say: the targets' fits, the one reported, and the notes on how far to trust it."""

    probe: dict
    """``probe.json``."""
    runs: list[RunRecord]
    """The branches."""
    measure: StepsMeasure
    """How a branch's steps to a target are read."""
    earliest: float
    """The agent step a branch's first running score stands for (:func:`measure_floor`)."""
    rungs: list[Rung]
    """One per target, in the probe's order."""
    chosen: Rung
    """The target reported (:func:`headline`)."""
    noise: dict[str, RatioInterval]
    """The noise scale at the branch point, by ``<scheme>/<loss>``."""
    verdict: str
    """The critical rollout size in words (:func:`verdict`)."""
    notes: list[str | None]
    """The learning-rate, first-window and resolution notes (``None`` where none applies)."""
    interrupted: list[str]
    """What interruptions may have changed (:func:`interruption_notes`)."""
    varied: str
    """How the rollout size was varied (:func:`varied`)."""
    spent: Spent
    """The agent steps the probe trained and played (:func:`spent`)."""
    upper: Rung
    """The reported target's rung cut to the sizes at or above its size of least experience and fitted again
    (:func:`from_least_experience`); ``chosen`` itself where no smaller size took more experience."""
    upper_verdict: str
    """That fit in words (:func:`verdict` over the branches at those sizes)."""

    def upper_line(self) -> str:
        """The second fit in one line (the report's, and the verdict's note)."""
        if self.upper is self.chosen:
            return (
                "Fit from the size of least experience up: the fit itself (no smaller size took more experience than "
                "the seeds' scatter allows)."
            )
        return (
            f"Fit from the size of least experience up (rollout sizes {self.upper.smallest_size:,} and larger; that size is "
            f"chosen by the data, which its interval does not allow for): {self.upper_verdict}."
        )

    @property
    def predictor(self) -> RatioInterval | None:
        """The default predictor's noise scale at the branch point, if the anchor measured it."""
        return self.noise.get(tracker_key(DEFAULT_CANDIDATE.scheme, DEFAULT_CANDIDATE.loss))

    @property
    def all_notes(self) -> list[str]:
        """Every note that applies, in the order they are printed."""
        return [note for note in (*self.notes, *self.interrupted) if note is not None]

    @property
    def at(self) -> str:
        """Where the probe stands: ``at 100,000 agent steps of <source> (score ... -> target ...)``."""
        score = f"score {self.probe['start_score']:.1f} at fixed parameters -> target {self.chosen.target:.1f}"
        return f"at {self.probe['env_steps']:,} agent steps of {self.probe['source']} ({score})"


def varied(settings: dict) -> str:
    """How a probe's branches varied the rollout size, from its ``sweep.json``: ``n_envs 2, 4, ... at n_steps 128`` or
    ``n_steps 32, 64, ... at 4 envs``."""
    if settings.get("n_steps_grid"):
        return f"n_steps {', '.join(map(str, settings['n_steps_grid']))} at {settings['n_envs'][0]} envs"
    return f"n_envs {', '.join(map(str, settings['n_envs']))} at n_steps {settings['n_steps']}"


@dataclass(frozen=True)
class Spent:
    """What a probe cost: the agent steps of its anchor, its pilot (where its targets came from one) and every branch.

    :param agent_steps: their sum, agent steps.
    :param branches: branches counted.
    :param pilot: whether a pilot counts in it.
    :param run_steps: the run's agent steps at the branch point.
    """

    agent_steps: int
    branches: int
    pilot: bool
    run_steps: int

    @property
    def multiple(self) -> float:
        """The cost as a multiple of the run's agent steps at the branch point (inf at step 0)."""
        return self.agent_steps / self.run_steps if self.run_steps else math.inf

    def line(self) -> str:
        """The report's line."""
        what = f"the anchor{', the pilot' if self.pilot else ''} and {self.branches} branches"
        return (
            f"Spent: {self.agent_steps:,} agent steps ({what}), {self.multiple:.1f}x the run's {self.run_steps:,} at "
            "the branch point."
        )


def spent(probe_dir: Path, branch_steps: list[int], run_steps: int) -> Spent:
    """What a probe spent (:class:`Spent`), from its branches' agent steps and its anchor's and pilot's directories.

    :param branch_steps: each branch's agent steps.
    :param run_steps: the run's agent steps at the branch point.
    """
    first = {name: RunDir(probe_dir / name) for name in (ANCHOR, PILOT) if RunDir(probe_dir / name).is_started()}
    total = sum(branch_steps) + sum(run.env_steps() for run in first.values())
    return Spent(total, len(branch_steps), PILOT in first, run_steps)


def analyse(probe_dir: Path) -> ProbeResult:
    """Fit every target of a probe and choose the one to report, from its files alone."""
    probe = read_probe(probe_dir)
    settings, runs = load_sweep(probe_dir)
    measure: StepsMeasure = probe.get("steps") or "passage"  # written before the setting existed: first passage
    earliest = measure_floor(runs)
    censored = bool(probe.get("censored"))  # written before the setting existed: the reaching branches only
    rungs = [rung(runs, float(target), measure, censored) for target in settings["targets"]]
    chosen = headline(rungs, earliest)
    window = int(probe["window"])
    n_reached = sum(chosen.target in run.reached for run in runs)
    upper = from_least_experience(chosen, censored)
    above = [run for run in runs if run.rollout_size >= (upper.smallest_size or 0)]
    return ProbeResult(
        probe=probe,
        runs=runs,
        measure=measure,
        earliest=earliest,
        rungs=rungs,
        chosen=chosen,
        noise=noise_at_branch_point(RunDir(probe_dir / ANCHOR)),
        verdict=verdict(chosen.fit, chosen.batch_N, n_reached, len(runs)),
        notes=[
            edge_note(chosen.rates) or single_rate_note(chosen.rates),
            first_window_note(chosen.rates, window),
            resolution_note(chosen.fit, earliest, window),
            first_games_note(RunDir(probe_dir / ANCHOR), not settings.get("n_steps_grid")),
            censored_note(chosen) if censored else None,
            experience_note(chosen),
        ],
        interrupted=interruption_notes(probe_dir, probe),
        varied=varied(settings),
        spent=spent(probe_dir, [run.env_steps for run in runs], int(probe["env_steps"])),
        upper=upper,
        upper_verdict=verdict(upper.fit, upper.batch_N, sum(chosen.target in run.reached for run in above), len(above)),
    )


def print_verdict(result: ProbeResult) -> None:
    """The verdict, the targets tried, the default predictor's noise scale there, and the notes, on stdout."""
    chosen = result.chosen
    print(f"critical rollout size {result.at}: {result.verdict}", flush=True)
    print(f"  rollout sizes varied by {result.varied}", flush=True)
    if len(result.rungs) > 1:
        resolved = chosen.resolved(result.earliest)
        why = "the lowest resolved" if resolved else f"none resolved (E_min at least {RESOLVED:g}x the first window's step)"
        targets = ", ".join(f"{r.target:.1f}" for r in result.rungs)
        print(f"  targets {targets}: reported {chosen.target:.1f}, {why}", flush=True)
    if result.predictor is not None:
        interval = f"[{fmt(result.predictor.low)}, {fmt(result.predictor.high)}]"
        print(f"  B_simple ({DEFAULT_PREDICTOR}) there: {fmt(result.predictor.point)} {interval}", flush=True)
    for line in design_lines(result.probe)[:1]:
        print(f"  {line}", flush=True)
    print(f"  {result.upper_line()}", flush=True)
    for note in result.all_notes:
        print(f"  note: {note}", flush=True)


#: What a branch's steps S count, by the probe's ``--steps`` (the report's sentence).
STEPS_TEXT: dict[str, str] = {
    "passage": "the PPO iteration at which its running score first reached the target.",
    "midpoint": "the PPO iteration its running score's games stand for (their mean midpoint), when that score first "
    "reached the target.",
    "trend": "the PPO iteration at which the least-squares line through the scores of its games, up to the one that "
    "took its running score to the target, against their midpoints meets the target.",
}
#: The figure's axis where it is not the passage's, on two lines: one is longer than the axes are high.
STEPS_LABELS: dict[str, str] = {
    "midpoint": "PPO iterations to the target\n(midpoint of the reaching games)",
    "trend": "PPO iterations to the target\n(line through the games' scores)",
}


def plot(result: ProbeResult, ax: Axes) -> Axes:
    """The reported target's steps against rollout size with its fit (:func:`plot_probe`), titled with the probe."""
    chosen = result.chosen
    upper = result.upper
    second = None if upper is chosen or upper.smallest_size is None else (upper.smallest_size, upper.fit)
    plot_probe(chosen.batch_N, chosen.steps_N, chosen.fit, result.predictor, ax, chosen.censored, second)
    if result.measure in STEPS_LABELS:
        ax.set_ylabel(STEPS_LABELS[result.measure])
    ax.set_title(f"{result.probe['source']} {result.at.split(' of ')[0]}", fontsize=10)
    return ax


def results_record(result: ProbeResult) -> dict:
    """``probe_results.json``: ``probe.json`` with the reported target's fit, the ladder of targets and the notes."""
    chosen, probe = result.chosen, result.probe
    return {
        **probe,
        "target": chosen.target,
        "improvement": chosen.target - probe["start_score"],
        "branches": len(result.runs),
        "agent_steps_spent": result.spent.agent_steps,
        "cost_multiple": result.spent.multiple,
        "steps": result.measure,
        "reached": [
            {"rollout_size": int(b), "iterations": float(s)} for b, s in zip(chosen.batch_N, chosen.steps_N, strict=True)
        ],
        # a probe fitted with its censored branches (--censored) names them
        **(
            {"censored_branches": [{"rollout_size": size, "iterations_above": bound} for size, bound in chosen.censored]}
            if probe.get("censored")
            else {}
        ),
        "fit": fit_record(chosen.fit),
        "verdict": result.verdict,
        "fit_from_least_experience": {
            "from_rollout_size": result.upper.smallest_size,
            "same_as_fit": result.upper is chosen,
            "fit": fit_record(result.upper.fit),
            "verdict": result.upper_verdict,
        },
        "learning_rates": [{**r.__dict__, "at_edge": r.at_edge} for r in chosen.rates],
        "first_window": sum(r.first_window for r in chosen.rates),
        "first_window_midpoint": result.earliest,
        "interrupted": result.interrupted,
        "noise_at_branch_point": {key: [r.point, r.low, r.high] for key, r in result.noise.items()},
        "ladder": [
            {
                "target": r.target,
                "reached": len(r.batch_N),
                "sizes": r.n_sizes,
                "fit": fit_record(r.fit),
                "resolved": r.resolved(result.earliest),
            }
            for r in result.rungs
        ],
    }


def markdown(result: ProbeResult) -> str:
    """``report.md``: the verdict and notes, the figure, the start score and targets, how steps are read, the noise
    scale at the branch point, and the learning rates and best score of every branch."""
    chosen, probe, fit, earliest = result.chosen, result.probe, result.chosen.fit, result.earliest
    target = chosen.target
    rows = "\n".join(f"| {key} | {fmt(r.point)} | [{fmt(r.low)}, {fmt(r.high)}] |" for key, r in sorted(result.noise.items()))
    best = "\n".join(
        f"| {size:,} | {fmt(run.learning_rate)} | {run.seed} | {run.best_running_score:.1f} | "
        f"{'yes' if target in run.reached else 'no'} |"
        for size, run in sorted(((run.rollout_size, run) for run in result.runs), key=lambda pair: (pair[0], pair[1].name))
    )
    kept = "\n".join(
        f"| {r.rollout_size:,} | {', '.join(fmt(lr) for lr in r.grid)} | {', '.join(fmt(lr) for lr in r.kept) or '–'} "
        f"| {r.at_edge} | {r.first_window} |"
        for r in chosen.rates
    )
    return "\n".join([
        f"# Probe {result.at}",
        "",
        f"Critical rollout size: {result.verdict}.",
        "",
        f"Rollout sizes varied by {result.varied}.",
        "",
        result.upper_line(),
        "",
        *(line for note in result.all_notes for line in (f"Note: {note}.", "")),
        "![steps against rollout size](steps_vs_rollout_size.png)",
        "",
        f"Start score: {probe['start_score']:.1f} (sd {probe['start_score_sd']:.1f} over {probe['anchor_games']} games "
        f"of the agent at fixed parameters); target {target:.1f} (improvement {target - probe['start_score']:.1f}).",
        "",
        *null_lines(probe),
        *design_lines(probe),
        result.spent.line(),
        "",
        *ladder_lines(result.rungs, chosen, earliest, probe["start_score"]),
        f"Steps S of a branch: {STEPS_TEXT[result.measure]}"
        + f" A branch's first running score stands for agent step {fmt(earliest)} (median over branches), the earliest"
        " the probe can time a reach"
        + ("." if fit is None else f"; the fit's E_min is {fmt(fit.e_min / earliest, 2)}x that."),
        "",
        "Noise scale at the branch point (every measurement of the anchor, at fixed parameters), pooled:",
        "",
        "| scheme/loss | B_simple | 95 % interval |",
        "|---|---|---|",
        rows,
        "",
        "Learning rates per size: the grid, the fastest rate of each seed that reached the target, how many of those "
        "lie at an edge of a grid of at least 3 (the best rate may lie outside it), and how many reached the target "
        f"with their first {probe['window']} games (their steps are upper bounds):",
        "",
        "| rollout size | grid | kept per seed | at an edge | at the first window |",
        "|---:|---|---|---:|---:|",
        kept,
        "",
        f"Best running score of each branch ({probe['window']} games) against the target {target:.1f}:",
        "",
        "| rollout size | learning rate | seed | best running score | reached |",
        "|---:|---:|---:|---:|---|",
        best,
        "",
    ])  # fmt: skip


def report(config: ProbeReportConfig) -> Path:
    """Write ``report.md``, ``probe_results.json`` and ``steps_vs_rollout_size.png`` of a probe; print the verdict."""
    result = analyse(config.probe_dir)
    print_verdict(result)
    fig, ax = plt.subplots(figsize=(7.0, 5.5))
    plot(result, ax)
    save_figure(fig, config.probe_dir / FIGURE)
    write_json(config.probe_dir / RESULTS, results_record(result))
    path = config.probe_dir / REPORT
    write_atomically(path, markdown(result))
    return path


def anchor_played(probe_dir: Path) -> bool:
    """Whether the probe's anchor has played, so that its ``probe.json`` holds the start score and the targets."""
    return read_record(probe_dir / PROBE, PROBE_FIELDS).get("start_score") is not None


def read_probe(probe_dir: Path) -> dict:
    """The ``probe.json`` of a probe whose anchor has played.

    :raises ValueError: naming the file, if it is not a probe's record or its anchor has not played.
    """
    probe = read_record(probe_dir / PROBE, PROBE_FIELDS)
    if probe.get("start_score") is None:
        raise ValueError(f"{probe_dir}: its anchor has not finished; rerun rl-gns probe to go on")
    model, recorded_out = probe.get("model"), probe.get("out")
    if isinstance(model, str) and isinstance(recorded_out, str):  # the probe's copy, where the probe lies now
        model = relocated(model, recorded_out, str(probe_dir))
    for record in (probe_dir / ANCHOR / CONFIG, probe_dir / SWEEP):  # the anchor and the branches start from the agent
        settings = read_record(record, {}) if record.exists() else {"init_from": model}
        held, out = settings.get("init_from"), settings.get("out")
        moved = (out, str(record.parent)) if isinstance(out, str) else None  # a probe moved or cloned, then rerun
        if isinstance(model, str) and not same_setting("init_from", held, model, moved):
            raise RecordError(f"{record}: starts from {held}, not from the probe's agent {model} ({probe_dir / PROBE})")
    probe = require(probe, probe_dir / PROBE, PROBE_PLAYED_FIELDS)
    scores = RunDir(probe_dir / ANCHOR).episodes()["score"]  # the start score is the mean of the anchor's games
    if len(scores) != probe["anchor_games"] or not math.isclose(float(np.mean(scores)), probe["start_score"]):
        raise RecordError(
            f"{probe_dir / PROBE}: start score {probe['start_score']:g} over {probe['anchor_games']} games, but its "
            f"anchor's games average {float(np.mean(scores)) if len(scores) else math.nan:g} over {len(scores)}"
        )
    return probe


def check(config: ProbeReportConfig) -> None:
    """Fail early (``ValueError``) on a directory that is not a probe, whose anchor has not played, or where a file
    of the report cannot be written."""
    if not (config.probe_dir / PROBE).exists():
        raise ValueError(f"{config.probe_dir} is not a probe directory (no {PROBE})")
    read_probe(config.probe_dir)
    check_outputs(config.probe_dir, OUTPUTS)
