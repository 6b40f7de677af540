"""``rl-gns validate-predictors``: which noise scale predicts the critical rollout size, across games and targets.

Reads analysed sweeps (``results.json`` of ``rl-gns analyze``: per target the fitted ``B_crit`` with its
bootstrap interval and every noise-scale candidate with its interval) and applies the criterion written
in ``docs/prediction-criterion.md`` before the validation data were seen:

1. admitted pairs: every (game, target) whose fit used at least 3 rollout sizes;
2. primary: the median over admitted pairs of ``|log10(candidate / fitted B_crit)|`` (an unresolved
   candidate counts as an infinite error); lowest wins;
3. tie-break within 0.05 of the best: the larger fraction of pairs whose candidate interval overlaps the
   fitted interval, then the cheaper measurement (minibatch scheme before envs).

Writes ``predictors.md``, ``predictors.json`` and ``predicted_vs_fitted.png`` (the shape of McCandlish et
al.'s Figure 4: predicted against fitted, both with intervals, and the line y = x; a panel per candidate, the default
predictor's and the three best others').
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.advice import DEFAULT_PREDICTOR, parse_predictor
from rl_gns.core.maths.tradeoff import MIN_FIT_SIZES
from rl_gns.records.logs import check_outputs, check_writable, write_atomically
from rl_gns.records.rundir import read_sweep_results, write_json
from rl_gns.records.study import check_named_once, check_outside_records
from rl_gns.reports.figures import (
    LOSS_COLORS,
    Axes,
    fmt,
    interval_bars,
    legend,
    number,
    plain_log_ticks,
    plt,
    prediction_marker,
    predictor_label,
    relative,
    resolved,
    save_figure,
    unresolved_entry,
)
from rl_gns.reports.sweep_analysis import IDENTIFIED_FACTOR, identified_reach

#: The validation's files in ``--out``.
FIGURE, RESULTS, REPORT = "predicted_vs_fitted.png", "predictors.json", "predictors.md"
OUTPUTS = (FIGURE, RESULTS, REPORT)

#: Primary errors within this (log10) of the best tie.
TIE = 0.05


@dataclass
class ValidationConfig:
    """Rank the noise-scale predictors of the critical rollout size on analysed sweeps (docs/prediction-criterion.md)."""

    sweep_dirs: tyro.conf.Positional[tuple[Path, ...]]
    """Analysed sweep directories (results.json from rl-gns analyze), one per game."""
    out: Path = Path(".")
    """Directory for predictors.md, predictors.json and predicted_vs_fitted.png."""


@dataclass
class Pair:
    """One admitted (game, target): the fitted B_crit and every candidate's prediction, agent steps."""

    game: str
    target: float
    b_crit: float
    b_crit_ci: tuple[float, float]
    candidates: dict[str, tuple[float, tuple[float, float] | None]]
    """name -> (prediction, 95 % interval or None); +inf where not resolved."""


@dataclass
class Ranking:
    """One candidate over all admitted pairs."""

    name: str
    median_error: float
    """Median of ``|log10(prediction / B_crit)|``; inf where unresolved predictions are the majority."""
    overlap: float
    """Fraction of pairs whose intervals overlap."""
    ratios: list[float] = field(default_factory=list)
    """``prediction / B_crit`` per pair, in the order of the pairs."""


def load_pairs(sweep_dirs: tuple[Path, ...]) -> tuple[list[Pair], list[str]]:
    """The admitted pairs of every sweep, and why the others were left out."""
    pairs, skipped = [], []
    for sweep_dir in sweep_dirs:
        results = read_sweep_results(sweep_dir / "results.json")
        game = results["settings"]["env"]
        for t in results["targets"]:
            if t["fit"] is None or len(t["rollout_size_K"]) < MIN_FIT_SIZES:
                skipped.append(f"{game} target {t['target']:g}: {len(t['rollout_size_K'])} rollout sizes reached the target")
                continue
            if t["ci_b_crit"] is None:
                skipped.append(f"{game} target {t['target']:g}: no interval of B_crit (analysed with --bootstrap 0)")
                continue
            candidates = {
                name: (float(c["value"]), None if c["ci"] is None else tuple(c["ci"])) for name, c in t["candidates"].items()
            }
            pairs.append(Pair(game, t["target"], t["b_crit"], (t["ci_b_crit"][0], t["ci_b_crit"][1]), candidates))
    return pairs, skipped


def error(prediction: float, b_crit: float) -> float:
    """``|log10(prediction / B_crit)|``; inf for an unresolved or non-positive prediction."""
    return abs(math.log10(prediction / b_crit)) if math.isfinite(prediction) and prediction > 0 else math.inf


def overlaps(a: tuple[float, float] | None, b: tuple[float, float]) -> bool:
    return a is not None and a[0] <= b[1] and b[0] <= a[1]


