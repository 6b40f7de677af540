"""Populations of runs through the real CLI (``rl-gns sweep --engine population``, ``rl-gns run SPEC SPEC ...``) on real
ALE, tiny budgets: each member writes an ordinary run directory, checkpoints hold what an uninterrupted population
holds, resumed populations finish with contiguous logs, and runs that cannot train together are refused."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch as th

from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.experiments.config import TrainConfig, to_json
from rl_gns.experiments.runner import as_resume, balance, makespan, population_jobs
from rl_gns.experiments.sweep import SweepConfig
from rl_gns.records.checkpoint import CHECKPOINTS, latest_checkpoint, load_rng_states
from rl_gns.records.lock import LOCK
from rl_gns.records.rundir import RunDir, write_json

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
#: 2 envs x 32 steps = 64 agent steps per iteration, a checkpoint at every boundary, every iteration measured.
MEMBER = TrainConfig(
    env="BeamRider", backend="ram", n_envs=2, n_steps=32, minibatch_size=32, gns_every=1, torch_threads=1,
    progress_bar=False, checkpoint_minutes=0.0, anneal=False, total_steps=4 * 64,
)  # fmt: skip


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def write_specs(root: Path, members: list[TrainConfig]) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, member in enumerate(members):
        path = root / f"spec{i}.json"
        write_json(path, to_json(member))
        paths.append(str(path))
    return paths


def assert_same_agent(a: NoiseScalePPO, b: NoiseScalePPO) -> None:
    for (name, x), (_, y) in zip(a.policy.state_dict().items(), b.policy.state_dict().items(), strict=True):
        assert th.equal(x, y), name
    adam_a, adam_b = a.policy.optimizer.state_dict()["state"], b.policy.optimizer.state_dict()["state"]
    assert all(th.equal(adam_a[k][s], adam_b[k][s]) for k in adam_a for s in ("exp_avg", "exp_avg_sq"))


def test_a_sweep_groups_each_rollout_size_into_one_population():
    config = SweepConfig(env="BeamRider", backend="ram", n_envs=(2, 4), seeds=2, lr_points=2, engine="population")
    specs = config.runs()
    jobs = population_jobs(list(specs), specs)
    assert sorted(len(job) for job in jobs) == [4, 4]
    assert all(len({specs[name].n_envs for name in job}) == 1 for job in jobs)
    adaptive = {name: replace(spec, adaptive_r=2.0) for name, spec in specs.items()}
    assert all(len(job) == 1 for job in population_jobs(list(adaptive), adaptive))


def test_a_member_that_resumes_and_one_that_restarts_stay_one_population(tmp_path):
    config = SweepConfig(env="BeamRider", backend="ram", n_envs=(2,), seeds=2, lr_points=1, engine="population")
    specs = config.runs()
    first, second = specs
    mixed = {first: as_resume(specs[first]), second: specs[second]}  # one resumes, the other starts again
    assert population_jobs(list(mixed), mixed) == [[first, second]]


def test_makespan_hands_each_job_to_the_first_free_worker():
    assert makespan([3, 3, 2, 2, 2], 2) == 7  # 3+2+2 and 3+2
    assert makespan([5, 1, 1], 3) == 5
    assert makespan([], 2) == 0


def test_populations_are_halved_only_while_the_workers_finish_sooner():
    config = SweepConfig(env="BeamRider", backend="ram", n_envs=(2, 4, 8, 16, 32), seeds=3, lr_points=2, engine="population")
    specs = config.runs()
    jobs = population_jobs(list(specs), specs)
    balanced = balance(jobs, specs, 2)  # five populations of 6 on 2 workers: one halved, 15 runs' budgets each
    assert sorted(len(job) for job in balanced) == [3, 3, 6, 6, 6, 6]
    assert sorted(name for job in balanced for name in job) == sorted(specs)
    assert [len(job) for job in balanced] == [6, 6, 6, 6, 3, 3]  # longest first
    assert all(len({specs[name].n_envs for name in job}) == 1 for job in balanced)
    assert sorted(len(job) for job in balance(jobs, specs, 5)) == [6] * 5  # one population per worker: kept whole
    assert sorted(len(job) for job in balance(jobs, specs, 16)) == [1] * 10 + [2] * 10  # 16 workers all busy
    assert balance(population_jobs(list(specs)[:12], specs), specs, 1) == population_jobs(list(specs)[:12], specs)


def test_runs_that_differ_in_more_than_seed_and_learning_rate_are_refused(tmp_path):
    specs = write_specs(tmp_path, [replace(MEMBER, out=tmp_path / "a"), replace(MEMBER, n_steps=64, out=tmp_path / "b")])
    refused = run_cli("run", *specs)
    assert refused.returncode == 2 and "differs from" in refused.stderr and "n_steps" in refused.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # checked before anything was written
    twice = write_specs(tmp_path, [replace(MEMBER, out=tmp_path / "a"), replace(MEMBER, seed=1, out=tmp_path / "a")])
    assert run_cli("run", *twice).returncode == 2


def test_population_sweep_writes_ordinary_run_directories_that_analyze_reads(tmp_path):
    out = tmp_path / "sweep"
    sweep = run_cli("sweep", "--env", "Breakout", "--backend", "ram", "--n-steps", "32", "--window", "5",
                    "--lr-points", "2", "--targets", "0.5,1", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "3072",
                    "--engine", "population", "--out", str(out))  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    assert "4/4 finished" in sweep.stdout
    logs = sorted((out / "specs").glob("*.population.log"))
    assert len(logs) == 2 and all("population of 2 runs" in log.read_text() for log in logs)
    for run in sorted((out / "runs").iterdir()):
        summary = json.loads((run / "summary.json").read_text())
        assert summary["population_size"] == 2
        assert not (run / LOCK).exists()  # a finished member keeps no lock file, as a lone run
        rollout = json.loads((run / "config.json").read_text())["rollout_size"]
        steps = RunDir(run).progress()["time/total_timesteps"]
        np.testing.assert_array_equal(steps, rollout * np.arange(1, len(steps) + 1))
        assert steps[-1] <= summary["env_steps"] < steps[-1] + rollout  # a target stops a run mid-rollout, as SB3
    analyze = run_cli("analyze", str(out), "--bootstrap", "100")
    assert analyze.returncode == 0, analyze.stderr[-2000:]
    assert "| 0.5 |" in (out / "report.md").read_text()


@pytest.mark.slow
def test_population_checkpoints_hold_the_uninterrupted_population_and_resume_to_the_end(tmp_path):
    """Stopped at a deadline after every iteration, a population of two writes checkpoints whose agents are
    bit-identical to those of an uninterrupted population at the same step, with the shared torch generator and
    each member's own NumPy generator; resumed slice by slice it finishes with contiguous logs, every row the
    uninterrupted population's."""
    members = [replace(MEMBER, seed=3, learning_rate=2.5e-4), replace(MEMBER, seed=4, learning_rate=1e-3)]
    whole = [replace(m, total_steps=64, out=tmp_path / f"whole{i}") for i, m in enumerate(members)]
    done = run_cli("run", *write_specs(tmp_path / "whole", whole))
    assert done.returncode == 0, done.stderr[-2000:]

    sliced = [replace(m, out=tmp_path / f"sliced{i}") for i, m in enumerate(members)]
    first = run_cli("run", *write_specs(tmp_path / "first", sliced), "--max-wall-minutes", "1e-9")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "stopped 2 runs before --max-wall-minutes" in first.stdout
    checkpoints = [latest_checkpoint(m.out) for m in sliced]
    assert all(c is not None and c.env_steps == 64 for c in checkpoints)
    for i, checkpoint in enumerate(checkpoints):
        assert_same_agent(NoiseScalePPO.load(whole[i].out / "model.zip"), NoiseScalePPO.load(checkpoint.model))
    torch_states = [load_rng_states(c)[0]["torch"] for c in checkpoints]
    assert th.equal(torch_states[0], torch_states[1])  # one generator draws every member's actions
    numpy_states = [load_rng_states(c)[0]["numpy"][1] for c in checkpoints]
    assert not np.array_equal(numpy_states[0], numpy_states[1])  # each member permutes its own minibatches

    resumed = [replace(m, resume=m.out) for m in sliced]
    for _ in range(2):
        again = run_cli("run", *write_specs(tmp_path / "again", resumed), "--max-wall-minutes", "1e-9")
        assert again.returncode == 0 and "2 resumed" in again.stdout, again.stderr[-2000:]
    last = run_cli("run", *write_specs(tmp_path / "last", resumed))
    assert last.returncode == 0, last.stderr[-2000:]
    for member in sliced:
        summary = json.loads((member.out / "summary.json").read_text())
        assert summary["env_steps"] == 4 * 64 and summary["resumes"] == 3 and summary["games_dropped"] == 0
        assert not (member.out / CHECKPOINTS).exists()
        np.testing.assert_array_equal(RunDir(member.out).progress()["time/iterations"], np.arange(1, 5))
    # the checkpoints held the games in progress: every row is the uninterrupted population's
    full = [replace(m, out=tmp_path / f"full{i}") for i, m in enumerate(members)]
    assert run_cli("run", *write_specs(tmp_path / "full", full)).returncode == 0
    for member, reference in zip(sliced, full, strict=True):
        progress, expected = RunDir(member.out).progress(), RunDir(reference.out).progress()
        for column in expected:
            if not column.startswith("time/") or column == "time/total_timesteps":
                np.testing.assert_array_equal(progress[column], expected[column], err_msg=column)
