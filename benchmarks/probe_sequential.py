"""What would a sequential probe cost, and would its interval still hold? Simulated probes.

The branches are those of ``benchmarks/probe_coverage.py`` (games of random length scoring around a mean that rises to
the target at the branch's true steps, the target at criterion v8's null floor, a branch's steps read by the trend
measure, a rate rule off the optimum by a random offset per probe and per size). Each simulated probe, with a known
``B_crit``, is run two ways on the same sizes and rule:

- ``fixed``: every size × ``--seeds`` seeds × 3 learning rates a factor 2 apart, the fastest rate kept per seed: what
  ``rl-gns probe`` runs today (54 branches at 6 sizes);
- ``sequential``: ``rl-gns probe --design sequential``'s rule (:func:`rl_gns.core.maths.sequential.next_round`): one
  seed per size at the grid's 3 rates (``--lr-points 1``: the rule's rate only); then, while ``B_crit`` is not bounded
  within ``--stop-ratio`` (high / low), one more seed at the two sizes around the fitted ``B_crit`` (at every size
  while it is not identified), at the rate the size's first seed kept, a size taking at most ``--seeds`` seeds.

With ``--censored`` both designs fit with each size and seed that no rate got to the target within its budget as
censored (:func:`rl_gns.core.maths.tradeoff.fit_censored_tradeoff`), in the sequential rule and in the last fit.

A branch's cost is the agent steps it trains: to the game that takes its running score to the target, else its budget.
Cost is given in units of ``E_min`` (the truth's experience at the smallest rollout sizes) and as the sequential
probe's cost over the fixed probe's on the same draw: at v7's median cost of 32× the trunk, a ratio ``r`` would make it
``32 r`` times. With ``--run-steps`` (the agent steps of the run a probe branches from) a branch's budget is half the
run's, as ``rl-gns probe`` sets it, each design's cost also counts the anchor (100,000 agent steps) and the pilot (one
budget), and is given as a multiple of the run; each ``--max-costs`` cap runs the sequential design again on the same
draw, stopping before a round that could take it past the cap (each new branch counted at its budget), as ``rl-gns
probe --max-cost`` does. A capped probe trains the same branches as the uncapped one until it stops.

Each design also reports the scatter of its kept branches: the pooled standard deviation of ``ln S`` between seeds at
one size, as it can be measured on a real probe's branches (learning's scatter with the games' and the rates' on it).

    python benchmarks/probe_sequential.py --out results/validation/probe_sequential
"""

from __future__ import annotations

import copy
import math
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import tyro
from probe_coverage import GRID, LR_CURVATURE, Branch, as_json, command, games_to_target, null_target, write_record
from probe_coverage import Args as Simulated

from rl_gns.core.maths.sequential import next_round, too_few_reached
from rl_gns.core.maths.tradeoff import fit_local_tradeoff, fit_with_censored, seed_scatter
from rl_gns.experiments.probe import ProbeConfig


@dataclass
class Args:
    """Cost, identification and coverage of a fixed and a sequential probe design on the same simulated probes."""

    b_crits: list[float] = field(default_factory=lambda: [256.0, 1024.0, 4096.0])
    """True critical rollout sizes, agent steps."""
    seed_sds: list[float] = field(default_factory=lambda: [0.15, 0.4])
    """σ of ln S between seeds at one size and rate."""
    seeds: int = 3
    """Seeds per size and rate of the fixed design."""
    stop_ratio: float = 8.0
    """The sequential design stops once B_crit is identified with an interval (at --level) of high / low at most this."""
    lr_points: Literal[1, 3] = 3
    """Learning rates of the sequential design's first round: 3, the grid (later seeds at the rate it kept); 1, the rule's."""
    budget_steps: int | None = None
    """Agent steps per branch; a branch that has not reached the target by then stops there (default: half of
    --run-steps, else 2,000,000)."""
    run_steps: int | None = None
    """Agent steps of the run a probe branches from: the unit of --max-costs, and of each design's cost."""
    max_costs: list[float] = field(default_factory=list)
    """Caps on the sequential design's agent steps, as multiples of --run-steps (``rl-gns probe --max-cost``)."""
    least_sizes: list[int] = field(default_factory=list)
    """Stops for futility: for each L, the sequential design runs again on the same draw, stopping after a round at
    whose end fewer than L sizes have a branch at the target (``rl-gns probe --least-sizes``)."""
    censored: bool = False
    """Fit with the sizes and seeds that did not reach the target as censored (else without them)."""
    level: float = 0.95
    """Confidence level of the fits' intervals (the stopping rule's and the coverage's)."""
    draws: int = 200
    """Simulated probes per B_crit and σ."""
    seed: int = 0
    """Seed of the simulation."""
    out: Path = Path("probe_sequential")
    """Directory for sequential.json and sequential.md."""


