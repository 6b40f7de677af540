"""``rl-gns table DIR ...``: the paper's Table 1 from analysed sweeps and reported probes, and criterion v8's table
per regime.

Each ``DIR`` is one game at one rung of the ladder (``results/table1/<Game>/<rung>``, what
``results/table1/protocol.sh`` writes): ``targets.json`` (``rl-gns targets``) and ``sweep/results.json``
(``rl-gns analyze``); or a probe reported by ``rl-gns probe-report`` (``probe.json``, ``probe_results.json`` and its
branches: the ppo regime's pairs of criterion v8, :func:`load_probe_rows`). Reads only those files. Per target:
its false-crossing probability, the fitted ``B_crit`` with its 95 % interval in agent steps and frames, and
``B_simple`` at the start and averaged along the path per loss (``envs`` scheme, agent steps); per game the rate at
which the kept learning rate sits at an edge of its grid. Then, per regime, every candidate's metrics over the
counted pairs against both baselines (:mod:`rl_gns.core.maths.criterion`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.envs.atari import FRAME_SKIP
from rl_gns.core.maths.criterion import (
    CONSTANT_BASELINE,
    GAMES_TO_RANK,
    at_edge,
    fastest,
    leave_one_game_out,
    median_log_error,
    rank_correlation,
    ratio_range,
    ratio_spread,
    winners,
    within,
)
from rl_gns.core.maths.names import LOSSES, tracker_key
from rl_gns.core.maths.schemes import Candidate
from rl_gns.core.maths.targets import StepsMeasure
from rl_gns.records.rundir import PROBE, SWEEP, read_json, read_record
from rl_gns.records.schema import PROBE_FIELDS, PROBE_RESULTS_FIELDS, SWEEP_FIELDS
from rl_gns.reports.figures import fmt
from rl_gns.reports.sweep_analysis import PATH_FACTORS, RunRecord, best_per_seed, load_sweep, path_candidates

#: Sizes that must reach a target, with at least :data:`MIN_SEEDS` seeds each, for its pair to count (v8).
MIN_SIZES, MIN_SEEDS = 4, 2
#: The current default predictor, as analyze reports it.
DEFAULT = "env_value"


@dataclass
class TableConfig:
    """Print the Table-1-shaped table of analysed one-step (or ladder) sweeps and criterion v8's table per regime."""

    dirs: tyro.conf.Positional[tuple[Path, ...]]
    """Game-and-rung directories (targets.json, sweep/results.json), or probes reported by rl-gns probe-report."""
    out: Path | None = None
    """Also write the tables here (Markdown); if unset, print only."""


@dataclass
class Row:
    """One game's target."""

    game: str
    rung: str
    regime: str
    target: float
    p_null: float
    sizes: int
    b_crit: float
    ci: tuple[float, float] | None
    counted: bool
    why_not: str
    candidates: dict[str, float]
    recipe: str = ""
    """What the rung trains: optimizer, minibatches ``M`` per epoch, epochs, clip range (:func:`recipe`)."""


def judged_regime(settings: dict) -> str:
    """Which of v8's regimes a sweep's settings belong to: ``one-step`` (RMSprop, one epoch of one minibatch),
    ``ppo`` (Adam, 4 epochs of 4 minibatches, clip range 0.1), or ``ladder`` (a rung in between, reported only)."""
    optimizer, epochs, m = settings.get("optimizer", "adam"), settings["n_epochs"], settings["n_minibatches"]
    if optimizer == "rmsprop" and epochs == 1 and m == 1:
        return "one-step"
    if optimizer == "adam" and epochs == 4 and m == 4 and settings.get("clip_range") == 0.1:
        return "ppo"
    return "ladder"


