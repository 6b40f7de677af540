"""The benchmark suite: its data files, the report maths on hand-built runs, and the smoke tier end to end."""

import csv
import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from rl_gns.cli import main
from rl_gns.core.envs.atari import resolve_game
from rl_gns.core.maths.names import gns_key
from rl_gns.core.maths.noise_scale import NoiseSums
from rl_gns.experiments.bench import BenchConfig, check, load_games, load_tier, record
from rl_gns.records.rundir import RunDir
from rl_gns.reports.bench_report import (
    BenchReportConfig,
    analyze_game,
    iqm_with_ci,
    load_run,
    pooled_noise_scale,
    report,
    report_scheme,
)

ENVS = Path(__file__).parents[1] / "envs"
CLI = [sys.executable, "-m", "rl_gns"]


def test_suite_files_parse_and_every_game_resolves():
    games = load_games(ENVS / "atari_games.toml")
    assert len(games) == 7
    for game, entry in games.items():
        assert resolve_game(entry["name"]) == game
        assert entry["human_score"] > entry["random_score"]
        assert entry["random_score"] < entry["target_score"]
        assert all(ref["source"] and ref["agent_steps"] == 10_000_000 for ref in entry["ppo_references"])
    tiers = tomllib.loads((ENVS / "suites.toml").read_text())["tiers"]
    assert set(tiers) == {"smoke", "cpu", "full"}
    for name in tiers:
        tier = load_tier(BenchConfig(suite=name))  # the table shipped with the package
        assert tier.total_steps > 0 and tier.n_envs > 0 and tier.seeds > 0 and tier.every > 0
        assert set(tier.games) <= set(games)
    cpu = load_tier(BenchConfig(suite="cpu", suite_file=ENVS / "suites.toml"))
    assert (cpu.total_steps, cpu.n_envs, cpu.seeds, cpu.every, len(cpu.games)) == (80_000, 8, 3, 2, 7)


