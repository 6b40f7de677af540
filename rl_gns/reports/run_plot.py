"""``rl-gns plot``: a run directory's ``training.png`` (score and noise scale over training), from its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.records.lock import check_unlocked
from rl_gns.records.rundir import PLOT, STEP_KEY, RunDir, noise_columns
from rl_gns.records.schema import RunConfig
from rl_gns.reports.figures import (
    LOSS_COLORS,
    Axes,
    interval_band,
    intervals_so_far,
    is_default_predictor,
    legend,
    log_limits,
    noise_label,
    plain_log_ticks,
    plain_ticks,
    plt,
    run_average,
    save_figure,
)


def plot_score(progress: dict[str, np.ndarray], ax: Axes) -> Axes:
    """Mean raw game score of the last 100 games (``rollout/ep_rew_mean``) against agent steps (plain-number ticks)."""
    if "rollout/ep_rew_mean" in progress:
        ax.plot(progress[STEP_KEY], progress["rollout/ep_rew_mean"], color="black")
    plain_ticks(ax.xaxis)
    ax.set_xlabel("agent steps")
    ax.set_ylabel("score (mean of last 100 games)")
    ax.grid(alpha=0.3)
    return ax


def plot_noise_scale(
    progress: dict[str, np.ndarray], config: RunConfig, ax: Axes, schemes: tuple[str, ...] | None = None
) -> Axes:
    """``B_simple`` per loss and scheme against agent steps, log scale, averaged over training so far
    (:func:`cumulative_b_simple`): the default candidate (``env_value``) bold with its 95 % interval as a band
    (:func:`intervals_so_far`; up to the top of the panel where ``|G|²`` is not resolved), the other losses and schemes
    thin, and a line at the run's own rollout size; plain-number ticks. A line breaks where the pooled ``|G|²`` is not
    yet positive.

    :param schemes: the schemes drawn, one line style each (at most 3); if unset, those the run measured.
    """
    band = None
    for scheme, style in zip(schemes or config.measured_schemes, ("-", "--", ":"), strict=False):
        for loss, color in LOSS_COLORS.items():
            columns = noise_columns(progress, scheme, loss)
            if columns is None:
                continue
            steps, g2, trace_sigma, average = run_average(columns)
            ok = np.isfinite(average) & (average > 0)
            default = is_default_predictor(scheme, loss)
            ax.plot(  # NaN where the pooled |G|² is not yet positive: the line breaks there, bridging nothing
                steps,
                np.where(ok, average, np.nan),
                color=color,
                ls=style,
                lw=2.4 if default else 1.0,
                label=noise_label(scheme, loss),
                zorder=3 if default else 2,
            )
            if default:
                at, low, high = intervals_so_far(g2, trace_sigma)
                band = (steps[at], low, high, color)
    ax.axhline(config.rollout_size, color="gray", ls="--", lw=1, label=f"this run's rollout size ({config.rollout_size:,})")
    bottom, top = log_limits(ax)
    if band is not None:
        interval_band(ax, *band, limits=(bottom, top))
    ax.set_ylim(bottom, top)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    plain_ticks(ax.xaxis)
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple averaged so far (agent steps)")
    legend(ax, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    ax.grid(alpha=0.3, which="both")
    return ax


@dataclass
class PlotConfig:
    """Redraw a run directory's training.png from its progress.csv (reads only files on disk)."""

    run_dir: tyro.conf.Positional[Path]
    """A run directory written by rl-gns train."""


def check(config: PlotConfig) -> None:
    """Fail early (``ValueError``) if another process trains the run (its one writer draws the figure when it ends) or
    the directory holds no logged row: a blank figure must not replace a good one."""
    check_unlocked(config.run_dir)
    RunDir(config.run_dir).logged_progress()


def plot_run(config: PlotConfig) -> Path:
    """Write ``training.png`` of a run directory: score (top) and noise scale (bottom) over agent steps; the score
    alone for a run that measured no noise scale.

    :raises RunFileError: before the run's first logged row (an existing figure is kept).
    """
    run = RunDir(config.run_dir)
    settings = run.config()
    progress = run.logged_progress()
    with np.errstate(over="ignore", invalid="ignore"):  # values too large to plot: save_figure says so, in one line
        if not settings.measured_schemes:
            fig, ax_score = plt.subplots(figsize=(7.5, 3.6))
            plot_score(progress, ax_score)
        else:
            fig, (ax_score, ax_gns) = plt.subplots(2, 1, figsize=(7.5, 8), sharex=True, height_ratios=(2, 3))
            plot_score(progress, ax_score)
            plot_noise_scale(progress, settings, ax_gns)
            ax_score.set_xlabel("")
    fig.suptitle(f"{settings.game}: {settings.n_envs} envs × {settings.n_steps} steps")
    return save_figure(fig, run.file(PLOT))
