"""``rl-gns analyze`` (report): ``report.md`` and its figures from a sweep's analysed results
(:mod:`rl_gns.reports.sweep_analysis`)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np

from rl_gns.core.advice import DEFAULT_PREDICTOR, parse_predictor
from rl_gns.core.noise_scale import b_simple_interval, cumulative_b_simple
from rl_gns.core.tradeoff import tradeoff_curve
from rl_gns.records.rundir import RunDir, noise_columns
from rl_gns.reports.figures import (
    SCHEME_LABELS,
    Axes,
    colors,
    error_bar,
    fmt,
    interval_bars,
    legend,
    log_limits,
    noise_label,
    plain_log_ticks,
    plt,
    save_plot,
)
from rl_gns.reports.sweep_analysis import RunRecord, TargetResult, unidentified


def plot_steps_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against steps (y), log-log: one colour per target, the fitted hyperbola, B_crit marked."""
    ax = ax or plt.gca()
    for result, color in zip(results, colors(len(results)), strict=True):
        if not result.rollout_size_K:
            continue
        ax.scatter(result.experience_K, result.steps_K, color=color, zorder=3, label=f"target {result.target:g}")
        for e, s, b in zip(result.experience_K, result.steps_K, result.rollout_size_K, strict=True):
            ax.annotate(f"{b}", (e, s), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
        if result.fit is not None:
            e_curve, s_curve = tradeoff_curve(result.fit, np.geomspace(1.02, 300, 200))
            ax.plot(e_curve, s_curve, color=color, lw=1.2)
            ax.scatter(
                [2 * result.fit.e_min], [2 * result.fit.s_min], marker="*", s=140, color=color, edgecolor="black", zorder=4
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("experience E to target (agent steps)")
    ax.set_ylabel("steps S to target (PPO iterations)")
    ax.set_title("labels: rollout size; ★ = B_crit (2·E_min, 2·S_min)", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    legend(ax, "no run reached a target", fontsize=8)
    return ax


def plot_wall_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against wall-clock seconds (y) to each target, log-log."""
    ax = ax or plt.gca()
    for result, color in zip(results, colors(len(results)), strict=True):
        if result.rollout_size_K:
            ax.plot(result.experience_K, result.wall_s_K, "o-", color=color, label=f"target {result.target:g}")
            for e, w, size in zip(result.experience_K, result.wall_s_K, result.rollout_size_K, strict=True):
                ax.annotate(f"{size}", (e, w), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
    ax.set_title("labels: rollout size (agent steps)", fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("experience E to target (agent steps)")
    ax.set_ylabel("wall time to target (s)")
    ax.grid(alpha=0.3, which="both")
    legend(ax, "no run reached a target", fontsize=8)
    return ax


def plot_noise_scale_by_size(sweep_dir: Path, runs: list[RunRecord], ax: Axes) -> Axes:
    """The default predictor of the critical rollout size (:data:`DEFAULT_PREDICTOR`), ``B_simple`` averaged over
    training so far (:func:`cumulative_b_simple`, agent steps, log scale), one line per rollout size: its seed-0 run
    at the grid's upper-middle learning rate, with the 95 % interval of the whole run's average at its end
    (:func:`b_simple_interval`) and a marker at the right edge at its rollout size."""
    scheme, _, loss = parse_predictor(DEFAULT_PREDICTOR)
    sizes = sorted({run.rollout_size for run in runs})
    bands = []
    for size, color in zip(sizes, colors(len(sizes)), strict=True):
        candidates = sorted((r for r in runs if r.rollout_size == size and r.seed == 0), key=lambda r: r.learning_rate)
        if not candidates:
            continue
        run_record = candidates[len(candidates) // 2]
        run = RunDir(sweep_dir / "runs" / run_record.name)
        columns = noise_columns(run.progress(), run.config(), scheme, loss)
        if columns is None:
            continue
        steps, g2, trace_sigma = columns
        measured = np.isfinite(g2)
        steps, g2, trace_sigma = steps[measured], g2[measured], trace_sigma[measured]
        average = cumulative_b_simple(g2, trace_sigma)
        ok = np.isfinite(average) & (average > 0)
        ax.plot(steps[ok], average[ok], color=color, lw=1.6, label=f"{size:,} ({run_record.n_envs} envs)")
        ax.plot([1.0], [size], marker="<", ms=7, color=color, transform=ax.get_yaxis_transform(), clip_on=False)
        interval = b_simple_interval(g2, trace_sigma)
        bands.append((steps[-1:], [interval.low], [interval.high], color))
    limits = log_limits(ax)
    for band in (*bands, ([], [], [], "gray")):  # the last, empty, gives the legend its entries in gray
        interval_bars(ax, *band, limits=limits, alpha=(0.7, 0.35))
    ax.set_ylim(*limits)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis, limits)
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple averaged so far (agent steps)")
    ax.set_title(f"{noise_label(scheme, loss)}\nbars: 95 % interval of each run's whole average, at its end", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    empty = f"no run measured the {loss} loss with {SCHEME_LABELS[scheme]} ({DEFAULT_PREDICTOR})"
    legend(ax, empty, title="rollout size (◀ at the right edge)", fontsize=7, title_fontsize=8,
           loc="upper left", bbox_to_anchor=(1.04, 1.0))  # fmt: skip
    return ax


def plot_predicted_vs_fitted(results: list[TargetResult], ax: Axes) -> Axes:
    """Per target, the fitted B_crit (95 % interval) and every noise-scale candidate (95 % interval), log scale."""
    names = sorted({name for r in results for name in r.candidates})
    markers = dict(zip(names, "sDv^<>PXdp*h8", strict=False))
    palette = dict(zip(names, colors(len(names)), strict=True))
    for i, result in enumerate(results):
        if result.fit is not None and result.ci_b_crit is not None:
            ax.errorbar(
                [i],
                [result.fit.b_crit],
                yerr=error_bar(result.fit.b_crit, result.ci_b_crit),
                fmt="o",
                color="black",
                capsize=4,
                ms=8,
                label="fitted B_crit",
            )
        for j, name in enumerate(names):
            candidate = result.candidates.get(name)
            if candidate is None or not math.isfinite(candidate.value):
                continue
            x = i + 0.08 * (j + 1)
            ax.errorbar(
                [x],
                [candidate.value],
                yerr=error_bar(candidate.value, candidate.ci),
                fmt=markers[name],
                color=palette[name],
                capsize=2,
                ms=5,
                label=name,
            )
    ax.set_xticks(range(len(results)), [f"{r.target:g}" for r in results])
    ax.set_xlabel("target score")
    ax.set_ylabel("critical rollout size (agent steps)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    legend(ax, "no fitted B_crit and no finite prediction at any target", fontsize=6, ncol=2)
    return ax


def interval_cell(ci: tuple[float, float] | None) -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "–"


def candidate_rows(results: list[TargetResult]) -> list[str]:
    """Markdown rows: every candidate per target with its interval and its ratio to the fitted B_crit."""
    if not any(r.candidates for r in results):
        return ["None: no run reached a target, or none measured the noise scale."]
    lines = [
        "| target | candidate | prediction (agent steps) [95 % CI] | / fitted B_crit | B_simple per size (samples) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        for name, c in sorted(r.candidates.items()):
            ratio = c.value / r.fit.b_crit if r.fit else math.nan
            per_size = ", ".join(f"{size}: {fmt(b)}" for size, b in zip(r.rollout_size_K, c.b_simple_K, strict=True))
            default = " (default)" if name == DEFAULT_PREDICTOR else ""
            lines.append(
                f"| {r.target:g} | `{name}`{default} | {fmt(c.value)} {interval_cell(c.ci)} | {fmt(ratio)} | {per_size} |"
            )
    return lines


def write_report(sweep_dir: Path, settings: dict, runs: list[RunRecord], results: list[TargetResult]) -> Path:
    """Write the figures and ``report.md`` into ``sweep_dir``; return the report's path."""
    plots = {
        "steps_vs_experience": (lambda ax: plot_steps_vs_experience(results, ax), (7, 5.5)),
        "wall_vs_experience": (lambda ax: plot_wall_vs_experience(results, ax), (7, 4.5)),
        "noise_scale_by_size": (lambda ax: plot_noise_scale_by_size(sweep_dir, runs, ax), (8.5, 4.5)),
        "bcrit_predicted_vs_fitted": (lambda ax: plot_predicted_vs_fitted(results, ax), (7, 5)),
    }
    figures = {name: save_plot(plot, sweep_dir / f"{name}.png", size).name for name, (plot, size) in plots.items()}

    m, n_steps, n_epochs = settings["n_minibatches"], settings["n_steps"], settings["n_epochs"]
    status = Counter(run.status for run in runs)
    lines = [
        f"# Steps–experience tradeoff: {settings['env']}",
        "",
        f"Sweep `{sweep_dir.name}`: env counts {settings['n_envs']}, n_steps {n_steps} (rollout size = n_envs × {n_steps} "
        f"agent steps), M = {m} minibatches per epoch, {n_epochs} epochs, backend `{settings['backend']}`, "
        f"{settings['seeds']} seeds, {settings['lr_points']} learning rates per size (rule `{settings['lr_rule']}`, "
        f"lr_ref {settings['lr_ref']} at {settings['n_envs_ref']} envs, factor {settings['lr_factor']}), "
        f"budget {settings['budget_steps']:,} agent steps per run, noise-scale scheme(s) {settings['gns_scheme']}.",
        "",
        f"Runs: {len(settings['runs'])} planned; {status.get('done', 0)} finished, {status.get('failed', 0)} failed, "
        f"{status.get('unfinished', 0)} unfinished, {len(settings['runs']) - len(runs)} not started.",
        "",
        f"Score measure: mean raw game score (whole games, all lives) of the last {settings['window']} finished games. "
        "S = PPO iterations to the target, E = S × rollout size (agent steps; frames = 4·E), "
        f"gradient steps = S × {n_epochs} × {m}. Per size and seed the fastest learning rate is kept; a size's point "
        "is the geometric mean over the seeds that reached the target. Fit of log S against log(S_min + E_min/B), "
        "B = rollout size; 95 % intervals from a bootstrap over seeds. B_crit = E_min/S_min (McCandlish et al.); "
        "Zhang et al.'s critical batch (20 % more steps than perfect scaling) is 0.2·B_crit in this model. "
        "Noise-scale candidates (docs/prediction-criterion.md): per size B_k = Σ raw tr(Σ) / Σ raw |G|² over the "
        "measurements up to the target of every run of the size that reached it; the median over sizes, times M "
        f"(`_xM_`) or not; `mb`: minibatch scheme, `env`: whole-trajectory groups. Default: `{DEFAULT_PREDICTOR}`.",
        "",
        "## Fits",
        "",
        "| target | sizes reached | S_min (iterations) [95 % CI] | E_min (agent steps) [95 % CI] "
        "| B_crit (agent steps) [95 % CI] | B_crit / n_steps (envs) | 0.2·B_crit | default prediction | flags |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fit = r.fit
        lines.append(
            f"| {r.target:g} | {len(r.rollout_size_K)}/{len(r.rollout_size_K) + len(r.censored_sizes)} "
            f"| {fmt(fit.s_min if fit else None)} {interval_cell(r.ci_s_min)} "
            f"| {fmt(fit.e_min if fit else None)} {interval_cell(r.ci_e_min)} "
            f"| {fmt(fit.b_crit if fit else None)} {interval_cell(r.ci_b_crit)} "
            f"| {fmt(fit.b_crit / n_steps if fit else None)} | {fmt(fit.b_crit_20pct if fit else None)} "
            f"| {fmt(r.predicted_b_crit)} | {'; '.join(r.flags) or '–'} |"
        )
    lines += ["", "## Noise-scale candidates against the fitted B_crit", "", *candidate_rows(results)]
    lines += ["", "## Steps and experience to each target", ""]
    for r in results:
        lines += [
            f"### Target {r.target:g}",
            "",
            "| rollout size | seeds reached | S (iterations) | gradient steps | E (agent steps) | wall (s) "
            "| fastest lr per seed |",
            "|---|---|---|---|---|---|---|",
        ]
        for k, size in enumerate(r.rollout_size_K):
            lines.append(
                f"| {size} | {r.seeds_reached_K[k]} | {r.steps_K[k]:.1f} | {r.steps_K[k] * n_epochs * m:.0f} "
                f"| {r.experience_K[k]:,.0f} | {r.wall_s_K[k]:.0f} | {', '.join(f'{lr:.2e}' for lr in r.best_lr_K[k])} |"
            )
        for size in r.censored_sizes:
            lines.append(f"| {size} | 0 (censored) | – | – | – | – | – |")
        reason = unidentified(r)
        if reason is not None:
            lines += ["", f"{reason[:1].upper()}{reason[1:]}."]
        lines.append("")
    lines += [
        "## Figures",
        "",
        *(f"![{name.replace('_', ' ')}]({figure})\n" for name, figure in figures.items()),
        "## Runs",
        "",
        "| run | status | agent steps | targets reached |",
        "|---|---|---|---|",
    ]
    for run in runs:
        reached = ", ".join(f"{t:g}" for t in sorted(run.reached)) or "–"
        lines.append(f"| {run.name} | {run.status} | {run.env_steps:,} | {reached} |")
    notes = sweep_dir / "NOTES.md"
    if notes.exists():
        lines += ["", notes.read_text().strip()]
    path = sweep_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