def recipe(settings: dict) -> str:
    """A sweep's place on the ladder in words: ``adam, M 4, 4 epochs, clip 0.1``. No clip binds where the clip range
    is 1e9 or above, or where a rollout gives one gradient step (its probability ratio is 1)."""
    clip, epochs = settings.get("clip_range"), settings["n_epochs"]
    one_step = epochs == 1 and settings["n_minibatches"] == 1
    clipped = "no clip" if one_step or clip is None or clip >= 1e9 else f"clip {clip:g}"
    optimizer = settings.get("optimizer", "adam")
    return f"{optimizer}, M {settings['n_minibatches']}, {epochs} epoch{'s' if epochs > 1 else ''}, {clipped}"


def kept_runs(runs: list[dict], target: float) -> dict[tuple[int, int], dict]:
    """Per (rollout size, seed), the run that reached ``target`` in fewest iterations
    (:func:`~rl_gns.core.maths.criterion.fastest`)."""
    reached: dict[tuple[int, int], dict[str, dict]] = {}
    for run in runs:
        reach = run["reached"].get(str(target)) or run["reached"].get(repr(target))
        if reach is not None:
            reached.setdefault((run["rollout_size"], run["seed"]), {})[run["name"]] = {**run, "_reach": reach}
    return {
        key: by_name[fastest({name: run["_reach"]["iterations"] for name, run in by_name.items()})]
        for key, by_name in reached.items()
    }


def edge_rate(runs: list[dict], targets: list[float]) -> tuple[int, int]:
    """``(at an edge, kept)`` over (size, seed, target): kept rates that are the lowest or highest of their size's grid."""
    grids: dict[int, set[float]] = {}
    for run in runs:
        grids.setdefault(run["rollout_size"], set()).add(run["learning_rate"])
    kept = [(size, run["learning_rate"]) for target in targets for (size, _), run in kept_runs(runs, target).items()]
    return sum(at_edge(rate, list(grids[size])) for size, rate in kept), len(kept)


def counted(entry: dict, kept: dict[tuple[int, int], dict]) -> str:
    """Why a target's pair does not count (v8), or ``""`` where it does."""
    reached = sum(seeds >= MIN_SEEDS for seeds in entry["seeds_reached_K"])
    ci = entry.get("ci_b_crit")
    if entry.get("b_crit") is None:
        return "B_crit not identified"
    if reached < MIN_SIZES:
        return f"{reached} sizes reached it with {MIN_SEEDS} seeds (needs {MIN_SIZES})"
    if ci is None or not all(math.isfinite(x) and x > 0 for x in ci):
        return "interval not finite at both ends"
    first = sum(run["_reach"]["first_window"] for run in kept.values())
    if 2 * first >= len(kept):
        return f"{first} of {len(kept)} kept runs reached it with their first window"
    return ""


def load_rows(directory: Path) -> tuple[list[Row], tuple[int, int]]:
    """The rows of one game-and-rung directory, and its edge count. Each target's ``p_null`` is the one recomputed
    with the learning rates the sweep tried in the end (``targets_realised.json``) where that was written, and a
    target whose ``p_null`` exceeds the level does not count (v8)."""
    realised = directory / "targets_realised.json"
    targets = read_json(realised if realised.exists() else directory / "targets.json")
    results = read_json(directory / "sweep" / "results.json")
    settings = results["settings"]
    p_null = dict(zip(targets["targets"], targets["false_crossing"], strict=True))
    level = targets.get("level", 0.01)
    rows = []
    for entry in results["targets"]:
        target = entry["target"]
        kept = kept_runs(results["runs"], target)
        noise = p_null.get(target, math.nan)
        why_not = counted(entry, kept) or (f"p_null {noise:.2g} above {level:g}" if noise > level else "")
        candidates = {name: c["value"] for name, c in entry["path_candidates"].items()}
        if DEFAULT in entry["candidates"]:
            candidates[f"default_{DEFAULT}"] = entry["candidates"][DEFAULT]["value"]
        ci = entry.get("ci_b_crit")
        rows.append(
            Row(
                game=settings["env"],
                rung=directory.name,
                regime=judged_regime(settings),
                target=target,
                p_null=noise,
                sizes=len(entry["rollout_size_K"]),
                b_crit=entry["b_crit"] if entry.get("b_crit") is not None else math.nan,
                ci=tuple(ci) if ci else None,
                counted=not why_not,
                why_not=why_not,
                candidates=candidates,
                recipe=recipe(settings),
            )
        )
    return rows, edge_rate(results["runs"], [entry["target"] for entry in results["targets"]])


