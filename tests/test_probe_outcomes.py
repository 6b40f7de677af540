"""benchmarks/probe_outcomes.py on the committed probes of criterion v8 (read only): a reported probe's row is its
report's record, a probe whose pilot passed no null floor costs its anchor and pilot, and a retest pairs with its
probe."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
V8 = ROOT / "results" / "probes_v8"


def test_outcomes_of_the_committed_v8_probes(tmp_path):
    status = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "probe_outcomes.py", "results/probes_v8/Pong", "results/probes_v8/Qbert/at500k",
         "--out", tmp_path],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    record = json.loads((tmp_path / "outcomes.json").read_text())
    rows = {Path(row["probe"]).relative_to("results/probes_v8").as_posix(): row for row in record["probes"]}
    cheap = json.loads((V8 / "Pong" / "at500k_cheap" / "probe_results.json").read_text())
    row = rows["Pong/at500k_cheap"]
    assert row["status"] == "reported" and row["multiple"] == cheap["cost_multiple"]
    assert row["false_crossing"] == cheap["false_crossing"] and row["identified"] == cheap["fit"]["identified"]
    assert row["design"] == "sequential, 1 rate per size, lowest target, reaching branches"
    assert rows["Pong/at500k_wide"]["design"].endswith("2 largest sizes held back")
    qbert = json.loads((V8 / "Qbert" / "at500k" / "probe.json").read_text())
    assert rows["Qbert/at500k"]["status"] == "no target" and rows["Qbert/at500k"]["pilot_best"] == qbert["pilot_best"]
    assert 0 < rows["Qbert/at500k"]["multiple"] < 1  # the anchor's 100k and the pilot's, at 500k
    pairs = {Path(pair["probe"]).name: pair for pair in record["retests"]}
    assert sorted(pairs) == ["at500k", "at500k_censored_steps"]
    assert pairs["at500k"]["retest"].endswith("Pong/at500k_retest")
    assert pairs["at500k"]["intervals_overlap"] and not pairs["at500k"]["both_identified"]
    # re-read with envs that reset together: Pong's anchor scores grow with game length, so at 128 envs a branch that
    # learns nothing ends its short games first and crosses the wide probe's target often, not the any-order 0
    wide = rows["Pong/at500k_wide"]
    assert wide["false_crossing"] == [0] and wide["reset_together"]["null_n_envs"] >= 64
    assert wide["reset_together"]["false_crossing_envs"][0] > 0.1 and wide["reset_together"]["null_floor_envs"] > -18.37
    assert "reset_together" not in rows["Qbert/at500k"]  # no target: nothing to re-read
    # the second fit, from the size of least experience up, as the report gives it; "the fit itself" where no smaller
    # size took more experience; an interval that reaches 0 is counted apart
    names = ("at500k_censored_steps", "at500k_censored_steps_retest", "at1000k_censored_steps", "at1950k_censored_steps")
    steps = {name: json.loads((V8 / "Pong" / name / "probe_results.json").read_text()) for name in names}
    for name, probe in steps.items():
        second, upper = probe["fit_from_least_experience"], rows[f"Pong/{name}"]["upper"]
        fitted = second["fit"] or {"b_crit": None, "identified": False}  # too few branches reached the target to fit
        assert upper["from_rollout_size"] == second["from_rollout_size"] and upper["b_crit"] == fitted["b_crit"]
        assert upper["identified"] == fitted["identified"] and upper["same_as_fit"] == second["same_as_fit"]
        assert upper["fitted"] == (second["fit"] is not None)
    assert rows["Pong/at500k"]["upper"]["same_as_fit"] and "upper" not in rows["Pong/at500k_cheap"]  # kept in history
    # the n_steps pair at 500k: both fits of each, as their reports give them
    pair, first, retest = pairs["at500k_censored_steps"], steps[names[0]], steps[names[1]]
    assert pair["retest"].endswith(f"Pong/{names[1]}")
    assert pair["ratio"] == retest["fit"]["b_crit"] / first["fit"]["b_crit"]
    assert pair["both_identified"] == (first["fit"]["identified"] and retest["fit"]["identified"])
    assert pair["upper"]["b_crit_retest"] == retest["fit_from_least_experience"]["fit"]["b_crit"]
    summary = (tmp_path / "outcomes.md").read_text()
    fits = [probe["fit"] for probe in steps.values()]
    seconds = [probe["fit_from_least_experience"]["fit"] or {"identified": False} for probe in steps.values()]

    def counted(fits: list[dict]) -> str:
        upper = [fit for fit in fits if fit["identified"]]
        both = sum(fit["b_crit_low"] > 0 for fit in upper)
        return f"{len(upper)} of {len(fits)}" + ("" if both == len(upper) else f" ({both} with a lower end above 0)")

    assert f"censored fit, 1 largest sizes held back: {len(steps)} reported, cost a median" in summary
    second_fits = f"the fit from the size of least experience up identifies it in {counted(seconds)}"
    assert f"`B_crit` identified in {counted(fits)}; {second_fits}" in summary
    assert "2 reported, cost a median 15.2× (14.6–15.7×), `B_crit` identified in 0 of 2" in summary
    none = rows["Qbert/at500k"]
    assert (
        f"{none['design']}: 1 ended without a target (the pilot passed no null floor), cost a median "
        f"{none['multiple']:.1f}×" in summary
    )
    # a design some of whose probes ended without a target: its cost over every probe it started, those included
    censored = [row for row in rows.values() if row["design"] == "sequential, 1 rate per size, lowest target, censored fit"]
    without = [row for row in rows.values() if row["design"] == "sequential, no branch planned, lowest target, censored fit"]
    assert censored and without and all(row["status"] == "no target" for row in without)
    started = [row["multiple"] for row in censored + without]
    assert (
        f"; over all {len(started)} it started ({len(without)} without a target), a median {np.median(started):.1f}× "
        f"({min(started):.1f}–{max(started):.1f}×)"
    ) in summary


def test_a_design_names_the_stops_it_runs_beyond_its_own():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from probe_outcomes import design

    record = {"design": "sequential", "lowest_target_only": True, "censored": True, "held_back": 1}
    assert design(record, 1) == "sequential, 1 rate per size, lowest target, censored fit, 1 largest sizes held back"
    assert design({**record, "least_sizes": 2}, 1).endswith("held back, stops below 2 sizes at the target")
    assert design({**record, "least_sizes": 0}, 1) == design(record, 1)
