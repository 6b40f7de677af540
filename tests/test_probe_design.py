"""benchmarks/probe_design.py on committed probes: the scatter it reports is the pooled within-size SD of ln S, and
simulated probes of the committed design identify B_crit less often as B_crit grows past the largest rollout size."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROBES = [ROOT / "results" / "probes_v6" / "Qbert" / "at1950k", ROOT / "results" / "probes_v5" / "SpaceInvaders" / "at100k"]


def test_probe_design_reports_the_pooled_scatter_and_the_identification_rate(tmp_path):
    out = tmp_path / "design"
    args = ["--draws", "300", "--designs", "128:4096:3", "--b-crits", "300", "100000", "--out", str(out)]
    result = subprocess.run([sys.executable, "benchmarks/probe_design.py", *map(str, PROBES), *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((out / "design.json").read_text())
    squares, dof = 0.0, 0
    for probe in PROBES:  # the pooled within-size variance of ln S, recomputed from the probes' own files
        reached = json.loads((probe / "probe_results.json").read_text())["reached"]
        for size in {b["rollout_size"] for b in reached}:
            logs = np.log([b["iterations"] for b in reached if b["rollout_size"] == size])
            squares, dof = squares + float(np.sum((logs - logs.mean()) ** 2)), dof + len(logs) - 1
    assert record["pooled_dof"] == dof and np.isclose(record["pooled_log_sd"], np.sqrt(squares / dof))
    pooled = {row["b_crit"]: row for row in record["rows"] if row["scatter"] == "pooled"}
    # B_crit far inside the sizes is bounded more often than one 24x past the largest size
    assert pooled[300.0]["identified"] > pooled[100000.0]["identified"] + 0.3
    assert all(0.85 <= row["covered"] <= 1.0 for row in record["rows"])  # Fieller's interval keeps about its level
    assert (out / "design.md").exists() and (out / "design.png").exists()
