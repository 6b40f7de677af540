"""``rl-gns probe`` on a real run (Beam Rider from RAM, tiny budgets): the anchor plays the source's agent at fixed
parameters, branches start from that agent and aim at the anchor's score plus delta, and the report fits what they
reached or says why it cannot."""

import contextlib
import csv
import hashlib
import io
import json
import math
import re
import resource
import shutil
import subprocess
import sys
import warnings
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch as th
from conftest import ONE_RATE, lock_held_elsewhere, rl_gns

from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.envs.atari import make_atari_vec_env
from rl_gns.core.maths.targets import running_score
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.experiments import probe as probe_module
from rl_gns.experiments.config import TrainConfig, train_config_from_json
from rl_gns.experiments.probe import (
    AnchorGamesError,
    NoTargetError,
    ProbeConfig,
    branch_point,
    censored_runs,
    check,
    held_snapshots,
    no_target,
    null_order,
    probe_cost,
    probe_targets,
    round_runs,
    settled,
    start_score,
    warn_short_anchor,
    warn_without_own_size,
)
from rl_gns.experiments.train import new_model, plan_run
from rl_gns.records.logs import whole_lines
from rl_gns.records.rundir import EPISODES, RunDir, snapshots
from rl_gns.reports.probe_report import (
    ProbeReportConfig,
    edge_note,
    first_window_note,
    from_least_experience,
    report,
    resolution_note,
    rung,
    single_rate_note,
)
from rl_gns.reports.sweep_analysis import KeptRates, Reach, RunRecord, kept_rates, load_sweep

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
TINY = ["--env", "BeamRider", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
        "--torch-threads", "1", "--progress-bar", "False"]  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    run = tmp_path_factory.mktemp("probe") / "source"
    result = subprocess.run(
        [*CLI, "train", *TINY, "--total-steps", "4096", "--snapshot-steps", "1500", "--out", str(run)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return run


def test_snapshots_are_kept_at_the_first_iteration_past_each_multiple(source):
    assert list(snapshots(source)) == [1536, 3008]  # rollouts of 64 agent steps
    assert branch_point(source, at=1500).env_steps == 1536 and branch_point(source, at=1537).env_steps == 3008
    assert branch_point(source).env_steps == 4096  # the finished run's model.zip
    with pytest.raises(ValueError, match="no snapshot at or past 5,000 agent steps; it keeps 1,536, 3,008"):
        branch_point(source, at=5000)


def test_keeping_snapshots_changes_nothing_of_the_training(source, tmp_path):
    plain = tmp_path / "plain"
    command = [*CLI, "train", *TINY, "--total-steps", "4096", "--out", str(plain)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    kept, trained = NoiseScalePPO.load(source / "model.zip"), NoiseScalePPO.load(plain / "model.zip")
    for (name, x), (_, y) in zip(kept.policy.state_dict().items(), trained.policy.state_dict().items(), strict=True):
        assert th.equal(x, y), name
    assert RunDir(plain).episodes()["score"].tolist() == RunDir(source).episodes()["score"].tolist()


def test_a_branch_starts_from_the_source_agent(source, tmp_path):
    point = branch_point(source)
    assert point.env_steps == 4096
    config = TrainConfig(env="BeamRider", backend="ram", n_envs=4, n_steps=32, minibatch_size=64, learning_rate=1e-3,
                         anneal=False, init_from=point.model, out=tmp_path / "branch")  # fmt: skip
    plan = plan_run(config)
    make_env = partial(make_atari_vec_env, plan.game, backend="ram")
    branch, saved = new_model(plan, make_env(4, 0), make_env), NoiseScalePPO.load(point.model)
    for (name, x), (_, y) in zip(branch.policy.state_dict().items(), saved.policy.state_dict().items(), strict=True):
        assert th.equal(x, y), name
    adam_branch, adam_saved = branch.policy.optimizer.state_dict()["state"], saved.policy.optimizer.state_dict()["state"]
    assert all(th.equal(adam_branch[k]["exp_avg_sq"], adam_saved[k]["exp_avg_sq"]) for k in adam_saved)
    assert branch.num_timesteps == 0 and branch.n_envs == 4  # its own budget and rollout size


def test_the_anchor_plays_on_the_device_of_the_branches(source, tmp_path):
    config = ProbeConfig(source=source, device="cuda", budget_steps=1024, out=tmp_path / "p")
    point = branch_point(source)
    assert config.anchor_config(point).device == config.sweep_config(point, (1.0,)).device == "cuda"


@pytest.mark.slow
def test_probe_cli_anchors_branches_and_reports(source, tmp_path):
    out = tmp_path / "probe"
    command = [*CLI, "probe", str(source), *ONE_RATE, "--at", "3000", "--anchor-steps", "4096", "--window", "2",
               "--n-envs", "2,4",
               "--seeds", "2", "--budget-steps", "3072", "--workers", "2", "--target-rule", "noise", "--design", "fixed",
               "--max-cost", "None", "--out", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "probe.json").read_text())
    model, held = source / "snapshots" / "000000003008.zip", out / "branch_point.zip"
    assert record["env_steps"] == 3008 and record["source_model"] == str(model) and record["model"] == str(held)
    assert held.read_bytes() == model.read_bytes()  # the probe's own copy: the source may prune its agent

    # the anchor: the snapshot's agent, unchanged by its learning rate of 0, its games the start score
    anchor = RunDir(out / "anchor")
    assert anchor.config().learning_rate == 0 and anchor.config().settings["init_from"] == str(held)
    played, saved = NoiseScalePPO.load(anchor.file("model.zip")), NoiseScalePPO.load(model)
    for (name, x), (_, y) in zip(played.policy.state_dict().items(), saved.policy.state_dict().items(), strict=True):
        assert th.equal(x, y), name
    with pytest.raises(ValueError, match=r"trained at learning rate 0 .* so probe a run that learns"):
        check(ProbeConfig(source=anchor.path, out=tmp_path / "of_the_anchor"))  # its branches would all train at 0
    scores = anchor.episodes()["score"]
    assert record["anchor_games"] == len(scores) >= 2 and record["start_score"] == pytest.approx(scores.mean())
    delta = 3.0 * scores.std(ddof=1) / 2**0.5  # 3 standard errors of a 2-game running score
    assert record["target"] == pytest.approx(max(record["start_score"] + delta, record["null_floor"]))
    # the null rule: no target below the floor, each one's false-crossing probability at most 1 %, said before training
    assert record["target"] >= record["null_floor"] and max(record["false_crossing"]) <= 0.01
    assert record["null_looks"] >= 2 and "a branch that learns nothing reaches" in result.stdout
    assert "probe cost: at most" in result.stdout

    branches = sorted((out / "runs").iterdir())
    assert len(branches) == 4
    for branch in branches:
        settings = RunDir(branch).config().settings
        assert settings["init_from"] == str(held) and settings["stop_score"] == record["target"]
    assert "critical rollout size at 3,008 agent steps" in result.stdout
    assert "B_crit" in result.stdout and (out / "report.md").exists() and (out / "steps_vs_rollout_size.png").exists()
    results = json.loads((out / "probe_results.json").read_text())
    assert results["branches"] == 4 and {"envs/value", "minibatch/policy"} <= results["noise_at_branch_point"].keys()

    validation = subprocess.run([*CLI, "validate-probes", str(out), "--out", str(tmp_path / "v")], capture_output=True,
                                text=True)  # fmt: skip
    assert validation.returncode == 0, validation.stderr[-2000:]
    table = (tmp_path / "v" / "probes.md").read_text()
    assert "Not ranked: 0 identified pairs from 0 game(s)" in table
    assert "| constant 746 | – | – | – |" in table and f"| beam_rider | 3,008 | {results['verdict']}" in table

    # the same command again does nothing new; another delta is refused before anything is written
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "1 finished before" in again.stdout and "4 finished before" in again.stdout, again.stdout
    relative = [*command[:4], source.name, *command[5:]]  # the source spelled relative to where the command runs
    spelled = subprocess.run(relative, capture_output=True, text=True, timeout=600, cwd=source.parent)
    assert spelled.returncode == 0 and "4 finished before" in spelled.stdout, spelled.stdout + spelled.stderr[-2000:]
    other = subprocess.run([*command, "--delta", "50"], capture_output=True, text=True, timeout=600)
    assert other.returncode == 2 and "other settings (delta)" in other.stderr
    assert json.loads((out / "probe.json").read_text()) == record


def test_a_probe_refuses_to_go_on_from_an_agent_replaced_since_it_started(source, tmp_path):
    copied = Path(shutil.copytree(source, tmp_path / "source"))
    config = ProbeConfig(source=copied, at=1500, n_envs=(2, 4), max_cost=None, out=tmp_path / "p")
    point = check(config)
    assert point.sha256 == hashlib.sha256(point.model.read_bytes()).hexdigest()
    directory = config.directory(point)
    directory.mkdir(parents=True)
    record = {**config.recorded(), "model": str(point.model), "model_sha256": point.sha256, "env_steps": point.env_steps}
    (directory / "probe.json").write_text(json.dumps(record))
    assert check(config) == point  # the same agent: the probe goes on
    shutil.copy(copied / "snapshots" / "000000003008.zip", point.model)  # another agent under the same name
    with pytest.raises(ValueError, match="is not the agent this probe started from"):
        check(config)
    (copied / "model.zip").unlink()  # a finished run committed without its agent
    with pytest.raises(ValueError, match=r"the run finished but keeps no model\.zip; probe one of its snapshots with --at"):
        branch_point(copied)


def test_a_probe_of_a_run_in_training_is_refused_before_writing(source, tmp_path):
    """A run that another process trains prunes the checkpoints and snapshots a probe would branch from: the probe
    says so in one line and writes nothing."""
    with lock_held_elsewhere(source) as pid:
        result = subprocess.run([*CLI, "probe", str(source), *ONE_RATE, "--n-envs", "2", "4", "--out", str(tmp_path / "p")],
                                capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert (
        result.stderr.strip()
        == f"rl-gns probe: error: {source} is being written by process {pid}; wait for it to end or stop it first"
    )
    assert not (tmp_path / "p").exists()


def test_a_probe_of_a_run_without_snapshots_or_an_anchor_without_games_is_refused(source, tmp_path):
    with pytest.raises(ValueError, match="--anchor-steps must be >= 1"):
        check(ProbeConfig(source=source, anchor_steps=0, out=tmp_path / "p"))
    with pytest.raises(ValueError, match="ascending without repeats"):
        check(ProbeConfig(source=source, delta_noise=(0.5, 0.01), out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--delta-noise must be finite numbers > 0"):
        check(ProbeConfig(source=source, delta_noise=(float("nan"),), out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--n-steps-grid needs at most one --n-envs and at least 2 distinct n_steps"):
        check(ProbeConfig(source=source, n_envs=(2, 4), n_steps_grid=(32, 64), out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--n-steps-grid needs at most one --n-envs and at least 2 distinct n_steps"):
        check(ProbeConfig(source=source, n_envs=(2,), n_steps_grid=(32, 32), out=tmp_path / "p"))
    with pytest.raises(ValueError, match="does not split into"):  # 3 envs x 33 steps into the source's 2 minibatches
        check(ProbeConfig(source=source, n_envs=(3,), n_steps_grid=(32, 33), out=tmp_path / "p"))
    with pytest.raises(ValueError, match=r"--delta-noise 3.0 6.0 has no effect with --delta"):
        check(ProbeConfig(source=source, delta=5.0, delta_noise=(3.0, 6.0), out=tmp_path / "p"))
    with pytest.raises(ValueError, match=r"--anchor-steps must be at most 2,146,483,645 agent steps, got 3,000,000,000"):
        check(ProbeConfig(source=source, anchor_steps=3_000_000_000, out=tmp_path / "p"))
    with pytest.raises(ValueError, match=r"^--threads-per-run must be >= 1, got 0$"):  # the probe's flag, not the run's
        check(ProbeConfig(source=source, threads_per_run=0, out=tmp_path / "p"))
    assert not (tmp_path / "p").exists()
    # an anchor that finishes too few games is found only once it has played: one line, exit status 2
    short = subprocess.run([*CLI, "probe", str(source), *ONE_RATE, "--anchor-steps", "64", "--n-envs", "2", "4", "--out",
                            str(tmp_path / "q")], capture_output=True, text=True)  # fmt: skip
    assert short.returncode == 2 and "Traceback" not in short.stderr
    assert short.stderr.strip().endswith(
        f"the anchor finished 0 games, fewer than --window 20; probe again with a larger --anchor-steps and another "
        f"--out ({tmp_path / 'q'} keeps these settings)"
    )
    again = subprocess.run([*CLI, "probe", str(source), *ONE_RATE, "--anchor-steps", "128", "--n-envs", "2", "4", "--out",
                            str(tmp_path / "q")], capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 2 and "holds runs with other settings (anchor_steps)" in again.stderr


def test_an_anchor_too_short_for_the_games_of_the_source_is_warned_of_before_it_plays(source, tmp_path):
    copy = tmp_path / "source"
    shutil.copytree(source, copy)
    # the tiny source finishes few games: say it finished one every 200 agent steps, of 800 frames each
    games = "".join(f"{200 * k},1.0,800,1.0\n" for k in range(1, 21))
    (copy / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n" + games)
    short = subprocess.run([*CLI, "probe", str(copy), *ONE_RATE, "--at", "3000", "--anchor-steps", "64", "--n-envs", "2", "4",
                            "--out", str(tmp_path / "p")], capture_output=True, text=True)  # fmt: skip
    warning = next(line for line in short.stderr.splitlines() if "Warning" in line)
    assert warning.endswith(
        f"the source's games before {branch_point(copy, 3000).env_steps:,} agent steps lasted about 200 agent steps "
        "each: an anchor of 64 agent steps over 2 envs may finish about 0 games, fewer than the 20 it needs; "
        "--anchor-steps 5,000 would finish about 24"
    )
    # it still plays, then finds too few games: an estimate warns, the games themselves refuse
    assert short.returncode == 2 and "the anchor finished 0 games, fewer than --window 20" in short.stderr.splitlines()[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_short_anchor(ProbeConfig(source=copy, anchor_steps=5000), branch_point(copy, 3000), n_envs=2)
        (copy / "episodes.csv").write_text("env_steps,score\n100,abc\n")  # unreadable: no estimate, and no error
        warn_short_anchor(ProbeConfig(source=copy, anchor_steps=64), branch_point(copy, 3000), n_envs=2)


def test_a_probe_varies_the_env_count_at_the_runs_n_steps_by_default(source, tmp_path):
    """``rl-gns probe RUN --at STEP`` alone varies n_envs, as docs/probe.md says: the run's own 2 envs times 1/4 to 8,
    the whole counts of at least 1, at its n_steps 32, so that its own rollout size is one of them; the pilot's lowest
    target, the sequential design at one learning rate per size with the censored fit, S where a line through the
    games meets the target, half the run's agent steps per branch, at most 10x the run. --n-steps-grid varies n_steps
    instead, at the run's env count or one --n-envs."""
    default = settled(ProbeConfig(source=source, at=1500))
    point = branch_point(source, at=1500)
    assert default.sweep_config(point, (1.0,)).sizes() == [(1, 32), (2, 32), (4, 32), (8, 32), (16, 32)]
    assert (default.lr_points, default.steps, default.seeds, default.design) == (1, "trend", 3, "sequential")
    assert (default.target_rule, default.lowest_target_only, default.censored) == ("pilot", True, True)
    assert default.max_cost == 10.0 and default.budget_steps == point.env_steps // 2 == 768
    assert settled(ProbeConfig(source=source, at=1500, budget_steps=100)).budget_steps == 100
    by_steps = ProbeConfig(source=source, n_steps_grid=(32, 64), budget_steps=1024).sweep_config(point, (1.0,))
    assert by_steps.sizes() == [(2, 32), (2, 64)]
    at_four = ProbeConfig(source=source, n_envs=(4,), n_steps_grid=(32, 64), budget_steps=1024)
    assert at_four.sweep_config(point, (1.0,)).sizes() == [(4, 32), (4, 64)]
    guide = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[1] / "docs" / "probe.md").read_text())
    assert "the run's own times 1/4 to 8 (those that are whole numbers of at least 1) at its n_steps" in guide
    for flags in ("`--target-rule pilot --lowest-target-only`", "`--design sequential --lr-points 1 --seeds 3`",
                  "`--censored`", "`--steps trend`", "`--max-cost 10`"):  # fmt: skip
        assert flags in guide
    with pytest.raises(ValueError, match="a probe needs at least 2 distinct --n-envs"):
        check(ProbeConfig(source=source, n_envs=(4,), out=tmp_path / "p"))


def test_a_grid_without_the_runs_own_rollout_size_is_warned_of(source):
    """The path candidates are measured at the run's own rollout size (2 envs x 32 steps = 64): a grid that leaves it
    out is warned of; the default grid holds it."""
    point = branch_point(source)
    config = ProbeConfig(source=source, n_envs=(4, 8), budget_steps=1024)
    with pytest.warns(UserWarning, match=r"leave out the run's own \(64 agent steps\)"):
        warn_without_own_size(config, config.sweep_config(point, (1.0,)).sizes())
    default = ProbeConfig(source=source, budget_steps=1024)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_without_own_size(default, default.sweep_config(point, (1.0,)).sizes())


def test_a_probe_of_more_branches_than_can_be_is_refused_before_they_are_enumerated(source, tmp_path, monkeypatch):
    def never_enumerated(self):
        raise AssertionError("the branches were enumerated before their count was checked")

    monkeypatch.setattr("rl_gns.experiments.sweep.SweepConfig.runs", never_enumerated)
    with pytest.raises(ValueError, match=r"2 sizes x 1 --lr-points x 100,000,000 --seeds make 200,000,000 runs"):
        check(ProbeConfig(source=source, n_envs=(2, 4), lr_points=1, seeds=100_000_000, out=tmp_path / "p"))
    assert not (tmp_path / "p").exists()


def test_probe_report_shows_how_close_each_branch_came(tmp_path):
    """The committed Beam Rider probe at 150k: the report's table of best running scores holds every branch, each the
    highest mean of 20 consecutive games in its episodes.csv, and 'reached' where that is at the target."""
    committed = Path(__file__).resolve().parents[1] / "results" / "probes" / "BeamRider" / "at150k"
    probe = Path(shutil.copytree(committed, tmp_path / "at150k"))
    result = subprocess.run([*CLI, "probe-report", str(probe)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    target = json.loads((probe / "probe.json").read_text())["target"]
    report = (probe / "report.md").read_text().split("Best running score of each branch")[1]
    rows = [line for line in report.split("\n") if line.count("|") == 6 and "---" not in line]
    table = {tuple(cell.strip() for cell in row.split("|")[1:-1]) for row in rows[1:]}
    branches = sorted((probe / "runs").iterdir())
    assert len(table) == len(branches) == 18
    for branch in branches:
        config = json.loads((branch / "config.json").read_text())
        scores = RunDir(branch).episodes()["score"]
        best = np.convolve(scores, np.ones(20) / 20, mode="valid").max()
        reached = "yes" if best >= target else "no"
        assert any(row[0] == f"{config['rollout_size']:,}" and row[2] == str(config["seed"]) and float(row[3]) ==
                   pytest.approx(best, abs=0.051) and row[4] == reached for row in table), branch.name  # fmt: skip


def test_a_size_whose_fastest_learning_rate_is_at_the_grid_edge_is_named():
    """Per size and seed the fastest rate is kept and counted at an edge of a grid of 3; a size where every seed kept
    the same end is named (its best rate likely lies beyond the grid), one with mixed ends or the middle is not."""
    target, grid = 300.0, [2.5e-4, 5e-4, 1e-3]
    iterations = {  # (rollout size, learning rate) -> iterations to the target of seeds 0, 1, 2 (None: not reached)
        (128, 2.5e-4): [90, 80, 70], (128, 5e-4): [50, 60, 75], (128, 1e-3): [60, 40, 72],
        (256, 2.5e-4): [90, 80, None], (256, 5e-4): [30, 35, None], (256, 1e-3): [40, 45, None],
    }  # fmt: skip

    def reached(s: int | None, size: int) -> dict[float, Reach]:
        return {} if s is None else {target: Reach(s, s * size, 1.0)}

    runs = [
        RunRecord(f"n{size}_lr{lr:.2e}_s{seed}", size // 32, size, size // 4, 4, lr, seed, "done", 0, reached(s, size))
        for (size, lr), steps in iterations.items()
        for seed, s in enumerate(steps)
    ]
    at_128, at_256 = kept_rates(runs, target, 128), kept_rates(runs, target, 256)
    assert at_128.grid == grid and at_128.kept == [5e-4, 1e-3, 2.5e-4] and at_128.at_edge == 2
    assert at_256.kept == [5e-4, 5e-4] and at_256.at_edge == 0
    assert at_128.one_edge is None and at_256.one_edge is None and edge_note([at_128, at_256]) is None
    faster = [replace(run, reached={target: Reach(20, 20 * 256, 1.0)}) if run.learning_rate == 1e-3 else run for run in runs]
    highest = kept_rates(faster, target, 256)
    assert highest.kept == [1e-3, 1e-3, 1e-3] and highest.one_edge == "highest"  # every seed kept the top of the grid
    note = edge_note([at_128, highest])
    assert note == "every seed kept the same end of the learning-rate grid at rollout sizes 256 (highest)"
    two = kept_rates([run for run in runs if run.learning_rate != 1e-3], target, 128)
    assert two.kept == [5e-4, 5e-4, 2.5e-4] and two.at_edge == 0  # a grid of 2 has no inside: nothing is flagged


def test_a_probe_that_varies_n_steps_counts_iterations_at_the_midpoint_of_the_reaching_games(source, tmp_path):
    """--n-steps-grid: the branches keep one env count and vary n_steps (their minibatches per epoch the source's);
    --steps midpoint: a branch's S is the iteration its reaching running score's games stand for, from episodes.csv;
    --delta-noise a b: a ladder of targets, the branches run to the highest, the report fits each and reports the
    lowest resolved one (else the lowest)."""
    out = tmp_path / "probe"
    command = [*CLI, "probe", str(source), *ONE_RATE, "--at", "3000", "--anchor-steps", "4096", "--window", "1",
               "--n-envs", "2",
               "--n-steps-grid", "16", "32", "--seeds", "2", "--budget-steps", "4096", "--delta-noise", "0.01", "0.5",
               "--steps", "midpoint", "--engine", "population", "--workers", "2", "--null-level", "None",
               "--target-rule", "noise", "--design", "fixed", "--max-cost", "None", "--out", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "probe.json").read_text())
    assert record["rollout_sizes"] == [32, 64] and record["steps"] == "midpoint"
    sd = RunDir(out / "anchor").episodes()["score"].std(ddof=1)  # window 1: a standard error is one game's sd
    assert record["targets"] == pytest.approx([record["start_score"] + 0.01 * sd, record["start_score"] + 0.5 * sd])
    assert record["target"] == record["targets"][0] and ": reported " in result.stdout
    results = json.loads((out / "probe_results.json").read_text())
    ladder = results["ladder"]
    assert [rung["target"] for rung in ladder] == record["targets"] and ladder[0]["reached"] >= ladder[1]["reached"]
    reported = next((rung for rung in ladder if rung["resolved"]), ladder[0])
    assert (
        results["target"] == reported["target"]
        and "| target | improvement | kept branches |" in (out / "report.md").read_text()
    )

    expected, floors = {}, []
    for branch in sorted((out / "runs").iterdir()):
        config = RunDir(branch).config()
        assert config.settings["stop_score"] == record["targets"][1]  # every branch runs to the highest target
        game = first_game(branch)  # window 1: a branch's first running score is its first game
        if game is not None:
            floors.append(int(game["env_steps"]) - config.n_envs * float(game["length_frames"]) / 4 / 2)
        assert config.n_envs == 2 and config.n_steps in (16, 32) and config.minibatch_size == config.rollout_size // 2
        games = [row for row in episode_rows(branch) if float(row["score"]) >= results["target"]]
        if games:  # window 1: the first game at the target is the running score that reached it
            end, length = int(games[0]["env_steps"]), float(games[0]["length_frames"]) / 4
            s = (end - config.n_envs * length / 2) / config.rollout_size
            first = games[0] == first_game(branch)  # its first full running score (one game) was at the target
            expected.setdefault((config.rollout_size, config.seed), []).append((s, first))
    assert results["steps"] == "midpoint" and results["reached"], "no branch reached the target: nothing checked"
    fastest = sorted((size, *min(steps)) for (size, _), steps in expected.items())
    reached = sorted((r["rollout_size"], r["iterations"]) for r in results["reached"])
    assert [size for size, _ in reached] == [size for size, *_ in fastest] and len(reached) == reported["reached"]
    assert [s for _, s in reached] == pytest.approx([s for _, s, _ in fastest])
    assert results["first_window"] == sum(first for *_, first in fastest)
    assert results["first_window_midpoint"] == pytest.approx(np.median(floors))


def episode_rows(branch: Path) -> list[dict[str, str]]:
    """The games of a run as ``episodes.csv`` rows of text, from either form of the log (a finished run's is compact)."""
    return list(csv.DictReader(io.StringIO(whole_lines(RunDir(branch).log(EPISODES)))))


def first_game(branch: Path) -> dict[str, str] | None:
    return next(iter(episode_rows(branch)), None)


def test_kept_branches_at_their_first_window_are_counted_as_upper_bounds():
    rates = [KeptRates(128, [1e-3], [1e-3, 1e-3], first_window=0), KeptRates(256, [1e-3], [1e-3] * 3, first_window=2)]
    assert first_window_note(rates, 20) == (
        "2 of 5 kept branches reached the target with their first 20 games (rollout sizes 256 (2 of 3)): their steps "
        "are upper bounds, as the score cannot time progress faster than one window of games"
    )
    assert first_window_note(rates[:1], 20) is None


def test_a_censored_rung_takes_each_size_and_seed_that_no_rate_got_there_as_a_lower_bound():
    """A seed at a size whose every learning rate finished short of the target enters the fit as censored, at the least
    of its rates' bounds (by passage, the iterations trained); a seed with an unfinished rate, or one rate that
    reached, does not; without ``censored`` the fit leaves them out and is Fieller's."""
    target = 10.0

    def run(size: int, lr: float, seed: int, steps: int | None, status: str = "done", trained: int = 0) -> RunRecord:
        reached = {} if steps is None else {target: Reach(steps, steps * size, 1.0)}
        return RunRecord(f"n{size}_lr{lr}_s{seed}", size // 8, size, size, 1, lr, seed, status, trained, reached)

    runs = [
        *(run(size, 1e-3, seed, steps) for size, steps in ((64, 400), (128, 210), (256, 120)) for seed in (0, 1)),
        run(512, 1e-3, 0, None, trained=51_200), run(512, 2e-3, 0, None, trained=40_960),  # censored at 80 iterations
        run(512, 1e-3, 1, None, trained=51_200), run(512, 2e-3, 1, 90),  # one rate reached: kept, not censored
        run(1024, 1e-3, 0, None, status="unfinished", trained=20_480),  # may still get there
    ]  # fmt: skip
    censored = rung(runs, target, "passage", censored=True)
    assert censored.censored == [(512, 80.0)] and censored.fit is not None and censored.fit.n_points == 8
    plain = rung(runs, target, "passage")
    assert plain.censored == [] and plain.fit is not None and plain.fit.n_points == 7


def test_the_fit_from_the_size_of_least_experience_up_finds_the_bend_that_slower_small_sizes_hide():
    """Steps exactly on S(B) = 20 (1 + 2,048 / B) at 1,024-16,384 agent steps (two seeds each), and at 64 and 256 seeds
    at e^(±0.3) about 40x and 8x the experience of 1,024, which S(B) does not allow: the fit over every size misses
    the bend, the second fit starts at 1,024 (the size of least experience) and returns B_crit 2,048 exactly; a censored
    seed below that size is left out with them. On the curve alone the second fit is the rung itself."""
    target = 10.0

    def run(size: int, seed: int, steps: float | None, trained: int = 0) -> RunRecord:
        reached = {} if steps is None else {target: Reach(steps, steps * size, 1.0)}
        status = "done"
        return RunRecord(f"n{size}_s{seed}", size // 8, size, size, 1, 1e-3, seed, status, trained, reached)

    def curve(size: int) -> float:
        return 20.0 * (1 + 2048 / size)

    upper = [run(size, seed, curve(size)) for size in (1024, 4096, 16384) for seed in (0, 1)]
    slow = [run(size, seed, factor * curve(1024) * 1024 / size * math.exp(sign * 0.3))
            for size, factor in ((64, 40), (256, 8)) for seed, sign in ((0, 1), (1, -1))]  # fmt: skip
    slow.append(run(64, 2, None, trained=64 * 4000))
    whole = rung([*slow, *upper], target, "passage", censored=False)
    assert whole.fit is not None and not whole.fit.identified
    second = from_least_experience(whole, censored=False)
    assert second.smallest_size == 1024 and set(second.batch_N) == {1024, 4096, 16384}
    assert second.fit is not None and second.fit.b_crit == pytest.approx(2048, rel=1e-6)
    censored = rung([*slow, *upper], target, "passage", censored=True)
    assert censored.censored == [(64, 4000.0)]
    assert from_least_experience(censored, censored=True).censored == []
    on_curve = rung([run(size, seed, curve(size) * math.exp(0.1 * (-1) ** seed)) for size in (256, 1024, 4096)
                     for seed in (0, 1)], target, "passage")  # fmt: skip
    assert from_least_experience(on_curve, censored=False) is on_curve


def test_the_probe_and_its_report_take_the_same_branches_as_censored():
    """The committed wide probe of Pong at 500k: the sequential design's rule (reading the branches' files as the
    probe trains) and the report (reading them back) censor the same sizes and seeds at the same bounds, each below
    the iterations the branch trained; among them the seeds at 4,096 and 8,192 agent steps that did not get there."""
    probe = Path(__file__).resolve().parents[1] / "results" / "probes_v8" / "Pong" / "at500k_wide"
    target = max(json.loads((probe / "sweep.json").read_text())["targets"])
    runs = probe / "runs"
    specs = {
        spec.stem: replace(train_config_from_json(json.loads(spec.read_text()), spec), out=runs / spec.stem)
        for spec in (probe / "specs").glob("n*.json")
        if (runs / spec.stem / "summary.json").is_file()
    }
    trained = {name: RunDir(spec.out).env_steps() // spec.rollout_size for name, spec in specs.items()}  # type: ignore[arg-type]
    by_probe = sorted(censored_runs(specs, target, 20, "trend"))
    by_report = rung(load_sweep(probe)[1], target, "trend", censored=True).censored
    assert [size for size, _ in by_probe] == [size for size, _ in sorted(by_report)]
    assert [bound for _, bound in by_probe] == pytest.approx([bound for _, bound in sorted(by_report)])
    assert {4096, 8192} <= {size for size, _ in by_probe}
    for size, bound in by_probe:
        assert 0 < bound <= max(steps for name, steps in trained.items() if specs[name].rollout_size == size)


def test_a_probe_with_one_learning_rate_per_size_says_the_rate_is_not_re_tuned():
    one = [KeptRates(1024, [8.84e-05], []), KeptRates(4096, [1.77e-04], [1.77e-04] * 2)]
    assert single_rate_note(one) == (
        "one learning rate per rollout size (the rule's, no grid): a size that is slow may be slow for its learning "
        "rate, not its rollout size; --lr-points 3 re-tunes the rate at each size"
    )
    assert single_rate_note([*one, KeptRates(16384, [1.77e-04, 3.54e-04], [3.54e-04])]) is None  # one size has a grid
    assert single_rate_note([]) is None


def test_an_e_min_close_to_the_first_running_scores_midpoint_is_flagged():
    fit = LocalTradeoffFit(s_min=2.0, e_min=9_000.0, b_crit_low=3e3, b_crit_high=1e4, level=0.95, n_points=18)
    assert resolution_note(fit, 8_000.0, 20) == (
        "E_min (9e+03 agent steps) is 1.1x the agent step a branch's first 20 games stand for (8e+03): the target is "
        "reached about as soon as the running score can tell, so the fit times the score measure more than learning "
        "(a larger improvement would resolve it)"
    )
    assert resolution_note(fit, 4_000.0, 20) is None  # E_min at 2.25x the floor: resolved
    assert resolution_note(None, 8_000.0, 20) is None and resolution_note(fit, math.nan, 20) is None


def test_the_start_score_needs_two_games_even_with_a_window_of_one(tmp_path):
    """A standard deviation needs 2 games: with --window 1 the refusal says so, not 'fewer than --window 1'."""
    anchor = tmp_path / "anchor"
    anchor.mkdir()
    (anchor / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n100,5.0,400,1.0\n")
    with pytest.raises(AnchorGamesError, match="finished 1 games, fewer than the 2 that a standard deviation needs"):
        start_score(anchor, window=1, spread_needed=True)
    (anchor / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n100,5.0,400,1.0\n200,7.0,400,2.0\n")
    score = start_score(anchor, window=1, spread_needed=True)
    assert (score.mean, score.sd, score.games) == (6.0, pytest.approx(math.sqrt(2.0)), 2)


def test_an_anchor_whose_games_all_scored_the_same_sets_no_target_in_standard_errors(tmp_path):
    """Games that all score the same (a sparse game early on) have a standard error of 0: a target of 0 standard
    errors would be reached by every branch with its first window, so only a raw --delta can set one."""
    anchor = tmp_path / "anchor"
    anchor.mkdir()
    games = "".join(f"{100 * g},-21.0,400,{g}.0\n" for g in range(1, 4))
    (anchor / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n" + games)
    with pytest.raises(AnchorGamesError, match=r"anchor: every one of the anchor's 3 games scored -21, .* --delta"):
        start_score(anchor, window=2, spread_needed=True)
    score = start_score(anchor, window=2, spread_needed=False)  # --delta sets the target: no spread needed
    assert (score.mean, score.sd, score.games) == (-21.0, 0.0, 3)


def test_the_snapshots_a_refusal_names_fit_one_line():
    assert held_snapshots([]) == "none (train with --snapshot-steps to keep some)"
    assert held_snapshots([1_536, 3_008]) == "1,536, 3,008"
    assert held_snapshots(list(range(1_000, 100_001, 1_000))) == "100 snapshots, from 1,000 to 100,000 agent steps"


def test_a_probe_states_its_cost_and_max_cost_caps_it(source, tmp_path):
    """Before it trains: the cost is every branch's budget plus the anchor, as a multiple of the run's agent steps at
    the branch point; a probe over --max-cost is refused before anything is written."""
    fixed = dict(design="fixed", target_rule="noise")  # every branch trains; the anchor alone before them
    point = check(ProbeConfig(source=source, at=1500, n_envs=(2, 4), seeds=2, max_cost=None, out=tmp_path / "p", **fixed))
    cost = probe_cost(
        ProbeConfig(source=source, n_envs=(2, 4), lr_points=1, seeds=2, budget_steps=10_000, anchor_steps=1_000, **fixed),
        point,
        2,
    )
    assert cost.agent_steps == 1_000 + 2 * 2 * 10_000 and cost.branches == 4
    assert cost.multiple == pytest.approx(cost.agent_steps / point.env_steps) and cost.steps_per_s > 0
    assert f"41,000 agent steps ({cost.multiple:,.1f}x the run's {point.env_steps:,}, about " in cost.line()
    settings = dict(source=source, at=1500, n_envs=(2, 4), lr_points=1, seeds=2, budget_steps=10_000, anchor_steps=1_000,
                    **fixed)  # fmt: skip
    with pytest.raises(ValueError, match=r"--max-cost 5: this probe may spend 41,000 agent steps"):
        check(ProbeConfig(**settings, max_cost=5.0, out=tmp_path / "q"))
    check(ProbeConfig(**settings, max_cost=cost.multiple + 1, out=tmp_path / "q"))
    assert not (tmp_path / "q").exists()


def test_a_probe_with_the_helps_defaults_is_capped_at_10x_its_run_before_it_writes(source, tmp_path):
    """The defaults: half the run's agent steps (1,536 at the snapshot) per branch and for the pilot, one seed per size
    in the first round, at most 10x the run: an anchor of 12,288 agent steps takes the first round past it, which is
    refused in one line before anything is written. (The default env counts of this 2-env run start at 1, too few
    trajectories for the noise scale: 5 others are named.)"""
    out = tmp_path / "p"
    command = [*CLI, "probe", str(source), "--at", "1500", "--anchor-steps", "12288", "--n-envs", "2", "4", "8", "16", "32"]
    result = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, timeout=300)
    first_round = 12288 + 768 + 5 * 768  # the anchor, the pilot, and one branch at each of the 5 env counts
    assert result.returncode == 2 and not out.exists(), result.stderr[-2000:]
    assert result.stderr.strip() == (
        f"rl-gns probe: error: --max-cost 10: this probe's first round may spend {first_round:,} agent steps, "
        f"{first_round / 1536:.1f}x the run's 1,536; lower --budget-steps, --seeds, --lr-points, --anchor-steps or the "
        "sizes, or raise --max-cost"
    )


def test_a_sequential_probe_states_its_first_round_and_max_cost_caps_that_round(source, tmp_path):
    """A sequential probe's first round trains one seed per size: its cost line gives that round and every round, and
    --max-cost refuses it only where the first round alone could pass the cap (later rounds stop before it)."""
    settings = dict(source=source, at=1500, n_envs=(2, 4), lr_points=1, seeds=3, budget_steps=10_000, anchor_steps=1_000,
                    target_rule="noise")  # fmt: skip
    point = check(ProbeConfig(**settings, design="sequential", max_cost=None, out=tmp_path / "p"))
    cost = probe_cost(ProbeConfig(**settings, design="sequential", max_cost=None), point, 2)
    assert cost.first_round == 1_000 + 2 * 10_000 and cost.agent_steps == 1_000 + 2 * 3 * 10_000 and cost.branches == 6
    first = "its first round (one seed per size it starts with, and what runs before it) at most 21,000 agent steps (13.7x"
    assert first in cost.line()
    first = cost.multiple_of(cost.first_round)
    with pytest.raises(ValueError, match=r"--max-cost 10: this probe's first round may spend 21,000 agent steps"):
        check(ProbeConfig(**settings, design="sequential", max_cost=10.0, out=tmp_path / "q"))
    check(ProbeConfig(**settings, design="sequential", max_cost=first + 0.1, out=tmp_path / "q"))  # below the whole
    assert first + 0.1 < cost.multiple and not (tmp_path / "q").exists()
    capped = probe_cost(ProbeConfig(**settings, design="sequential", max_cost=30.0), point, 2)  # the line gives the cap
    assert capped.cap == math.floor(30.0 * point.env_steps) < cost.agent_steps
    assert f"all rounds together at most {capped.cap:,} agent steps (30.0x the run's" in capped.line()
    assert "where --max-cost stops it (without it: 6 branches to their budget, 61,000 agent steps" in capped.line()
    assert "--max-cost" not in probe_cost(ProbeConfig(**settings, design="sequential", max_cost=99.0), point, 2).line()


def test_a_sequential_round_trains_every_rate_first_then_the_rate_the_first_round_kept(source):
    """The first round trains a seed at every rate of its size's grid; a later seed trains only the rate that size's
    first seed kept, or every rate where the first seed reached the target at none."""
    grid_of_3 = ProbeConfig(source=source, n_envs=(2, 4), lr_points=3, budget_steps=1024)
    specs = grid_of_3.sweep_config(branch_point(source), (1.0,)).runs()
    grid = sorted({spec.learning_rate for spec in specs.values() if spec.n_envs == 2})
    first = round_runs(specs, [[2, 32, 0], [4, 32, 0]], None)
    assert len(grid) == 3 and len(first) == 6 and {spec.seed for spec in first.values()} == {0}
    later = round_runs(specs, [[2, 32, 1], [4, 32, 1]], {(2, 32): grid[0]})
    assert sorted((spec.n_envs, spec.learning_rate) for spec in later.values() if spec.n_envs == 2) == [(2, grid[0])]
    assert len([spec for spec in later.values() if spec.n_envs == 4]) == 3 and {s.seed for s in later.values()} == {1}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"design": "fixed", "stop_ratio": 4.0}, "--stop-ratio 4.0 has no effect with --design fixed"),
        ({"design": "sequential", "stop_ratio": 1.0}, "--stop-ratio must be a finite ratio > 1, got 1"),
        ({"design": "sequential", "edge_rounds": 1}, "--edge-rounds needs --design fixed"),
    ],
)
def test_the_sequential_design_refuses_settings_it_cannot_use(source, tmp_path, flags, message):
    with pytest.raises(ValueError, match=message):
        check(ProbeConfig(source=source, n_envs=(2, 4), out=tmp_path / "p", **flags))


def test_a_sequential_probe_trains_in_rounds_and_a_rerun_goes_on_with_them(source, tmp_path):
    """The real CLI on a tiny probe, its fit with the branches that did not reach the target censored: one seed at
    every size first, each round recorded in probe.json before it starts, as many seeds per size as the rule gives and
    never more than --seeds, the runs those rounds name and no other; why it stopped, in probe.json and the report,
    and the censored branches in probe_results.json. Rerun, it trains nothing and keeps its rounds."""
    out = tmp_path / "probe"
    command = [*CLI, "probe", str(source), *ONE_RATE, "--at", "3000", "--anchor-steps", "4096", "--window", "2",
               "--n-envs", "2", "4", "--seeds", "2", "--budget-steps", "1024", "--workers", "2",
               "--design", "sequential", "--censored", "--target-rule", "noise", "--max-cost", "None",
               "--out", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "probe cost (sequential design): its first round" in result.stdout
    record = json.loads((out / "probe.json").read_text())
    assert record["design"] == "sequential" and record["rounds"][0] == [[2, 32, 0], [4, 32, 0]] and record["censored"]
    units = [tuple(unit) for units in record["rounds"] for unit in units]
    assert len(units) == len(set(units)) and all(seed < 2 for _, _, seed in units)
    for size in {(n_envs, n_steps) for n_envs, n_steps, _ in units}:  # each size's seeds are 0, 1, ... in turn
        seeds = sorted(seed for n_envs, n_steps, seed in units if (n_envs, n_steps) == size)
        assert seeds == list(range(len(seeds)))
    trained = {(RunDir(run).config().n_envs, RunDir(run).config().seed) for run in (out / "runs").iterdir()}
    assert trained == {(n_envs, seed) for n_envs, _, seed in units}
    assert record["stopped"] and f"the sequential design stops after {len(record['rounds'])} rounds" in result.stdout
    assert "Design: sequential" in (out / "report.md").read_text()
    results = json.loads((out / "probe_results.json").read_text())
    assert all(0 < c["iterations_above"] <= 1024 / c["rollout_size"] for c in results["censored_branches"])
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((out / "probe.json").read_text())["rounds"] == record["rounds"]
    assert "to run from the start" not in again.stdout.replace(" 0 to run from the start", "")


def test_a_pilot_that_passes_no_null_floor_sets_no_target_and_says_so(source, tmp_path):
    """--target-rule pilot (criterion v8's): the anchor and a pilot play first, the pilot at the run's own settings for
    one branch budget; where its best running score does not pass the null floor, the probe ends in one line naming
    both (exit status 2) before any branch trains, and a rerun says the same without training again."""
    out = tmp_path / "probe"
    command = [*CLI, "probe", str(source), *ONE_RATE, "--at", "3000", "--anchor-steps", "4096", "--window", "2",
               "--n-envs", "2", "4", "--seeds", "1", "--budget-steps", "2048", "--workers", "2",
               "--target-rule", "pilot", "--out", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    pilot = RunDir(out / "pilot")
    assert pilot.status() == "done" and pilot.config().learning_rate == RunDir(source).config().learning_rate
    best = np.nanmax(running_score(pilot.episodes()["score"], 2))
    line = result.stderr.strip().splitlines()[-1]  # after the runs' progress bars
    assert result.returncode == 2 and line.startswith("rl-gns probe: error: "), result.stderr[-2000:]
    assert f"the pilot's best running score, {best:.4g}, does not pass the null floor" in line
    assert line.endswith("does not improve measurably within --budget-steps from here (docs/probe.md, targets from a pilot)")
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())
    record = json.loads((out / "probe.json").read_text())
    assert record["pilot_best"] == pytest.approx(best) and record["null_floor"] > best and record["null_looks"] >= 2
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2 and again.stderr.strip().splitlines()[-1] == line
    assert "2 finished before, 0 to resume from checkpoints, 0 to run from the start" in again.stdout
    with pytest.raises(ValueError, match=r"--delta-noise 6\.0 has no effect with --target-rule pilot"):
        check(ProbeConfig(source=source, n_envs=(2, 4), target_rule="pilot", delta_noise=(6.0,), out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--target-rule pilot needs --null-level"):
        check(ProbeConfig(source=source, n_envs=(2, 4), target_rule="pilot", null_level=None, out=tmp_path / "p"))


def test_the_pilot_rule_keeps_only_its_lower_target_when_asked(source, tmp_path):
    """--target-rule pilot sets targets a third and two thirds of the way from the null floor to the pilot's best
    running score; --lowest-target-only keeps the first, with the same floor (the same looks and rates)."""
    header = "env_steps,score,length_frames,wall_s\n"
    for name, scores in (("anchor", [g % 2 for g in range(40)]), ("pilot", list(range(40)))):
        (tmp_path / name).mkdir()
        rows = "".join(f"{100 * (g + 1)},{s},400,{g}.0\n" for g, s in enumerate(scores))
        (tmp_path / name / "episodes.csv").write_text(header + rows)
    start = start_score(tmp_path / "anchor", window=2, spread_needed=True)
    both = ProbeConfig(source=source, n_envs=(2, 4), target_rule="pilot", lowest_target_only=False, window=2,
                       budget_steps=1_000)  # fmt: skip
    targets, null = probe_targets(both, tmp_path, start, (2, 4))
    best, floor = 38.5, float(null["null_floor"])  # the pilot's running score of 2 games peaks at (38 + 39) / 2
    assert floor == pytest.approx(1.0)
    assert targets == pytest.approx((floor + (best - floor) / 3, floor + 2 * (best - floor) / 3))
    lowest, null_lowest = probe_targets(replace(both, lowest_target_only=True), tmp_path, start, (2, 4))
    assert lowest == targets[:1] and null_lowest["null_floor"] == floor
    assert null_lowest["false_crossing"] == null["false_crossing"][:1]
    with pytest.raises(ValueError, match="--lowest-target-only False has no effect with --target-rule noise"):
        check(ProbeConfig(source=source, n_envs=(2, 4), target_rule="noise", lowest_target_only=False, out=tmp_path / "p"))


def test_a_pilot_that_passes_the_floor_by_drift_alone_sets_no_target_under_least_pilot_gain(source, tmp_path):
    """Anchor games alternating 0 and 1; a pilot whose games are 0 and 1 but for a run of 2s in its later half: its
    running score of 2 games passes the null floor (1) with no gain in its mean that its blocks' spread allows, so under
    --least-pilot-gain 3 it sets no target and says why, and probe.json's record names the reason
    (:func:`no_target`); a pilot whose later games all score 3 sets one."""
    header = "env_steps,score,length_frames,wall_s\n"
    drift = [g % 2 for g in range(30)] + [2] * 4 + [g % 2 for g in range(6)]
    for name, scores in (("anchor", [g % 2 for g in range(40)]), ("pilot", drift)):
        (tmp_path / name).mkdir()
        rows = "".join(f"{100 * (g + 1)},{s},400,{g}.0\n" for g, s in enumerate(scores))
        (tmp_path / name / "episodes.csv").write_text(header + rows)
    start = start_score(tmp_path / "anchor", window=2, spread_needed=True)
    gated = ProbeConfig(source=source, n_envs=(2, 4), target_rule="pilot", window=2, budget_steps=1_000,
                        least_pilot_gain=3.0)  # fmt: skip
    targets, _ = probe_targets(replace(gated, least_pilot_gain=None), tmp_path, start, (2, 4))
    assert targets  # the null floor alone lets it through
    with pytest.raises(NoTargetError, match="fewer than --least-pilot-gain 3") as raised:
        probe_targets(gated, tmp_path, start, (2, 4))
    record = raised.value.record
    assert record["pilot_best"] == 2.0 and record["pilot_best"] > record["null_floor"] and record["pilot_gain"] < 3.0
    assert "without a measurable gain" in no_target({**record, "least_pilot_gain": 3.0})
    assert no_target({**record, "least_pilot_gain": 0.1}) is None and no_target({}) is None
    rows = "".join(f"{100 * (g + 1)},{g % 2 if g < 20 else 3},400,{g}.0\n" for g in range(40))
    (tmp_path / "pilot" / "episodes.csv").write_text(header + rows)
    targets, null = probe_targets(gated, tmp_path, start, (2, 4))
    assert targets and null["pilot_gain"] > 30  # every later game scores 3: 2.5 over the anchor, whose error is 0.08
    rows = "".join(f"{100 * (g + 1)},{3 * (g % 2)},400,{g}.0\n" for g in range(19))
    (tmp_path / "pilot" / "episodes.csv").write_text(header + rows)  # passes the floor in 19 games, too few to judge
    with pytest.raises(NoTargetError, match="the pilot finished 19 games, fewer than the 20") as raised:
        probe_targets(gated, tmp_path, start, (2, 4))
    assert raised.value.record["pilot_games"] == 19 and "pilot_gain" not in raised.value.record
    assert probe_targets(replace(gated, least_pilot_gain=None), tmp_path, start, (2, 4))[0]  # the floor alone passes
    with pytest.raises(ValueError, match=r"--least-pilot-gain 3\.0 has no effect with --target-rule noise"):
        check(ProbeConfig(source=source, n_envs=(2, 4), target_rule="noise", least_pilot_gain=3.0, out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--least-pilot-gain must be a finite count of standard errors > 0, got -1"):
        check(ProbeConfig(source=source, n_envs=(2, 4), target_rule="pilot", least_pilot_gain=-1.0, out=tmp_path / "p"))


def test_the_null_floor_counts_the_first_games_of_envs_that_reset_together(source, tmp_path):
    """Anchor games scoring 0 in 100 agent steps or 1 in 190: a branch of 64 envs that reset together, each playing 190
    of its steps, ends every short game before every long one, so its running score of 20 climbs to 1 with no learning;
    the same games in any order rarely put 20 long ones in a row. The floor is the highest over the grid's env counts,
    and a probe that set its floor in any order (probe.json without null_order) keeps that rule when rerun."""
    (tmp_path / "anchor").mkdir()
    rows = "".join(f"{100 * (g + 1)},{g % 2},{400 + 360 * (g % 2)},{g}.0\n" for g in range(40))
    (tmp_path / "anchor" / "episodes.csv").write_text("env_steps,score,length_frames,wall_s\n" + rows)
    start = start_score(tmp_path / "anchor", window=20, spread_needed=True)
    config = ProbeConfig(source=source, n_envs=(2, 64), window=20, budget_steps=64 * 190, target_rule="noise", delta=0.1)
    _, envs = probe_targets(config, tmp_path, start, (2, 64))
    _, any_order = probe_targets(config, tmp_path, start, (2, 64), "any")
    assert envs["null_order"] == "envs" and envs["null_n_envs"] == 64 and envs["null_floor"] > 1.0
    assert any_order["null_order"] == "any" and "null_n_envs" not in any_order and any_order["null_floor"] < 1.0
    assert null_order({}) == "envs" and null_order({"null_floor": 1.0}) == "any"
    assert null_order({"null_floor": 1.0, "null_order": "envs"}) == "envs"


def test_sizes_held_back_need_the_sequential_design_and_leave_two_sizes_to_start(source, tmp_path):
    """--held-back N: the grid's N largest sizes wait until the fit puts B_crit past the others; the first round's
    cost leaves them out, and the probe needs 2 sizes to start with."""
    with pytest.raises(ValueError, match="--held-back 1 has no effect with --design fixed"):
        check(ProbeConfig(source=source, n_envs=(2, 4, 8), design="fixed", held_back=1, out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--held-back 1 must leave at least 2 of the probe's 2 sizes to start with"):
        check(ProbeConfig(source=source, n_envs=(2, 4), design="sequential", held_back=1, out=tmp_path / "p"))
    config = ProbeConfig(source=source, n_envs=(2, 4, 8), design="sequential", held_back=1, seeds=2, lr_points=3,
                         target_rule="noise", budget_steps=2_000, max_cost=None, out=tmp_path / "p")  # fmt: skip
    cost = probe_cost(config, check(config), 3)
    assert cost.first_round == config.anchor_steps + 2 * 3 * config.budget_steps  # 2 sizes x 3 rates
    assert cost.branches == 3 * 3 * 2 and cost.agent_steps == config.anchor_steps + 18 * config.budget_steps


@pytest.mark.slow  # a real probe of 12 branches in 3 rounds
def test_a_size_held_back_opens_with_its_whole_grid_of_rates(source, tmp_path, monkeypatch):
    """A sequential probe with the largest of 3 sizes held back, its fits replaced by one that puts B_crit past every
    size (so that the rule opens the size whatever the tiny branches reach): the first round trains 2 and 4 envs,
    the next opens 8 envs alone, at every rate of its grid (its first seed tunes it), and the last adds a seed at
    every size; the rounds are recorded, and the report reads them."""
    past_every_size = LocalTradeoffFit(s_min=0.0, e_min=1.0, b_crit_low=1.0, b_crit_high=math.inf, level=0.95, n_points=3)
    monkeypatch.setattr(probe_module, "fit_or_none", lambda batch_N, steps_N, censored=None: past_every_size)
    out = tmp_path / "probe"
    config = ProbeConfig(source=source, at=3000, anchor_steps=4096, window=2, n_envs=(2, 4, 8), seeds=2, lr_points=2,
                         steps="passage", budget_steps=1024, workers=2, design="sequential", held_back=1,
                         target_rule="noise", max_cost=None, out=out)  # fmt: skip
    probe_module.probe(config)
    record = json.loads((out / "probe.json").read_text())
    assert record["rounds"] == [[[2, 32, 0], [4, 32, 0]], [[8, 32, 0]], [[2, 32, 1], [4, 32, 1], [8, 32, 1]]]
    opened = [run for run in (out / "runs").iterdir() if RunDir(run).config().n_envs == 8]
    assert len([run for run in opened if RunDir(run).config().seed == 0]) == 2
    assert "Design: sequential" in report(ProbeReportConfig(out)).read_text()


def test_least_sizes_needs_the_sequential_design_and_a_count(source, tmp_path):
    with pytest.raises(ValueError, match="--least-sizes 2 has no effect with --design fixed"):
        check(ProbeConfig(source=source, n_envs=(2, 4), design="fixed", least_sizes=2, out=tmp_path / "p"))
    with pytest.raises(ValueError, match="--least-sizes must be a count of rollout sizes >= 0, got -1"):
        check(ProbeConfig(source=source, n_envs=(2, 4), least_sizes=-1, out=tmp_path / "p"))


@pytest.mark.slow  # a real probe of 2 branches
def test_a_probe_whose_first_round_reached_the_target_at_too_few_sizes_stops_there(source, tmp_path):
    """A target 1,000 points above the anchor, which no branch of a few hundred agent steps reaches: with
    --least-sizes 2 the sequential design stops after its first round (one seed at each of 2 sizes) and says why,
    where without it every size would take its second seed."""
    out = tmp_path / "probe"
    config = ProbeConfig(source=source, at=3000, anchor_steps=4096, window=2, n_envs=(2, 4), seeds=2, lr_points=1,
                         steps="passage", budget_steps=512, workers=2, target_rule="noise", delta=1000.0,
                         null_level=None, max_cost=None, least_sizes=2, out=out)  # fmt: skip
    probe_module.probe(config)
    record = json.loads((out / "probe.json").read_text())
    assert record["rounds"] == [[[2, 32, 0], [4, 32, 0]]] and record["least_sizes"] == 2
    assert record["stopped"] == (
        "B_crit not identified; 0 of the 2 rollout sizes trained reached the target, fewer than --least-sizes 2"
    )
    assert len(list((out / "runs").iterdir())) == 2


def test_a_probe_with_edge_rounds_passes_them_to_its_branches_and_counts_every_rate_they_may_add(source, tmp_path):
    """Each edge round may add one rate beyond each edge of a size's grid: the cost and the null floor's count of rates
    (L) take the most a size may try, 3 + 2 x 2 = 7 here."""
    point = branch_point(source)
    config = ProbeConfig(source=source, n_envs=(2, 4), seeds=2, budget_steps=10_000, anchor_steps=1_000, edge_rounds=2,
                         design="fixed", lr_points=3)  # fmt: skip
    assert config.sweep_config(point, (1.0,)).edge_rounds == 2 and config.most_rates() == 7
    assert probe_cost(config, point, 2).branches == 2 * 7 * 2
    with pytest.raises(ValueError, match="--edge-rounds needs a grid with an inside"):
        check(ProbeConfig(source=source, n_envs=(2, 4), design="fixed", lr_points=1, edge_rounds=1, out=tmp_path / "p"))


#: A committed run of Space Invaders from RAM (8 envs x 32 steps) with a snapshot at 50,176 agent steps.
SPACE_INVADERS = Path(__file__).resolve().parents[1] / "results" / "probes" / "trunks" / "SpaceInvaders"


@pytest.mark.filterwarnings("ignore:rl-gns. the branches' rollout sizes leave out the run's own")  # 2 and 4 envs of 8
def test_a_spec_of_a_probe_started_from_a_relative_source_runs_from_any_working_directory(tmp_path, monkeypatch, capsys):
    """A probe's specs are run by its workers (``rl-gns run <spec>``), whose working directory may be another (a Ray
    worker's): the agent a branch starts from is named by its full path, as the run directory is."""
    monkeypatch.chdir(tmp_path)
    source = Path("source")
    (source / "snapshots").mkdir(parents=True)
    shutil.copy(SPACE_INVADERS / "config.json", source)
    shutil.copy(SPACE_INVADERS / "snapshots" / "000000050176.zip", source / "snapshots")
    # --max-wall-minutes 1 leaves no slice to start a run in: the command writes the specs and stops
    args = ["probe", source, *ONE_RATE, "--at", "50000", "--anchor-steps", "256", "--n-envs", "2,4", "--seeds", "1"]
    status, stderr = rl_gns(capsys, *args, "--budget-steps", "256", "--max-wall-minutes", "1", "--out", "probe")
    assert status == 0, stderr
    spec = tmp_path / "probe" / "specs" / "anchor.json"
    model = tmp_path / "probe" / "branch_point.zip"  # the probe's copy of the snapshot
    assert json.loads(spec.read_text())["init_from"] == str(model)
    record = json.loads((tmp_path / "probe" / "probe.json").read_text())
    snapshot = tmp_path / "source" / "snapshots" / "000000050176.zip"
    assert record["model"] == str(model) and record["source_model"] == str(snapshot)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    status, stderr = rl_gns(capsys, "run", spec)
    assert status == 0, stderr
    anchor = RunDir(tmp_path / "probe" / "anchor")
    assert anchor.status() == "done" and anchor.config().settings["init_from"] == str(model)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.slow
def test_a_full_disk_during_a_probe_leaves_no_empty_error_file_and_says_how_to_go_on(tmp_path, monkeypatch, capsys):
    """Files may grow to 100 kB only (``RLIMIT_FSIZE``, which this process and its workers share): the anchor fails
    saving its agent, and while the probe records that failure nothing may grow at all. The run's error.txt is
    whole or absent, never empty, the console says why it is absent and where the run's output is, and the error
    says how to go on."""
    from rl_gns.cli import main
    from rl_gns.experiments import runner

    source = tmp_path / "source"
    (source / "snapshots").mkdir(parents=True)
    shutil.copy(SPACE_INVADERS / "config.json", source)
    shutil.copy(SPACE_INVADERS / "snapshots" / "000000050176.zip", source / "snapshots")  # 344 kB
    record = runner.record_outcome

    def limited(size: int) -> contextlib.AbstractContextManager:
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

        @contextlib.contextmanager
        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
            try:
                yield
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))

        return limit()

    def on_a_full_disk(*args):
        with limited(0):
            return record(*args)

    monkeypatch.setattr(runner, "record_outcome", on_a_full_disk)
    out = tmp_path / "probe"
    args = ["probe", str(source), *ONE_RATE, "--at", "50000", "--anchor-steps", "256", "--n-envs", "2,4", "--seeds", "1"]
    with limited(100_000):
        status = main([*args, "--budget-steps", "256", "--target-rule", "noise", "--out", str(out)])
    said = capsys.readouterr()
    anchor = out / "anchor"
    assert status == 1 and not (anchor / "error.txt").exists(), said.err
    assert f"failed: anchor (its error.txt could not be written (File too large); its output is in {anchor / 'log.txt'})" in (
        said.out
    )
    assert "File too large" in (anchor / "log.txt").read_text()  # what the run said as it failed
    last = said.err.strip().splitlines()[-1]
    assert last.startswith("rl-gns probe: error: 1 of 1 runs failed") and "rerun the same command to go on" in last
