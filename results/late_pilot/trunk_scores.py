"""Does a trunk keep improving? Mean raw score per stretch of training, with 95 % intervals, from its episodes.csv.

A probe needs a run that still improves at its branch point (docs/probe.md). This reads each trunk's finished games
and prints, per stretch of ``--stretch`` agent steps, the number of games, their mean raw score and its 95 %
Student-t interval, and the standard deviation of one game's score (which sets a probe's target). Exploratory: not an
rl-gns command.

    python results/late_pilot/trunk_scores.py results/probes/trunks/Pong results/probes/trunks/Qbert
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from rl_gns.records.rundir import RunDir


def stretch_rows(steps: np.ndarray, scores: np.ndarray, stretch: int) -> list[tuple[int, int, float, float, float, float]]:
    """Games grouped by the stretch of training they finished in.

    :param steps: ``(N,)`` agent steps at which each game finished.
    :param scores: ``(N,)`` raw game scores.
    :param stretch: length of a stretch in agent steps.
    :return: per stretch with at least two games: (start in agent steps, games, mean, 95 % low, 95 % high,
        standard deviation of one game).
    """
    rows = []
    for start in range(0, int(steps.max()) + 1, stretch):
        games = scores[(steps >= start) & (steps < start + stretch)]
        if len(games) < 2:
            continue
        sd = float(games.std(ddof=1))
        half = float(stats.t.ppf(0.975, len(games) - 1)) * sd / np.sqrt(len(games))
        mean = float(games.mean())
        rows.append((start, len(games), mean, mean - half, mean + half, sd))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (trunks)")
    parser.add_argument("--stretch", type=int, default=250_000, help="agent steps per stretch (default 250,000)")
    args = parser.parse_args()
    for path in args.runs:
        games = RunDir(path).episodes()
        print(f"\n{path}: {len(games['score'])} games")
        print("| agent steps | games | mean score [95 %] | sd of a game |")
        print("|---|---:|---|---:|")
        for start, n, mean, low, high, sd in stretch_rows(games["env_steps"], games["score"], args.stretch):
            print(f"| {start:,}-{start + args.stretch:,} | {n} | {mean:.1f} [{low:.1f}, {high:.1f}] | {sd:.1f} |")


if __name__ == "__main__":
    main()