def test_a_bench_directory_refuses_other_settings(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    first = BenchConfig(suite="cpu", out=out, suite_file=ENVS / "suites.toml", games_file=ENVS / "atari_games.toml")
    (out / "bench.json").write_text(json.dumps(record(first)))
    check(BenchConfig(**{**first.__dict__, "games": ("Pong",), "seeds": 1, "workers": 3}))  # a selection may change
    other_suite = tmp_path / "suites.toml"
    other_suite.write_text((ENVS / "suites.toml").read_text().replace("total_steps = 80_000", "total_steps = 60_000"))
    with pytest.raises(ValueError, match="other settings \\(tier\\)"):
        check(BenchConfig(**{**first.__dict__, "suite_file": other_suite}))
    with pytest.raises(ValueError, match="not in suite 'smoke'"):
        check(BenchConfig(suite="smoke", out=tmp_path / "b2", games=("Qbert",)))


@pytest.mark.parametrize(
    ("games", "tier_games", "message"),
    [
        ((), None, "--games names no game: a benchmark trains at least one"),
        (None, "[]", "suite 't' names no game: a benchmark trains at least one"),
        (("pong", "Pong"), None, "--games names a game twice: ['pong', 'pong']"),
        (None, '["pong", "pong"]', "suite 't' names a game twice: ['pong', 'pong']"),
    ],
)
def test_a_benchmark_of_no_game_or_a_game_twice_is_refused_before_anything_is_written(
    tmp_path, capsys, games, tier_games, message
):
    """Both trained nothing or one run per game and wrote a report of that (exit status 0)."""
    suites = (ENVS / "suites.toml").read_text()
    if tier_games is not None:
        suites = suites.replace("[tiers.smoke]", f"[tiers.t]\ngames = {tier_games}\ntotal_steps = 512\nn_envs = 4\n"
                                "seeds = 1\nevery = 1\n\n[tiers.smoke]")  # fmt: skip
    (tmp_path / "suites.toml").write_text(suites)
    args = ["bench", "--suite", "smoke" if tier_games is None else "t", "--suite-file", str(tmp_path / "suites.toml")]
    assert main([*args, *(["--games", *games] if games is not None else []), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "b").exists()


#: ``|G|²`` of each loss in the hand-built runs, as a multiple of the policy's (``tr(Σ)`` is the same).
G2_FACTORS = {"policy": 1.0, "value": 4.0, "total": 2.0}


def _write_run(
    run_dir: Path, game: str, seed: int, g2_T: list, trace_T: list, scores_N: list, scheme: str | None = None
) -> None:
    """A finished run directory: 4 iterations at 250, 500, 750, 1000 agent steps (budget 1000). Without ``scheme``,
    the minibatch scheme with the policy and total losses only; with one, that scheme with the value loss too
    (:data:`G2_FACTORS`)."""
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(
        json.dumps(
            {
                "game": game,
                "seed": seed,
                "total_steps": 1000,
                "gns_scheme": ["minibatch" if scheme is None else scheme],
                "n_envs": 2,
                "n_steps": 125,
                "minibatch_size": 125,
                "rollout_size": 250,
            }
        )
    )
    losses = ("policy", "total") if scheme is None else ("policy", "value", "total")
    keys = [gns_key(scheme or "minibatch", q, loss, "raw") for loss in losses for q in ("g2", "trace_sigma")]
    with open(run_dir / "progress.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["time/total_timesteps", *keys])
        for t, (g2, trace) in enumerate(zip(g2_T, trace_T, strict=True)):
            writer.writerow([250 * (t + 1), *(v for loss in losses for v in (G2_FACTORS[loss] * g2, trace))])
    with open(run_dir / "episodes.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["env_steps", "score", "length_frames", "wall_s"])
        for n, score in enumerate(scores_N):
            writer.writerow([10 * (n + 1), score, 100, n])
    (run_dir / "summary.json").write_text("{}")


def test_report_maths_on_hand_built_runs(tmp_path):
    # seed 0: start = first 250 agent steps = the first row only; average = all rows
    _write_run(tmp_path / "pong_s0", "pong", 0, [2.0, -1.0, 1.0, 2.0], [100.0, 50.0, 30.0, 20.0], [-21.0] * 5 + [-11.0] * 20)
    _write_run(tmp_path / "pong_s1", "pong", 1, [-3.0, 1.0, 1.0, 1.0], [60.0, 10.0, 10.0, 10.0], [-20.0] * 10)
    runs = [load_run(RunDir(tmp_path / name), target=-15.0, scheme="minibatch") for name in ("pong_s0", "pong_s1")]
    assert runs[0].sums["policy"]["start"] == NoiseSums(2.0, 100.0, 1)
    assert runs[0].sums["policy"]["average"] == NoiseSums(4.0, 200.0, 4)
    assert runs[0].score == -11.0 and runs[0].reached_target_at is not None
    assert runs[1].score is None and runs[1].n_games == 10  # fewer than 20 games: no final score

    entry = {"name": "Pong", "random_score": -20.7, "human_score": 9.3, "target_score": -15.0}
    result = analyze_game("pong", entry, runs, reps=500, rng=np.random.default_rng(0))
    # pooled over seeds: start Σg2 = 2 - 3 < 0 -> not resolved; average = (200 + 90) / (4 + 0)
    assert not result.noise["policy"]["start"].resolved
    assert result.noise["policy"]["average"].b_simple == pytest.approx(290.0 / 4.0)
    assert result.noise["total"]["average"].b_simple == pytest.approx(290.0 / 8.0)
    assert result.noise["policy"]["average"].n_measurements == 8
    low, high = result.noise["policy"]["average"].ci
    assert low == pytest.approx(200.0 / 4.0) and math.isinf(high)  # resampling seed 1 twice: Σg2 = 0
    assert result.human_normalised_R == [pytest.approx((-11.0 + 20.7) / 30.0), None]
    assert result.reached_target == 1
    assert result.gain is None and not result.off_random  # fewer than 40 games: no gain


def test_a_game_is_off_random_play_when_its_last_games_beat_its_first_beyond_their_noise(tmp_path):
    """45 games: the first 20 alternate -21/-19 (mean -20), the last 20 alternate -12/-10 (mean -11); both variances
    20 / 19, so the gain is 9 ± 1.96 √(2 · (20/19) / 20)."""
    flat = [-21.0, -19.0] * 10
    _write_run(tmp_path / "pong_s0", "pong", 0, [1.0], [10.0], flat + [-15.0] * 5 + [-12.0, -10.0] * 10)
    _write_run(tmp_path / "pong_s1", "pong", 1, [1.0], [10.0], flat + [-20.0] * 5 + flat)
    entry = {"name": "Pong", "random_score": -20.7, "human_score": 9.3, "target_score": -5.0}
    rng = np.random.default_rng(0)
    learnt = analyze_game("pong", entry, [load_run(RunDir(tmp_path / "pong_s0"), -5.0, "minibatch")], 10, rng)
    half = 1.96 * math.sqrt(2 * (20 / 19) / 20)
    assert learnt.gain == pytest.approx((9.0, 9.0 - half, 9.0 + half)) and learnt.off_random
    flat_run = analyze_game("pong", entry, [load_run(RunDir(tmp_path / "pong_s1"), -5.0, "minibatch")], 10, rng)
    assert flat_run.gain is not None and flat_run.gain[0] == 0.0 and not flat_run.off_random


def _write_bench(bench_dir: Path, scheme: str | None) -> None:
    """A smoke-tier benchmark directory of two finished Pong runs (:func:`_write_run`)."""
    bench_dir.mkdir()
    config = BenchConfig(suite="smoke", out=bench_dir, suite_file=ENVS / "suites.toml", games_file=ENVS / "atari_games.toml")
    (bench_dir / "bench.json").write_text(json.dumps(record(config)))
    _write_run(bench_dir / "runs/pong_s0", "pong", 0, [2.0, -1.0, 1.0, 2.0], [100.0, 50.0, 30.0, 20.0], [-20.0] * 25, scheme)
    _write_run(bench_dir / "runs/pong_s1", "pong", 1, [3.0, 1.0, 1.0, 1.0], [60.0, 10.0, 10.0, 10.0], [-20.0] * 25, scheme)


def test_an_envs_scheme_bench_reports_the_default_predictor_in_agent_steps_of_a_rollout(tmp_path):
    _write_bench(tmp_path / "bench", scheme="envs")
    text = report(BenchReportConfig(bench_dir=tmp_path / "bench", bootstrap=50)).read_text()
    assert "| game | seeds | B_simple value loss (default predictor), start (agent steps) " in text
    assert "| B_simple value loss (default predictor), average (frames) | B_simple policy loss, start (frames) |" in text
    assert "(envs scheme: whole trajectories)" in text and "B_simple counts agent steps of a rollout" in text
    assert "compare it with the rollout size, 128 agent steps (512 frames)" in text  # smoke tier: 4 envs x 32 steps
    assert "samples per gradient step" not in text and "minibatch scheme" not in text
    # value loss, whole run: Σ tr(Σ) / Σ |G|² over both seeds = (200 + 90) / (4 × (4 + 6))
    assert "| Pong | 2 | " in text and f"| {290 / 40:.3g} [" in text
    results = json.loads((tmp_path / "bench/results.json").read_text())
    assert results["definitions"]["scheme"] == "envs"
    assert results["games"][0]["noise"]["value"]["average"]["b_simple"] == pytest.approx(290 / 40)
    assert (tmp_path / "bench/b_simple_start_vs_average.png").stat().st_size > 8_000


def test_a_minibatch_scheme_bench_says_samples_per_gradient_step_and_what_it_did_not_measure(tmp_path):
    _write_bench(tmp_path / "bench", scheme=None)  # minibatch scheme, no value loss
    text = report(BenchReportConfig(bench_dir=tmp_path / "bench", bootstrap=50)).read_text()
    assert "(minibatch scheme: random minibatch)" in text and "B_simple counts samples per gradient step" in text
    assert "| game | seeds | B_simple value loss, start (frames) | B_simple value loss, average (frames) |" in text
    assert "| Pong | 2 | not measured | not measured | " in text
    assert "The default predictor of the critical rollout size (`env_value`: value loss, whole trajectories) was not " \
        "measured by these runs" in text  # fmt: skip
    assert "agent steps of a rollout" not in text


def test_the_report_reads_the_default_predictors_scheme_where_every_run_measured_it():
    assert report_scheme([("minibatch", "envs"), ("envs",)]) == "envs"
    assert report_scheme([("minibatch", "envs"), ("minibatch",)]) == "minibatch"
    assert report_scheme([]) == "envs"
    with pytest.raises(ValueError, match="no noise-scale scheme in common"):
        report_scheme([("minibatch",), ("envs",)])


def test_pooled_noise_scale_and_iqm():
    rng = np.random.default_rng(0)
    scale = pooled_noise_scale(np.array([2.0, 1.0]), np.array([100.0, 200.0]), 7, reps=1000, rng=rng)
    assert scale.b_simple == pytest.approx(100.0) and scale.n_measurements == 7
    assert scale.ci[0] == pytest.approx(50.0) and scale.ci[1] == pytest.approx(200.0)  # all from seed 0 or seed 1
    assert pooled_noise_scale(np.array([1.0]), np.array([5.0]), 1, reps=10, rng=rng).ci is None
    assert not pooled_noise_scale(np.array([1.0, -1.0]), np.array([5.0, 5.0]), 2, reps=10, rng=rng).resolved

    scores_RG = np.arange(8.0).reshape(2, 4)  # IQM of 0..7 = mean of 2, 3, 4, 5
    iqm, (low, high) = iqm_with_ci(scores_RG, reps=500, rng=rng)
    assert iqm == pytest.approx(3.5) and low <= iqm <= high
    iqm, (low, high) = iqm_with_ci(np.full((1, 3), 0.4), reps=50, rng=rng)
    assert iqm == low == high == pytest.approx(0.4)


@pytest.mark.atari
def test_smoke_tier_end_to_end(tmp_path):
    out = tmp_path / "bench"
    command = [*CLI, "bench", "--suite", "smoke", "--out", str(out), "--bootstrap", "200"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "2 runs, 0 finished before, 0 to resume from checkpoints, 2 to run from the start" in result.stdout
    assert "2/2 finished" in result.stdout

    results = json.loads((out / "results.json").read_text())
    assert [g["game"] for g in results["games"]] == ["breakout", "pong"]
    assert results["definitions"]["scheme"] == "envs"  # train's default scheme, the default predictor's
    for game in results["games"]:
        assert game["seeds"] == [0]
        for loss in ("value", "policy", "total"):
            assert game["noise"][loss]["average"]["n_measurements"] == 4  # every iteration of 512 / 128
            assert game["noise"][loss]["start"]["n_measurements"] == 1  # the first 25 %: 128 agent steps
    report = (out / "report.md").read_text()
    assert "| game | seeds | B_simple value loss (default predictor), start (frames) |" in report
    assert "| Breakout | 1 |" in report and "samples per gradient step" not in report
    assert (out / "b_simple_start_vs_average.png").stat().st_size > 8_000

    (out / "report.md").unlink()
    report_only = [*CLI, "bench", "--report-only", "--out", str(out), "--bootstrap", "50"]
    again = subprocess.run(report_only, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "| Pong | 1 |" in (out / "report.md").read_text()
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert "2 finished before, 0 to resume from checkpoints, 0 to run from the start" in resumed.stdout
