"""What each probe of a set found and what it cost: its design, targets and their false-crossing rates, the branches
and agent steps it spent as a multiple of its run, and `B_crit` with its interval; then, per design, the median cost
and how often `B_crit` was identified, what the probes that ended without a target cost, and each test-retest pair (a
probe ``X`` and ``X_retest``). No training.

Each target's false-crossing rate is given twice: as the probe recorded it, and re-read with null branches whose envs
reset together (``rl-gns probe``'s rule since 2026-12-05, :func:`rl_gns.experiments.probe.null_maxima`): at each env
count of the probe's grid, its highest over them, and the null floor at that count. A probe set its targets with the
rule of its day; where its record says ``any``, the re-read is what the rule of today finds on its anchor's games.

Each reported probe also gives the scatter of ``ln S`` between seeds at one rollout size
(:func:`rl_gns.core.maths.tradeoff.seed_scatter`, over the kept branches at its reported target; branches that did not
reach it are left out, so a slow seed's steps are not in it), and the last line pools it over every reported probe:
the scatter a probe's design must resolve the bend through. Where its report has one (``rl-gns probe-report`` since
2026-12-06), the row gives the second fit, from the size of least experience up
(:func:`rl_gns.reports.probe_report.from_least_experience`), and each design's line how often it identified `B_crit`.

    python benchmarks/probe_outcomes.py results/probes_v8 --out results/probes_v8/outcomes

A probe that reported (``probe_results.json``) is read from its report's record; one whose pilot passed no null floor
ended without a target (its cost: the anchor and the pilot); any other is unfinished (under way, or stopped) and left
out of the medians.
"""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import tyro

from rl_gns.core.maths.tradeoff import seed_scatter
from rl_gns.experiments.probe import ProbeConfig, highest_floor, no_target, null_maxima, worst_crossing
from rl_gns.records.rundir import PROBE, SWEEP, read_json, write_json
from rl_gns.reports.probe_report import RESULTS, spent

NO_BRANCH = "no branch planned"
"""A design's rates in words where its probe planned no branch (it ended without a target)."""
RETEST = "_retest"
"""The suffix of a retest's directory: the same point and design with disjoint seeds."""


@dataclass
class Args:
    """Summarise committed probes: outcome, false-crossing rate, cost and identification, per probe and design."""

    roots: tyro.conf.Positional[tuple[Path, ...]]
    """Directories holding probe directories (``probe.json``)."""
    out: Path | None = None
    """Directory for outcomes.json and outcomes.md (default: print only)."""


def design(probe: dict[str, Any], lr_points: int | None) -> str:
    """A probe's design in words, from its record and its sweep's learning rates per size (``None``: no sweep was
    planned): the design, the rates per size, which targets, and whether the branches that missed the target enter
    the fit (censored), and the sequential design's stops beyond its own."""
    rates = NO_BRANCH if lr_points is None else f"{lr_points} rate{'s' * (lr_points != 1)} per size"
    targets = "lowest target" if probe.get("lowest_target_only") else "every target"
    fit = "censored fit" if probe.get("censored") else "reaching branches"
    held = f", {probe['held_back']} largest sizes held back" if probe.get("held_back") else ""
    least = f", stops below {probe['least_sizes']} sizes at the target" if probe.get("least_sizes") else ""
    gate = f", pilot gain at least {probe['least_pilot_gain']:g} SE" if probe.get("least_pilot_gain") else ""
    return f"{probe.get('design', 'fixed')}, {rates}, {targets}, {fit}{held}{least}{gate}"


def null_config(probe: dict[str, Any], plan: dict[str, Any]) -> ProbeConfig:
    """The settings of a probe's null rule, from its ``probe.json`` and its sweep's plan: its source, window, seed,
    learning rates per size and branch budget."""
    return ProbeConfig(source=Path(probe["source"]), window=int(probe["window"]), budget_steps=int(plan["budget_steps"]),
                       first_seed=int(probe["first_seed"]), lr_points=int(plan["lr_points"]),
                       edge_rounds=int(plan.get("edge_rounds", 0)))  # fmt: skip


