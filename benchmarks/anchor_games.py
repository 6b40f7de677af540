"""How many games will a probe's anchor finish? The estimate ``rl-gns probe`` warns with, against the games played.

For each given probe directory: the source run's games just before the branch point give their length ``L`` (agent
steps per finished game) and spread ``cv`` (:func:`rl_gns.core.maths.targets.game_length`); the renewal count
:func:`rl_gns.core.maths.targets.expected_games` of the anchor's ``anchor_steps`` over the source's env count is set beside
the games the anchor finished (``probe.json``'s ``anchor_games``, or its ``episodes.csv`` where it stopped short).

    python benchmarks/anchor_games.py results/probes_v6/*/at*k* --out results/probes_v6/anchor_games.md
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tyro

from rl_gns.core.maths.targets import expected_games, game_length
from rl_gns.records.rundir import ANCHOR, PROBE, RunDir, read_json


@dataclass
class Args:
    """Predicted against played anchor games, one row per probe."""

    probes: tyro.conf.Positional[list[Path]]
    """Probe directories (each with probe.json and anchor/)."""
    out: Path | None = None
    """Markdown table (default: print only)."""


def row(probe: Path) -> str:
    """One probe's table row: game length, spread, predicted and played games."""
    record = read_json(probe / PROBE)
    source = RunDir(Path(record["source"]))
    games = source.episodes()
    estimate = game_length(games["env_steps"], games["length_frames"], record["env_steps"])
    n_envs = RunDir(probe / ANCHOR).config().n_envs
    played = record.get("anchor_games", len(RunDir(probe / ANCHOR).episodes()["score"]))
    if estimate is None:
        return f"| {probe} | {record['env_steps']:,} | {n_envs} | {record['anchor_steps']:,} | – | – | – | {played} |"
    length, cv = estimate
    predicted = expected_games(length, cv, record["anchor_steps"], n_envs)
    return (
        f"| {probe} | {record['env_steps']:,} | {n_envs} | {record['anchor_steps']:,} | {length:,.0f} | {cv:.2f} "
        f"| {predicted:.1f} | {played} |"
    )


def main(args: Args) -> None:
    lines = [
        "| probe | branch point (agent steps) | anchor envs | anchor agent steps | L (agent steps per game) | cv "
        "| predicted games | played games |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(row(probe) for probe in args.probes),
    ]
    table = "\n".join(lines) + "\n"
    print(table, end="")
    if args.out is not None:
        args.out.write_text(
            "# Anchor games: predicted before playing, and played\n\n"
            f"    python benchmarks/anchor_games.py {' '.join(str(p) for p in args.probes)}\n\n" + table
        )


if __name__ == "__main__":
    main(tyro.cli(Args))
