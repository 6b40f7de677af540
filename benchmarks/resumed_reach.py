"""When did a sweep's resumed runs reach their target, counted from their resume?

A run that goes on from a checkpoint drops its games in progress and starts every env anew at once: no game ends
until the shortest of the new ones, then they end in order of length. That pause is the longest gap between two
finished games of the run, which marks the resume (``summary.json`` counts resumes, not where they were). For each
finished run that resumed, this prints the resume (the gap's start), the agent step its running score reached the
sweep's highest target (``summary.json``'s ``stop_score_reached_at``) and, per env, the agent steps between the two:
about one game length where the reach came with the first games after the resume.

    python benchmarks/resumed_reach.py results/table1/Breakout/R0/sweep
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.records.rundir import RunDir, runs_under


@dataclass
class Args:
    """One row per finished run of a sweep that resumed from a checkpoint."""

    sweep: tyro.conf.Positional[Path]
    """Sweep directory (runs/ under it)."""


def resume_step(env_steps: np.ndarray) -> int:
    """The agent step after which no game ended for longest: the start of the widest gap between game ends."""
    return int(env_steps[int(np.argmax(np.diff(env_steps)))])


def main(args: Args) -> None:
    print("| run | n_envs | resumed at | reached at | agent steps per env from resume to reach |")
    print("|---|---|---|---|---|")
    for run in map(RunDir, runs_under(args.sweep)):
        if run.status() != "done" or not (summary := run.summary()).resumes:
            continue
        n_envs = run.config().n_envs
        resumed = resume_step(np.asarray(run.episodes()["env_steps"], dtype=float))
        reached = summary.stop_score_reached_at
        per_env = "–" if reached is None else f"{(reached - resumed) / n_envs:,.0f}"
        print(f"| {run.name} | {n_envs} | {resumed:,} | {'–' if reached is None else f'{reached:,}'} | {per_env} |")


if __name__ == "__main__":
    main(tyro.cli(Args))