def reset_together(probe_dir: Path, probe: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """The probe's targets re-read with null branches whose envs reset together, at each env count of its grid
    (:func:`rl_gns.experiments.probe.null_maxima`, the probe's window, budget, seed and learning rates per size): the
    env count whose floor is highest, that floor, and each target's highest false-crossing rate over the env counts."""
    config = null_config(probe, plan)
    _, maxima = null_maxima(config, probe_dir / "anchor", tuple(plan["n_envs"]), "envs")
    binding, floor = highest_floor(maxima, config.most_rates(), float(probe["null_level"]))
    crossing = list(worst_crossing(maxima, tuple(probe["targets"]), config.most_rates()))
    return {"null_n_envs": binding, "null_floor_envs": floor, "false_crossing_envs": crossing}


def outcome(probe_dir: Path) -> dict[str, Any]:
    """One probe's row: ``status`` is ``reported``, ``no target`` or ``unfinished``."""
    probe = read_json(probe_dir / PROBE)
    plan = probe_dir / SWEEP
    lr_points = int(read_json(plan)["lr_points"]) if plan.is_file() else None
    row: dict[str, Any] = {"probe": str(probe_dir), "design": design(probe, lr_points),
                           "branch_point": int(probe["env_steps"])}  # fmt: skip
    if probe.get("targets") and plan.is_file():
        row["reset_together"] = reset_together(probe_dir, probe, read_json(plan))
    results = probe_dir / RESULTS
    if results.is_file():
        record = read_json(results)
        fit = record["fit"] or {}
        kept = record["reached"]
        ss, df = seed_scatter(np.array([k["rollout_size"] for k in kept]), np.array([k["iterations"] for k in kept]))
        row |= {
            "status": "reported",
            "targets": record["targets"],
            "false_crossing": record["false_crossing"],
            "branches": record["branches"],
            "agent_steps": record["agent_steps_spent"],
            "multiple": record["cost_multiple"],
            "b_crit": fit.get("b_crit"),
            "b_crit_low": fit.get("b_crit_low"),
            "b_crit_high": fit.get("b_crit_high"),
            "identified": bool(fit.get("identified")),
            "seed_ss": ss,
            "seed_df": df,
        }
        second = record.get("fit_from_least_experience")  # reports written before the second fit have none
        if second is not None:
            upper = second["fit"] or {}
            row["upper"] = {"from_rollout_size": second["from_rollout_size"], "same_as_fit": second["same_as_fit"],
                            "b_crit": upper.get("b_crit"), "b_crit_low": upper.get("b_crit_low"),
                            "b_crit_high": upper.get("b_crit_high"), "identified": bool(upper.get("identified")),
                            "fitted": bool(upper)}  # fmt: skip
        return row
    if no_target(probe) is not None:
        cost = spent(probe_dir, [], row["branch_point"])  # no branch ran: the anchor and the pilot
        return row | {"status": "no target", "pilot_best": probe["pilot_best"], "null_floor": probe["null_floor"],
                      "pilot_gain": probe.get("pilot_gain"), "agent_steps": cost.agent_steps,
                      "multiple": cost.agent_steps / row["branch_point"]}  # fmt: skip
    known = {key: probe[key] for key in ("targets", "false_crossing") if key in probe}  # set once the pilot passed
    return row | {"status": "unfinished"} | known


def steps(value: float | None) -> str:
    return "–" if value is None else "∞" if math.isinf(value) else f"{value:,.0f}"


def found(row: dict[str, Any]) -> str:
    if row["status"] == "no target" and row["pilot_best"] > row["null_floor"]:
        return (
            f"no target: pilot {row['pilot_best']:g} > null floor {row['null_floor']:g}, its gain {row['pilot_gain']:.2f} SE"
        )
    if row["status"] == "no target":
        return f"no target: pilot {row['pilot_best']:g} ≤ null floor {row['null_floor']:g}"
    if row["status"] == "unfinished":
        return "unfinished"
    interval = f"[{steps(row['b_crit_low'])}, {steps(row['b_crit_high'])}]"
    return f"{steps(row['b_crit'])} {interval}" + ("" if row["identified"] else ", not identified")


def identified(fits: list[dict[str, Any]]) -> str:
    """``k of n``: how many of ``fits`` identify `B_crit` (an upper end, as ``LocalTradeoffFit.identified``), and of
    those how many bound it from below too (a lower end above 0) where that differs."""
    upper = [fit for fit in fits if fit["identified"]]
    both = sum(fit["b_crit_low"] > 0 for fit in upper)
    return f"{len(upper)} of {len(fits)}" + ("" if both == len(upper) else f" ({both} with a lower end above 0)")


def found_upper(row: dict[str, Any]) -> str:
    """The second fit's cell: from which size, and its `B_crit`; "–" where the report has none."""
    upper = row.get("upper")
    if upper is None:
        return "–"
    if upper["same_as_fit"]:
        return "the fit itself"
    start = f"from {upper['from_rollout_size']:,}: "
    if not upper["fitted"]:
        return start + "not fitted (fewer than 3 branches at 2 sizes)"
    interval = f"[{steps(upper['b_crit_low'])}, {steps(upper['b_crit_high'])}]"
    return start + f"{steps(upper['b_crit'])} {interval}" + ("" if upper["identified"] else ", not identified")


def retests(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each reported probe with a reported retest (``X`` and ``X_retest``): both `B_crit`, their ratio, and whether
    their intervals overlap."""
    by_path = {row["probe"]: row for row in rows if row["status"] == "reported"}
    pairs = []
    for path, first in by_path.items():
        second = by_path.get(path + RETEST)
        if second is None:
            continue
        pair = {"probe": path, "retest": path + RETEST, **compare(first, second)}
        if first.get("upper", {}).get("fitted") and second.get("upper", {}).get("fitted"):
            pair["upper"] = compare(first["upper"], second["upper"])
        pairs.append(pair)
    return pairs


def compare(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two fits of a test-retest pair: both `B_crit`, the retest's over the first's, whether their intervals overlap
    and whether both identify it."""
    ratio = second["b_crit"] / first["b_crit"] if first["b_crit"] and math.isfinite(first["b_crit"]) else None
    return {"b_crit": first["b_crit"], "b_crit_retest": second["b_crit"], "ratio": ratio,
            "intervals_overlap": max(first["b_crit_low"], second["b_crit_low"])
            <= min(first["b_crit_high"], second["b_crit_high"]),
            "both_identified": first["identified"] and second["identified"]}  # fmt: skip


def markdown(rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> str:
    lines = [
        "| probe | design | branch point (agent steps) | targets (false-crossing probability) | branches "
        "| false crossing, envs reset together (floor, at n_envs) | cost (multiple of the run) "
        "| `B_crit`, agent steps [95 %] | fit from the size of least experience up | seeds' σ of ln S (df) |",
        "|---|---|---:|---|---:|---|---:|---|---|---:|",
    ]
    for row in rows:
        targets = ", ".join(f"{t:g} ({p:.2g})" for t, p in zip(row.get("targets", []), row.get("false_crossing", []),
                                                                  strict=True)) or "–"  # fmt: skip
        multiple = f"{row['multiple']:.1f}×" if "multiple" in row else "–"
        again = row.get("reset_together")
        envs = "–" if again is None else (", ".join(f"{p:.2g}" for p in again["false_crossing_envs"])
                                         + f" ({again['null_floor_envs']:g}, at {again['null_n_envs']})")  # fmt: skip
        scatter = f"{math.sqrt(row['seed_ss'] / row['seed_df']):.2f} ({row['seed_df']})" if row.get("seed_df") else "–"
        lines.append(f"| {row['probe']} | {row['design']} | {row['branch_point']:,} | {targets} "
                     f"| {row.get('branches', '–')} | {envs} | {multiple} | {found(row)} | {found_upper(row)} "
                     f"| {scatter} |")  # fmt: skip
    lines.append("")
    lines += per_design(rows)
    df = sum(row.get("seed_df", 0) for row in rows)
    if df:
        ss = sum(row.get("seed_ss", 0.0) for row in rows)
        probes = sum(bool(row.get("seed_df")) for row in rows)
        lines.append(f"- seeds at one size, pooled over {probes} reported probes: σ of ln S {math.sqrt(ss / df):.2f} "
                     f"({df} df; kept branches only)")  # fmt: skip
    for pair in pairs:
        lines.append(f"- retest of {pair['probe']}: {agreement(pair)}"
                     + (f"; the fits from the size of least experience up: {agreement(pair['upper'])}"
                        if "upper" in pair else ""))  # fmt: skip
    return "\n".join(lines) + "\n"


def without_rates(name: str) -> str:
    """A design in words as a probe of it reads that planned no branch: its rates per size unset."""
    return re.sub(r"\d rates? per size", NO_BRANCH, name)


def per_design(rows: list[dict[str, Any]]) -> list[str]:
    """A line per design: its reported probes' median cost and identification (by both fits), and, where some of its
    probes ended without a target (their design reads "no branch planned" for the rates, as none was planned), its
    median cost over every probe it started (where no other reported design differs from it in its rates alone); then
    a line per design whose probes ended without a target, with their cost."""
    lines = []
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ended: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["status"] == "reported":
            groups[row["design"]].append(row)
        elif row["status"] == "no target":
            ended[row["design"]].append(row["multiple"])
    rates_apart = defaultdict(list)  # a design without its rates -> the reported designs that read so
    for name in groups:
        rates_apart[without_rates(name)].append(name)
    for name, members in groups.items():
        multiples = [row["multiple"] for row in members]
        lines.append(f"- {name}: {len(members)} reported, cost a median {np.median(multiples):.1f}× "
                     f"({min(multiples):.1f}–{max(multiples):.1f}×), `B_crit` identified in "
                     f"{identified(members)}")  # fmt: skip
        second = [row["upper"] for row in members if "upper" in row]
        if second:
            lines[-1] += (f"; the fit from the size of least experience up identifies it in "
                          f"{identified(second)}")  # fmt: skip
        apart = without_rates(name)
        without = ended.get(apart, [])
        if without and rates_apart[apart] == [name]:  # else its rates, which such a probe never set, would decide
            started = multiples + without
            lines[-1] += (f"; over all {len(started)} it started ({len(without)} without a target), a median "
                          f"{np.median(started):.1f}× ({min(started):.1f}–{max(started):.1f}×)")  # fmt: skip
    for name, multiples in ended.items():
        why = "the pilot passed no null floor" + (" or gained too little" if "pilot gain" in name else "")
        lines.append(f"- {name}: {len(multiples)} ended without a target ({why}), cost a "
                     f"median {np.median(multiples):.1f}× ({min(multiples):.1f}–{max(multiples):.1f}×)")  # fmt: skip
    return lines


def agreement(pair: dict[str, Any]) -> str:
    """A test-retest comparison (:func:`compare`) in words."""
    ratio = "–" if pair["ratio"] is None else f"{pair['ratio']:.2f}"
    return (f"`B_crit` {steps(pair['b_crit'])} then {steps(pair['b_crit_retest'])} (ratio {ratio}), intervals "
            f"{'overlap' if pair['intervals_overlap'] else 'disjoint'}, "
            f"{'both' if pair['both_identified'] else 'not both'} identified")  # fmt: skip


def main(args: Args) -> None:
    probes = sorted({path.parent for root in args.roots for path in root.rglob(PROBE)})
    rows = [outcome(probe_dir) for probe_dir in probes]
    pairs = retests(rows)
    text = markdown(rows, pairs)
    print(text, end="")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "python benchmarks/probe_outcomes.py " + " ".join(sys.argv[1:])
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        write_json(args.out / "outcomes.json", {"command": command, "date": stamp, "probes": rows, "retests": pairs})
        (args.out / "outcomes.md").write_text(f"# Probe outcomes\n\n`{command}` ({stamp})\n\n{text}")


if __name__ == "__main__":
    main(tyro.cli(Args))
