"""Real branches that learn nothing against the null floor's draws. No training here: it reads the runs of
``results/probes_v8/null_envs/run.sh`` (learning rate 0 from a probe's branch point, all envs reset together, one
branch budget) and the probe's anchor games.

For each run: its highest running score over every look, where it peaked (games, agent steps), and where that score
falls among the null branches drawn from the anchor's games at the run's env count and budget, in any order
(:func:`rl_gns.core.maths.targets.null_max_running_scores`) and as envs that reset together
(:func:`rl_gns.core.maths.targets.null_max_running_scores_envs`): the fraction of draws at or above it. Beside it, each
rule's floor for one learning rate at the probe's level. A run whose score sits far in the any-order draws' tail and
inside the reset-together draws is what the first-games floor predicts.

    python benchmarks/null_envs.py results/probes_v8/null_envs/Pong_at1950k_n64_s0 \
        --probe results/probes_v8/Pong/at1950k_censored --out results/probes_v8/null_envs
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import tyro
from probe_outcomes import null_config

from rl_gns.core.maths.targets import null_floor, running_score
from rl_gns.experiments.probe import null_maxima
from rl_gns.records.rundir import PROBE, SWEEP, RunDir, read_json, write_json


@dataclass
class Args:
    """Compare real branches that learn nothing with the null floor's draws from a probe's anchor."""

    runs: tyro.conf.Positional[tuple[Path, ...]]
    """Finished runs at learning rate 0 from the probe's branch point (one env count each)."""
    probe: Path
    """The probe whose anchor games, window, budget and seed the draws take."""
    out: Path | None = None
    """Directory for null_envs.json and null_envs.md (default: print only)."""


def compare(run_dir: Path, probe_dir: Path) -> dict[str, object]:
    """One run's row: its env count, games, highest running score and where it peaked, and per rule (``any``,
    ``envs``) the fraction of null draws at or above that score and the floor for one learning rate."""
    probe, plan = read_json(probe_dir / PROBE), read_json(probe_dir / SWEEP)
    run = RunDir(run_dir)
    n_envs = run.config().n_envs
    games = run.episodes()
    running = running_score(games["score"], int(probe["window"]))
    peak = int(np.nanargmax(running))
    config = null_config(probe, plan)
    row: dict[str, object] = {"run": str(run_dir), "n_envs": n_envs, "games": len(running),
                              "agent_steps": int(run.summary().env_steps), "max_running_score": float(running[peak]),
                              "peak_game": peak + 1, "peak_agent_steps": int(games["env_steps"][peak])}  # fmt: skip
    level = float(probe["null_level"])
    for order in ("any", "envs"):
        _, maxima = null_maxima(config, probe_dir / "anchor", (n_envs,), order)
        (drawn,) = maxima.values()
        row[f"p_{order}"] = float(np.mean(drawn >= running[peak]))
        row[f"floor_{order}"] = null_floor(drawn, 1, level)
    return row


def markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "| run | n_envs | games | highest running score (game, agent step) | draws at or above it: any order "
        "| envs reset together | floor, 1 rate: any order | envs reset together |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['run']} | {row['n_envs']} | {row['games']} | {row['max_running_score']:g} "
                     f"({row['peak_game']}, {row['peak_agent_steps']:,}) | {row['p_any']:.3g} | {row['p_envs']:.3g} "
                     f"| {row['floor_any']:g} | {row['floor_envs']:g} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(args: Args) -> None:
    rows = [compare(run_dir, args.probe) for run_dir in args.runs]
    text = markdown(rows)
    print(text, end="")
    if args.out is not None:
        command = "python benchmarks/null_envs.py " + " ".join(sys.argv[1:])
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        write_json(args.out / "null_envs.json", {"command": command, "date": stamp, "runs": rows})
        (args.out / "null_envs.md").write_text(f"# Branches that learn nothing\n\n`{command}` ({stamp})\n\n{text}")


if __name__ == "__main__":
    main(tyro.cli(Args))