@dataclass
class Probe:
    """One simulated probe's truth: the sizes, each size's true steps and how much slower each rate of the grid is."""

    rollout_K: np.ndarray
    n_steps_K: list[int]
    s_true_K: np.ndarray
    slower_KG: np.ndarray


def draw_probe(sim: Simulated, b_crit: float, rng: np.random.Generator) -> Probe:
    s_min = sim.e_min / b_crit
    rollout = np.array([sim.n_envs * n for n in sim.n_steps_grid], dtype=float)
    offset = rng.normal(0, sim.lr_offset_sd)
    best_over_grid = GRID / np.exp(offset + rng.normal(0, sim.lr_offset_sd / 2, size=(len(rollout), 1)))
    return Probe(
        rollout, list(sim.n_steps_grid), s_min * (1 + b_crit / rollout), np.exp(LR_CURVATURE * np.log(best_over_grid) ** 2)
    )


#: Agent steps of a probe's anchor (``rl-gns probe --anchor-steps``'s default).
ANCHOR_STEPS: int = ProbeConfig.anchor_steps


def budget(args: Args) -> int:
    """Agent steps per branch: ``--budget-steps``, else half the run's (``rl-gns probe``'s default), else 2,000,000."""
    if args.budget_steps is not None:
        return args.budget_steps
    return args.run_steps // 2 if args.run_steps is not None else 2_000_000


def before_branches(args: Args) -> float:
    """Agent steps a probe spends before its branches where costs are counted against the run: the anchor's and the
    pilot's one budget (``--target-rule pilot``); none without ``--run-steps``, as the earlier tables count them."""
    return ANCHOR_STEPS + budget(args) if args.run_steps is not None else 0.0


def branch(sim: Simulated, probe: Probe, k: int, rate: int, seed_sd: float, target: float, rng: np.random.Generator) -> Branch:
    """One branch at size ``k`` and grid rate ``rate``: its steps (None where not reached), agent steps trained and
    bound."""
    s = probe.s_true_K[k] * probe.slower_KG[k, rate] * math.exp(seed_sd * rng.normal())
    result = games_to_target(rng, sim, probe.n_steps_K[k], s, target, trend=True)
    if result.steps is not None and result.steps * probe.rollout_K[k] > sim.budget_steps:
        return result._replace(steps=None)  # timed past the budget: not reached, with no bound
    return result


def judged(
    batch: list[float], steps: list[float], b_crit: float, censored: list[tuple[float, float]] | None, level: float
) -> dict:
    """The fit of the kept branches (with ``censored``, ``(rollout, bound)`` of those that did not reach the target, as
    censored), and whether it identifies ``B_crit`` and its interval covers it."""
    if len(batch) < 3 or len(set(batch)) < 2:
        return {"identified": False, "covered": False, "ratio": math.nan, "fit": None}
    batch_N, steps_N = np.array(batch), np.array(steps)
    if censored is None:
        fit = fit_local_tradeoff(batch_N, steps_N, level)
    else:
        fit = fit_with_censored(batch_N, steps_N, censored, level)
    covered = bool(fit.b_crit_low <= b_crit <= fit.b_crit_high)
    return {"identified": fit.identified, "covered": covered, "ratio": fit.b_crit / b_crit if fit.identified else math.nan,
            "fit": fit}  # fmt: skip


def fixed(
    sim: Simulated, probe: Probe, args: Args, seed_sd: float, target: float, b_crit: float, rng: np.random.Generator
) -> dict:
    """The fixed design on one simulated probe: every size, ``--seeds`` seeds, the grid's 3 rates, the fastest kept."""
    batch, steps, cost, censored = [], [], 0.0, []
    for k in range(len(probe.rollout_K)):
        for _ in range(args.seeds):
            runs = [branch(sim, probe, k, rate, seed_sd, target, rng) for rate in range(len(GRID))]
            cost += sum(run.trained for run in runs)
            reached = [run.steps for run in runs if run.steps is not None]
            if reached:
                batch.append(probe.rollout_K[k])
                steps.append(min(reached))
            elif min(run.bound for run in runs) > 0:
                censored.append((probe.rollout_K[k], min(run.bound for run in runs)))
    fit = judged(batch, steps, b_crit, censored if args.censored else None, args.level)
    ss, df = seed_scatter(np.array(batch), np.array(steps))
    cost += before_branches(args)
    return {**fit, "cost": cost, "branches": len(probe.rollout_K) * args.seeds * len(GRID), "ss": ss, "df": df}


