"""Shared fixtures: small real-ALE PPO agents (tiny budgets, no mocks)."""

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.cli import main

#: A tiny PPO on real Beam Rider: 2 envs x 32 steps = 64-sample rollouts, 32-sample minibatches.
#: One learning rate per size and S at the passage: the small probes the tests run (rl-gns probe's defaults re-tune the
#: rate at 3 points per size and time S at the midpoint of the reaching games).
ONE_RATE = ["--lr-points", "1", "--steps", "passage"]
TINY_PPO = dict(n_steps=32, batch_size=32, n_epochs=2, learning_rate=2.5e-4, clip_range=0.1, ent_coef=0.01, seed=3)


def tiny_model(noise_scale: NoiseScaleConfig | None = None, n_envs: int = 2, **overrides) -> NoiseScalePPO:
    env = make_atari_vec_env("BeamRider", n_envs, seed=3)
    return NoiseScalePPO("CnnPolicy", env, noise_scale=noise_scale, device="cpu", **{**TINY_PPO, **overrides})


def collect_one_rollout(model: NoiseScalePPO) -> None:
    """Fill the model's rollout buffer (returns and advantages computed) without training."""
    _, callback = model._setup_learn(model.n_steps * model.n_envs, callback=None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)


@pytest.fixture
def rollout_model() -> NoiseScalePPO:
    model = tiny_model(NoiseScaleConfig(every=1))
    collect_one_rollout(model)
    return model


@contextlib.contextmanager
def lock_held_elsewhere(directory: Path) -> Iterator[int]:
    """Another process holds ``directory``'s run lock (as a training run does) for the block; yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from rl_gns.records.lock import RunLock; "
         "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)", str(directory)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def rl_gns(capsys: pytest.CaptureFixture, *args: object) -> tuple[int, str]:
    """Run ``rl-gns ARGS`` in this process: ``(exit status, stderr)``."""
    status = main([str(arg) for arg in args])
    return status, capsys.readouterr().err


def logged_scalars(run_dir: Path) -> dict[str, np.ndarray]:
    """Every value a run logged, by key, one per logged row in order, from its TensorBoard events: they hold the columns
    that a finished run's compact ``progress.csv.xz`` leaves out (float32, as TensorBoard stores them)."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: np.array([event.value for event in events.Scalars(tag)]) for tag in events.Tags()["scalars"]}
