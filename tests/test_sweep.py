"""Sweeps and their analysis on real ALE (RAM observations, tiny budgets), through the real CLI."""

import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from rl_gns.experiments.config import TrainConfig
from rl_gns.experiments.runner import workload
from rl_gns.experiments.sweep import SweepConfig, warn_unfittable

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
#: Breakout from RAM: random play finishes a game every ~200 agent steps, so targets near random play
#: are reached within a couple of thousand steps.
#: A saved agent of Space Invaders from RAM, for --init-from.
SPACE_INVADERS = Path(__file__).resolve().parents[1] / "results/probes/trunks/SpaceInvaders/snapshots/000000050176.zip"
TINY = ["--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--window", "5", "--lr-points", "1"]


def test_learning_rate_grid_square_root_rule():
    config = SweepConfig(lr_ref=2.5e-4, n_envs_ref=8, n_steps=32, lr_rule="sqrt", lr_points=3, lr_factor=2.0)
    assert config.learning_rates(32 * 32) == pytest.approx([2.5e-4, 5e-4, 1e-3])
    assert config.learning_rates(8 * 32) == pytest.approx([1.25e-4, 2.5e-4, 5e-4])
    assert SweepConfig(lr_points=2, lr_factor=4.0, n_steps=32).learning_rates(256) == pytest.approx([1.25e-4, 5e-4])
    assert len(SweepConfig(n_envs=(4, 8), seeds=2, lr_points=3).runs()) == 12


