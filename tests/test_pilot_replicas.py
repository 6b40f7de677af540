"""benchmarks/pilot_replicas.py on the committed probes of Breakout in criterion v8 (read only): a replica is a branch
at its pilot's env count, n_steps and learning rate, and its best running score is re-read from its own games."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from rl_gns.core.maths.targets import running_score
from rl_gns.records.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]
BREAKOUT = ROOT / "results" / "probes_v8" / "Breakout"


def test_the_replicas_of_breakouts_pilots_and_whether_they_reached_the_target(tmp_path):
    status = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "pilot_replicas.py", "results/probes_v8/Breakout", "--out", tmp_path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    rows = {Path(r["probe"]).name: r for r in json.loads((tmp_path / "replicas.json").read_text())["rows"]}
    for name, r in rows.items():
        pilot = json.loads((BREAKOUT / name / "pilot" / "config.json").read_text())
        for replica in r["replicas"]:
            config = json.loads((BREAKOUT / name / "runs" / replica["run"] / "config.json").read_text())
            assert all(config[key] == pilot[key] for key in ("n_envs", "n_steps", "learning_rate"))
            assert config["seed"] != pilot["seed"]
            scores = RunDir(BREAKOUT / name / "runs" / replica["run"]).episodes()["score"]
            assert replica["best"] == np.nanmax(running_score(scores, 20))
            assert replica["reached"] == (replica["best"] >= r["target"])
    # at 500k the pilot's best stood above what its own settings reached again; at 1.25M every replica reached it
    assert [rep["reached"] for rep in rows["at500k_censored_steps"]["replicas"]] == [False] * 3
    assert [rep["reached"] for rep in rows["at1250k_censored_steps"]["replicas"]] == [True] * 3
    assert "at250k" not in rows  # its pilot set no target
    text = (tmp_path / "replicas.md").read_text()
    reached = sum(rep["reached"] for r in rows.values() for rep in r["replicas"])
    assert f"- {reached} of {sum(len(r['replicas']) for r in rows.values())} replicas reached" in text


def test_a_path_without_probes_is_refused_with_one_line(tmp_path):
    status = subprocess.run([sys.executable, ROOT / "benchmarks" / "pilot_replicas.py", tmp_path],
                            cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert status.returncode == 2 and status.stderr.count("\n") == 1 and "no probe with a target" in status.stderr