def probe_candidates(probe_dir: Path, results: dict, runs: list[RunRecord], target: float) -> dict[str, float]:
    """Criterion v8's candidates of a probe at ``target``: the path averages over its kept branches (the probe's steps
    measure keeps them), the start values its anchor measured at fixed parameters, and the default there."""
    settings = read_record(probe_dir / SWEEP, SWEEP_FIELDS)
    measure: StepsMeasure = results.get("steps") or "passage"
    sizes = sorted({run.rollout_size for run in runs})
    path = path_candidates(runs, target, sizes, settings["n_minibatches"], 0, np.random.default_rng(0), measure)
    candidates = {name: prediction.value for name, prediction in path.items() if name.startswith("path_")}
    for key, (point, _, _) in results["noise_at_branch_point"].items():
        for factor in PATH_FACTORS[Candidate.of(key).scheme]:
            candidate = Candidate.of(key, factor, "start")
            candidates[candidate.name] = candidate.times(settings["n_epochs"], settings["n_minibatches"]) * point
    default = results["noise_at_branch_point"].get(tracker_key("envs", "value"))
    if default is not None:
        candidates[f"default_{DEFAULT}"] = default[0]
    return candidates


def load_probe_rows(probe_dir: Path) -> tuple[list[Row], tuple[int, int]]:
    """The rows of one probe (``rl-gns probe-report``'s ``probe_results.json``, its ``probe.json`` and branches), one per
    target, and its edge count. A pair counts where its ``B_crit`` is identified, fewer than half its kept branches
    reached the target with their first window, and its targets follow the null rule with ``p_null`` at most 0.01
    (criterion v8's note of 2026-12-04)."""
    probe = read_record(probe_dir / PROBE, PROBE_FIELDS)
    results = read_record(probe_dir / "probe_results.json", PROBE_RESULTS_FIELDS)
    settings, runs = load_sweep(probe_dir)
    measure: StepsMeasure = results.get("steps") or "passage"
    p_null = dict(zip(probe.get("targets") or [], probe.get("false_crossing") or [], strict=False))
    grids = {run.rollout_size: sorted({r.learning_rate for r in runs if r.rollout_size == run.rollout_size}) for run in runs}
    rows, edges, total = [], 0, 0
    for rung in results.get("ladder") or [{"target": results["target"], "fit": results["fit"]}]:
        target, fit = float(rung["target"]), rung["fit"]
        kept = [run for size in grids for run in best_per_seed(runs, target, size, measure).values()]
        edges += sum(at_edge(run.learning_rate, grids[run.rollout_size]) for run in kept)
        total += len(kept)
        first = sum(run.reached[target].first_window for run in kept)
        noise = p_null.get(target, math.nan)
        why_not = ""
        if fit is None or not fit["identified"]:
            why_not = "B_crit not identified"
        elif 2 * first >= len(kept):
            why_not = f"{first} of {len(kept)} kept branches reached it with their first window"
        elif not noise <= 0.01:
            why_not = "targets not set by the null rule" if math.isnan(noise) else f"p_null {noise:.2g} above 0.01"
        identified = fit is not None and fit["identified"]
        rows.append(
            Row(
                game=settings["env"],
                rung=f"probe at {probe['env_steps'] // 1000:,}k",
                regime=judged_regime(settings),
                target=target,
                p_null=noise,
                sizes=len({run.rollout_size for run in kept}),
                b_crit=fit["b_crit"] if identified else math.nan,
                ci=(fit["b_crit_low"], fit["b_crit_high"]) if identified else None,
                counted=not why_not,
                why_not=why_not,
                candidates=probe_candidates(probe_dir, results, runs, target),
            )
        )
    return rows, (edges, total)


