"""What would the committed probes have cost had their learning rates raced? A re-read of their branches, no training.

A probe keeps, per size, seed and target, the learning rate that reached the target fastest
(:func:`rl_gns.core.maths.criterion.fastest`). Once one rate of a (size, seed) has taken its running score to the
probe's highest target, a rate that has not can no longer be the fastest by the passage measure, at that target or at
any lower one: racing stops it there, at the end of the iteration in which the winner's reaching game finished
(rates of one size train in lockstep). This script replays that rule on each committed probe's branch files:

- ``as run``: the agent steps of the anchor and every branch, as ``benchmarks/probe_costs.py`` counts them;
- ``raced``: the same with each branch cut at its (size, seed)'s stopping point (rates run one after another, as in
  edge rounds, are cut at the same point, which was then already known);
- ``kept changed``: (size, seed, target) whose kept rate or steps differ between the full and the cut games, under
  the probe's own steps measure (``midpoint`` and ``trend`` may rank a rate that passed later first: racing would
  then change what the report fits, and the count says how often).

Cost is a multiple of the branch point's agent steps (the trunk's, as issue and docs count it).

    python benchmarks/probe_racing.py results/probes_v6 results/probes_v7 --out results/validation/probe_racing
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import tyro
from probe_costs import probe_cost

from rl_gns.core.envs.atari import FRAME_SKIP
from rl_gns.core.maths.criterion import fastest
from rl_gns.core.maths.targets import StepsMeasure, reach_steps
from rl_gns.records.rundir import PROBE, RunDir, read_json, runs_under, write_json
from rl_gns.reports.probe_report import RESULTS


@dataclass
class Args:
    """Re-read committed probes: their cost as run and had their learning rates raced."""

    roots: tyro.conf.Positional[tuple[Path, ...]]
    """Directories holding probe directories; those that reported (``probe_results.json``) are read."""
    out: Path | None = None
    """Directory for racing.json and racing.md (default: print only)."""


@dataclass(frozen=True)
class Branch:
    """One branch's games, as its directory holds them.

    :param name: its directory's name.
    :param group: ``(rollout_size, seed)``: the rates that race each other.
    :param rate: its learning rate.
    :param end: agent steps it trained.
    :param games: ``episodes.csv``'s columns.
    :param n_envs: envs stepped together.
    :param frame_skip: frames per agent step (a game's length is logged in frames).
    """

    name: str
    group: tuple[int, int]
    rate: float
    end: int
    games: dict[str, np.ndarray]
    n_envs: int
    frame_skip: int


def read_branch(run: RunDir) -> Branch:
    config = run.config()
    return Branch(
        run.name,
        (config.rollout_size, config.seed),
        config.learning_rate,
        run.env_steps(),
        run.episodes(),
        config.n_envs,
        int(config.settings.get("frame_skip", FRAME_SKIP)),
    )


def steps_to(branch: Branch, target: float, window: int, measure: StepsMeasure, until: float) -> float:
    """PPO iterations ``branch`` took to ``target`` by ``measure`` over its games that ended by agent step ``until``;
    ``inf`` where it did not get there."""
    games = branch.games
    keep = games["env_steps"] <= until
    lengths = games["length_frames"][keep] / branch.frame_skip
    rollout_size = branch.group[0]
    reach = reach_steps(games["env_steps"][keep], games["score"][keep], lengths, branch.n_envs, rollout_size, target, window)
    return math.inf if reach is None else reach.steps(measure)


def stopping_point(branches: list[Branch], top: float, window: int) -> float:
    """Agent steps at which racing stops the rates of one (size, seed): the end of the iteration in which the first of
    them to reach the top target by passage did; ``inf`` where none did."""
    rollout_size = branches[0].group[0]
    passages = [steps_to(branch, top, window, "passage", math.inf) for branch in branches]
    first = min(passages)
    return math.inf if math.isinf(first) else first * rollout_size


def kept(branches: list[Branch], target: float, window: int, measure: StepsMeasure, until: float) -> tuple[str, float]:
    """The kept rate of one (size, seed) at ``target`` and its steps, over games ending by ``until``; ``("", inf)``
    where no rate got there."""
    steps = {b.name: steps_to(b, target, window, measure, until) for b in branches}
    reached = {name: s for name, s in steps.items() if math.isfinite(s)}
    return ("", math.inf) if not reached else (fastest(reached), reached[fastest(reached)])


def race(probe_dir: Path) -> dict[str, object]:
    """One probe's cost as run and raced, and the kept (size, seed, target) that racing changes."""
    record = read_json(probe_dir / PROBE)
    targets = sorted(record.get("targets") or [record["target"]])
    window, measure = int(record["window"]), cast(StepsMeasure, record.get("steps") or "passage")
    point, spent, n_branches = probe_cost(probe_dir)
    groups: dict[tuple[int, int], list[Branch]] = defaultdict(list)
    for path in runs_under(probe_dir):
        branch = read_branch(RunDir(path))
        groups[branch.group].append(branch)
    saved, changed, compared = 0, 0, 0
    for branches in groups.values():
        stop = stopping_point(branches, targets[-1], window)
        saved += sum(int(max(b.end - stop, 0)) for b in branches if len(branches) > 1)
        for target in targets:
            full = kept(branches, target, window, measure, math.inf)
            if full[0]:
                compared += 1
                changed += kept(branches, target, window, measure, stop) != full
    return {
        "probe": str(probe_dir),
        "branch_point": point,
        "branches": n_branches,
        "measure": measure,
        "as_run": spent,
        "raced": spent - saved,
        "kept_compared": compared,
        "kept_changed": changed,
    }


def main(args: Args) -> None:
    # reported probes whose branches are here (some are kept in the history only)
    probes = sorted({path.parent for root in args.roots for path in root.rglob(RESULTS) if (path.parent / "runs").is_dir()})
    rows = [race(probe_dir) for probe_dir in probes]
    lines = [
        "| probe | branches | measure | as run | raced | saved | kept (size, seed, target) changed |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        point, as_run, raced = row["branch_point"], row["as_run"], row["raced"]
        lines.append(
            f"| {row['probe']} | {row['branches']} | {row['measure']} | {as_run / point:.1f}x | {raced / point:.1f}x | "  # type: ignore[operator]
            f"{1 - raced / as_run:.0%} | {row['kept_changed']} of {row['kept_compared']} |"  # type: ignore[operator]
        )
    as_run = [r["as_run"] / r["branch_point"] for r in rows]  # type: ignore[operator]
    raced = [r["raced"] / r["branch_point"] for r in rows]  # type: ignore[operator]
    changed = sum(int(r["kept_changed"]) for r in rows)  # type: ignore[call-overload]
    compared = sum(int(r["kept_compared"]) for r in rows)  # type: ignore[call-overload]
    lines.append(
        f"\n{len(rows)} probes: median {np.median(as_run):.1f}x as run, {np.median(raced):.1f}x raced; "
        f"kept rate or steps changed in {changed} of {compared} (size, seed, target)."
    )
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "python benchmarks/probe_racing.py " + " ".join(map(str, args.roots)) + f" --out {args.out}"
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        write_json(args.out / "racing.json", {"command": command, "date": stamp, "probes": rows})
        (args.out / "racing.md").write_text(f"Command: `{command}` ({stamp})\n\n{text}\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
