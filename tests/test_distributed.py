"""Data-parallel PPO (rl_gns.core.agents.distributed) on 2 gloo processes: the same training as one process, and the
free noise scale against exact ground truth."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv

from rl_gns import make_atari_vec_env
from rl_gns.core.agents.distributed import DataParallelPPO, sizes_over_ranks
from rl_gns.core.agents.ppo import NoiseScaleConfig, NoiseScalePPO
from rl_gns.core.maths.noise_scale import NoiseSums
from rl_gns.experiments.config import TrainConfig
from rl_gns.experiments.launch import join, launch
from rl_gns.experiments.train import plan_on_rank_0
from rl_gns.records.checkpoint import CHECKPOINTS, latest_checkpoint
from rl_gns.records.rundir import RunDir
from rl_gns.testing.exact import ChainEnv, ChainMDP, exact

#: PPO on the RAM of real Beam Rider: 4 envs x 16 steps = 64-sample rollouts, 4 minibatches of 16, 2 epochs.
SMALL = dict(n_steps=16, batch_size=16, n_epochs=2, learning_rate=3e-4, clip_range=0.2, max_grad_norm=0.5, seed=5)
ITERATIONS = 3
#: Groups of one env's trajectory: the set of small batches does not depend on the order the envs are drawn in.
FIXED = NoiseScaleConfig(schemes=("envs",), b_small=SMALL["n_steps"], every=1)
FIELDS = ("observations", "actions", "rewards", "returns", "advantages", "values", "log_probs", "episode_starts")


def trace_training(model: NoiseScalePPO, rollouts: list[dict[str, np.ndarray]], envs: slice) -> dict[str, list]:
    """Train ``model`` on the envs ``envs`` of given rollouts, one update each; record every optimiser step's
    (clipped) gradients, the parameters after each update and the fixed-parameter noise-scale estimates."""
    model.set_logger(Logger(None, []))
    params = list(model.policy.parameters())
    grads: list[list[th.Tensor]] = []
    model.policy.optimizer.register_step_pre_hook(lambda *_: grads.append([p.grad.clone() for p in params]))
    after = []
    for i, rollout in enumerate(rollouts):
        buffer = model.rollout_buffer
        buffer.reset()
        for name in FIELDS:
            getattr(buffer, name)[:] = rollout[name][:, envs]
        buffer.full = True
        np.random.seed(100 + i)  # the minibatch permutation (rank 0 draws it for every rank)
        model.train()
        after.append([p.detach().clone() for p in params])
    return {
        "grads": grads,
        "params": after,
        "noise": {t.loss: (t.g2_T, t.trace_sigma_T) for t in model.gns_trackers.values() if t.scheme == "envs"},
    }


def record_rollouts(model: NoiseScalePPO, n: int) -> list[dict[str, np.ndarray]]:
    """``n`` rollouts that ``model`` collects (returns and advantages computed), without training on them."""
    _, callback = model._setup_learn(n * model.n_steps * model.n_envs, callback=None)
    callback.on_training_start(locals(), globals())
    rollouts = []
    for _ in range(n):
        assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
        rollouts.append({name: getattr(model.rollout_buffer, name).copy() for name in FIELDS})
    return rollouts


def ram_model(cls, n_envs: int, seed: int = 5):
    env = make_atari_vec_env("BeamRider", n_envs, seed=seed, backend="ram")
    return cls("MlpPolicy", env, noise_scale=FIXED, device="cpu", **SMALL)


def data_parallel_worker(rollouts: list[dict[str, np.ndarray]]) -> dict[str, list]:
    join("cpu")
    rank = th.distributed.get_rank()
    th.set_num_threads(1)
    model = ram_model(DataParallelPPO, 2)
    return trace_training(model, rollouts, slice(2 * rank, 2 * rank + 2))


@pytest.fixture(scope="module")
def one_and_two_processes():
    th.set_num_threads(1)
    reference = ram_model(NoiseScalePPO, 4)
    rollouts = record_rollouts(reference, ITERATIONS)
    reference = ram_model(NoiseScalePPO, 4)  # fresh parameters and optimiser, as the workers start
    single = trace_training(reference, rollouts, slice(None))
    ranks = launch(data_parallel_worker, 2, rollouts)
    return single, ranks


def test_two_ranks_average_to_the_single_process_gradient_of_each_global_minibatch(one_and_two_processes):
    single, ranks = one_and_two_processes
    n_steps = ITERATIONS * SMALL["n_epochs"] * 64 // SMALL["batch_size"]
    assert len(single["grads"]) == len(ranks[0]["grads"]) == len(ranks[1]["grads"]) == n_steps
    for step, expected in enumerate(single["grads"]):
        for rank in (0, 1):
            for got, want in zip(ranks[rank]["grads"][step], expected, strict=True):
                assert th.allclose(got, want, rtol=1e-4, atol=1e-7), (step, rank, (got - want).abs().max())


def test_two_ranks_of_two_envs_train_as_one_process_of_four(one_and_two_processes):
    single, ranks = one_and_two_processes
    for iteration, expected in enumerate(single["params"]):
        for rank in (0, 1):
            for got, want in zip(ranks[rank]["params"][iteration], expected, strict=True):
                assert th.allclose(got, want, rtol=1e-4, atol=1e-6), (iteration, rank, (got - want).abs().max())
    assert not th.equal(single["params"][-1][0], single["params"][0][0])  # it trained


def test_two_ranks_measure_the_noise_scale_of_one_process_at_fixed_parameters(one_and_two_processes):
    """Each rank holds half the big batch (its envs) as whole small batches; the all-reduced sums give the estimates
    one process gets from all the envs, advantages normalised over the whole big batch."""
    single, ranks = one_and_two_processes
    for loss in ("policy", "value", "total"):
        expected = np.array(single["noise"][loss])
        assert expected.shape == (2, ITERATIONS) and np.isfinite(expected).all()
        for rank in (0, 1):
            np.testing.assert_allclose(np.array(ranks[rank]["noise"][loss]), expected, rtol=1e-3, err_msg=loss)


CHAIN = ChainMDP(horizon=1)  # i.i.d. steps: random samples of one rollout are unbiased (test_ground_truth.py)
CHAIN_PPO = dict(n_steps=8, batch_size=16, n_epochs=1, learning_rate=0.0, normalize_advantage=False, max_grad_norm=1e9,
                 gamma=CHAIN.gamma, gae_lambda=CHAIN.gae_lambda, clip_range=CHAIN.clip_range, ent_coef=CHAIN.ent_coef,
                 vf_coef=CHAIN.vf_coef)  # fmt: skip


def chain_model(seed: int) -> DataParallelPPO:
    env = DummyVecEnv([lambda: ChainEnv(CHAIN)] * 4)
    model = DataParallelPPO(
        "MlpPolicy",
        env,
        noise_scale=NoiseScaleConfig(schemes=("minibatch",), every=10**9),
        policy_kwargs=dict(net_arch=dict(pi=[], vf=[]), ortho_init=False),
        seed=seed,
        device="cpu",
        **CHAIN_PPO,
    )
    model.policy.load_state_dict(CHAIN.make_policy().state_dict())  # learning rate 0: fixed parameters
    return model


def free_noise_worker(iterations: int) -> tuple[list[float], list[float]]:
    join("cpu")
    th.set_num_threads(1)
    model = chain_model(seed=11)
    model.learn(total_timesteps=iterations * 2 * 4 * CHAIN_PPO["n_steps"])
    tracker = model.gns_trackers["ranks/total"]
    return tracker.g2_T, tracker.trace_sigma_T


def test_the_free_noise_scale_of_two_ranks_is_unbiased_on_exact_ground_truth():
    """Per-rank minibatch shares against the all-reduced minibatch, at fixed parameters (learning rate 0), on
    i.i.d. steps: the pooled estimates match the exact |G|² and tr Σ of PPO's total loss."""
    truth = exact(CHAIN, CHAIN.make_policy())["total"]
    g2, trace = (np.array(v) for v in launch(free_noise_worker, 2, 300)[0])
    assert len(g2) == 300
    for values, target in ((g2, truth.g2), (trace, truth.trace_marginal)):
        z = (values.mean() - target) / (values.std(ddof=1) / math.sqrt(len(values)))
        assert abs(z) < 3.5, (values.mean(), target, z)
    assert NoiseSums.of(g2, trace).b_simple == pytest.approx(truth.trace_marginal / truth.g2, rel=0.5)


