"""Compare a data-parallel run (``rl-gns train --nproc D``) with a one-process run of the same settings, from their
run directories: throughput, and the free noise scale (``gns/ranks/``, ``gns/ranks_all/``) against the
fixed-parameter one (``gns/envs/``) measured in the same run.

    python benchmarks/data_parallel.py --one results/runs/beamrider_100k \\
        --ranks results/data_parallel/beamrider_100k_nproc2 --out results/data_parallel

Writes ``comparison.md`` and ``free_vs_fixed.png`` into ``--out``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.names import size_key
from rl_gns.core.maths.noise_scale import b_simple_interval
from rl_gns.core.maths.schemes import FREE_SCHEMES, scheme_label
from rl_gns.records.rundir import RunDir, noise_columns
from rl_gns.records.schema import RunConfig
from rl_gns.reports.figures import fmt, plt, relative, save_figure
from rl_gns.reports.run_plot import plot_noise_scale

#: (run, scheme, loss, label): the fixed-parameter measurements of both runs, and the free ones of the ranks.
CURVES = (
    ("one", "envs", "total", "1 process: fixed parameters, env groups, total loss"),
    ("one", "envs", "value", "1 process: fixed parameters, env groups, value loss (the advice)"),
    ("ranks", "envs", "total", "{d} ranks: fixed parameters, env groups per rank, total loss"),
    ("ranks", "envs", "value", "{d} ranks: fixed parameters, env groups per rank, value loss (the advice)"),
    ("ranks", "ranks", "total", "{d} ranks: free, minibatch shares, first epoch, total loss"),
    ("ranks", "ranks_all", "total", "{d} ranks: free, minibatch shares, all epochs, total loss"),
)


@dataclass
class Config:
    one: Path
    """Run directory of the one-process run."""
    ranks: Path
    """Run directory of the data-parallel run (same settings, --nproc D)."""
    out: Path = Path("results/data_parallel")
    """Where comparison.md and free_vs_fixed.png go."""


def plot_free_vs_fixed(runs: dict[str, tuple[dict[str, np.ndarray], RunConfig]]) -> plt.Figure:
    """``free_vs_fixed.png``: a panel per run (:func:`rl_gns.reports.run_plot.plot_noise_scale`, as its training.png
    draws it, with the ranks' free measurement of every epoch too): B_simple averaged over training so far, the
    default predictor bold with its 95 % intervals, and a line at the rollout size.

    :param runs: ``{"one": ..., "ranks": ...}``: each run's ``progress.csv`` columns and ``config.json``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(14, 6.5))
    for (progress, settings), ax in zip(runs.values(), axes, strict=True):
        if settings.nproc > 1:
            plot_noise_scale(progress, settings, ax, (*settings.gns_schemes, *FREE_SCHEMES))
            title = f"{settings.nproc} ranks: {settings.n_envs} envs ({settings.n_envs // settings.nproc} per rank)"
        else:
            plot_noise_scale(progress, settings, ax)
            title = f"1 process: {settings.n_envs} envs"
        ax.set_title(f"{title} × {settings.n_steps} steps", fontsize=10)
    fig.suptitle(f"{runs['ranks'][1].game}: the free noise scale (ranks) against the fixed-parameter one "
                 f"({scheme_label('envs')})", fontsize=11)  # fmt: skip
    return fig


def main(config: Config) -> None:
    one, ranks = RunDir(config.one), RunDir(config.ranks)
    config.out.mkdir(parents=True, exist_ok=True)
    rows = [
        "| run | ranks | envs | agent steps | wall s | agent steps/s | final score (last 100 games) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in (one, ranks):
        summary, settings = run.summary().values, run.config().settings
        rows.append(
            f"| [{run.name}]({relative(run.path, config.out)}) | {settings.get('nproc', 1)} | {settings['n_envs']} | "
            f"{summary['env_steps']:,} | {summary['wall_s']:.0f} | {summary['agent_steps_per_s']:.1f} | "
            f"{fmt(summary['score_last_100_mean'])} |"
        )
    speedup = ranks.summary().values["agent_steps_per_s"] / one.summary().values["agent_steps_per_s"]

    runs = {"one": (one.progress(), one.config()), "ranks": (ranks.progress(), ranks.config())}
    settings = runs["ranks"][1]
    noise_rows = [
        "| measurement | b_small | b_big | measurements | B_simple (run average) | 95 % interval |",
        "|---|---|---|---|---|---|",
    ]
    for run, scheme, loss, label_template in CURVES:
        label = label_template.format(d=settings.nproc)
        progress = runs[run][0]
        columns = noise_columns(progress, scheme, loss)
        if columns is None:
            continue
        _, g2, trace = columns
        measured = np.isfinite(g2)
        interval = b_simple_interval(g2, trace)
        high = fmt(interval.high) if math.isfinite(interval.high) else "unbounded"
        b_small, b_big = (int(progress[size_key(scheme, key)][measured][-1]) for key in ("b_small", "b_big"))
        noise_rows.append(
            f"| {label} | {b_small} | {b_big} | {int(measured.sum())} | {fmt(interval.point)} | {fmt(interval.low)} – {high} |"
        )
    figure = save_figure(plot_free_vs_fixed(runs), config.out / "free_vs_fixed.png")

    text = [
        "# Data-parallel PPO against one process",
        "",
        f"Written by `python benchmarks/data_parallel.py --one {config.one} --ranks {config.ranks} --out {config.out}`.",
        "",
        *rows,
        "",
        f"Throughput of {settings.nproc} ranks against one process: {speedup:.2f}x.",
        "",
        "## The free noise scale against the fixed-parameter one",
        "",
        *noise_rows,
        "",
        "B_simple is pooled over the run (Σ tr Σ / Σ |G|²); its interval comes from contiguous batches of every"
        " measurement (`rl_gns.core.maths.noise_scale.b_simple_interval`). 'unbounded': |G|² is not resolved from zero.",
        "",
        f"![free vs fixed]({relative(figure, config.out)})",
        "",
    ]
    (config.out / "comparison.md").write_text("\n".join(text))
    print(f"wrote {config.out / 'comparison.md'}")


if __name__ == "__main__":
    main(tyro.cli(Config))
