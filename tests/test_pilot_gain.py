"""benchmarks/pilot_gain.py on the committed probes of Breakout in criterion v8 (read only): each pilot's gain is
re-read from its anchor's and pilot's games, and the gate ends a probe whose pilot gained too little after its anchor
and pilot."""

import json
import subprocess
import sys
from pathlib import Path

from rl_gns.core.maths.targets import pilot_gain
from rl_gns.records.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]
BREAKOUT = ROOT / "results" / "probes_v8" / "Breakout"


def test_pilot_gains_and_the_gate_replayed_on_breakouts_probes(tmp_path):
    status = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "pilot_gain.py", "results/probes_v8/Breakout", "--least-gains", "3",
         "--out", tmp_path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    rows = {Path(r["probe"]).name: r for r in json.loads((tmp_path / "gain.json").read_text())["rows"]}
    for name, r in rows.items():
        scores = (RunDir(BREAKOUT / name / run).episodes()["score"] for run in ("anchor", "pilot"))
        assert r["pilot_gain"] == pilot_gain(*scores)
    # at 500k the pilot passed the floor with no gain in its mean; at 1.25M it gained and its probe identified B_crit
    assert rows["at500k_censored_steps"]["passed_floor"] and rows["at500k_censored_steps"]["pilot_gain"] < 1
    assert rows["at1250k_censored_steps"]["pilot_gain"] > 3 and rows["at1250k_censored_steps"]["identified"]
    assert not rows["at250k"]["passed_floor"] and not rows["at250k"]["reported"]
    steps = [r for r in rows.values() if r["reported"] and r["design"].endswith("1 largest sizes held back")]
    gated = sum(r["pilot_gain"] < 3 for r in steps)
    line = next(line for line in (tmp_path / "gain.md").read_text().splitlines() if line.endswith(
        f"{len(steps) - gated} that keep a target") and "held back:" in line)  # fmt: skip
    assert f"{len(steps)} probes, {gated} gated out (pilot gain below 3)" in line


def test_a_path_without_probes_is_refused_with_one_line(tmp_path):
    status = subprocess.run([sys.executable, ROOT / "benchmarks" / "pilot_gain.py", tmp_path],
                            cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert status.returncode == 2 and status.stderr.count("\n") == 1 and "no probe with a finished" in status.stderr