def rank(pairs: list[Pair]) -> list[Ranking]:
    """Every candidate measured in all pairs, best first by the pre-registered criterion."""
    names = sorted(set.intersection(*(set(p.candidates) for p in pairs))) if pairs else []
    rankings = []
    for name in names:
        errors = [error(p.candidates[name][0], p.b_crit) for p in pairs]
        overlap = float(np.mean([overlaps(p.candidates[name][1], p.b_crit_ci) for p in pairs]))
        ratios = [p.candidates[name][0] / p.b_crit for p in pairs]
        rankings.append(Ranking(name, float(np.median(errors)), overlap, ratios))
    best = min((r.median_error for r in rankings), default=math.inf)

    def key(r: Ranking) -> tuple:
        tied = r.median_error <= best + TIE
        cheaper = 0 if parse_predictor(r.name).scheme == "minibatch" else 1
        return (not tied, -r.overlap if tied else 0.0, cheaper if tied else 0, r.median_error)

    return sorted(rankings, key=key)


def fitted_sizes(sweep_dirs: tuple[Path, ...]) -> list[int]:
    """Every rollout size that a fit of the sweeps used (reached a target that has a fit), agent steps, in order."""
    sizes = set()
    for sweep_dir in sweep_dirs:
        for t in read_sweep_results(sweep_dir / "results.json")["targets"]:
            sizes |= set(t["rollout_size_K"]) if t["fit"] is not None else set()
    return sorted(sizes)


def plot_candidate(pairs: list[Pair], ranking: Ranking, place: int, sizes: list[int], limits: tuple[float, float],
                   ax: Axes) -> Axes:  # fmt: skip
    """One candidate's prediction (y) against the fitted B_crit (x), log-log, over the rollout sizes the fits used
    (shaded on both axes), one marker per game, both with their 95 % intervals (bars; open above where the
    prediction's has no upper end); an unresolved prediction (+∞) hollow at the top edge; the line y = x. The default
    predictor's markers are large and black-edged.

    :param pairs: the admitted pairs to draw (their fitted B_crit within ``limits``).
    :param ranking: the candidate and its metrics.
    :param place: its rank under the criterion, from 1.
    :param sizes: rollout sizes the fits used, agent steps.
    :param limits: the panel's limits on both axes, agent steps.
    """
    markers = dict(zip(sorted({p.game for p in pairs}), "osD^v<>", strict=False))
    color, default = LOSS_COLORS[parse_predictor(ranking.name).loss], ranking.name == DEFAULT_PREDICTOR
    if sizes:
        swept = f"rollout sizes the fits used ({number(sizes[0])}–{number(sizes[-1])})"
        ax.axhspan(sizes[0], sizes[-1], color="gray", alpha=0.1, label=swept)
        ax.axvspan(sizes[0], sizes[-1], color="gray", alpha=0.1)
    ax.plot(limits, limits, "k--", lw=1, label="y = x")
    for p in pairs:
        value, ci = p.candidates[ranking.name]
        y = value if resolved(value) else limits[1]
        ax.hlines(y, *p.b_crit_ci, color="black", lw=1, alpha=0.5, label="95 % interval of B_crit")
        if ci is not None:
            interval_bars(ax, [p.b_crit], [ci[0]], [ci[1]], color, limits, alpha=(0.6, 0.25))
        prediction_marker(ax, p.b_crit, value, limits, markers[p.game], color, default)
    for game, marker in markers.items():
        ax.plot([], [], ls="none", marker=marker, color="gray", label=game)
    interval_bars(ax, [], [], [], "gray", limits)  # the last bars of their labels: the legend's entries in gray
    unresolved_entry(ax, (p.candidates[ranking.name][0] for p in pairs))
    ax.set(xscale="log", yscale="log", xlim=limits, ylim=limits, xlabel="fitted B_crit (agent steps)",
           ylabel="predicted B_crit (agent steps)")  # fmt: skip
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.grid(alpha=0.3, which="major")
    metrics = f"rank {place}: median |log10 ratio| {fmt(ranking.median_error, 2)}, intervals overlap {ranking.overlap:.0%}"
    ax.set_title(f"{predictor_label(ranking.name)}\n{metrics}", fontsize=9)
    return ax


