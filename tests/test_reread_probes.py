"""benchmarks/reread_probes.py: a target far above every null game is safe, one at the null mean is not, and the
table has a row per committed target (a synthetic probe directory in real files, and one committed probe)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "reread_probes.py"
COMMITTED = ROOT / "results" / "probes_v6" / "Pong" / "at500k"


def write_games(directory: Path, scores: np.ndarray) -> None:
    """An ``episodes.csv`` of ``scores``, one game every 100 agent steps."""
    directory.mkdir(parents=True)
    rows = [f"{100 * (i + 1)},{s},400,{0.1 * (i + 1):.1f}" for i, s in enumerate(scores)]
    (directory / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n" + "\n".join(rows) + "\n")


def synthetic_probe(root: Path) -> tuple[Path, float, float]:
    """A probe-like directory: an anchor of 80 games, 3 branches (the longest of 150 games), two targets (the null
    mean, and far above every null game), L = 3, and a report at the first target. Returns it and its targets."""
    rng = np.random.default_rng(1)
    null = np.round(rng.normal(100.0, 20.0, size=80), 1)
    probe = root / "Game" / "at100k"
    write_games(probe / "anchor", null)
    for name, games in (("b0", 60), ("b1", 150), ("b2", 40)):
        write_games(probe / "runs" / name, np.round(rng.normal(110.0, 20.0, size=games), 1))
    mean, far = float(np.mean(null)), float(null.max()) + 1000.0
    (probe / "probe.json").write_text(json.dumps({
        "window": 20, "delta_noise": [3.0, 6.0], "targets": [mean, far], "target": mean,
        "start_score": mean, "anchor_games": len(null),
    }))  # fmt: skip
    (probe / "sweep.json").write_text(json.dumps({"lr_points": 3, "window": 20, "targets": [mean, far]}))
    fit = {"s_min": 10.0, "e_min": 1e5, "b_crit_low": 500.0, "b_crit_high": 4000.0, "level": 0.95, "n_points": 9,
           "b_crit": 1000.0, "identified": True}  # fmt: skip
    (probe / "probe_results.json").write_text(json.dumps({
        "target": mean, "fit": fit, "verdict": "B_crit 1e+03",
        "ladder": [{"target": mean, "fit": fit, "resolved": True}, {"target": far, "fit": None, "resolved": False}],
    }))  # fmt: skip
    return probe, mean, far


def reread(paths: list[Path], out: Path) -> tuple[list[str], dict]:
    """Run the script; its printed table rows and its reread.json."""
    result = subprocess.run([sys.executable, str(SCRIPT), *map(str, paths), "--out", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and not line.startswith("| probe |")]
    return rows, json.loads((out / "reread.json").read_text())


def test_a_target_above_every_null_game_is_safe_and_one_at_the_null_mean_is_not(tmp_path):
    probe, mean, far = synthetic_probe(tmp_path / "probes")
    rows, record = reread([tmp_path / "probes"], tmp_path / "out")
    assert len(rows) == 2 and all(str(probe) in row for row in rows)  # one row per committed target
    assert (tmp_path / "out" / "reread.md").read_text().count(f"| {probe} |") == 2
    (read,) = record["probes"]
    assert read["anchor_games"] == 80 and read["games_per_branch"] == 150 and read["n_runs"] == 3
    at_mean, above = read["targets"]
    assert at_mean["target"] == pytest.approx(mean) and above["target"] == pytest.approx(far)
    assert at_mean["p_null"] > 0.99 and not at_mean["safe"]
    assert above["p_null"] == 0.0 and above["safe"]
    assert mean < read["null_floor"] < far
    assert read["reported_safe"] is False and not read["b_crit_stands"]
    assert "not supported at the reported target" in read["standing"]
    assert record["summary"]["safe_targets"] == 1 and record["summary"]["targets"] == 2


def test_a_committed_probe_reads_with_a_row_per_target(tmp_path):
    if not (COMMITTED / "probe.json").exists():
        pytest.skip(f"{COMMITTED} is not in this checkout")
    rows, record = reread([COMMITTED], tmp_path / "out")
    (read,) = record["probes"]
    committed = json.loads((COMMITTED / "probe.json").read_text())["targets"]
    assert len(rows) == len(read["targets"]) == len(committed)
    assert read["anchor_games"] == json.loads((COMMITTED / "probe.json").read_text())["anchor_games"]
    assert [r["p_null"] for r in read["targets"]] == sorted((r["p_null"] for r in read["targets"]), reverse=True)