@pytest.mark.parametrize(
    ("sizes", "grid"),
    [({"n_envs": (8, 16)}, "--n-envs"), ({"n_envs": (4,), "n_steps_grid": (32, 64)}, "--n-steps-grid")],
)
def test_a_sweep_of_fewer_sizes_than_a_fit_needs_is_warned_of_and_one_of_three_is_not(tmp_path, sizes, grid):
    """Two rollout sizes: analyze's curve passes through both exactly and identifies no B_crit."""
    with pytest.warns(UserWarning, match=f"a sweep of 2 rollout size.*give {grid} 3 or more"):
        warn_unfittable(SweepConfig(**sizes, targets=(10.0,), out=tmp_path / "sweep"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_unfittable(SweepConfig(n_envs=(4, 8, 16), targets=(10.0,), out=tmp_path / "sweep"))


def test_sizes_that_vary_n_steps_at_one_env_count():
    """--n-steps-grid: every size at the one env count, its minibatches M per epoch, its learning rate by the rule on
    the rollout size (n_envs_ref * n_steps is the reference), run names that carry n_steps."""
    config = SweepConfig(n_envs=(4,), n_steps=32, n_steps_grid=(32, 128), n_envs_ref=8, lr_ref=5e-4, lr_points=1,
                         n_minibatches=4, seeds=1)  # fmt: skip
    runs = config.runs()
    assert sorted(runs) == ["n0004_t0032_lr3.54e-04_s0", "n0004_t0128_lr7.07e-04_s0"]
    large = runs["n0004_t0128_lr7.07e-04_s0"]
    assert (large.n_envs, large.n_steps, large.minibatch_size, large.rollout_size) == (4, 128, 128, 512)
    from rl_gns.experiments.sweep import check

    with pytest.raises(ValueError, match="needs one --n-envs"):
        check(SweepConfig(n_envs=(4, 8), n_steps_grid=(32, 64)))
    with pytest.raises(ValueError, match="--n-steps-grid must be >= 1"):
        check(SweepConfig(n_envs=(4,), n_steps_grid=(0, 64)))


def test_a_sweep_directory_refuses_other_settings(tmp_path):
    from dataclasses import asdict

    from rl_gns.experiments.sweep import check

    first = SweepConfig(env="Breakout", backend="ram", out=tmp_path, n_envs=(2, 4))
    (tmp_path / "sweep.json").write_text(json.dumps(asdict(first), default=str))
    check(SweepConfig(env="Breakout", backend="ram", out=tmp_path, n_envs=(2, 4), workers=7))  # execution may change
    with pytest.raises(ValueError, match="other settings \\(n_envs\\)"):
        check(SweepConfig(env="Breakout", backend="ram", out=tmp_path, n_envs=(2, 8)))


def test_tiny_sweep_and_analyze_end_to_end(tmp_path):
    out = tmp_path / "sweep"
    sweep = subprocess.run(
        [*CLI, "sweep", *TINY, "--targets", "0.5,1", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "3072",
         "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    assert "2/2 finished" in sweep.stdout
    assert "a sweep of 2 rollout size(s): rl-gns analyze identifies B_crit only where 3" in sweep.stderr
    analyze = subprocess.run([*CLI, "analyze", str(out), "--bootstrap", "100"], capture_output=True, text=True, timeout=120)
    assert analyze.returncode == 0, analyze.stderr

    report = (out / "report.md").read_text()
    assert "## Fits" in report and "| 0.5 |" in report
    for figure in ("steps_vs_experience", "wall_vs_experience", "noise_scale_by_size", "bcrit_predicted_vs_fitted"):
        assert (out / f"{figure}.png").stat().st_size > 8_000
    results = json.loads((out / "results.json").read_text())
    first = results["targets"][0]
    assert first["target"] == 0.5
    # every reached size has S, E = S x rollout size
    for size, steps, experience in zip(first["rollout_size_K"], first["steps_K"], first["experience_K"], strict=True):
        assert experience == pytest.approx(size * steps)
    # rerunning skips finished runs, and with other workers leaves the sweep's record as it was
    record = (out / "sweep.json").read_text()
    again = subprocess.run([*sweep.args, "--workers", "3"], capture_output=True, text=True, timeout=120)
    assert "2 finished before, 0 to resume from checkpoints, 0 to run from the start" in again.stdout
    assert (out / "sweep.json").read_text() == record


def _wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError
        time.sleep(0.2)


@pytest.mark.slow
def test_sweep_resumes_after_a_worker_is_killed(tmp_path):
    """Kill one run mid-way: the sweep reports it and goes on; rerunning restarts only that run."""
    out = tmp_path / "sweep"
    # a budget no run can finish quickly, and a target no run reaches: runs go the whole budget
    command = [*CLI, "sweep", *TINY, "--targets", "1000", "--n-envs", "2,4", "--seeds", "1",
               "--budget-steps", "6144", "--workers", "1", "--out", str(out)]  # fmt: skip
    sweep = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = out / "runs" / "n0002_lr1.25e-04_s0"
    second = out / "runs" / "n0004_lr1.77e-04_s0"
    _wait_for(lambda: (first / "summary.json").exists() and (second / "progress.csv").exists(), timeout=120)
    finished_before = (first / "summary.json").stat().st_mtime
    killed = subprocess.run(["pkill", "-9", "-f", f"rl_gns run {out}/specs/{second.name}.json"])
    assert killed.returncode == 0
    stdout, _ = sweep.communicate(timeout=120)
    assert sweep.returncode == 1  # a sweep with a failed run fails
    assert f"failed: {second.name}" in stdout and "1/2 finished" in stdout
    assert "exit status -9" in (second / "error.txt").read_text()
    assert not (second / "summary.json").exists()

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0
    assert "1 finished before, 0 to resume from checkpoints, 1 to run from the start" in resumed.stdout
    assert "2/2 finished" in resumed.stdout
    assert (first / "summary.json").stat().st_mtime == finished_before  # the finished run was not touched
    assert json.loads((second / "summary.json").read_text())["env_steps"] == 6144
    assert not (second / "error.txt").exists()


@pytest.mark.ray
def test_ray_backend_runs_a_tiny_sweep(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "sweep"
    result = subprocess.run(
        [*CLI, "sweep", *TINY, "--targets", "0.5", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "2048",
         "--executor", "ray", "--out", str(out)],
        capture_output=True, text=True, timeout=900,  # Ray starts slowly on a busy 2-core machine
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "2/2 finished" in result.stdout
    assert all((run / "summary.json").exists() for run in Path(out, "runs").iterdir())


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1", "head-without-port"])
def test_a_ray_address_that_does_not_answer_is_refused_before_anything_is_written(tmp_path, address):
    pytest.importorskip("ray")
    out = tmp_path / "sweep"
    result = subprocess.run(
        [*CLI, "sweep", *TINY, "--targets", "0.5", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "2048",
         "--executor", "ray", "--ray-address", address, "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("rl-gns sweep: error: --ray-address") and result.stderr.count("\n") == 1
    assert not out.exists()


def test_a_collection_of_runs_says_its_budget_and_a_time_before_it_starts():
    ram = [TrainConfig(backend="ram", total_steps=3_600_000)] * 2  # 3,600 s each at 1,000 agent steps/s
    assert workload(ram, n_workers=2).startswith("up to 7,200,000 agent steps (2 runs of up to 3,600,000)")
    assert "up to about 1.0 h" in workload(ram, n_workers=2) and "up to about 2.0 h" in workload(ram, n_workers=1)
    assert "up to about 1.0 h" in workload(ram[:1], n_workers=4)  # one run uses one worker
    pixels = [TrainConfig(backend="ale_vector", total_steps=720_000)]
    assert "up to about 1.0 h" in workload(pixels, n_workers=1)
    assert "up to about 2 min" in workload([TrainConfig(backend="ram", total_steps=100_000)], n_workers=1)


def test_a_sweep_directory_takes_its_paths_however_spelled(tmp_path, monkeypatch):
    """A record keeps paths as typed; a rerun that spells them absolute (or relative) names the same files."""
    from dataclasses import asdict

    from rl_gns.experiments.sweep import check

    monkeypatch.chdir(tmp_path)
    shutil.copy(SPACE_INVADERS, "model.zip")
    first = SweepConfig(env="SpaceInvaders", backend="ram", out=Path("sweep"), n_envs=(2, 4), init_from=Path("model.zip"))
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "sweep.json").write_text(json.dumps(asdict(first), default=str))
    absolute = SweepConfig(
        env="SpaceInvaders", backend="ram", out=tmp_path / "sweep", n_envs=(2, 4), init_from=tmp_path / "model.zip"
    )
    check(absolute)
    shutil.copy(SPACE_INVADERS, "other.zip")
    with pytest.raises(ValueError, match="other settings \\(init_from\\)"):
        check(SweepConfig(env="SpaceInvaders", backend="ram", out=Path("sweep"), n_envs=(2, 4), init_from=Path("other.zip")))


def test_a_rerun_refuses_an_init_from_agent_replaced_since(tmp_path, monkeypatch):
    """The sweep's later runs would start from another point than its first: its record holds the agent's digest."""
    from rl_gns.experiments.sweep import check

    monkeypatch.chdir(tmp_path)
    shutil.copy(SPACE_INVADERS, "model.zip")
    config = SweepConfig(env="SpaceInvaders", backend="ram", out=Path("sweep"), n_envs=(2, 4), init_from=Path("model.zip"))
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "sweep.json").write_text(json.dumps(config.record()))
    check(config)  # the same agent: the rerun goes on
    shutil.copy(SPACE_INVADERS.with_name("000000100096.zip"), "model.zip")  # a later agent under the same name
    with pytest.raises(ValueError, match="other settings \\(init_from_sha256\\)"):
        check(config)


def test_a_spec_names_its_run_from_any_working_directory(tmp_path, monkeypatch):
    from rl_gns.experiments.runner import spec_json

    monkeypatch.chdir(tmp_path)
    spec = spec_json(TrainConfig(env="Breakout", backend="ram", out=Path("sweep/runs/a"), init_from=Path("m.zip")))
    assert spec["out"] == str(tmp_path / "sweep" / "runs" / "a")
    assert spec["init_from"] == "m.zip"  # what it trains from stays as typed, as its sweep.json records it


@pytest.mark.slow
def test_edge_rounds_add_the_rate_beyond_an_edge_that_a_majority_of_seeds_kept(tmp_path):
    """``--edge-rounds 2`` on a real sweep, checked against the rule re-derived round by round from analyze's kept
    rates. Rates near 1e-7 barely move the policy, so every rate of a seed plays the same first game: the runs tie,
    the first in name order (``lr1.00e-07``, the grid's lowest) is kept, and round 1 must add the rate below it."""
    from rl_gns.core.maths.criterion import beyond_edge
    from rl_gns.reports.sweep_analysis import kept_rates, load_sweep

    out = tmp_path / "sweep"
    command = [*CLI, "sweep", "--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--targets", "0",
               "--window", "1", "--n-envs", "2,4", "--seeds", "2", "--budget-steps", "2048", "--lr-rule", "constant",
               "--lr-ref", "2e-7", "--lr-points", "3", "--edge-rounds", "2", "--engine", "population", "--workers", "1",
               "--out", str(out)]  # fmt: skip
    sweep = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert sweep.returncode == 0, sweep.stderr
    record = json.loads((out / "sweep.json").read_text())
    added = record["edge_learning_rates"]
    assert [5e-8, 1] in [entry[2:] for entry in added]  # the premise: the rule fired (below the lowest rate)
    assert "edge round 1 adds 5e-08 at" in sweep.stdout

    _, runs = load_sweep(out)
    assert sorted(run.name for run in runs) == sorted(record["runs"]) and len(runs) == 2 * 3 * 2 + 2 * len(added)
    assert all(run.status == "done" for run in runs)
    added_in = {(n_envs, lr): r for n_envs, _, lr, r in added}  # the round that added a (size, rate); base rates: 0
    for round_ in (1, 2):
        tried = [run for run in runs if added_in.get((run.n_envs, run.learning_rate), 0) < round_]
        expected = []
        for size in sorted({run.rollout_size for run in tried}):
            rates = kept_rates(tried, 0.0, size)
            rate = beyond_edge(rates.grid, rates.kept, 2, 2.0)
            if rate is not None:
                expected.append([size // 32, 32, float(f"{rate:.3g}"), round_])
        assert [entry for entry in added if entry[3] == round_] == expected
    assert "edge round 2: no kept learning rate sits at an edge for a majority of seeds" in sweep.stdout

    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "sweep.json").read_text()) == record


def test_a_race_keeps_its_earliest_reaching_game(tmp_path):
    """The race's file: none before a run reached; then the smallest agent step any run reached at, whatever the
    order runs report in, written whole (no partial file left beside it)."""
    from rl_gns.experiments.callbacks import race_record, record_race

    race = tmp_path / "races" / "n0002_s0"
    assert race_record(race) is None
    for step, kept in ((900, 900), (1200, 900), (640, 640), (640, 640)):
        record_race(race, step)
        assert race_record(race) == kept
    assert sorted(path.name for path in race.parent.iterdir()) == ["n0002_s0"]


@pytest.mark.slow
def test_a_race_stops_only_the_rates_that_can_no_longer_be_fastest(tmp_path):
    """``--race`` on a real sweep (one population: its rates step in lockstep): the race's file holds the earliest
    reaching game of the size and seed; every run either reached the target as it does unraced (the same games) or
    stopped, not having reached it, at the first iteration past that game, its games a prefix of its unraced games.
    So the fastest rate by passage is the unraced sweep's."""
    from rl_gns.core.maths.targets import first_reached
    from rl_gns.records.rundir import RunDir

    command = [*CLI, "sweep", "--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--targets", "1.5",
               "--window", "2", "--n-envs", "2", "--seeds", "1", "--budget-steps", "3072", "--lr-points", "3",
               "--lr-factor", "10", "--engine", "population", "--workers", "1"]  # fmt: skip
    for name, extra in (("plain", []), ("raced", ["--race"])):
        result = subprocess.run([*command, *extra, "--out", str(tmp_path / name)], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    plain, raced = tmp_path / "plain" / "runs", tmp_path / "raced" / "runs"
    reached = {run.name: RunDir(run).summary().values["stop_score_reached_at"] for run in sorted(plain.iterdir())}
    won_at = min(step for step in reached.values() if step is not None)  # the premise: some rate reached the target
    assert int((tmp_path / "raced" / "races" / "n0002_s0").read_text()) == won_at
    assert not (tmp_path / "plain" / "races").exists()
    stopped = 0
    for name, reached_at in reached.items():
        games, unraced = RunDir(raced / name).episodes(), RunDir(plain / name).episodes()
        n = len(games["score"])
        assert all(np.array_equal(games[k], unraced[k][:n]) for k in ("env_steps", "score", "length_frames")), name
        end = RunDir(raced / name).summary().values["env_steps"]
        if reached_at is not None and reached_at <= end:
            assert RunDir(raced / name).summary().values["stop_score_reached_at"] == reached_at
        else:  # stopped by the race: at the first iteration boundary at or past the winner's game, one env step in
            stopped += 1
            assert end == -(-won_at // 64) * 64 + 2 and first_reached(games["env_steps"], games["score"], 1.5, 2) is None
    assert stopped >= 1  # the premise: the race stopped a rate
    again = subprocess.run([*command, "--race", "--out", str(tmp_path / "raced")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "3 finished before, 0 to resume from checkpoints, 0 to run" in again.stdout, again.stderr
