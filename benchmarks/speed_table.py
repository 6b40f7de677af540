"""Markdown table of a ``benchmarks/speed.py`` record: per env count and configuration, agent steps/s of the
timed chunks as median [min, max], and the ratios of total wall time against plain SB3 (a) and against
rl-gns with measurement off (b).

    python benchmarks/speed_table.py results/benchmarks/speed_cpu.json
"""

import json
import sys
from pathlib import Path

import numpy as np

record = json.loads(Path(sys.argv[1]).read_text())
n_steps = record["ppo_kwargs"]["n_steps"]
print(f"{record['command']} ({record['date'][:10]}, {record['machine']['cpu']}, {record['machine']['cores']} cores)\n")
print("| n_envs | configuration | agent steps/s, median [min, max] of chunks | total time vs (a) | vs (b) |")
print("|---|---|---|---|---|")
for n_envs, result in record["results"].items():
    steps = record["args"]["chunk_iterations"] * int(n_envs) * n_steps
    totals = {name: sum(c["wall_s"] for c in chunks) for name, chunks in result["chunks"].items()}
    for name, chunks in result["chunks"].items():
        speed = np.array([steps / c["wall_s"] for c in chunks])
        vs_a = totals["a_sb3"] / totals[name] if "a_sb3" in totals else float("nan")
        vs_b = totals["b_off"] / totals[name] if "b_off" in totals else float("nan")
        spread = f"{np.median(speed):.0f} [{speed.min():.0f}, {speed.max():.0f}]"
        print(f"| {n_envs} | {name} | {spread} | {vs_a:.2f} | {vs_b:.2f} |")
