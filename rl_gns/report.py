"""The sweep report: ``report.md`` and its figures, from analysed results (see :mod:`rl_gns.analyze`)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from rl_gns.noise_scale import cumulative_b_simple
from rl_gns.plots import STEP_KEY
from rl_gns.progress import read_progress
from rl_gns.tradeoff import tradeoff_curve

if TYPE_CHECKING:
    from rl_gns.analyze import RunRecord, TargetResult


def _colors(n: int) -> list:
    return [plt.get_cmap("viridis")(x) for x in np.linspace(0.0, 0.85, max(n, 1))]


def plot_steps_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against steps (y), log-log: one colour per target, the fitted hyperbola, B_crit marked."""
    ax = ax or plt.gca()
    for result, color in zip(results, _colors(len(results)), strict=True):
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
    ax.legend(fontsize=8)
    return ax


def plot_wall_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against wall-clock seconds (y) to each target, log-log."""
    ax = ax or plt.gca()
    for result, color in zip(results, _colors(len(results)), strict=True):
        if result.rollout_size_K:
            ax.plot(result.experience_K, result.wall_s_K, "o-", color=color, label=f"target {result.target:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("experience E to target (agent steps)")
    ax.set_ylabel("wall time to target (s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def plot_noise_scale_by_size(sweep_dir: Path, runs: list[RunRecord], ax: Axes | None = None) -> Axes:
    """B_simple of the policy loss averaged over training so far (:func:`cumulative_b_simple`), one line per
    rollout size (its seed-0 run at the grid's upper-middle learning rate)."""
    ax = ax or plt.gca()
    sizes = sorted({run.rollout_size for run in runs})
    for size, color in zip(sizes, _colors(len(sizes)), strict=True):
        candidates = sorted((r for r in runs if r.rollout_size == size and r.seed == 0), key=lambda r: r.learning_rate)
        if not candidates:
            continue
        run = candidates[len(candidates) // 2]
        path = sweep_dir / "runs" / run.name / "progress.csv"
        progress = read_progress(path) if path.exists() else {}
        if "gns/g2_policy_raw" in progress:
            measured = np.isfinite(progress["gns/g2_policy_raw"])
            average = cumulative_b_simple(
                progress["gns/g2_policy_raw"][measured], progress["gns/trace_sigma_policy_raw"][measured]
            )
            ok = np.isfinite(average) & (average > 0)
            ax.plot(progress[STEP_KEY][measured][ok], average[ok], color=color, label=f"{size} ({run.n_envs} envs)")
    ax.set_yscale("log")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple, policy loss, average so far (samples)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="rollout size", fontsize=7)
    return ax


def plot_predicted_vs_fitted(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Fitted B_crit (with 95 % interval) against the noise-scale prediction M × B_simple, per target."""
    ax = ax or plt.gca()
    x = np.arange(len(results))
    for i, result in enumerate(results):
        if result.fit is not None and result.ci_b_crit is not None:
            low, high = result.ci_b_crit
            ax.errorbar([i - 0.1], [result.fit.b_crit], yerr=[[result.fit.b_crit - low], [high - result.fit.b_crit]],
                        fmt="o", color="tab:blue", capsize=4, label="fitted B_crit (95 % CI)" if i == 0 else None)  # fmt: skip
        if math.isfinite(result.predicted_b_crit):
            ax.scatter([i + 0.1], [result.predicted_b_crit], marker="s", color="tab:orange",
                       label="M × B_simple (policy)" if i == 0 else None)  # fmt: skip
    ax.set_xticks(x, [f"{r.target:g}" for r in results])
    ax.set_xlabel("target score")
    ax.set_ylabel("critical rollout size (agent steps)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return ax


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


def _interval(ci: tuple[float, float] | None) -> str:
    return f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "–"


def write_report(sweep_dir: Path, settings: dict, runs: list[RunRecord], results: list[TargetResult]) -> Path:
    """Write the figures and ``report.md`` into ``sweep_dir``; return the report's path."""
    plots = {
        "steps_vs_experience": (lambda ax: plot_steps_vs_experience(results, ax), (7, 5.5)),
        "wall_vs_experience": (lambda ax: plot_wall_vs_experience(results, ax), (7, 4.5)),
        "noise_scale_by_size": (lambda ax: plot_noise_scale_by_size(sweep_dir, runs, ax), (7, 4.5)),
        "bcrit_predicted_vs_fitted": (lambda ax: plot_predicted_vs_fitted(results, ax), (6, 4.5)),
    }
    figures = {}
    for name, (plot, size) in plots.items():
        fig, ax = plt.subplots(figsize=size)
        plot(ax)
        fig.tight_layout()
        fig.savefig(sweep_dir / f"{name}.png", dpi=120)
        plt.close(fig)
        figures[name] = f"{name}.png"

    m, n_steps, n_epochs = settings["n_minibatches"], settings["n_steps"], settings["n_epochs"]
    status = Counter(run.status for run in runs)
    lines = [
        f"# Steps–experience tradeoff: {settings['env']}",
        "",
        f"Sweep `{sweep_dir}`: env counts {settings['n_envs']}, n_steps {n_steps} (rollout size = n_envs × {n_steps} "
        f"agent steps), M = {m} minibatches per epoch, {n_epochs} epochs, backend `{settings['backend']}`, "
        f"{settings['seeds']} seeds, {settings['lr_points']} learning rates per size (rule `{settings['lr_rule']}`, "
        f"lr_ref {settings['lr_ref']} at {settings['n_envs_ref']} envs, factor {settings['lr_factor']}), "
        f"budget {settings['budget_steps']:,} agent steps per run.",
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
        "Noise-scale prediction: M × B_simple of the policy loss, B_simple = Σ raw tr(Σ) / Σ raw |G|² over the "
        "measurements up to the target of every run of a size that reached it (samples per gradient step), "
        "median over sizes.",
        "",
        "## Fits",
        "",
        "| target | sizes reached | S_min (iterations) [95 % CI] | E_min (agent steps) [95 % CI] "
        "| B_crit (agent steps) [95 % CI] | B_crit / n_steps (envs) | 0.2·B_crit | M × B_simple | flags |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fit = r.fit
        lines.append(
            f"| {r.target:g} | {len(r.rollout_size_K)}/{len(r.rollout_size_K) + len(r.censored_sizes)} "
            f"| {_fmt(fit.s_min if fit else None)} {_interval(r.ci_s_min)} "
            f"| {_fmt(fit.e_min if fit else None)} {_interval(r.ci_e_min)} "
            f"| {_fmt(fit.b_crit if fit else None)} {_interval(r.ci_b_crit)} "
            f"| {_fmt(fit.b_crit / n_steps if fit else None)} | {_fmt(fit.b_crit_20pct if fit else None)} "
            f"| {_fmt(r.predicted_b_crit)} | {'; '.join(r.flags) or '–'} |"
        )
    lines += ["", "## Steps and experience to each target", ""]
    for r in results:
        lines += [
            f"### Target {r.target:g}",
            "",
            "| rollout size | seeds reached | S (iterations) | gradient steps | E (agent steps) | wall (s) "
            "| fastest lr per seed | B_simple policy (samples) [measurements] |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for k, size in enumerate(r.rollout_size_K):
            lines.append(
                f"| {size} | {r.seeds_reached_K[k]} | {r.steps_K[k]:.1f} | {r.steps_K[k] * n_epochs * m:.0f} "
                f"| {r.experience_K[k]:,.0f} | {r.wall_s_K[k]:.0f} | {', '.join(f'{lr:.2e}' for lr in r.best_lr_K[k])} "
                f"| {_fmt(r.b_simple_policy_K[k])} [{r.n_measurements_K[k]}] |"
            )
        for size in r.censored_sizes:
            lines.append(f"| {size} | 0 (censored) | – | – | – | – | – | – |")
        lines.append("")
    lines += [
        "## Figures",
        "",
        f"![steps vs experience]({figures['steps_vs_experience']})",
        "",
        f"![wall time vs experience]({figures['wall_vs_experience']})",
        "",
        f"![noise scale by size]({figures['noise_scale_by_size']})",
        "",
        f"![predicted vs fitted B_crit]({figures['bcrit_predicted_vs_fitted']})",
        "",
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
