"""Did each committed probe's pilot improve on its anchor? The pilot's gain re-read, and a gate on it replayed. No
training.

Criterion v8's pilot trains on from the branch point; its best running score, where it passes the null floor, sets the
probe's target. The null floor is drawn from the anchor's games, played at fixed parameters; the pilot's policy moves
as it trains, so its running score can wander past the floor without its mean rising. For every probe under the given
paths with an anchor and a pilot, this re-reads the pilot's gain over the anchor in standard errors that carry that
drift (:func:`rl_gns.core.maths.targets.pilot_gain`) beside what the probe did: whether its pilot passed the floor,
how many branches reached the target, its cost and whether it identified ``B_crit``. Then, for each ``--least-gains``
threshold ``z``, it replays ``rl-gns probe --least-pilot-gain z`` on the probes of each design that trained branches:
a probe whose pilot gained less ends after its anchor and pilot (costing those), the others as they ran. Exploratory:
the gate was written after these probes were seen.

    python benchmarks/pilot_gain.py results/probes_v8 --least-gains 2 3 --out results/validation/pilot_gain
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.targets import pilot_gain
from rl_gns.experiments.probe import no_target
from rl_gns.records.rundir import PROBE, SWEEP, RunDir, read_json
from rl_gns.reports.probe_report import spent

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_outcomes import design
from reread_censored import write_reread


@dataclass
class Args:
    """Re-read committed probes' pilots and replay a gate on their gain."""

    paths: tyro.conf.Positional[list[Path]]
    """Directories holding probe directories (each with probe.json, anchor/ and pilot/)."""
    least_gains: list[float] = field(default_factory=lambda: [3.0])
    """Thresholds of the gate, in standard errors (``rl-gns probe --least-pilot-gain``)."""
    out: Path | None = None
    """Directory for gain.md and gain.json (default: print only)."""


def row(probe_dir: Path) -> dict:
    """One probe's pilot gain and outcome."""
    probe = read_json(probe_dir / PROBE)
    results = read_json(probe_dir / "probe_results.json") if (probe_dir / "probe_results.json").exists() else {}
    anchor, pilot = (RunDir(probe_dir / name).episodes()["score"] for name in ("anchor", "pilot"))
    fit = results.get("fit") or {}
    before = spent(probe_dir, [], int(probe["env_steps"])).multiple  # the anchor and the pilot
    return {
        "probe": str(probe_dir),
        "design": design(probe, int(read_json(probe_dir / SWEEP)["lr_points"]) if (probe_dir / SWEEP).is_file() else None),
        "pilot_gain": pilot_gain(anchor, pilot),
        "passed_floor": no_target({key: probe.get(key) for key in ("null_floor", "pilot_best")}) is None,
        "reported": bool(results),
        "branches": results.get("branches", 0),
        "reached": len(results.get("reached", [])),
        "cost": results.get("cost_multiple", before),
        "cost_before_branches": before,
        "identified": bool(fit.get("identified")),
    }


def gated(rows: list[dict], least: float) -> list[str]:
    """Per design that trained branches: its probes as run, and with the gate at ``least`` (a probe whose pilot gained
    less ends after its anchor and pilot)."""
    by_design: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["reported"]:
            by_design[r["design"]].append(r)
    lines = []
    for name, mine in sorted(by_design.items()):
        kept = [r for r in mine if r["pilot_gain"] >= least]
        costs = [r["cost"] if r["pilot_gain"] >= least else r["cost_before_branches"] for r in mine]
        lines.append(
            f"- {name}: {len(mine)} probe{'s' * (len(mine) != 1)}, {len(mine) - len(kept)} gated out "
            f"(pilot gain below {least:g}); as run a "
            f"median {np.median([r['cost'] for r in mine]):.2f}× the run, {sum(r['identified'] for r in mine)} identified; "
            f"gated a median {np.median(costs):.2f}×, {sum(r['identified'] for r in kept)} identified of the "
            f"{len(kept)} that keep a target"
        )
    return lines


def main(args: Args) -> None:
    if not args.least_gains or not all(gain > 0 for gain in args.least_gains):
        print(f"pilot_gain.py: error: --least-gains must be > 0, got {args.least_gains}", file=sys.stderr)
        raise SystemExit(2)
    probes = sorted(
        p.parent
        for path in args.paths
        for p in path.rglob(PROBE)
        if RunDir(p.parent / "anchor").status() == "done" and RunDir(p.parent / "pilot").status() == "done"
    )
    if not probes:
        print(f"pilot_gain.py: error: no probe with a finished anchor and pilot under {args.paths}", file=sys.stderr)
        raise SystemExit(2)
    rows = [row(probe_dir) for probe_dir in probes]
    lines = [
        "| probe | pilot's gain (SE) | pilot passed the floor | branches | reached the target | cost | `B_crit` identified |",
        "|---|---:|---|---:|---:|---:|---|",
        *(
            f"| {r['probe']} | {r['pilot_gain']:+.1f} | {'yes' if r['passed_floor'] else 'no'} | {r['branches']} | "
            f"{r['reached']} | {r['cost']:.1f}× | {'yes' if r['identified'] else 'no' if r['reported'] else '–'} |"
            for r in rows
        ),
        "",
        *(line for least in args.least_gains for line in gated(rows, least)),
    ]
    write_reread(args.out, "gain", "\n".join(lines), rows)


if __name__ == "__main__":
    main(tyro.cli(Args))
