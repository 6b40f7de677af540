"""``rl-gns validate-probes``: does a noise scale predict the critical rollout size that probes measure, better than
a constant? The criterion of ``docs/prediction-criterion.md (version 2)``, written before the probes' results were seen.

Reads probe directories (``probe_results.json`` of ``rl-gns probe-report``, ``sweep.json`` and the branches):

1. a (game, stage) pair enters if its ``B_crit`` is identified (bounded 95 % interval from at least 3 sizes);
2. candidates at the branch point: the anchor's pooled ``B_simple`` per scheme and loss (``anchor_env_<L>``,
   ``anchor_mb_<L>``, and ``anchor_mb_xM_<L>`` = M times the minibatch value), and the step average of App. D
   (``path_env_<L>``): the envs-scheme ``B_simple`` pooled over the branches at the source's rollout size, from their
   start to the iteration that reached the target;
3. baselines: :data:`FIXED_CONSTANT`, and the leave-one-game-out constant ``10^median(log10 B_crit)`` over the other
   games' pairs;
4. metrics: the median of ``|log10(prediction / B_crit)|`` and Spearman's rank correlation across pairs.

Writes ``probes.md``, ``probes.json`` and ``b_crit_by_stage.png``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro
from scipy.stats import spearmanr

from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.noise_scale import NoiseSums
from rl_gns.core.maths.schemes import Candidate
from rl_gns.records.logs import check_outputs, check_writable, write_atomically
from rl_gns.records.rundir import ANCHOR, PROBE, SWEEP, RunDir, noise_sums, read_record, write_json
from rl_gns.records.schema import PROBE_FIELDS, PROBE_FIT_FIELDS, PROBE_RESULTS_FIELDS, SWEEP_FIELDS, require
from rl_gns.records.study import check_named_once, check_outside_records
from rl_gns.reports.figures import (
    Axes,
    colors,
    fmt,
    interval_bars,
    legend,
    number,
    plain_log_ticks,
    prediction_marker,
    predictor_label,
    save_plot,
    unresolved_entry,
)
from rl_gns.reports.predictor_validation import error
from rl_gns.reports.probe_report import RESOLVED
from rl_gns.reports.sweep_analysis import load_sweep

#: The validation's files in ``--out``.
FIGURE, RESULTS, REPORT = "b_crit_by_stage.png", "probes.json", "probes.md"
OUTPUTS = (FIGURE, RESULTS, REPORT)

#: The constant fixed in advance (docs/prediction-criterion.md (version 2)): the median of the 10 identified fitted B_crit of
#: the first validation, agent steps.
FIXED_CONSTANT = 746.0
#: Primary errors within this (log10) tie: no winner is claimed from a smaller difference.
TIE = 0.05
#: A pair whose kept branches reached the target with their first window this often or more is timed by its score
#: measure's floor as much as by learning (as is one whose ``E_min`` lies near that floor, :data:`RESOLVED`): the
#: ranking is repeated without such pairs.
FLOORED = 0.5
#: Games the criterion needs before it ranks (its leave-one-game-out constant needs the others).
MIN_GAMES = 3
#: The default predictor of today, evaluated at the branch point.
DEFAULT = "anchor_env_value"
#: The factor on the log axis between neighbours at one branch point: each game's ``B_crit``, then its default
#: prediction, then the next game's, side by side and centred on the branch point (:func:`stage_dodge`).
STAGE_OFFSET = 1.06


def stage_dodge(game: int, games: int, prediction: bool) -> float:
    """The factor on a branch point's agent steps where :func:`plot_stages` draws a game's ``B_crit`` or its default
    prediction, so that no game's marker or interval hides another's.

    :param game: the game's index, from 0.
    :param games: the games drawn.
    :param prediction: the default prediction's place (right of the game's ``B_crit``) instead of ``B_crit``'s.
    """
    return STAGE_OFFSET ** (2 * game + prediction - (2 * games - 1) / 2)


@dataclass
class ProbeValidationConfig:
    """Rank the noise-scale predictors against probes' critical rollout sizes (docs/prediction-criterion.md (version 2))."""

    probe_dirs: tyro.conf.Positional[tuple[Path, ...]]
    """Probe directories (each after rl-gns probe-report), or directories holding them (one per game)."""
    out: Path = Path("probe_validation")
    """Directory for probes.md, probes.json and b_crit_by_stage.png."""


