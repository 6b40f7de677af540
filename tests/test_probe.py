"""``rl-gns probe`` on a real run (Beam Rider from RAM, tiny budgets): branches start from the source's agent, aim at
its running score plus delta, and the report fits what they reached or says why it cannot."""

import json
import subprocess
import sys
from functools import partial

import pytest
import torch as th

from rl_gns.core.atari import make_atari_vec_env
from rl_gns.core.ppo import NoiseScalePPO
from rl_gns.experiments.config import TrainConfig
from rl_gns.experiments.probe import branch_point
from rl_gns.experiments.train import new_model, plan_run
from rl_gns.records.rundir import RunDir

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
TINY = ["--env", "BeamRider", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
        "--torch-threads", "1", "--progress-bar", "False"]  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    run = tmp_path_factory.mktemp("probe") / "source"
    result = subprocess.run([*CLI, "train", *TINY, "--total-steps", "4096", "--out", str(run)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return run


def test_a_branch_starts_from_the_source_agent(source, tmp_path):
    point = branch_point(source, window=2)
    games = RunDir(source).episodes()
    assert point.env_steps == 4096 and point.start_score == pytest.approx(games["score"][-2:].mean())
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


def test_probe_cli_branches_and_reports(source, tmp_path):
    out = tmp_path / "probe"
    result = subprocess.run(
        [*CLI, "probe", str(source), "--window", "2", "--delta", "1", "--n-envs", "2,4", "--seeds", "2",
         "--budget-steps", "3072", "--workers", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "probe.json").read_text())
    assert record["env_steps"] == 4096 and record["target"] == pytest.approx(record["start_score"] + 1)
    branches = sorted((out / "runs").iterdir())
    assert len(branches) == 4
    for branch in branches:
        settings = RunDir(branch).config().settings
        assert settings["init_from"] == str(source / "model.zip") and settings["stop_score"] == record["target"]
    assert "critical rollout size at 4,096 agent steps" in result.stdout
    assert "B_crit" in result.stdout and (out / "report.md").exists() and (out / "steps_vs_rollout_size.png").exists()
    results = json.loads((out / "probe_results.json").read_text())
    assert results["branches"] == 4 and {"envs/value", "envs/total"} <= results["noise_at_branch_point"].keys()
