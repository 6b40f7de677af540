"""``rl-gns table`` on a committed sweep re-analysed: the Table-1 row carries the fit's B_crit in agent steps and
frames, the path averages, and criterion v8's table names the regime, both baselines, and that one game ranks nothing."""

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rl_gns.records.rundir import RunDir, noise_sums
from rl_gns.reports.sweep_analysis import best_per_seed, load_sweep
from rl_gns.reports.table1 import judged_regime
from tests.conftest import rl_gns

SWEEP = Path("results/sweeps/beamrider_ram")
#: A committed probe of criterion v7 (Pong at 500k agent steps), reported by probe-report.
PROBE = Path(__file__).resolve().parents[1] / "results" / "probes_v7" / "Pong" / "at500k"
PROTOCOL = Path(__file__).resolve().parents[1] / "results" / "table1" / "protocol.sh"


def test_table_of_a_committed_ppo_sweep(tmp_path, capsys):
    rung = tmp_path / "BeamRider" / "R4"
    shutil.copytree(SWEEP, rung / "sweep")
    (rung / "targets.json").write_text(json.dumps({"targets": [425.0, 475.0, 525.0], "false_crossing": [0.001, 0.002, 0.004]}))
    assert rl_gns(capsys, "analyze", rung / "sweep", "--bootstrap", 200)[0] == 0
    status, err = rl_gns(capsys, "table", rung, "--out", tmp_path / "table.md")
    assert status == 0, err
    text = (tmp_path / "table.md").read_text()
    results = json.loads((rung / "sweep" / "results.json").read_text())
    first = results["targets"][0]
    row = next(line for line in text.splitlines() if line.startswith("| BeamRider | R4 | 425 |"))
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[3] == "0.001" and cells[4] == "6"
    assert float(cells[5].split()[0]) == pytest.approx(first["b_crit"], rel=5e-3)
    assert float(cells[6].split()[0]) == pytest.approx(4 * first["b_crit"], rel=5e-3)
    assert float(cells[11]) == pytest.approx(first["path_candidates"]["path_env_value"]["value"], rel=5e-3)
    assert "### Regime `ppo`: 3 counted pairs from 1 game(s)" in text and "| constant 746 |" in text
    assert "Not ranked: the criterion needs counted pairs from 3 games." in text
    assert math.isfinite(first["b_crit"])

    # p_null recomputed with the rates the sweep tried in the end: a target above the level no longer counts
    realised = {"targets": [425.0, 475.0, 525.0], "false_crossing": [0.001, 0.03, 0.004], "level": 0.01}
    (rung / "targets_realised.json").write_text(json.dumps(realised))
    assert rl_gns(capsys, "table", rung, "--out", tmp_path / "table.md")[0] == 0
    text = (tmp_path / "table.md").read_text()
    assert "### Regime `ppo`: 2 counted pairs from 1 game(s)" in text
    assert "p_null 0.03 above 0.01" in text


def test_table_of_a_committed_probe_counts_its_targets_only_under_the_null_rule(tmp_path, capsys):
    """A probe reported by probe-report is a directory of the table: one row per target of its ladder, B_crit as the
    report fitted it, the start values its anchor measured, the path averages over its kept branches (recomputed here
    from the branches' logs). v7's targets were not set by the null rule, so they do not count; given null-rule
    targets below 1 % they do."""
    probe = Path(shutil.copytree(PROBE, tmp_path / "at500k"))
    status, err = rl_gns(capsys, "table", probe, "--out", tmp_path / "table.md")
    assert status == 0, err
    text = (tmp_path / "table.md").read_text()
    results = json.loads((probe / "probe_results.json").read_text())
    rows = [line for line in text.splitlines() if line.startswith("| Pong | probe at 500k |")]
    assert len(rows) == len(results["ladder"]) == 2
    _, runs = load_sweep(probe)
    for row, rung in zip(rows, results["ladder"], strict=True):
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        assert float(cells[5].split()[0]) == pytest.approx(rung["fit"]["b_crit"], rel=5e-3)
        assert float(cells[8]) == pytest.approx(results["noise_at_branch_point"]["envs/value"][0], rel=5e-3)
        target = rung["target"]
        kept = [r for size in {r.rollout_size for r in runs} for r in best_per_seed(runs, target, size, "midpoint").values()]
        logs = [(RunDir(probe / "runs" / r.name).progress(), r.reached[target].env_steps) for r in kept]
        sums = [noise_sums(progress, "envs", "value", until) for progress, until in logs]
        path = sum(s.trace_sigma for s in sums) / sum(s.g2 for s in sums)
        assert float(cells[11]) == pytest.approx(path, rel=5e-3)
        assert cells[-1] == "targets not set by the null rule"
    record = json.loads((probe / "probe.json").read_text())
    (probe / "probe.json").write_text(json.dumps({**record, "false_crossing": [0.001, 0.004]}))
    assert rl_gns(capsys, "table", probe, "--out", tmp_path / "table.md")[0] == 0
    assert "### Regime `ppo`: 2 counted pairs from 1 game(s)" in (tmp_path / "table.md").read_text()


