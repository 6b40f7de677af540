"""``rl-gns plot``: a run directory's ``training.png`` (score and noise scale over training), from its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.advice import DEFAULT_PREDICTOR, parse_predictor
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


#: How each scheme draws its batches, as the legend says it.
SCHEME_LABELS = {
    "envs": "whole trajectories",
    "minibatch": "random minibatch",
    "ranks": "ranks, free",
    "ranks_all": "ranks, free",
}


def plot_noise_scale(progress: dict[str, np.ndarray], config: RunConfig, ax: Axes) -> Axes:
    """``B_simple`` per loss and scheme against agent steps, log scale, averaged over training so far
    (:func:`cumulative_b_simple`): the default predictor of the critical rollout size bold with its 95 % interval
    (shaded, :func:`b_simple_interval`; up to the top of the panel where ``|G|²`` is not resolved), the other losses
    and schemes thin, and a line at the run's own rollout size. Points where the pooled ``|G|²`` is not yet positive
    are left out of the lines."""
    scheme_tag, _, default_loss = parse_predictor(DEFAULT_PREDICTOR)
    band = None
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
            default = scheme == scheme_tag and loss == default_loss
            label = f"{loss} loss, {SCHEME_LABELS.get(scheme, scheme)}" + (
                f" ({DEFAULT_PREDICTOR}: predicts B_crit)" if default else ""
            )
            ax.plot(
                steps[ok],
                average[ok],
                color=color,
                ls=style,
                lw=2.4 if default else 1.0,
                label=label,
                zorder=3 if default else 2,
            )
            if default:  # 95 % interval of the average so far, at up to 100 points
                at = np.unique(np.linspace(3, len(g2) - 1, min(100, max(len(g2) - 3, 0))).astype(int))
                intervals = [b_simple_interval(g2[: t + 1], trace_sigma[: t + 1]) for t in at]
                band = (steps[at], [i.low for i in intervals], [i.high for i in intervals], color)
    ax.axhline(config.rollout_size, color="gray", ls="--", lw=1, label=f"this run's rollout size ({config.rollout_size:,})")
    values = np.concatenate([np.empty(0), *(np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines())])
    values = values[np.isfinite(values) & (values > 0)]
    bottom, top = values.min() / 10, values.max() * 10  # a decade beyond the lines either way
    if band is not None:  # the interval at each point where it says something: bounded, or open above (faint)
        x, low, high = (np.asarray(v, dtype=float) for v in band[:3])
        bounded, open_above = np.isfinite(high), ~np.isfinite(high) & (low > 0)
        low_clipped, high_clipped = np.clip(low, bottom, top), np.clip(high, bottom, top)
        ax.vlines(x[bounded], low_clipped[bounded], high_clipped[bounded], color=band[3], lw=3, alpha=0.45,
                  label="95 % interval")  # fmt: skip
        ax.vlines(x[open_above], low_clipped[open_above], top, color=band[3], lw=3, alpha=0.15,
                  label="95 % interval, no upper end (|G|² not resolved)")  # fmt: skip
    ax.set_ylim(bottom, top)
    ax.set_yscale("log")
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
    """Fail early (``ValueError``) if the directory holds no logged row: a blank figure must not replace a good one."""
    RunDir(config.run_dir).logged_progress()


def plot_run(config: PlotConfig) -> Path:
    """Write ``training.png`` of a run directory: score (top) and noise scale (bottom) over agent steps.

    :raises RunFileError: before the run's first logged row (an existing figure is kept).
    """
    run = RunDir(config.run_dir)
    settings = run.config()
    progress = run.logged_progress()
    fig, (ax_score, ax_gns) = plt.subplots(2, 1, figsize=(7.5, 8), sharex=True, height_ratios=(2, 3))
    plot_score(progress, ax_score)
    plot_noise_scale(progress, settings, ax_gns)
    ax_score.set_xlabel("")
    fig.suptitle(f"{settings.game}: {settings.n_envs} envs × {settings.n_steps} steps")
    return save_figure(fig, run.file(PLOT))