def plot_predicted_vs_fitted(pairs: list[Pair], rankings: list[Ranking], shown: list[str], sizes: list[int]) -> plt.Figure:
    """``predicted_vs_fitted.png``: a panel per shown candidate (:func:`plot_candidate`), the default predictor's
    first, on the same limits: a factor 3 beyond every resolved prediction, the rollout sizes and every fitted B_crit
    within reach of the sizes (:func:`identified_reach`); a pair whose fitted B_crit lies beyond (a degenerate fit) is
    named in the title instead of drawn.

    :param pairs: the admitted pairs.
    :param rankings: every candidate's metrics, best first.
    :param shown: the candidates drawn.
    :param sizes: rollout sizes the fits used, agent steps.
    """
    reach = identified_reach(sizes) if sizes else (0.0, math.inf)
    drawn = [p for p in pairs if reach[0] <= p.b_crit <= reach[1]]
    values = [float(v) for v in sizes] + [p.b_crit for p in drawn]
    values += [p.candidates[name][0] for p in drawn for name in shown]
    finite = [v for v in values if math.isfinite(v) and v > 0]
    limits = (min(finite) / 3, max(finite) * 3)
    columns = min(len(shown), 2)
    rows = math.ceil(len(shown) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns + 2.6, 4.8 * rows), squeeze=False)
    ranks = {r.name: (i, r) for i, r in enumerate(rankings, 1)}
    for name, ax in zip(shown, axes.flat, strict=False):
        plot_candidate(drawn, ranks[name][1], ranks[name][0], sizes, limits, ax)
    for ax in axes.flat[len(shown) :]:
        ax.set_axis_off()
    legend(axes.flat[columns - 1], fontsize=8, loc="upper left", bbox_to_anchor=(1.04, 1.0), frameon=False)
    left_out = [f"{p.game} {p.target:g} ({number(p.b_crit)})" for p in pairs if p not in drawn]
    title = "predicted against fitted critical rollout size, per admitted (game, target)"
    if left_out:
        factor = f"{IDENTIFIED_FACTOR:g}×"
        title += f"\nnot drawn, fitted B_crit beyond {factor} the rollout sizes (degenerate fits): {', '.join(left_out)}"
    fig.suptitle(title, fontsize=10)
    return fig


def validate(config: ValidationConfig) -> Path:
    """Rank the candidates and write the report; return its path."""
    pairs, skipped = load_pairs(config.sweep_dirs)
    rankings = rank(pairs)
    config.out.mkdir(parents=True, exist_ok=True)
    others = [r.name for r in rankings if r.name != DEFAULT_PREDICTOR]
    shown = [DEFAULT_PREDICTOR, *others[:3]] if DEFAULT_PREDICTOR in {r.name for r in rankings} else others[:4]
    if pairs and shown:
        figure = plot_predicted_vs_fitted(pairs, rankings, shown, fitted_sizes(config.sweep_dirs))
        save_figure(figure, config.out / FIGURE)
    write_json(config.out / RESULTS, {"pairs": [asdict(p) for p in pairs], "ranking": [asdict(r) for r in rankings],
                                                "skipped": skipped})  # fmt: skip
    sweeps = ", ".join(f"`{relative(d, config.out)}`" for d in config.sweep_dirs)
    lines = [
        "# Which noise scale predicts the critical rollout size",
        "",
        f"Sweeps: {sweeps}. Criterion: docs/prediction-criterion.md (fixed before the validation data were seen). "
        f"{len(pairs)} admitted (game, target) pairs; ratio = prediction / fitted B_crit.",
        "",
        "| rank | candidate | median \\|log10 ratio\\| | median ratio | ratio range | intervals overlap |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rankings, 1):
        finite = [x for x in r.ratios if math.isfinite(x)]
        span = f"{fmt(min(finite))} – {fmt(max(finite))}" if finite else "–"
        lines.append(
            f"| {i} | `{r.name}` | {fmt(r.median_error)} | {fmt(float(np.median(r.ratios)))} | {span} | {r.overlap:.0%} |"
        )
    if rankings:
        best = rankings[0]
        lines += [
            "",
            f"## Per game and target: `{best.name}`",
            "",
            "| game | target | fitted B_crit [95 %] | prediction [95 %] | ratio |",
            "|---|---|---|---|---|",
        ]
        for p, ratio in zip(pairs, best.ratios, strict=True):
            value, ci = p.candidates[best.name]
            ci_text = f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "–"
            lines.append(f"| {p.game} | {p.target:g} | {fmt(p.b_crit)} [{fmt(p.b_crit_ci[0])}, {fmt(p.b_crit_ci[1])}] "
                         f"| {fmt(value)} {ci_text} | {fmt(ratio)} |")  # fmt: skip
        lines += ["", "![predicted vs fitted](predicted_vs_fitted.png)"]
    if skipped:
        lines += ["", "Not admitted:", "", *(f"- {s}" for s in skipped)]
    path = config.out / REPORT
    write_atomically(path, "\n".join(lines) + "\n")
    return path


def check(config: ValidationConfig) -> None:
    """Fail early (``ValueError``) unless every directory is an analysed sweep."""
    if not config.sweep_dirs:
        raise ValueError("give at least one analysed sweep directory")
    check_named_once(config.sweep_dirs, "sweep")
    for sweep_dir in config.sweep_dirs:
        if not (sweep_dir / "results.json").exists():
            raise ValueError(f"{sweep_dir}: no results.json (run rl-gns analyze on it first)")
    check_outside_records(config.out)
    check_writable(config.out)
    check_outputs(config.out, OUTPUTS)