@dataclass
class ProbePair:
    """One probe: where it branched, what it fitted and what each candidate predicted, agent steps.

    :param candidates: name -> (prediction, 95 % interval or None); +inf where not resolved.
    :param reason: why ``B_crit`` is not identified (``None`` when it is).
    :param rollout_sizes: the rollout sizes the probe branched at.
    :param b_crit_low: where ``B_crit`` is not identified but bounded below (a fit without an upper end), that 95 %
        lower end; NaN otherwise.
    """

    game: str
    env_steps: int
    b_crit: float
    b_crit_ci: tuple[float, float]
    candidates: dict[str, tuple[float, tuple[float, float] | None]]
    reason: str | None
    rollout_sizes: list[int] = field(default_factory=list)
    b_crit_low: float = math.nan
    first_window: float = 0.0
    """Fraction of the kept branches that reached the target with their first full running score (their steps are
    upper bounds); 0 where the probe report predates the count."""
    resolution: float = math.nan
    """The fitted ``E_min`` over the agent step a branch's first running score stands for
    (:func:`~rl_gns.reports.probe_report.measure_floor`); NaN without a fit or where the report predates it."""

    @property
    def floored(self) -> bool:
        """Timed by its score measure's floor as much as by learning: at least :data:`FLOORED` of the kept branches
        reached the target with their first window, or ``E_min`` lies below :data:`RESOLVED` times the floor."""
        return self.first_window >= FLOORED or self.resolution < RESOLVED


#: The units factors of the candidates at a probe's branch point, per scheme (see
#: :data:`~rl_gns.reports.sweep_analysis.PATH_FACTORS`).
ANCHOR_FACTORS = {"minibatch": ("", "xM"), "envs": ("",)}


def path_noise(probe_dir: Path, target: float, rollout_size: int) -> dict[str, float]:
    """``{"path_env_<L>": B_simple}``: the envs scheme pooled over the branches at ``rollout_size`` (the source's),
    each from its start to the iteration that reached ``target``; absent if none reached it."""
    _, runs = load_sweep(probe_dir)
    sums = {loss: NoiseSums() for loss in LOSSES}
    for run in runs:
        if run.rollout_size != rollout_size or target not in run.reached:
            continue
        branch = RunDir(probe_dir / "runs" / run.name)
        progress = branch.progress()
        for loss in LOSSES:
            sums[loss] = sums[loss] + noise_sums(progress, "envs", loss, run.reached[target].env_steps)
    return {Candidate("envs", loss, where="path").name: s.b_simple for loss, s in sums.items() if s.count}


def load_probe(probe_dir: Path) -> ProbePair:
    """One probe directory as a :class:`ProbePair`.

    :raises ValueError: if ``rl-gns probe-report`` has not been run on it.
    """
    results_path = probe_dir / "probe_results.json"
    if not results_path.exists():
        raise ValueError(f"{probe_dir}: no probe_results.json; run rl-gns probe-report {probe_dir} first")
    results = read_record(results_path, PROBE_RESULTS_FIELDS)
    settings = read_record(probe_dir / SWEEP, SWEEP_FIELDS)
    fit = None if results.get("fit") is None else require(results["fit"], f"{results_path}: fit", PROBE_FIT_FIELDS)
    identified = bool(fit and fit["identified"])
    candidates: dict[str, tuple[float, tuple[float, float] | None]] = {}
    for key, (point, low, high) in results["noise_at_branch_point"].items():
        for factor in ANCHOR_FACTORS[Candidate.of(key).scheme]:
            candidate = Candidate.of(key, factor, "anchor")
            m = candidate.times(settings["n_epochs"], settings["n_minibatches"])
            candidates[candidate.name] = (m * point, (m * low, m * high))
    source_size = int(settings["n_envs_ref"]) * int(settings["n_steps"])
    for name, value in path_noise(probe_dir, float(results["target"]), source_size).items():
        candidates[name] = (value, None)
    game = RunDir(probe_dir / ANCHOR).config().game
    return ProbePair(
        game=game,
        env_steps=int(results["env_steps"]),
        b_crit=fit["b_crit"] if fit and identified else math.nan,
        b_crit_ci=(fit["b_crit_low"], fit["b_crit_high"]) if fit and identified else (math.nan, math.nan),
        candidates=candidates,
        reason=None if identified else results["verdict"],
        rollout_sizes=[n_envs * settings["n_steps"] for n_envs in settings["n_envs"]]
        if not settings.get("n_steps_grid")
        else [settings["n_envs"][0] * n_steps for n_steps in settings["n_steps_grid"]],
        b_crit_low=fit["b_crit_low"] if fit and not identified and fit["b_crit_low"] > 0 else math.nan,
        first_window=(results.get("first_window") or 0) / len(results["reached"]) if results["reached"] else 0.0,
        resolution=fit["e_min"] / results["first_window_midpoint"]
        if fit and results.get("first_window_midpoint")
        else math.nan,
    )


