"""Stopping rules replayed on the rounds of committed sequential probes. No training.

A sequential probe (``rl-gns probe --design sequential``) records each round's branches in its ``probe.json`` before
they train, and chooses each round from the branches before it. A rule that only stops a probe sooner therefore trains
exactly the rounds the probe trained up to where it stops: replaying it needs the probe's own branches and nothing
more. For every sequential probe under the given paths that holds its branches, this replays:

- ``as run``: every round (the report's own fit, read again);
- ``fewer than L sizes``: stop after the first round at whose end fewer than ``L`` rollout sizes have a branch that
  reached the target (:func:`rl_gns.core.maths.sequential.too_few_reached`), for each ``--least-sizes``;
- ``a round with none``: stop after the first round in which no branch reached the target.

Each is fitted with the report's own code (:func:`rl_gns.reports.probe_report.rung` at the probe's highest target, and
its second fit from the size of least experience up, :func:`rl_gns.reports.probe_report.from_least_experience`), and
costs the anchor, the pilot and the branches of the rounds it keeps, as a multiple of the run's agent steps at the
branch point. Exploratory: these rules were written after these probes were seen.

The branches of seven of criterion v8's probes lie in the history (results/README.md); bring them back first:

    git restore --source=53867d90 -- results/probes_v8/Pong/at1950k_censored_steps/{runs,specs}
    git restore --source=c05b42f5 -- results/probes_v8/Qbert/at1500k_censored_steps/{runs,specs}
    git restore --source=b8cd41d4 -- results/probes_v8/{Breakout/at1000k,Alien/at1950k}_censored_steps/{runs,specs}
    git restore --source=32d53f01 -- results/probes_v8/Qbert/at1950k_censored_steps{,_retest}/{runs,specs}
    git restore --source=b908d64e -- results/probes_v8/Pong/at1000k_censored_steps/{runs,specs}
    python benchmarks/replay_rounds.py results/probes_v8/*/*_censored_steps* --least-sizes 2 3 \
        --out results/validation/replay_rounds
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, cast

import numpy as np
import tyro

from rl_gns.core.maths.sequential import too_few_reached
from rl_gns.core.maths.targets import StepsMeasure
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.records.rundir import PROBE, read_json
from rl_gns.reports.probe_report import from_least_experience, rung, spent
from rl_gns.reports.sweep_analysis import RunRecord, load_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reread_censored import write_reread


@dataclass
class Args:
    """Replay stopping rules on the rounds of committed sequential probes."""

    paths: tyro.conf.Positional[list[Path]]
    """Directories holding probe directories (each with probe.json, its rounds and its branches' runs/)."""
    least_sizes: list[int] = field(default_factory=lambda: [2])
    """Values of L for the rule ``fewer than L sizes`` (sizes at the target after a round)."""
    out: Path | None = None
    """Directory for rounds.md and rounds.json (default: print only)."""


def shown(fit: LocalTradeoffFit | None) -> str:
    """``B_crit [low, high]`` where identified; ``≥ low`` where bounded below only; ``–`` without a fit."""
    if fit is None:
        return "–"
    if not fit.identified:
        return f"≥ {fit.b_crit_low:,.0f}" if fit.b_crit_low > 0 else "unbounded"
    high = "∞" if math.isinf(fit.b_crit_high) else f"{fit.b_crit_high:,.0f}"
    return f"{fit.b_crit:,.0f} [{fit.b_crit_low:,.0f}, {high}]"


def identified(fit: LocalTradeoffFit | None) -> bool:
    return fit is not None and fit.identified


class Rule(NamedTuple):
    """A stopping rule replayed: ``as run`` (neither stop), ``fewer than L sizes`` or ``a round with none``."""

    label: str
    """Its name in the tables."""
    least_sizes: int = 0
    """Stop after a round at whose end fewer sizes than this reached the target (:func:`too_few_reached`; 0: never)."""
    empty_round: bool = False
    """Stop after a round in which no branch reached the target."""


def rounds_kept(rounds: list[list[RunRecord]], target: float, rule: Rule) -> int:
    """How many of a probe's rounds ``rule`` keeps: up to the first at whose end it stops, else all of them.

    :param rounds: each round's branches, in the order they trained.
    """
    so_far: list[RunRecord] = []
    for index, branches in enumerate(rounds, start=1):
        so_far += branches
        reached_K = [any(target in r.reached for r in so_far if r.rollout_size == size)
                     for size in sorted({r.rollout_size for r in so_far})]  # fmt: skip
        if too_few_reached(reached_K, rule.least_sizes):
            return index
        if rule.empty_round and not any(target in r.reached for r in branches):
            return index
    return len(rounds)


def replay(probe_dir: Path, rules: list[Rule]) -> list[dict]:
    """One row per rule for one probe: the rounds it keeps, their cost and both fits."""
    probe = read_json(probe_dir / PROBE)
    settings, runs = load_sweep(probe_dir)
    target = max(float(t) for t in settings["targets"])
    measure = cast(StepsMeasure, probe.get("steps") or "passage")
    censored = bool(probe.get("censored"))
    by_unit = {(r.n_envs, r.rollout_size // r.n_envs, r.seed): r for r in runs}
    rounds = [[by_unit[(n_envs, n_steps, seed)] for n_envs, n_steps, seed in units] for units in probe["rounds"]]
    rows = []
    for rule in rules:
        kept = rounds_kept(rounds, target, rule)
        branches = [r for branches in rounds[:kept] for r in branches]
        fit = rung(branches, target, measure, censored)
        second = from_least_experience(fit, censored)
        rows.append({
            "probe": str(probe_dir),
            "rule": rule.label,
            "rounds": f"{kept} of {len(rounds)}",
            "branches": len(branches),
            "reached": sum(target in r.reached for r in branches),
            "cost": spent(probe_dir, [r.env_steps for r in branches], int(probe["env_steps"])).multiple,
            "b_crit": shown(fit.fit),
            "second_fit": shown(second.fit),
            "identified": identified(fit.fit),
            "second_identified": identified(second.fit),
        })  # fmt: skip
    return rows


def summary(rows: list[dict], rule: str) -> str:
    """One line per rule: its probes' median and range of cost, and how many identify ``B_crit`` by each fit."""
    mine = [r for r in rows if r["rule"] == rule]
    costs = [r["cost"] for r in mine]
    return (
        f"- {rule}: {len(mine)} probes, cost a median {np.median(costs):.2f}x ({min(costs):.2f}–{max(costs):.2f}x), "
        f"{sum(r['rounds'].split()[0] != r['rounds'].split()[-1] for r in mine)} stopped sooner than as run; "
        f"`B_crit` identified in {sum(r['identified'] for r in mine)} of {len(mine)}, by the second fit in "
        f"{sum(r['second_identified'] for r in mine)}"
    )


def main(args: Args) -> None:
    if not args.least_sizes or any(least < 1 for least in args.least_sizes):
        print(f"replay_rounds.py: error: --least-sizes must be integers >= 1, got {args.least_sizes}", file=sys.stderr)
        raise SystemExit(2)
    probes = sorted(
        p.parent
        for path in args.paths
        for p in path.rglob(PROBE)
        if (p.parent / "runs").is_dir() and read_json(p).get("rounds")
    )
    if not probes:
        print(f"replay_rounds.py: error: no sequential probe with its branches under {args.paths}", file=sys.stderr)
        raise SystemExit(2)
    rules = [
        Rule("as run"),
        *(Rule(f"fewer than {least} sizes", least_sizes=least) for least in args.least_sizes),
        Rule("a round with none", empty_round=True),
    ]
    rows = [row for probe_dir in probes for row in replay(probe_dir, rules)]
    lines = [
        "| probe | rule | rounds kept | branches | reached | cost | `B_crit` [95 %] | second fit |",
        "|---|---|---|---:|---:|---:|---|---|",
        *(
            f"| {r['probe']} | {r['rule']} | {r['rounds']} | {r['branches']} | {r['reached']} | {r['cost']:.2f}x | "
            f"{r['b_crit']} | {r['second_fit']} |"
            for r in rows
        ),
        "",
        *(summary(rows, rule.label) for rule in rules),
    ]
    write_reread(args.out, "rounds", "\n".join(lines), rows)


if __name__ == "__main__":
    main(tyro.cli(Args))
