"""``rl-gns plot``: a run directory's ``training.png`` (score and noise scale over training), from its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.noise_scale import b_simple_interval, cumulative_b_simple
from rl_gns.records.rundir import PLOT, STEP_KEY, RunDir, noise_columns
from rl_gns.records.schema import RunConfig
from rl_gns.reports.figures import Axes, legend, plt, save_figure

LOSS_COLORS = {"policy": "tab:blue", "value": "tab:orange", "total": "tab:green"}


def plot_score(progress: dict[str, np.ndarray], ax: Axes) -> Axes:
    """Mean raw game score of the last 100 games (``rollout/ep_rew_mean``) against agent steps."""
    if "rollout/ep_rew_mean" in progress:
        ax.plot(progress[STEP_KEY], progress["rollout/ep_rew_mean"], color="black")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("score (mean of last 100 games)")
    ax.grid(alpha=0.3)
    return ax


def plot_noise_scale(progress: dict[str, np.ndarray], config: RunConfig, ax: Axes) -> Axes:
    """``B_simple`` per loss and scheme against agent steps, log scale: the average over training so far
    (:func:`cumulative_b_simple`; solid for the first scheme, dashed for a second, dotted for a third) and its 95 % interval
    (shaded, :func:`b_simple_interval`; up to the top of the panel where ``|G|²`` is not resolved). Points where
    the pooled ``|G|²`` is not yet positive are left out of the line."""
    bands = []
    for scheme, style in zip(config.measured_schemes, ("-", "--", ":"), strict=False):
        for loss, color in LOSS_COLORS.items():
            columns = noise_columns(progress, config, scheme, loss)
            if columns is None:
                continue
            steps, g2, trace_sigma = columns
            measured = np.isfinite(g2)
            steps, g2, trace_sigma = steps[measured], g2[measured], trace_sigma[measured]
            average = cumulative_b_simple(g2, trace_sigma)
            ok = np.isfinite(average) & (average > 0)
            ax.plot(steps[ok], average[ok], color=color, ls=style, lw=1.8, label=f"{loss}, {scheme}")
            # 95 % interval of the average so far, at up to 100 points; unbounded above where |G|² is not resolved
            at = np.unique(np.linspace(3, len(g2) - 1, min(100, max(len(g2) - 3, 0))).astype(int))
            intervals = [b_simple_interval(g2[: t + 1], trace_sigma[: t + 1]) for t in at]
            bands.append((steps[at], [i.low for i in intervals], [i.high for i in intervals], color))
    values = np.concatenate([np.empty(0), *(np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines())])
    if values.size:  # bands span the lines' range, a decade beyond it either way (none before |G|² is resolved)
        bottom, top = values.min() / 10, values.max() * 10
        for x, low, high, color in bands:
            ax.fill_between(x, np.clip(low, bottom, top), np.clip(high, bottom, top), color=color, alpha=0.12, lw=0)
        ax.set_ylim(bottom, top)
    ax.set_yscale("log")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple, average so far (samples; 95 % band)")
    legend(ax, fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    return ax


@dataclass
class PlotConfig:
    """Redraw a run directory's training.png from its progress.csv (reads only files on disk)."""

    run_dir: tyro.conf.Positional[Path]
    """A run directory written by rl-gns train."""


def check(config: PlotConfig) -> None:
    """Fail early (``ValueError``) if the directory holds no logged row: a blank figure must not replace a good one."""
    RunDir(config.run_dir).logged_progress()


def plot_run(config: PlotConfig) -> Path:
    """Write ``training.png`` of a run directory: score (top) and noise scale (bottom) over agent steps.

    :raises RunFileError: before the run's first logged row (an existing figure is kept).
    """
    run = RunDir(config.run_dir)
    settings = run.config()
    progress = run.logged_progress()
    fig, (ax_score, ax_gns) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    plot_score(progress, ax_score)
    plot_noise_scale(progress, settings, ax_gns)
    ax_score.set_xlabel("")
    fig.suptitle(f"{settings.game}: {settings.n_envs} envs × {settings.n_steps} steps")
    return save_figure(fig, run.file(PLOT))
