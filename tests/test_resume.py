"""Checkpoints and resuming on real ALE (Beam Rider from RAM, tiny budgets), through the real CLI: runs killed with
SIGKILL at random points resume to the same end, logs carry no gap or duplicate, checkpoints are verified."""

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rl_gns.cli import main
from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.envs.atari import make_atari_vec_env
from rl_gns.core.maths.targets import first_reached
from rl_gns.experiments.config import TrainConfig
from rl_gns.experiments.runner import resumable
from rl_gns.experiments.train import plan_run, resumed_model
from rl_gns.records.checkpoint import CHECKPOINTS, MANIFEST, latest_checkpoint, sha256
from rl_gns.records.lock import RunLockedError, check_unlocked
from rl_gns.records.logs import (
    AppendingCSVOutputFormat,
    RunTensorBoardOutputFormat,
    read_rows,
    run_logger,
    truncate_after,
)
from rl_gns.records.rundir import RunDir, read_csv

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
#: 64 agent steps per iteration; a checkpoint after every iteration; every iteration measured.
TINY = ["--env", "BeamRider", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
        "--gns-every", "1", "--torch-threads", "1", "--progress-bar", "False", "--checkpoint-minutes", "0"]  # fmt: skip
ROLLOUT = 64


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def wait_for(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def unlocked(directory: Path) -> bool:
    """Whether no live process writes ``directory`` (its run lock is free)."""
    try:
        check_unlocked(directory)
    except RunLockedError:
        return False
    return True


def newest_step(run: Path) -> int:
    """Agent steps of the newest checkpoint written so far (0 for none)."""
    root = run / CHECKPOINTS
    return max((int(p.name) for p in root.iterdir() if not p.name.startswith(".")), default=0) if root.is_dir() else 0


def assert_contiguous(run: Path, total_steps: int) -> None:
    """One progress row per iteration, in order, none missing or repeated; games logged in step order."""
    progress = RunDir(run).progress()
    n = total_steps // ROLLOUT
    np.testing.assert_array_equal(progress["time/total_timesteps"], ROLLOUT * np.arange(1, n + 1))
    np.testing.assert_array_equal(progress["time/iterations"], np.arange(1, n + 1))
    steps = RunDir(run).episodes()["env_steps"]
    assert np.all(np.diff(steps) >= 0) and np.all(steps <= total_steps)


@pytest.mark.slow
def test_killed_at_random_points_resumes_to_the_same_end(tmp_path):
    """SIGKILL three times at random moments after a checkpoint, resume each time: the run ends at its budget with
    contiguous logs, and the noise-scale averages and pooled history went on across the kills."""
    run, total = tmp_path / "run", 100 * ROLLOUT  # about 0.1 s per iteration here
    rng = np.random.default_rng(0)
    command = ["train", *TINY, "--total-steps", str(total), "--out", str(run)]
    kills, last = 0, 0
    for _ in range(3):
        process = subprocess.Popen([*CLI, *command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # killed after this slice's first checkpoint, at a random moment of a later iteration or checkpoint
        wait_for(lambda p=process, s=last: newest_step(run) > s or p.poll() is not None, timeout=120)
        time.sleep(rng.uniform(0.0, 2.0))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait()
        last = newest_step(run)
        command = ["train", "--resume", str(run), "--torch-threads", "1", "--progress-bar", "False"]
    assert kills == 3 and not (run / "summary.json").exists()
    resumed = run_cli(*command)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming" in resumed.stdout

    summary = json.loads((run / "summary.json").read_text())
    assert summary["env_steps"] == total and summary["resumes"] == kills
    assert summary["games_dropped"] == 0  # the checkpoints held the games in progress: each resume played on in them
    assert_contiguous(run, total)
    assert not (run / CHECKPOINTS).exists()  # a finished run keeps model.zip, not its checkpoints
    model = NoiseScalePPO.load(run / "model.zip")
    assert model.iterations == 100
    # one measurement per iteration, each folded in once: the averages and history went on across the kills
    tracker = model.gns_trackers["envs/value"]
    assert model.gns_n_skipped == 0 and tracker.ema.n_updates == tracker.n_measurements == 100
    g2_history = tracker.g2_T
    np.testing.assert_array_equal(g2_history, RunDir(run).progress()["gns/envs/g2_value_raw"])


@pytest.mark.slow
def test_checkpoint_holds_the_uninterrupted_runs_parameters(tmp_path):
    """Stopping at a deadline writes a checkpoint whose agent (policy and optimizer) is bit-identical to an
    uninterrupted run's at the same step; resuming then goes on to the budget."""
    constant = ["--no-anneal", "--seed", "3"]
    # a deadline already passed: the run stops (with a checkpoint) after each iteration it trains
    sliced = tmp_path / "sliced"
    first = run_cli("train", *TINY, *constant, "--total-steps", str(4 * ROLLOUT), "--max-wall-minutes", "1e-9",
                    "--out", str(sliced))  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    assert f"go on with: rl-gns train --resume {sliced}" in first.stdout
    # two iterations in: the first slice stops after one, the second (resumed) after another
    second = run_cli("train", "--resume", str(sliced), "--max-wall-minutes", "1e-9")
    assert second.returncode == 0 and "resuming" in second.stdout
    checkpoint = latest_checkpoint(sliced)
    assert checkpoint is not None and checkpoint.env_steps == 2 * ROLLOUT
    older = sorted((sliced / CHECKPOINTS).iterdir())[0]
    assert older.name == f"{ROLLOUT:012d}"
    # the first checkpoint, at one iteration, against an uninterrupted run stopped at one iteration
    one = run_cli("train", *TINY, *constant, "--total-steps", str(ROLLOUT), "--out", str(tmp_path / "one"))
    assert one.returncode == 0
    a, b = NoiseScalePPO.load(tmp_path / "one" / "model.zip"), NoiseScalePPO.load(older / "model.zip")
    for (name, x), (_, y) in zip(a.policy.state_dict().items(), b.policy.state_dict().items(), strict=True):
        assert th.equal(x, y), name
    adam_a, adam_b = a.policy.optimizer.state_dict()["state"], b.policy.optimizer.state_dict()["state"]
    assert all(th.equal(adam_a[k][s], adam_b[k][s]) for k in adam_a for s in ("exp_avg", "exp_avg_sq"))
    history = {key: (t.g2_T, t.trace_sigma_T) for key, t in a.gns_trackers.items()}
    assert history == {key: (t.g2_T, t.trace_sigma_T) for key, t in b.gns_trackers.items()}
    assert a.num_timesteps == b.num_timesteps == ROLLOUT

    # resumed, the envs play on in the checkpoint's games: the seeds they were made with are not used again
    make_env = partial(make_atari_vec_env, "BeamRider", backend="ram")
    plan = plan_run(TrainConfig(resume=sliced), given={"resume"})
    assert plan.checkpoint == checkpoint
    model, kept_games = resumed_model(plan, make_env(plan.n_envs_per_rank, plan.env_seed()), make_env)
    venv = model.get_env()
    while hasattr(venv, "venv"):
        venv = venv.venv
    assert kept_games and venv._seeds == [None, None] and model._last_obs is not None

    last = run_cli("train", "--resume", str(sliced))
    assert last.returncode == 0, last.stderr[-2000:]
    assert json.loads((sliced / "summary.json").read_text())["resumes"] == 2
    assert_contiguous(sliced, 4 * ROLLOUT)


def test_a_resumed_run_plays_on_in_its_games_as_an_uninterrupted_run_does(tmp_path):
    """Breakout from RAM (games of a few hundred agent steps): a run stopped after its first iteration, with every game
    in progress, and resumed logs the same games (agent steps, scores, lengths) and the same progress rows as the run
    trained in one go, and drops no game."""
    settings = [*TINY, "--env", "Breakout", "--seed", "1", "--total-steps", str(10 * ROLLOUT)]
    assert run_cli("train", *settings, "--out", str(tmp_path / "whole")).returncode == 0
    stopped = run_cli("train", *settings, "--max-wall-minutes", "1e-9", "--out", str(tmp_path / "sliced"))
    assert stopped.returncode == 0 and f"at {ROLLOUT} agent steps" in stopped.stdout
    resumed = run_cli("train", "--resume", str(tmp_path / "sliced"))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    whole, sliced = RunDir(tmp_path / "whole"), RunDir(tmp_path / "sliced")
    games, games_sliced = whole.episodes(), sliced.episodes()
    assert games["env_steps"].size >= 4 and games["env_steps"][0] > ROLLOUT  # the first game ended after the stop
    for column in ("env_steps", "score", "length_frames"):
        np.testing.assert_array_equal(games_sliced[column], games[column], err_msg=column)
    progress, progress_sliced = whole.progress(), sliced.progress()
    for column in progress:
        if not column.startswith("time/") or column in ("time/iterations", "time/total_timesteps"):
            np.testing.assert_array_equal(progress_sliced[column], progress[column], err_msg=column)
    assert (sliced.summary().resumes, sliced.summary().games_dropped) == (1, 0)


@pytest.mark.slow
def test_corrupted_checkpoints_fall_back_or_are_refused(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    assert run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9").returncode == 0
    newest, older = sorted((run / CHECKPOINTS).iterdir(), reverse=True)
    model = newest / "model.zip"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])  # torn
    with pytest.warns(UserWarning, match="does not match its checksum"):
        assert latest_checkpoint(run).path == older
    (older / "state.json").write_text("{")  # garbled
    refused = run_cli("train", "--resume", str(run))
    assert refused.returncode == 2 and "no usable checkpoint" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_checkpoint_directory_not_named_as_rl_gns_names_them_is_not_a_checkpoint(tmp_path):
    """An older checkpoint renamed ``64`` (from ``000000000064``) sorted after ``000000000128``: a resume went back to
    it, and the pruning after its next checkpoint deleted the newer ones and kept it, so every later resume went back
    again."""
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    assert run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9").returncode == 0
    newest, older = sorted((run / CHECKPOINTS).iterdir(), reverse=True)
    renamed = older.rename(older.with_name(str(int(older.name))))
    assert latest_checkpoint(run).path == newest
    resumed = run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9")
    assert resumed.returncode == 0 and f"at {int(newest.name):,} agent steps" in resumed.stdout + resumed.stderr
    assert newest.is_dir() and renamed.is_dir() and latest_checkpoint(run).path.name > newest.name


def rehash(checkpoint: Path, name: str) -> None:
    """Record a checkpoint file's new checksum in its manifest, as if it had been written so."""
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    manifest["files"][name] = sha256(checkpoint / name)
    (checkpoint / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.slow
def test_a_checkpoint_whose_files_match_their_checksums_but_do_not_read_is_not_resumed_from(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    assert run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9").returncode == 0
    newest, older = sorted((run / CHECKPOINTS).iterdir(), reverse=True)
    state = json.loads((newest / "state.json").read_text())
    for name, damage, message in (
        ("model.zip", lambda path: path.write_bytes(path.read_bytes()[:1000]), "is not a zip file"),
        ("rng.pkl", lambda path: path.write_text("garbage\n"), "rng.pkl cannot be read"),
        ("games.pkl", lambda path: path.write_text("garbage\n"), "games.pkl cannot be read"),
        ("games.pkl", lambda path: path.write_bytes(pickle.dumps([1])), "games.pkl does not hold one entry per rank"),
        ("state.json", lambda path: path.write_text(json.dumps({**state, "log_rows": None})), "'log_rows' is None"),
        ("state.json", lambda path: path.write_text(json.dumps({**state, "n_envs": 0})), "'n_envs' is 0"),
    ):
        kept = (newest / name).read_bytes()
        damage(newest / name)
        rehash(newest, name)
        with pytest.warns(UserWarning, match=message):
            assert latest_checkpoint(run).path == older
        (newest / name).write_bytes(kept)
        rehash(newest, name)
    assert latest_checkpoint(run).path == newest


@pytest.mark.slow
def test_a_checkpoint_of_layout_3_resumes_with_new_games(tmp_path):
    """A checkpoint written before games were saved (layout 3: no games.pkl) still resumes: the envs start new games,
    and the summary counts the games in progress it lost."""
    run = tmp_path / "run"
    assert (
        run_cli("train", *TINY, "--total-steps", str(2 * ROLLOUT), "--max-wall-minutes", "1e-9", "--out", str(run)).returncode
        == 0
    )
    checkpoint = latest_checkpoint(run).path
    (checkpoint / "games.pkl").unlink()
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    del manifest["files"]["games.pkl"]
    (checkpoint / MANIFEST).write_text(json.dumps({**manifest, "format": 3}))
    assert latest_checkpoint(run).games is None
    resumed = run_cli("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "summary.json").read_text())["games_dropped"] == 2


@pytest.mark.slow
def test_resume_refuses_a_log_cell_that_is_not_a_number_before_training(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    progress = run / "progress.csv"
    header, first, *rest = progress.read_text().splitlines(keepends=True)
    progress.write_text("".join([header, first.replace(",", ",x", 1), *rest]))
    before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
    refused = run_cli("train", "--resume", str(run))
    assert refused.returncode == 2 and "is not a number" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert {path: path.stat().st_mtime_ns for path in run.rglob("*")} == before


@pytest.mark.slow
def test_resume_refuses_logs_out_of_order_another_out_and_overwrite(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    elsewhere = run_cli("train", "--resume", str(run), "--out", str(tmp_path / "other"))
    assert elsewhere.returncode == 2 and "names another" in elsewhere.stderr and not (tmp_path / "other").exists()
    replaced = run_cli("train", "--resume", str(run), "--overwrite")
    assert replaced.returncode == 2 and "--overwrite would replace it" in replaced.stderr
    progress = run / "progress.csv"
    header, *rows = progress.read_text().splitlines(keepends=True)
    progress.write_text("".join([header, *rows, *rows]))  # the rows again: a log pasted twice
    tangled = run_cli("train", "--resume", str(run))
    assert tangled.returncode == 2 and "not in the order of their agent steps" in tangled.stderr
    assert progress.read_text() == "".join([header, *rows, *rows])


def test_a_paused_run_moved_with_the_agent_it_starts_from_resumes_from_its_checkpoint(tmp_path):
    """A study moved whole, as a probe is from one checkout to another: a paused run that starts from an agent inside it
    (``--init-from``), given where that agent lies now, resumes from its checkpoint rather than start over."""
    study = tmp_path / "study"
    agent, branch = study / "agent", study / "branch"
    assert run_cli("train", *TINY, "--total-steps", "64", "--out", str(agent)).returncode == 0
    started = run_cli("train", *TINY, "--total-steps", "512", "--init-from", str(agent / "model.zip"),
                      "--max-wall-minutes", "1e-9", "--out", str(branch))  # fmt: skip
    assert started.returncode == 0 and latest_checkpoint(branch) is not None, started.stderr[-1000:]
    moved = study.rename(tmp_path / "moved")
    spec = replace(plan_run(TrainConfig(resume=moved / "branch"), set()).config, max_wall_minutes=None, resume=None)
    assert spec.init_from == moved / "agent" / "model.zip" and spec.out == moved / "branch"  # where they lie now
    assert resumable(spec)
    assert not resumable(replace(spec, init_from=moved / "elsewhere.zip"))  # another agent: not the same run


@pytest.mark.slow
def test_a_run_moved_under_a_name_that_is_not_utf8_is_refused_intact_and_resumes_once_moved_out(tmp_path):
    """TensorBoard cannot name its events file in a directory whose name is not UTF-8: a resume there is refused
    before anything is written, and the same run moved out resumes to its end."""
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "256", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    odd = tmp_path / os.fsdecode(b"bad\xffdir")
    odd.mkdir()
    run = run.rename(odd / "run")
    before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
    refused = run_cli("train", "--resume", str(run))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "bad\\udcffdir/run: not a UTF-8 name; the run is intact: move it" in refused.stderr
    assert {path: path.stat().st_mtime_ns for path in run.rglob("*")} == before
    run = run.rename(tmp_path / "moved")
    assert run_cli("train", "--resume", str(run)).returncode == 0 and RunDir(run).status() == "done"


def forge_state(checkpoint: Path, state: dict) -> None:
    """Rewrite a checkpoint's state.json and its manifest entry, as if a checkpoint had been written so."""
    (checkpoint / "state.json").write_text(json.dumps(state))
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    manifest["files"]["state.json"] = sha256(checkpoint / "state.json")
    (checkpoint / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.slow
def test_resume_refuses_another_version_other_settings_or_a_finished_run(tmp_path):
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "256", "--max-wall-minutes", "1e-9", "--out", str(run)).returncode == 0
    other = run_cli("train", "--resume", str(run), "--n-envs", "8")  # the default value, given: compared all the same
    assert other.returncode == 2 and "started with --n-envs 2" in other.stderr
    same = run_cli("train", "--resume", str(run), "--n-envs", "2", "--max-wall-minutes", "1e-9")  # agrees: accepted
    assert same.returncode == 0, same.stderr[-1000:]
    fresh = run_cli("train", *TINY, "--total-steps", "256", "--out", str(run))
    assert fresh.returncode == 2 and "--resume" in fresh.stderr  # not silently restarted
    checkpoint = max((run / CHECKPOINTS).iterdir())
    state = json.loads((checkpoint / "state.json").read_text())
    (checkpoint / "state.json").write_text(json.dumps({**state, "env_steps": 64}))  # edited by hand: refused
    with pytest.warns(UserWarning, match="state.json does not match its checksum"):
        assert latest_checkpoint(run).path != checkpoint
    forge_state(checkpoint, {**state, "rl_gns": "0.0.1"})
    older = run_cli("train", "--resume", str(run))
    assert older.returncode == 2 and "made by rl-gns 0.0.1" in older.stderr
    forge_state(checkpoint, {**state, "settings": {**state["settings"], "gamma": 0.9}})
    edited = run_cli("train", "--resume", str(run))
    assert edited.returncode == 2 and "other settings (gamma)" in edited.stderr
    forge_state(checkpoint, state)
    assert run_cli("train", "--resume", str(run)).returncode == 0
    finished = run_cli("train", "--resume", str(run))
    assert finished.returncode == 2 and "finished" in finished.stderr


@pytest.mark.slow
def test_sweep_resumes_runs_in_flight_from_their_checkpoints(tmp_path):
    """Kill a whole sweep (its process group) while its runs are in flight; rerunning resumes them."""
    out = tmp_path / "sweep"
    command = [*CLI, "sweep", "--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--window", "5",
               "--lr-points", "1", "--targets", "1000", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "6144",
               "--workers", "2", "--checkpoint-minutes", "0", "--out", str(out)]  # fmt: skip
    sweep = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    runs = [out / "runs" / "n0002_lr1.25e-04_s0", out / "runs" / "n0004_lr1.77e-04_s0"]
    wait_for(lambda: all(newest_step(run) > 0 for run in runs), timeout=120)
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait()
    wait_for(lambda: all(unlocked(run) for run in runs), timeout=120)  # the workers stop as their sweep dies
    steps_at_kill = [latest_checkpoint(run).env_steps for run in runs]
    assert all(steps > 0 for steps in steps_at_kill) and not any((run / "summary.json").exists() for run in runs)

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "0 finished before, 2 to resume from checkpoints, 0 to run from the start" in resumed.stdout
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["env_steps"] == 6144 and summary["resumes"] == 1
        rollout = json.loads((run / "config.json").read_text())["rollout_size"]
        steps = RunDir(run).progress()["time/total_timesteps"]
        np.testing.assert_array_equal(steps, rollout * np.arange(1, 6144 // rollout + 1))


def test_sweep_refuses_to_start_over_a_run_whose_checkpoints_are_all_corrupted(tmp_path):
    """Run again, such a run would start from nothing and delete what it trained: the sweep says so and writes
    nothing; the user deletes the run to start it over."""
    out = tmp_path / "sweep"
    command = [*CLI, "sweep", "--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--window", "5",
               "--lr-points", "1", "--targets", "1000", "--n-envs", "2", "--seeds", "1", "--budget-steps", "6144",
               "--workers", "1", "--checkpoint-minutes", "0", "--out", str(out)]  # fmt: skip
    sweep = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    run = out / "runs" / "n0002_lr1.25e-04_s0"
    wait_for(lambda: newest_step(run) > 0, timeout=120)
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait()
    # its worker (a session of its own) gets SIGTERM as the sweep dies and stops with one more checkpoint: let it end
    wait_for(lambda: unlocked(run), timeout=120)
    for checkpoint in (run / CHECKPOINTS).iterdir():
        (checkpoint / "state.json").write_text("{")
    before = {path: path.stat().st_mtime_ns for path in out.rglob("*")}
    refused = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"{run} cannot resume (no usable checkpoint" in refused.stderr and "delete it" in refused.stderr
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*")} == before


def test_csv_rows_survive_a_torn_write_and_columns_can_grow(tmp_path):
    path = tmp_path / "progress.csv"
    log = AppendingCSVOutputFormat(path)
    log.write({"time/total_timesteps": 64, "a": 1.5}, {"time/total_timesteps": None, "a": None})
    log.write({"time/total_timesteps": 128, "a": 2.5, "b": "x,y"}, {"time/total_timesteps": None, "a": None, "b": None})
    header, rows = read_rows(path)
    assert header == ["a", "time/total_timesteps", "b"] and rows == [["1.5", "64", ""], ["2.5", "128", "x,y"]]
    with open(path, "a") as f:
        f.write("3.5,19")  # a row cut short by a kill: no newline
    assert read_rows(path)[1] == rows
    assert truncate_after(path, "time/total_timesteps", 64) == 1
    assert read_rows(path) == (header, [["1.5", "64", ""]])
    again = AppendingCSVOutputFormat(path)  # a resumed run continues the file
    again.write({"time/total_timesteps": 128, "a": 9.0}, {"time/total_timesteps": None, "a": None})
    assert read_rows(path)[1] == [["1.5", "64", ""], ["9.0", "128", ""]]


def test_tensorboard_of_a_resumed_run_shows_each_step_once(tmp_path):
    def log_steps(steps: range, resume_step: int | None) -> None:
        logger = run_logger(tmp_path, tmp_path / "progress.csv", None, resume_step)
        for step in steps:
            for i in range(30):
                logger.record(f"gns/k{i}", float(step + i))
            logger.dump(step)
        logger.close()

    log_steps(range(64, 64 * 9, 64), None)  # a run killed after step 512 whose checkpoint was at step 256
    log_steps(range(320, 64 * 13, 64), 256)  # resumed from it, on to step 768
    events = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    events.Reload()
    for i in (0, 29):
        scalars = events.Scalars(f"gns/k{i}")
        assert [s.step for s in scalars] == list(range(64, 64 * 13, 64))
        assert [s.value for s in scalars] == [float(s.step + i) for s in scalars]


def test_tensorboard_reads_a_run_row_as_sb3_output_writes_it(tmp_path):
    """The run's output writes a row as one event; TensorBoard reads from it the scalars, steps and text that SB3's
    output (an event per value) gives, and neither writes what a row excludes from TensorBoard."""

    def log_rows(folder: Path, output: KVWriter) -> EventAccumulator:
        logger = Logger(str(folder), [output])
        for step in (64, 128):
            logger.record("gns/b_simple_value", np.float32(step / 3))
            logger.record("time/fps", step * 2)
            logger.record("train/done", True)
            logger.record("train/n_updates", 7, exclude="tensorboard")
            logger.record("info/game", f"BeamRider {step}")
            logger.dump(step)
        logger.close()
        events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
        events.Reload()
        return events

    ours = log_rows(tmp_path / "run", RunTensorBoardOutputFormat(str(tmp_path / "run")))
    sb3 = log_rows(tmp_path / "sb3", TensorBoardOutputFormat(str(tmp_path / "sb3")))
    assert ours.Tags()["scalars"] == sb3.Tags()["scalars"] and len(sb3.Tags()["scalars"]) == 3
    for tag in sb3.Tags()["scalars"]:
        assert [(s.step, s.value) for s in ours.Scalars(tag)] == [(s.step, s.value) for s in sb3.Scalars(tag)]
    assert ours.Tags()["tensors"] == sb3.Tags()["tensors"] and ours.Tags()["tensors"]  # the text, through SB3's path
    for tag in sb3.Tags()["tensors"]:
        assert [(t.step, t.tensor_proto.string_val) for t in ours.Tensors(tag)] == [
            (t.step, t.tensor_proto.string_val) for t in sb3.Tensors(tag)
        ]


@pytest.mark.slow
def test_sweep_stops_before_its_deadline_and_goes_on_when_rerun(tmp_path, monkeypatch, capsys):
    """A sweep given --max-wall-minutes pauses its run in flight with a checkpoint and leaves the next one waiting;
    the same command again resumes the first and starts the second."""
    from rl_gns.experiments import runner, sweep

    monkeypatch.setattr(runner, "START_STOP_S", 2.0)  # the real margins (30 s, 60 s) suit 10-minute slices
    monkeypatch.setattr(runner, "MIN_SLICE_S", 5.0)
    config = sweep.SweepConfig(
        env="Breakout", backend="ram", n_steps=32, window=5, lr_points=1, targets=(1000.0,), n_envs=(2, 4), seeds=1,
        budget_steps=12288, workers=1, checkpoint_minutes=0.0, max_wall_minutes=0.2, out=tmp_path / "sweep",
    )  # fmt: skip
    outcome = sweep.sweep(config)
    assert sorted(outcome.values()) == ["paused", "waiting"], outcome
    assert "1 paused before --max-wall-minutes, 1 not started" in capsys.readouterr().out
    paused = next(name for name, status in outcome.items() if status == "paused")
    assert newest_step(config.out / "runs" / paused) > 0

    again = sweep.sweep(replace(config, max_wall_minutes=None))
    assert sorted(again.values()) == ["done", "done"]
    assert "1 to resume from checkpoints, 1 to run from the start" in capsys.readouterr().out
    summary = json.loads((config.out / "runs" / paused / "summary.json").read_text())
    assert summary["env_steps"] == 12288 and summary["resumes"] == 1


@pytest.mark.slow
def test_adaptive_run_resumes_at_its_grown_size(tmp_path):
    """An adaptive run killed after it grew resumes with as many envs as it had, and goes on growing."""
    run = tmp_path / "run"
    adaptive = ["--adaptive-r", "4096", "--max-n-envs", "8", "--adaptive-min-measurements", "2", "--no-anneal"]
    command = [*CLI, "train", *TINY, *adaptive, "--total-steps", "6000", "--out", str(run)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def grown() -> bool:
        checkpoint = latest_checkpoint(run) if newest_step(run) else None
        return checkpoint is not None and checkpoint.state["n_envs"] > 2

    wait_for(lambda: grown() or process.poll() is not None, timeout=120)
    process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoint = latest_checkpoint(run)
    assert checkpoint is not None and checkpoint.state["n_envs"] > 2 and not (run / "summary.json").exists()

    resumed = run_cli("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["resumes"] == 1 and summary["env_steps"] >= 6000 and summary["n_envs_final"] == 8
    progress = RunDir(run).progress()
    n_envs = progress["gns/n_envs"]
    assert np.all(np.diff(n_envs) >= 0)  # never shrank, not even across the resume
    np.testing.assert_array_equal(np.diff(progress["time/total_timesteps"]), 32 * n_envs[1:])  # no gap, no duplicate


@pytest.mark.slow
def test_resumed_run_stops_at_its_target_with_the_score_window_of_the_games_before(tmp_path):
    """Killed once it has finished games, resumed: it stops where the running score over all of episodes.csv (the
    games before the kill included) first reaches the target."""
    run = tmp_path / "run"
    breakout = ["--env", "Breakout", *TINY[2:]]  # short games
    target = ["--stop-score", "1.5", "--score-window", "4", "--total-steps", "200000"]
    command = [*CLI, "train", *breakout, *target, "--out", str(run)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def games_before_checkpoint() -> int:
        if not newest_step(run) or not (run / "episodes.csv").exists():
            return 0
        steps = read_csv(run / "episodes.csv").get("env_steps", np.array([]))
        return int(np.sum(steps <= newest_step(run)))

    wait_for(lambda: games_before_checkpoint() >= 2 or process.poll() is not None, timeout=120)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (run / "summary.json").exists(), "reached the target before the kill: lower the window or raise it"

    resumed = run_cli("train", "--resume", str(run))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    games = RunDir(run).episodes()
    first = first_reached(games["env_steps"], games["score"], 1.5, window=4)
    assert summary["resumes"] == 1 and first is not None
    assert summary["stop_score_reached_at"] == games["env_steps"][first] == summary["env_steps"]


@pytest.mark.slow
def test_a_runs_checkpoints_and_snapshots_are_its_own(tmp_path, capsys):
    """Through a link into another run, a resume (or --overwrite) would write and prune that run's checkpoints and
    snapshots, or append to its logs; a directory where a run writes a file would fail at its first write: refused.
    A resumed run drops the snapshots past its checkpoint, and --overwrite drops them all."""
    run, other = tmp_path / "run", tmp_path / "other"
    args = [*TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--snapshot-steps", "64"]
    assert run_cli("train", *args, "--out", str(run)).returncode == 0
    for name in (CHECKPOINTS, "snapshots"):
        shutil.rmtree(other, ignore_errors=True)
        shutil.copytree(run, other)
        shutil.rmtree(other / name)
        (other / name).symlink_to(run / name)
        before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
        for command in (["--resume", str(other)], [*args, "--out", str(other), "--overwrite"]):
            assert main(["train", *command]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"{other / name} is a link: a run writes only inside its own directory" in err
        assert {path: path.stat().st_mtime_ns for path in run.rglob("*")} == before
    for name in ("episodes.csv", "progress.csv", "model.zip"):  # a file the run writes, made a directory or a link
        for make in (Path.mkdir, lambda path, name=name: path.symlink_to(run / name)):
            shutil.rmtree(other, ignore_errors=True)
            shutil.copytree(run, other)
            (other / name).unlink(missing_ok=True)
            make(other / name)
            for command in (["--resume", str(other)], [*args, "--out", str(other), "--overwrite"]):
                assert main(["train", *command]) == 2
                err = capsys.readouterr().err
                assert err.count("\n") == 1 and f"{other / name} is " in err and "a run writes its own files" in err
    checkpoint = newest_step(run)
    (run / "snapshots" / "000000100000.zip").write_bytes(b"a snapshot of the slice that was stopped")
    assert run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9").returncode == 0
    kept = sorted(int(path.stem) for path in (run / "snapshots").iterdir())
    assert kept and max(kept) <= newest_step(run) and 100000 not in kept and checkpoint in kept
    assert run_cli("train", *TINY, "--total-steps", "64", "--out", str(run), "--overwrite").returncode == 0
    assert not (run / "snapshots").exists()
