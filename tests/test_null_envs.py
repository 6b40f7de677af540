"""benchmarks/null_envs.py on the committed branches that learn nothing (read only): the draws are seeded by the
probe's first seed, so the committed table reproduces from the runs and the probe's anchor."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NULL = ROOT / "results" / "probes_v8" / "null_envs"


def test_the_committed_null_branches_reproduce(tmp_path):
    committed = json.loads((NULL / "null_envs.json").read_text())
    runs = [row["run"] for row in committed["runs"]]
    probe = committed["command"].split("--probe ")[1].split()[0]
    status = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "null_envs.py", *runs, "--probe", probe, "--out", tmp_path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    again = json.loads((tmp_path / "null_envs.json").read_text())["runs"]
    for row, old in zip(again, committed["runs"], strict=True):
        assert row["max_running_score"] == old["max_running_score"] and row["peak_game"] == old["peak_game"]
        for key in ("p_any", "p_envs", "floor_any", "floor_envs"):
            assert row[key] == pytest.approx(old[key])
        assert row["floor_envs"] >= row["floor_any"]  # 64 envs that reset together: the first-games floor raises it