def interval(ci: tuple[float, float] | None, scale: float = 1.0) -> str:
    return f"[{fmt(ci[0] * scale)}, {fmt(ci[1] * scale)}]" if ci else "–"


def table1(rows: list[Row], edges: dict[str, tuple[int, int]]) -> list[str]:
    """The paper's Table 1 shape: per game and target, ``B_crit`` and ``B_simple`` at the start and along the path."""
    head = " | ".join(f"{kind} {loss}" for kind in ("start", "path") for loss in LOSSES)
    lines = [
        f"| game | rung | target | p_null | sizes | B_crit (agent steps) [95 %] | B_crit (frames) | {head} | counted |",
        "|---|---|---|---|---|---|---|" + "---|" * (2 * len(LOSSES)) + "---|",
    ]
    for r in rows:
        noise = " | ".join(
            fmt(r.candidates.get(f"{kind}_env_{loss}", math.nan)) for kind in ("start", "path") for loss in LOSSES
        )
        lines.append(
            f"| {r.game} | {r.rung} | {r.target:g} | {r.p_null:.2g} | {r.sizes} | {fmt(r.b_crit)} {interval(r.ci)} "
            f"| {fmt(r.b_crit * FRAME_SKIP)} {interval(r.ci, FRAME_SKIP)} | {noise} | {'yes' if r.counted else r.why_not} |"
        )
    lines += ["", "Kept learning rate at an edge of its grid (size, seed, target): "]
    lines += [f"- {game}: {at} of {total}" for game, (at, total) in edges.items()]
    return lines


