"""benchmarks/replay_rounds.py on two committed probes of criterion v8 (read only): a rule that keeps every round reads
as the report does, and a rule that stops sooner keeps the rounds before it stops and costs their branches."""

import json
import subprocess
import sys
from pathlib import Path

from rl_gns.records.rundir import RunDir

ROOT = Path(__file__).resolve().parents[1]
V8 = ROOT / "results" / "probes_v8"


def test_stopping_rules_replayed_on_the_rounds_of_committed_probes(tmp_path):
    breakout, retest = V8 / "Breakout" / "at500k_censored_steps", V8 / "Pong" / "at500k_censored_steps_retest"
    status = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "replay_rounds.py", breakout, retest, "--least-sizes", "2", "--out", tmp_path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    rows = {(Path(r["probe"]).name, r["rule"]): r for r in json.loads((tmp_path / "rounds.json").read_text())["rows"]}
    for probe in (breakout, retest):
        results = json.loads((probe / "probe_results.json").read_text())
        as_run = rows[(probe.name, "as run")]
        assert as_run["cost"] == results["cost_multiple"] and as_run["identified"] == bool(
            (results["fit"] or {}).get("identified")
        )
        assert as_run["branches"] == results["branches"] and as_run["reached"] == len(results["reached"])
    # Breakout at 500k: no branch of its first round (one seed at each of 5 sizes) reached the target
    first = json.loads((breakout / "probe.json").read_text())["rounds"][0]
    stopped = rows[(breakout.name, "fewer than 2 sizes")]
    assert stopped["rounds"] == "1 of 3" and stopped["branches"] == len(first) == 5 and stopped["reached"] == 0
    spent = sum(RunDir(breakout / name).env_steps() for name in ("anchor", "pilot"))
    spent += sum(RunDir(run).env_steps() for run in (breakout / "runs").iterdir() if RunDir(run).config().seed == first[0][2])
    assert stopped["cost"] == spent / json.loads((breakout / "probe.json").read_text())["env_steps"]
    assert rows[(breakout.name, "a round with none")]["rounds"] == "1 of 3"
    # the retest's second round (2 branches) reached the target at no size; 4 sizes had reached it in its first
    assert rows[(retest.name, "fewer than 2 sizes")]["rounds"] == "4 of 4"
    assert rows[(retest.name, "a round with none")]["rounds"] == "2 of 4"


def test_a_path_without_a_sequential_probe_is_refused_with_one_line(tmp_path):
    status = subprocess.run([sys.executable, ROOT / "benchmarks" / "replay_rounds.py", tmp_path],
                            cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert status.returncode == 2 and status.stderr.count("\n") == 1 and "no sequential probe" in status.stderr