def probe_dirs(paths: tuple[Path, ...]) -> list[Path]:
    """The probe directories among ``paths`` and their children, in order (a path that holds none adds none).

    :raises ValueError: for a probe named twice (links resolved), which would count as its own retest.
    """
    found: list[Path] = []
    for path in paths:
        if (path / PROBE).exists():
            here = [path]
        elif path.is_dir():
            here = sorted(p for p in path.iterdir() if (p / PROBE).exists())
        else:
            here = []
        found.extend(here)
    check_named_once(found, "probe")
    return found


def retests_apart(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    """``(primary, retests)``: of several probes of one agent (the same source and agent steps), the one with the lowest
    ``first_seed`` counts as the pair; the others are its retests."""
    by_point: dict[tuple[str, int], list[tuple[int, Path]]] = {}
    for d in dirs:
        record = read_record(d / PROBE, PROBE_FIELDS)
        by_point.setdefault((record["source"], record["env_steps"]), []).append((record.get("first_seed") or 0, d))
    ordered = [sorted(probes) for probes in by_point.values()]
    return [probes[0][1] for probes in ordered], [d for probes in ordered for _, d in probes[1:]]


def leave_one_game_out(pairs: list[ProbePair]) -> list[float]:
    """Per pair, ``10^median(log10 B_crit)`` over the pairs of the other games (NaN if there are none)."""
    out = []
    for pair in pairs:
        others = [math.log10(p.b_crit) for p in pairs if p.game != pair.game]
        out.append(10 ** float(np.median(others)) if others else math.nan)
    return out


@dataclass
class Score:
    """One predictor over the identified pairs."""

    name: str
    median_error: float
    """Median of ``|log10(prediction / B_crit)|``."""
    spearman: float
    """Rank correlation of prediction and ``B_crit`` (NaN for a constant or fewer than 3 pairs)."""
    ratios: list[float]
    """``prediction / B_crit`` per pair."""


def score(name: str, predictions: list[float], pairs: list[ProbePair]) -> Score:
    """The metrics of one predictor."""
    b_crit = [p.b_crit for p in pairs]
    errors = [error(x, b) for x, b in zip(predictions, b_crit, strict=True)]
    constant = len(set(predictions)) <= 1
    rho = math.nan if constant or len(pairs) < 3 else float(spearmanr(predictions, b_crit).statistic)
    ratios = [x / b for x, b in zip(predictions, b_crit, strict=True)]
    return Score(name, float(np.median(errors)) if errors else math.nan, rho, ratios)


def ratio_range(ratios: list[float]) -> str:
    """The smallest and largest finite ``prediction / B_crit``, ``0.27–11``, followed by how many pairs have none
    (an unresolved or unmeasured prediction: ∞ or NaN); "–" where no pair has one."""
    finite = [x for x in ratios if math.isfinite(x)]
    span = f"{fmt(min(finite), 2)}–{fmt(max(finite), 2)}" if finite else "–"
    missing = len(ratios) - len(finite)
    return span + (f" ({missing} pair{'s' if missing > 1 else ''} without a finite prediction)" if finite and missing else "")


def verdict(scores: list[Score], baselines: list[Score]) -> str:
    """The criterion's decision in one sentence."""
    bar = min((b.median_error for b in baselines), default=math.inf)
    winners = [s for s in scores if s.median_error < bar]
    if not winners:
        return f"No candidate beats both constants (best constant: median |log10 error| {bar:.3f})."
    best = min(winners, key=lambda s: s.median_error)
    margin = bar - best.median_error
    tie = " (within the 0.05 tie margin: no winner is claimed)" if margin < TIE else ""
    return f"{best.name} beats both constants: median |log10 error| {best.median_error:.3f} against {bar:.3f}{tie}."


def distance_outside(prediction: float, low: float, high: float) -> float:
    """How far a prediction lies outside a probe's 95 % interval ``[low, high]`` of ``B_crit`` (``high`` may be +inf),
    in decades: ``log10(low / x)`` below it, ``log10(x / high)`` above it, 0 inside. An unresolved prediction (+inf)
    lies inside an interval without an upper end and infinitely far from any other."""
    if math.isinf(prediction) and prediction > 0:
        return 0.0 if math.isinf(high) else math.inf
    if not prediction > 0:
        return math.inf
    if prediction < low:
        return math.log10(low / prediction)
    return math.log10(prediction / high) if prediction > high else 0.0


@dataclass
class BoundScore:
    """One predictor against every probe that bounds ``B_crit`` (identified, or bounded below only)."""

    name: str
    inside: int
    """Probes whose 95 % interval holds the prediction."""
    probes: int
    median_distance: float
    """Median over those probes of :func:`distance_outside`, decades."""


def bound_scores(pairs: list[ProbePair]) -> list[BoundScore]:
    """Every candidate measured at every bounding probe, and :data:`FIXED_CONSTANT`, against the probes' intervals
    (exploratory: the criterion ranks on identified pairs only), fewest decades outside first."""
    bounded = [
        (p, p.b_crit_ci if p.reason is None else (p.b_crit_low, math.inf))
        for p in pairs
        if p.reason is None or math.isfinite(p.b_crit_low)
    ]
    if not bounded:
        return []
    names = sorted(set.intersection(*(set(p.candidates) for p, _ in bounded)))
    predictions = {f"constant {FIXED_CONSTANT:g}": [FIXED_CONSTANT] * len(bounded)}
    predictions |= {name: [p.candidates[name][0] for p, _ in bounded] for name in names}
    scores = []
    for name, values in predictions.items():
        distances = [distance_outside(x, low, high) for x, (_, (low, high)) in zip(values, bounded, strict=True)]
        scores.append(BoundScore(name, sum(d == 0 for d in distances), len(bounded), float(np.median(distances))))
    return sorted(scores, key=lambda b: (b.median_distance, -b.inside))


def stages_limits(pairs: list[ProbePair]) -> tuple[float, float]:
    """The y limits of :func:`plot_stages`: a factor 2 beyond every identified ``B_crit`` and its interval, every lower
    end of one not identified, every resolved default prediction, the rollout sizes branched at and
    :data:`FIXED_CONSTANT`."""
    values = [FIXED_CONSTANT, *(size for p in pairs for size in p.rollout_sizes)]
    values += [v for p in pairs if p.reason is None for v in (p.b_crit, *p.b_crit_ci)]
    values += [p.b_crit_low for p in pairs]
    values += [p.candidates[DEFAULT][0] for p in pairs if DEFAULT in p.candidates]
    finite = [v for v in values if math.isfinite(v) and v > 0]
    return min(finite) / 2, max(finite) * 2


def plot_stages(pairs: list[ProbePair], ax: Axes) -> Axes:
    """``B_crit`` (circles, with its 95 % interval; an upward triangle at the lower end of one not identified) and the
    default predictor at the branch point (:data:`DEFAULT`,
    :func:`prediction_marker`, a little to the right, with its 95 % interval: open above and fainter where
    ``|G|²`` is not resolved) against the agent steps of the branch point, one colour per game, the games side by
    side (:func:`stage_dodge`), log-log, over the
    rollout sizes the probes branched at (shaded) and the constant :data:`FIXED_CONSTANT`."""
    limits = stages_limits(pairs)
    words = predictor_label(DEFAULT.removeprefix("anchor_"))
    games = sorted({p.game for p in pairs})
    bars = []
    for g, (game, color) in enumerate(zip(games, colors(len(games)), strict=True)):
        mine = sorted((p for p in pairs if p.game == game), key=lambda p: p.env_steps)
        known = [p for p in mine if p.reason is None]
        at, beside = stage_dodge(g, len(games), False), stage_dodge(g, len(games), True)
        if known:
            yerr = np.array([[p.b_crit - p.b_crit_ci[0], p.b_crit_ci[1] - p.b_crit] for p in known]).T
            x, y = [p.env_steps * at for p in known], [p.b_crit for p in known]
            ax.errorbar(x, y, yerr=yerr, fmt="o-", color=color, capsize=3)
            ax.plot([], [], "o-", color=color, label=f"{game}: B_crit (probe, 95 % interval)")  # its legend entry first
        bounded = [p for p in mine if p.reason is not None and math.isfinite(p.b_crit_low)]
        if bounded:
            x, y = [p.env_steps * at for p in bounded], [p.b_crit_low for p in bounded]
            up = np.array([np.zeros(len(y)), 0.5 * np.array(y)])  # an arrow from the lower end upwards
            ax.errorbar(x, y, yerr=up, lolims=True, fmt="_", color=color, ms=14, mew=2.5, capsize=5, ls="none",
                        label=f"{game}: B_crit not identified, at least its 95 % lower end")  # fmt: skip
        predicted = [p for p in mine if DEFAULT in p.candidates]
        for p in predicted:
            value, ci = p.candidates[DEFAULT]
            prediction_marker(ax, p.env_steps * beside, value, limits, "s", color, default=True)
            if ci is not None:
                bars.append(([p.env_steps * beside], [ci[0]], [ci[1]], color))
        if predicted:
            ax.plot([], [], ls="none", marker="s", ms=10, color=color, mec="black",
                    label=f"{game}: B_simple at the branch point, {words}")  # fmt: skip
    sizes = sorted({size for p in pairs for size in p.rollout_sizes})
    if sizes:
        ax.axhspan(sizes[0], sizes[-1], color="gray", alpha=0.12,
                   label=f"rollout sizes the probes branched at ({number(sizes[0])}–{number(sizes[-1])})")  # fmt: skip
    ax.axhline(FIXED_CONSTANT, color="gray", lw=1, ls=":", label=f"constant {FIXED_CONSTANT:g}")
    for band in (*bars, ([], [], [], "gray")):  # the last, empty, gives the legend its entries in gray
        interval_bars(ax, *band, limits=limits)
    unresolved_entry(ax, (p.candidates[DEFAULT][0] for p in pairs if DEFAULT in p.candidates))
    steps = [p.env_steps for p in pairs]
    x_limits = (min(steps) / 2, max(steps) * 2)
    ax.set(xscale="log", yscale="log", xlim=x_limits, ylim=limits, ylabel="critical rollout size (agent steps)",
           xlabel="agent steps of the branch point (games side by side)")  # fmt: skip
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.grid(alpha=0.3, which="major")
    legend(ax, empty="no probe", fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1, frameon=False)
    return ax


def ranking(pairs: list[ProbePair]) -> tuple[list[Score], list[Score], str]:
    """``(scores, baselines, verdict)`` of the criterion over identified ``pairs``."""
    names = sorted(set.intersection(*(set(p.candidates) for p in pairs))) if pairs else []
    scores = sorted((score(n, [p.candidates[n][0] for p in pairs], pairs) for n in names), key=lambda s: s.median_error)
    baselines = [
        score(f"constant {FIXED_CONSTANT:g}", [FIXED_CONSTANT] * len(pairs), pairs),
        score("leave-one-game-out constant", leave_one_game_out(pairs), pairs),
    ]
    games = len({p.game for p in pairs})
    if games < MIN_GAMES:
        return (
            scores,
            baselines,
            (f"Not ranked: {len(pairs)} identified pairs from {games} game(s); the criterion needs {MIN_GAMES} games."),
        )
    return scores, baselines, verdict(scores, baselines)


def score_table(scores: list[Score], baselines: list[Score]) -> list[str]:
    """The Markdown lines of one ranking's metrics, the two constants first."""
    return [
        "| predictor | median abs log10 error | Spearman | prediction / B_crit |",
        "|---|---|---|---|",
        *(
            f"| {s.name} | {'–' if math.isnan(s.median_error) else f'{s.median_error:.3f}'} | {fmt(s.spearman, 2)} | "
            + f"{ratio_range(s.ratios)} |"
            for s in baselines + scores
        ),
    ]


def validate(config: ProbeValidationConfig) -> Path:
    """Write ``probes.md``, ``probes.json`` and ``b_crit_by_stage.png``; print the verdict."""
    found = probe_dirs(config.probe_dirs)
    unfinished = [d for d in found if not (d / "probe_results.json").exists()]
    primary, retests = retests_apart([d for d in found if d not in unfinished])
    every = sorted((load_probe(d) for d in primary), key=lambda p: (p.game, p.env_steps))  # each game by stage
    if retests:
        print(f"retests of a probe already counted, left out: {', '.join(map(str, retests))}", flush=True)
    if unfinished:
        print(f"not finished, left out: {', '.join(map(str, unfinished))}", flush=True)
    pairs = [p for p in every if p.reason is None]
    scores, baselines, line = ranking(pairs)
    unfloored = [p for p in pairs if not p.floored]
    unfloored_scores, unfloored_baselines, unfloored_line = ranking(unfloored)
    floored = (
        f"Without the {len(pairs) - len(unfloored)} pair(s) where at least {FLOORED:.0%} of the kept branches reached "
        f"the target with their first window, or E_min lies below {RESOLVED:g}x the agent step their first window "
        f"stands for (the ranking criteria v5 and later count; v2 to v4 counted the one above): {unfloored_line}"
    )
    print(line, flush=True)
    print(floored, flush=True)
    config.out.mkdir(parents=True, exist_ok=True)
    save_plot(lambda ax: plot_stages(every, ax), config.out / FIGURE, (7.5, 6.5))
    bounds = bound_scores(every)
    write_json(
        config.out / RESULTS,
        {
            "pairs": [asdict(p) for p in every],
            "scores": [asdict(s) for s in scores + baselines],
            "scores_without_floored_pairs": [asdict(s) for s in unfloored_scores + unfloored_baselines],
            "verdict": line,
            "verdict_without_floored_pairs": unfloored_line,
            "bounds": [asdict(b) for b in bounds],
        },
    )
    rows = [
        f"| {p.game} | {p.env_steps:,} | "
        + (f"{fmt(p.b_crit)} [{fmt(p.b_crit_ci[0])}, {fmt(p.b_crit_ci[1])}]" if p.reason is None else p.reason)
        + f" | {p.first_window:.0%} | {fmt(p.resolution, 2)} | {fmt(p.candidates.get(DEFAULT, (math.nan,))[0])} |"
        for p in every
    ]
    text = "\n".join([
        "# Probes against the noise scale (docs/prediction-criterion.md, versions 2 and later)",
        "",
        f"{line} {len(pairs)} of {len(every)} finished probes identified B_crit"
        + (f"; not finished, left out: {', '.join(map(str, unfinished))}." if unfinished else "."),
        "",
        "![B_crit by stage](b_crit_by_stage.png)",
        "",
        "| game | branch point (agent steps) | B_crit, 95 % interval | kept branches at the first window "
        f"| E_min / first window's step | {DEFAULT} |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Over all {len(pairs)} identified pairs (the ranking criteria v2 to v4 count these): {line}",
        "",
        *score_table(scores, baselines),
        "",
        f"{floored} The same metrics over these {len(unfloored)} pair(s):",
        "",
        *score_table(unfloored_scores, unfloored_baselines),
        "",
        "Not part of the criterion, exploratory: every predictor against every probe that bounds B_crit, identified "
        "or bounded below only (its 95 % interval then has no upper end). A prediction inside the interval is "
        "consistent with the probe; outside, its distance to the interval is counted in decades.",
        "",
        "| predictor | inside the probe's interval | median decades outside |",
        "|---|---|---|",
        *(f"| {b.name} | {b.inside} of {b.probes} | {b.median_distance:.3f} |" for b in bounds),
        "",
    ])  # fmt: skip
    path = config.out / REPORT
    write_atomically(path, text)
    return path


def check(config: ProbeValidationConfig) -> None:
    """Fail early (``ValueError``) when no probe directory is given, or none has been reported."""
    found = probe_dirs(config.probe_dirs)
    if not found:
        raise ValueError(f"no probe directory (with probe.json) in {', '.join(map(str, config.probe_dirs))}")
    if not any((d / "probe_results.json").exists() for d in found):
        raise ValueError(f"no probe among {', '.join(map(str, found))} is reported yet: run rl-gns probe-report on it")
    check_outside_records(config.out)
    check_writable(config.out)
    check_outputs(config.out, OUTPUTS)
