"""Figures made from logs on disk. Plot functions take ``ax=None`` and return the axis."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tyro
from matplotlib.axes import Axes

from rl_gns.noise_scale import cumulative_b_simple
from rl_gns.progress import read_progress

STEP_KEY = "time/total_timesteps"


def plot_score(progress: dict[str, np.ndarray], ax: Axes | None = None) -> Axes:
    """Mean raw game score of the last 100 games (``rollout/ep_rew_mean``) against agent steps."""
    ax = ax or plt.gca()
    if "rollout/ep_rew_mean" in progress:
        ax.plot(progress[STEP_KEY], progress["rollout/ep_rew_mean"], color="black")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("score (mean of last 100 games)")
    ax.grid(alpha=0.3)
    return ax


def plot_noise_scale(progress: dict[str, np.ndarray], ax: Axes | None = None) -> Axes:
    """``B_simple`` per loss against agent steps, log scale: the moving average ``gns/b_simple_<loss>``
    (solid) and the average over training so far (dashed, :func:`cumulative_b_simple`)."""
    ax = ax or plt.gca()
    steps = progress[STEP_KEY]
    for loss, color in (("policy", "tab:blue"), ("value", "tab:orange"), ("total", "tab:green")):
        if f"gns/b_simple_{loss}" not in progress:
            continue
        ema = progress[f"gns/b_simple_{loss}"]
        ok = np.isfinite(ema) & (ema > 0)
        ax.plot(steps[ok], ema[ok], color=color, lw=1, alpha=0.6, label=f"{loss} (moving average)")
        g2, trace_sigma = progress[f"gns/g2_{loss}_raw"], progress[f"gns/trace_sigma_{loss}_raw"]
        measured = np.isfinite(g2)
        average = cumulative_b_simple(g2[measured], trace_sigma[measured])
        ok = np.isfinite(average) & (average > 0)
        ax.plot(steps[measured][ok], average[ok], color=color, lw=2, ls="--", label=f"{loss} (average so far)")
    ax.set_yscale("log")
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple (samples per gradient step)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    return ax


def plot_training(progress: dict[str, np.ndarray], path: str | Path, title: str = "") -> Path:
    """Save a two-panel PNG: score and noise scale over training (shared agent-step axis)."""
    fig, (ax_score, ax_gns) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    plot_score(progress, ax_score)
    plot_noise_scale(progress, ax_gns)
    ax_score.set_xlabel("")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


@dataclass
class PlotConfig:
    """Redraw a run directory's training.png from its progress.csv (reads only files on disk)."""

    run_dir: tyro.conf.Positional[Path]
    """A run directory written by rl-gns train."""


def check(config: PlotConfig) -> None:
    """Fail early (``ValueError``) if the directory holds no training log."""
    if not (config.run_dir / "progress.csv").exists():
        raise ValueError(f"{config.run_dir} holds no progress.csv")


def plot_run(config: PlotConfig) -> Path:
    """Write ``training.png`` of a run directory."""
    run = json.loads((config.run_dir / "config.json").read_text()) if (config.run_dir / "config.json").exists() else {}
    title = f"{run.get('game', '')}: {run.get('n_envs', '?')} envs × {run.get('n_steps', '?')} steps" if run else ""
    return plot_training(read_progress(config.run_dir / "progress.csv"), config.run_dir / "training.png", title=title)