def test_the_ladder_section_gives_each_candidate_over_the_fitted_b_crit_per_rung(tmp_path, capsys):
    """rl-gns table over the committed rungs of the ladder's games, and Beam Rider's one-step sweep (one rung: not on
    the ladder): a column per rung with its counted pairs, each cell the median and range of predicted / fitted
    B_crit, recomputed here from each rung's results.json; every rung's recipe named."""
    table1 = Path(__file__).resolve().parents[1] / "results" / "table1"
    rungs = [table1 / game / rung for game in ("Breakout", "Seaquest") for rung in ("R0", "R1", "R2")]
    status, err = rl_gns(capsys, "table", *rungs, table1 / "BeamRider" / "R0", "--out", tmp_path / "table.md")
    assert status == 0, err
    text = (tmp_path / "table.md").read_text()
    ladder = text.split("## The ladder: predicted / fitted B_crit per rung (Breakout, Seaquest)", 1)[1]
    ladder = ladder.split("## Criterion v8", 1)[0]
    header = next(line for line in ladder.splitlines() if line.startswith("| candidate |"))
    assert header == "| candidate | R0 (4 pairs) | R1 (4 pairs) | R2 (4 pairs) |"
    row = next(line for line in ladder.splitlines() if line.startswith("| default_env_value |"))
    for rung, cell in zip(("R0", "R1", "R2"), [c.strip() for c in row.split("|")[2:-1]], strict=True):
        ratios = []
        for game in ("Breakout", "Seaquest"):
            for entry in json.loads((table1 / game / rung / "sweep" / "results.json").read_text())["targets"]:
                ratios.append(entry["candidates"]["env_value"]["value"] / entry["b_crit"])
        middle = math.sqrt(sorted(ratios)[1] * sorted(ratios)[2])  # every target of these rungs counts (table_R*.md)
        assert cell == f"{middle:.3g} ({min(ratios):.3g}–{max(ratios):.3g})", (rung, cell)
    assert "- R0: rmsprop, M 1, 1 epoch, no clip" in ladder and "- R2: adam, M 4, 1 epoch, no clip" in ladder
    assert "BeamRider" not in ladder


def test_regimes_of_the_ladder():
    one_step = {"optimizer": "rmsprop", "n_epochs": 1, "n_minibatches": 1, "clip_range": 0.1}
    assert judged_regime(one_step) == "one-step"
    assert judged_regime({**one_step, "optimizer": "adam"}) == "ladder"
    assert judged_regime({"n_epochs": 4, "n_minibatches": 4, "clip_range": 0.1}) == "ppo"  # sweeps before the regime
    assert judged_regime({"optimizer": "adam", "n_epochs": 4, "n_minibatches": 4, "clip_range": 1e9}) == "ladder"


def test_a_directory_without_its_analysis_is_refused(tmp_path, capsys):
    status, err = rl_gns(capsys, "table", tmp_path)
    assert status == 2 and "no targets.json" in err


@pytest.mark.slow
def test_the_protocol_takes_a_game_from_its_null_run_to_the_criterion_and_resumes(tmp_path):
    """The one command per regime, end to end on Breakout with tiny budgets: null run, pilot, targets, the sweep with
    its edge rounds, the targets at the rates tried, analyze, and the tables; a rerun trains nothing again."""
    tiny = {"TABLE1_DIR": str(tmp_path), "NULL_STEPS": "6000", "PILOT_STEPS": "40000", "BUDGET": "3000",
            "SIZES": "2 4 8", "SEEDS": "1"}  # fmt: skip
    env = {**os.environ, **tiny}
    first = subprocess.run(["bash", PROTOCOL, "Breakout"], env=env, capture_output=True, text=True, timeout=900)
    game = tmp_path / "Breakout" / "R0"
    chosen = json.loads((game / "targets.json").read_text())
    assert first.returncode == 0, first.stderr[-3000:]
    assert chosen["targets"] and chosen["pilot_best"] > chosen["null_floor"]  # the premise: the tiny pilot learned
    realised = json.loads((game / "targets_realised.json").read_text())
    assert realised["targets"] == chosen["targets"] and realised["learning_rates"] >= 3
    assert (game / "sweep" / "results.json").exists() and (game / "sweep" / "report.md").exists()
    assert "## Table 1" in (tmp_path / "table_R0.md").read_text()
    again = subprocess.run(["bash", PROTOCOL, "Breakout"], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 to resume from checkpoints, 0 to run from the start" in again.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [([], "usage: bash results/table1/protocol.sh <Game>"), (["Breakout", "R9"], "unknown rung R9 (R0..R4)")],
)
def test_the_protocol_refuses_bad_input_in_one_line_with_status_2(tmp_path, args, message):
    env = {**os.environ, "TABLE1_DIR": str(tmp_path)}
    refused = subprocess.run(["bash", PROTOCOL, *args], env=env, capture_output=True, text=True, timeout=60)
    assert (refused.returncode, refused.stderr.strip()) == (2, refused.stderr.strip().splitlines()[0])
    assert message in refused.stderr and not any(tmp_path.iterdir())


def test_a_protocol_run_that_fails_stops_with_its_status_and_writes_no_targets(tmp_path):
    env = {**os.environ, "TABLE1_DIR": str(tmp_path)}
    failed = subprocess.run(["bash", PROTOCOL, "NoSuchGame"], env=env, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 2, failed.stderr[-2000:]
    assert "NoSuchGame" in failed.stderr and not (tmp_path / "NoSuchGame" / "R0" / "targets.json").exists()
