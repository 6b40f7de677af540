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
al.'s Figure 4: predicted against fitted, both with intervals, and the line y = x).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.advice import parse_predictor
from rl_gns.records.rundir import read_json, write_json
from rl_gns.reports.figures import Axes, colors, error_bar, fmt, legend, relative, save_plot

#: Fits from fewer rollout sizes pass through their points exactly and are not admitted.
MIN_SIZES = 3
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
        results = read_json(sweep_dir / "results.json")
        game = results["settings"]["env"]
        for t in results["targets"]:
            if t["fit"] is None or len(t["rollout_size_K"]) < MIN_SIZES:
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
        cheaper = 0 if parse_predictor(r.name)[0] == "minibatch" else 1
        return (not tied, -r.overlap if tied else 0.0, cheaper if tied else 0, r.median_error)

    return sorted(rankings, key=key)


def plot_predicted_vs_fitted(pairs: list[Pair], names: list[str], ax: Axes) -> Axes:
    """Predicted (y) against fitted B_crit (x), log-log, both with 95 % intervals, one colour per candidate,
    one marker per game; the line y = x."""
    games = sorted({p.game for p in pairs})
    markers = dict(zip(games, "osD^v<>", strict=False))
    finite = [p.b_crit for p in pairs]
    for name, color in zip(names, colors(len(names)), strict=True):
        for p in pairs:
            value, ci = p.candidates[name]
            if not math.isfinite(value):
                continue
            ax.errorbar(
                [p.b_crit],
                [value],
                xerr=error_bar(p.b_crit, p.b_crit_ci),
                yerr=error_bar(value, ci),
                fmt=markers[p.game],
                color=color,
                ms=5,
                capsize=2,
                alpha=0.85,
                label=name,
            )
            finite.append(value)
    low, high = min(finite) / 3, max(finite) * 3  # limits from the points: a degenerate interval may run off to 1e13
    ax.plot([low, high], [low, high], "k--", lw=1, label="y = x")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    for game, marker in markers.items():
        ax.scatter([], [], marker=marker, color="gray", label=game)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="fitted B_crit (agent steps)",
        ylabel="predicted critical rollout size (agent steps)",
    )
    ax.grid(alpha=0.3, which="both")
    legend(ax, fontsize=7, ncol=2)
    return ax


def validate(config: ValidationConfig) -> Path:
    """Rank the candidates and write the report; return its path."""
    pairs, skipped = load_pairs(config.sweep_dirs)
    rankings = rank(pairs)
    config.out.mkdir(parents=True, exist_ok=True)
    shown = [r.name for r in rankings[:4]]
    if pairs and shown:
        save_plot(lambda ax: plot_predicted_vs_fitted(pairs, shown, ax), config.out / "predicted_vs_fitted.png", (7, 6))
    write_json(config.out / "predictors.json", {"pairs": [asdict(p) for p in pairs], "ranking": [asdict(r) for r in rankings],
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
    path = config.out / "predictors.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def check(config: ValidationConfig) -> None:
    """Fail early (``ValueError``) unless every directory is an analysed sweep."""
    if not config.sweep_dirs:
        raise ValueError("give at least one analysed sweep directory")
    for sweep_dir in config.sweep_dirs:
        if not (sweep_dir / "results.json").exists():
            raise ValueError(f"{sweep_dir}: no results.json (run rl-gns analyze on it first)")
