"""What each committed probe spent: the agent steps of its anchor, its pilot (where its targets came from one) and
every branch, as a multiple of the agent steps of the run it branched from at the branch point.

    python benchmarks/probe_costs.py results/probes_v6 results/probes_v7

Reads ``probe.json`` (the branch point's agent steps) and every run's last logged agent step; prints a Markdown table
and the median multiple.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from rl_gns.records.rundir import PROBE, RunDir, read_json, runs_under
from rl_gns.reports.probe_report import spent


def probe_cost(probe_dir: Path) -> tuple[int, int, int]:
    """``(branch point's agent steps, agent steps spent by the anchor, the pilot and the branches, branches)``."""
    point = int(read_json(probe_dir / PROBE)["env_steps"])
    cost = spent(probe_dir, [RunDir(path).env_steps() for path in runs_under(probe_dir)], point)
    return point, cost.agent_steps, cost.branches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path, help="directories holding probe directories (probe.json)")
    args = parser.parse_args()
    probes = sorted({path.parent for root in args.roots for path in root.rglob(PROBE)})
    print("| probe | branch point (agent steps) | branches | agent steps spent | multiple |\n|---|---:|---:|---:|---:|")
    multiples = []
    for probe_dir in probes:
        point, spent, branches = probe_cost(probe_dir)
        multiples.append(spent / point)
        print(f"| {probe_dir} | {point:,} | {branches} | {spent:,} | {spent / point:.1f}x |")
    print(f"\n{len(probes)} probes: {min(multiples):.1f}x to {max(multiples):.1f}x, median {np.median(multiples):.1f}x")


if __name__ == "__main__":
    main()