def sequential(
    sim: Simulated,
    probe: Probe,
    args: Args,
    seed_sd: float,
    target: float,
    b_crit: float,
    rng: np.random.Generator,
    max_cost: float | None = None,
    least_sizes: int = 0,
) -> dict:
    """The sequential design on one simulated probe (the module's docstring): its fit, cost and branches; with
    ``max_cost`` (a multiple of ``--run-steps``) it stops before a round that could pass it, with ``least_sizes`` after
    a round at whose end fewer sizes than that have a branch at the target (:func:`too_few_reached`)."""
    batch, steps, cost, branches = [], [], before_branches(args), 0
    censored: list[tuple[float, float]] | None = [] if args.censored else None
    first = range(len(GRID)) if args.lr_points == 3 else [len(GRID) // 2]  # the grid, or the rule's own rate
    tuned: dict[int, int] = {}  # size -> the grid rate its first round kept
    seeds_K = [0] * len(probe.rollout_K)
    reached_K = [False] * len(probe.rollout_K)
    fit = None
    while sizes := next_round(list(probe.rollout_K), seeds_K, fit, args.stop_ratio, args.seeds):
        first_round = not any(seeds_K)
        most = len(sizes) * (len(first) if first_round else 1) * budget(args)
        if max_cost is not None and args.run_steps is not None and cost + most > max_cost * args.run_steps:
            break
        for k in sizes:
            rates = first if first_round or k not in tuned else [tuned[k]]
            runs = {rate: branch(sim, probe, k, rate, seed_sd, target, rng) for rate in rates}
            cost, branches, seeds_K[k] = cost + sum(r.trained for r in runs.values()), branches + len(rates), seeds_K[k] + 1
            reached = {rate: r.steps for rate, r in runs.items() if r.steps is not None}
            if reached:
                kept = min(reached, key=reached.__getitem__)
                reached_K[k] = True
                batch.append(probe.rollout_K[k])
                steps.append(reached[kept])
                if first_round:
                    tuned[k] = kept
            elif censored is not None and min(r.bound for r in runs.values()) > 0:
                censored.append((probe.rollout_K[k], min(r.bound for r in runs.values())))
        fit = judged(batch, steps, b_crit, censored, args.level)["fit"]
        if too_few_reached([reached_K[k] for k, seeds in enumerate(seeds_K) if seeds], least_sizes):
            break
    ss, df = seed_scatter(np.array(batch), np.array(steps))
    return {**judged(batch, steps, b_crit, censored, args.level), "cost": cost, "branches": branches, "ss": ss, "df": df}


def summary(results: list[dict]) -> dict:
    ratios = [r["ratio"] for r in results if r["identified"]]
    df = sum(r["df"] for r in results)
    return {
        "observed_sd": math.sqrt(sum(r["ss"] for r in results) / df) if df else math.nan,
        "identified": float(np.mean([r["identified"] for r in results])),
        "covered": float(np.mean([r["covered"] for r in results])),
        "median_ratio": float(np.median(ratios)) if ratios else math.nan,
        "median_cost": float(np.median([r["cost"] for r in results])),
        "median_branches": float(np.median([r["branches"] for r in results])),
    }


def check(args: Args) -> None:
    """The run's agent steps, the budget and the caps; a bad one ends the script with one line and exit status 2."""
    counts = {"--run-steps": args.run_steps, "--budget-steps": args.budget_steps, "--draws": args.draws}
    bad = [
        f"{flag} must be a positive integer, got {value}" for flag, value in counts.items() if value is not None and value < 1
    ]
    bad += [f"--max-costs must be finite multiples of the run > 0, got {cap}" for cap in args.max_costs
            if not (math.isfinite(cap) and cap > 0)]  # fmt: skip
    bad += [f"--least-sizes must be integers >= 1, got {least}" for least in args.least_sizes if least < 1]
    bad += ["--max-costs needs --run-steps (a cap is a multiple of the run's agent steps)"] if (
        args.max_costs and args.run_steps is None) else []  # fmt: skip
    if bad:
        print(f"probe_sequential.py: error: {bad[0]}", file=sys.stderr)
        raise SystemExit(2)


def main(args: Args) -> None:
    check(args)
    rng = np.random.default_rng(args.seed)
    sim = Simulated(budget_steps=budget(args))
    target = null_target(sim, rng)
    rows = []
    for seed_sd in args.seed_sds:
        for b_crit in args.b_crits:
            draws = []
            for _ in range(args.draws):
                probe = draw_probe(sim, b_crit, rng)
                first = fixed(sim, probe, args, seed_sd, target, b_crit, rng)
                before = copy.deepcopy(rng)  # each cap's probe draws the uncapped probe's branches, until it stops
                results = [first, sequential(sim, probe, args, seed_sd, target, b_crit, rng)]
                for cap in args.max_costs:
                    results.append(sequential(sim, probe, args, seed_sd, target, b_crit, copy.deepcopy(before), cap))
                for least in args.least_sizes:
                    again = copy.deepcopy(before)
                    results.append(sequential(sim, probe, args, seed_sd, target, b_crit, again, least_sizes=least))
                draws.append(results)
            row: dict[str, Any] = {"seed_sd": seed_sd, "b_crit": b_crit, "e_min": sim.e_min}
            row["fixed"], row["sequential"] = (summary([d[index] for d in draws]) for index in (0, 1))
            row["capped"] = {f"{cap:g}": summary([d[2 + index] for d in draws]) for index, cap in enumerate(args.max_costs)}
            after = 2 + len(args.max_costs)
            row["futile"] = {str(least): summary([d[after + i] for d in draws]) for i, least in enumerate(args.least_sizes)}
            row["median_cost_ratio"] = float(np.median([d[1]["cost"] / d[0]["cost"] for d in draws]))
            rows.append(row)
            print(f"σ {seed_sd:.2f} B_crit {b_crit:6,.0f}  fixed {row['fixed']}  sequential {row['sequential']}  "
                  + "".join(f"at most {cap}x {capped}  " for cap, capped in row["capped"].items())
                  + "".join(f"stop below {least} sizes {futile}  " for least, futile in row["futile"].items())
                  + f"cost ratio {row['median_cost_ratio']:.2f}", flush=True)  # fmt: skip
    record = {
        "command": command("probe_sequential.py", args),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "args": as_json(args),
        "simulated": as_json(sim),
        "null_floor_target": target,
        "rows": rows,
    }
    write_record(args.out, "sequential", record, table(record))


def table(record: dict) -> str:
    a, sim = record["args"], record["simulated"]
    lines = [
        "# A sequential probe against the fixed design (simulated probes)",
        "",
        f"Command: `{record['command']}` ({record['date']}, CPU). {a['draws']} simulated probes per row, each run both "
        f"ways: {sim['n_envs']} envs at n_steps {sim['n_steps_grid']}, budget {sim['budget_steps']:,} agent steps per "
        f"branch, E_min {sim['e_min']:,.0f}, games of {sim['game_length']:.0f} agent steps, a {sim['window']}-game "
        f"running score, the target at the null floor ({record['null_floor_target']:.2f} game sds), steps by the trend "
        f"measure. Fixed: {a['seeds']} seeds x 3 learning rates per size. Sequential: one seed per size at "
        + ("the grid's 3 rates" if a["lr_points"] == 3 else "the rule's rate")
        + f", then a seed at the two sizes around the fitted B_crit (every size while unidentified), at the rate the "
        f"size's first seed kept, until its {a.get('level', 0.95):.0%} interval is within {a['stop_ratio']:g}x (high / "
        "low), at most "
        f"{a['seeds']} seeds per size: the rule of `rl-gns probe --design sequential --lr-points {a['lr_points']}`. "
        + ("Both fit with the sizes and seeds that did not reach the target censored. " if a.get("censored") else "")
        + (
            f"Costs count the anchor ({ANCHOR_STEPS:,} agent steps) and the pilot (one budget), against a run of "
            f"{a['run_steps']:,} agent steps; a capped design stops before a round that could pass its cap. "
            if a.get("run_steps") is not None
            else ""
        )
        + "Observed σ: the pooled standard deviation of ln S between the kept seeds of one size, as a real probe's "
        "branches show it. Exploratory: the stopping rule and the sizes it adds were chosen on an earlier run of this "
        "simulation, not fixed in advance.",
        "",
        "| σ_seed | true B_crit | design | branches (median) | cost / E_min (median) | "
        + ("cost / run (median) | " if a.get("run_steps") is not None else "")
        + "identified | covers the truth | median fitted/true | observed σ | cost, sequential / fixed (median) |",
        "|---:|---:|---|---:|---:|" + ("---:|" if a.get("run_steps") is not None else "") + "---:|---:|---:|---:|---:|",
    ]
    for row in record["rows"]:
        designs = {"fixed": row["fixed"], "sequential": row["sequential"]}
        designs.update({f"sequential, at most {cap}x the run": capped for cap, capped in row.get("capped", {}).items()})
        designs.update({f"sequential, stops below {least} sizes at the target": futile
                        for least, futile in row.get("futile", {}).items()})  # fmt: skip
        for design, d in designs.items():
            ratio = f"{row['median_cost_ratio']:.2f}" if design == "sequential" else ""
            of_run = f"{d['median_cost'] / a['run_steps']:.1f}x | " if a.get("run_steps") is not None else ""
            lines.append(
                f"| {row['seed_sd']:.2f} | {row['b_crit']:,.0f} | {design} | {d['median_branches']:.0f} | "
                f"{d['median_cost'] / row['e_min']:.1f} | {of_run}{d['identified']:.2f} | {d['covered']:.2f} | "
                f"{d['median_ratio']:.2f} | {d['observed_sd']:.2f} | {ratio} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main(tyro.cli(Args))