CLI = [sys.executable, "-m", "rl_gns"]
#: 2 ranks x 2 envs x 32 steps = 128 agent steps per iteration, 2 minibatches of 64; a checkpoint every iteration.
TWO_RANKS = ["--env", "BeamRider", "--backend", "ram", "--n-envs", "4", "--nproc", "2", "--n-steps", "32",
             "--minibatch-size", "64", "--gns-every", "1", "--progress-bar", "False", "--checkpoint-minutes", "0"]  # fmt: skip


def rank_pids(launcher: int) -> list[int]:
    """The worker processes (ranks) the launcher process ``launcher`` spawned."""
    command = ["ps", "-ww", "-o", "pid=,args=", "--ppid", str(launcher)]  # -ww: whole command lines, however long
    children = subprocess.run(command, capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in children.splitlines() if "spawn_main" in line]


@pytest.mark.slow
@pytest.mark.atari
def test_cli_trains_on_two_ranks_and_a_killed_rank_is_reported_and_resumable(tmp_path):
    run, total = tmp_path / "run", 24 * 128
    launcher = subprocess.Popen([*CLI, "train", *TWO_RANKS, "--total-steps", str(total), "--out", str(run)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not ((run / CHECKPOINTS).is_dir() and latest_checkpoint(run)) and launcher.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint"
        time.sleep(0.05)
    assert launcher.poll() is None, launcher.communicate()[1][-3000:]
    pids = rank_pids(launcher.pid)
    assert len(pids) == 2, pids
    os.kill(pids[1], signal.SIGKILL)
    _, stderr = launcher.communicate(timeout=120)
    assert launcher.returncode == 1
    # one line, whatever else the machine prints around it (a resource tracker's warning may follow it)
    errors = [line for line in stderr.splitlines() if line.startswith("rl-gns train: error: ")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr[-3000:]
    error = errors[0]
    assert error.startswith("rl-gns train: error: rank ") and "was killed by SIGKILL" in error, error
    assert f"rl-gns train --resume {run}" in error and not (run / "summary.json").exists()

    resumed = subprocess.run([*CLI, "train", "--resume", str(run), "--progress-bar", "False"], capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["env_steps"] == total and summary["resumes"] == 1 and summary["nproc"] == 2
    progress = RunDir(run).progress()  # the finished run's compact progress.csv.xz
    np.testing.assert_array_equal(progress["time/total_timesteps"], 128 * np.arange(1, 25))  # no gap, no duplicate
    for scheme in ("envs", "ranks", "ranks_all"):  # every iteration measured, on both sides of the kill
        assert np.isfinite(progress[f"gns/{scheme}/g2_total_raw"]).all(), scheme
    advice = summary["advice"]  # printed at the end, as summary.json records it
    assert advice["predictor"] == "env_value" and "\n".join(advice["text"]) in resumed.stdout


def waiting_worker() -> None:
    """Rank 1 never joins; rank 0 waits for it."""
    if os.environ["RANK"] == "1":
        while True:
            time.sleep(1)
    join("cpu")


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (an ended one that no one reaped yet is a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_ranks_whose_launcher_is_killed_while_they_start_end_with_it(tmp_path):
    """A launcher SIGKILLed while its ranks still imported left them behind, waiting for each other: torch asks for
    its parent-death signal only once a rank has imported what it runs, too late for a launcher already gone."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from test_distributed import waiting_worker; "
            "from rl_gns.experiments.launch import launch; launch(waiting_worker, 2)")  # fmt: skip
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(ranks := rank_pids(launcher.pid)) < 2:
        assert time.monotonic() < deadline and launcher.poll() is None, "the ranks did not start"
        time.sleep(0.02)
    launcher.kill()  # while the ranks import
    launcher.wait()
    deadline = time.monotonic() + 90
    while any(alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in ranks if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"ranks {left} outlived their launcher"


def mismatched_worker(config: TrainConfig) -> str:
    join("cpu")
    rank = th.distributed.get_rank()
    try:
        plan_on_rank_0(replace(config, n_steps=config.n_steps * (1 + rank)), {"n_steps"})  # rank 1: other settings
    except ValueError as error:
        return str(error)
    return "trained"


def test_ranks_started_with_other_settings_are_refused_before_anything_is_written(tmp_path):
    config = TrainConfig(env="BeamRider", backend="ram", n_envs=4, nproc=2, n_steps=32, minibatch_size=32,
                         total_steps=256, out=tmp_path / "run", progress_bar=False)  # fmt: skip
    errors = launch(mismatched_worker, 2, config)
    assert errors[0] == errors[1] == "the ranks were started with other settings than rank 0 (ranks 1)"
    assert not (tmp_path / "run").exists()


def test_a_given_small_batch_must_divide_each_ranks_part_of_the_big_batch():
    noise_scale = NoiseScaleConfig(schemes=("envs",), b_small=256)  # 2 ranks of 3 envs x 128 steps: parts of 384
    with pytest.raises(ValueError, match="b_small \\(256\\) must divide each rank's part of b_big \\(384\\)"):
        sizes_over_ranks(noise_scale, n_envs=3, n_steps=128, minibatch_size=256, n_ranks=2)