def ladder_table(rows: list[Row]) -> list[str]:
    """The ladder (v8): per candidate and rung, ``predicted / fitted B_crit`` over the counted pairs of the games swept
    at two rungs or more, as its median and range (:func:`~rl_gns.core.maths.criterion.ratio_spread`); the fitted
    ``B_crit`` itself in agent steps. Where the relation breaks shows as a column whose ratios leave the first rung's.
    Empty for sweeps of fewer than two rungs."""
    swept = [r for r in rows if not r.rung.startswith("probe")]
    rungs_of = {game: {r.rung for r in swept if r.game == game} for game in {r.game for r in swept}}
    games = sorted(game for game, rungs in rungs_of.items() if len(rungs) >= 2)
    pairs = [r for r in swept if r.game in games and r.counted]
    rungs = sorted({r.rung for r in swept if r.game in games})
    if not games:
        return []
    by_rung = {rung: [r for r in pairs if r.rung == rung] for rung in rungs}
    recipes = {rung: next(r.recipe for r in swept if r.rung == rung and r.game in games) for rung in rungs}
    names = sorted({name for r in pairs for name in r.candidates}, key=lambda n: (not n.startswith("default"), n))

    def cell(values: list[float], fitted: list[float]) -> str:
        if not values:
            return "–"
        middle, low, high = ratio_spread(np.array(values), np.array(fitted))
        return f"{fmt(middle)} ({fmt(low)}–{fmt(high)})"

    lines = [
        f"## The ladder: predicted / fitted B_crit per rung ({', '.join(games)})",
        "",
        "Each cell: the median of predicted / fitted `B_crit` over the rung's counted pairs, and its range; the first "
        "row, the fitted `B_crit` itself in agent steps.",
        "",
        "| candidate | " + " | ".join(f"{rung} ({len(by_rung[rung])} pairs)" for rung in rungs) + " |",
        "|---|" + "---|" * len(rungs),
    ]
    fitted = [[r.b_crit for r in by_rung[rung]] for rung in rungs]
    lines.append("| fitted B_crit | " + " | ".join(cell(f, [1.0] * len(f)) for f in fitted) + " |")
    for name in names:
        cells = [
            cell([r.candidates.get(name, math.nan) for r in by_rung[rung]], f) for rung, f in zip(rungs, fitted, strict=True)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return [*lines, "", *(f"- {rung}: {recipes[rung]}" for rung in rungs)]


def criterion_table(rows: list[Row], regime: str) -> list[str]:
    """v8's metrics over the counted pairs of one regime, both baselines beside the candidates, and the decision."""
    pairs = [r for r in rows if r.counted and r.regime == regime]
    games = sorted({r.game for r in pairs})
    head = [f"### Regime `{regime}`: {len(pairs)} counted pairs from {len(games)} game(s)", ""]
    if not pairs:
        return [*head, "No counted pair."]
    fitted = np.array([r.b_crit for r in pairs])
    predictions = {name: np.array([r.candidates.get(name, math.nan) for r in pairs]) for name in sorted(pairs[0].candidates)}
    baselines = {
        f"constant {CONSTANT_BASELINE[regime]:g}": np.full(len(pairs), CONSTANT_BASELINE[regime]),
        "leave-one-game-out constant": leave_one_game_out([r.game for r in pairs], fitted),
    }
    lines = [*head, "| predictor | median \\|log10\\| | Spearman | within 2× |", "|---|---|---|---|"]
    for name, predicted in {**baselines, **predictions}.items():
        lines.append(
            f"| {name} | {median_log_error(predicted, fitted):.3f} | {rank_correlation(predicted, fitted):.2f} "
            f"| {within(predicted, fitted):.2f} |"
        )
    if len(games) < GAMES_TO_RANK:
        return [*lines, "", f"Not ranked: the criterion needs counted pairs from {GAMES_TO_RANK} games."]
    won = winners(
        {name: median_log_error(p, fitted) for name, p in predictions.items()},
        {name: median_log_error(p, fitted) for name, p in baselines.items()},
    )
    if not won:
        return [*lines, "", "No candidate beats both baselines by more than the tie margin."]
    low, high = ratio_range(predictions[won[0]], fitted)
    decision = (
        f"Winner: `{won[0]}`; its predicted / fitted B_crit spans {low:.2f}–{high:.2f} over the {len(pairs)} pairs "
        "(rounded outward: the validated error of envs/predictors.toml)."
    )
    return [*lines, "", decision]


def check(config: TableConfig) -> None:
    """Refuse a directory without its targets or its analysis (one line)."""
    for directory in config.dirs:
        if (directory / PROBE).is_file():
            if not (directory / "probe_results.json").is_file():
                raise ValueError(f"{directory}: no probe_results.json (run rl-gns probe-report {directory})")
            continue
        for name in ("targets.json", "sweep/results.json"):
            if not (directory / name).is_file():
                raise ValueError(f"{directory}: no {name} (run results/table1/protocol.sh, or rl-gns targets and analyze)")


def table(config: TableConfig) -> list[str]:
    """Print (and write ``--out``) the tables; return their lines."""
    rows, edges = [], {}
    for directory in config.dirs:
        game_rows, edge = load_probe_rows(directory) if (directory / PROBE).is_file() else load_rows(directory)
        rows += game_rows
        edges[f"{game_rows[0].game if game_rows else directory.parent.name} {directory.name}"] = edge
    probes = any(row.rung.startswith("probe") for row in rows)
    where = "the one-step regime, the ladder and probes" if probes else "the one-step regime and the ladder"
    title = f"## Table 1 in {where}"
    ladder = ladder_table(rows)
    lines = [title, "", *table1(rows, edges), "", *ladder, *([""] if ladder else []), "## Criterion v8", ""]
    for regime in ("one-step", "ppo"):
        lines += [*criterion_table(rows, regime), ""]
    text = "\n".join(lines)
    print(text)
    if config.out is not None:
        config.out.write_text(text + "\n")
    return lines
