"""Where a population's training loop spends its time: the emulators, SB3's vector env around them, the rest of the
rollout, the update, the noise-scale measurement and the logs.

One population of the validation protocol at one env count (RAM and the MLP; ``n_steps`` 32, 4 minibatches, 4
epochs, clip 0.1, the noise scale measured every iteration with both schemes and three losses; ``seeds × learning
rates`` members, each logging its rows to CSV and TensorBoard as a run does) trains ``--agent-steps`` each through
:class:`rl_gns.core.agents.population.Population`, with a wall-clock timer around each part:

- ``emulators``: ale-py's ``AtariEnv.step`` (the frame-skipping emulator, inside the wrappers);
- ``vec_env``: SB3's ``DummyVecEnv.step_wait`` around them (wrappers, infos, resets), the emulators' time taken out;
- ``rollout``: the rest of :func:`~rl_gns.core.agents.population.collect_population_rollouts` (the batched forward pass,
  sampling, the members' buffers and callbacks);
- ``update``: :func:`~rl_gns.core.agents.population.population_update`;
- ``measurement``: :func:`~rl_gns.core.agents.population_measure.measure_due`;
- ``logs``: SB3's ``Logger.dump`` (the rows to CSV and TensorBoard);
- ``other``: the rest of ``Population.learn``.

The timers add a few microseconds per call (about 0.1 s over a default run). One process, one torch thread: run it on
an idle machine.

    python benchmarks/population_time_split.py --n-envs 2 --out results/benchmarks/population_time_split_cpu.json
"""

from __future__ import annotations

import functools
import json
import os
import platform
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ale_py.env
import scipy.stats  # noqa: F401  # imported before the clock starts, as the first interval imports it
import torch as th
import tyro
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv

import rl_gns.core.agents.population as population_module
from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.ppo import NoiseScaleConfig
from rl_gns.records.logs import run_logger


@dataclass
class Args:
    """The time split of one population's training loop."""

    env: str = "BeamRider"
    """Atari game (RAM observations)."""
    n_envs: int = 2
    """Envs per member."""
    seeds: int = 3
    """Seeds per learning rate."""
    learning_rates: tuple[float, ...] = (2.5e-4, 5e-4)
    """Learning rates (the population has seeds × learning rates members)."""
    agent_steps: int = 4096
    """Agent steps each member trains."""
    out: Path | None = None
    """JSON record (default: print only)."""


def timed(seconds: dict[str, float], part: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding its wall time to ``seconds[part]``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[part] += time.perf_counter() - start

    return wrapper


def members(args: Args, folder: Path) -> list[NoiseScalePPO]:
    """The population's members, each logging to its own CSV and TensorBoard files under ``folder``, envs reset once."""
    built = []
    for lr in args.learning_rates:
        for seed in range(args.seeds):
            agent = NoiseScalePPO(
                "MlpPolicy",
                make_atari_vec_env(args.env, args.n_envs, seed, backend="ram"),
                n_steps=32,
                batch_size=args.n_envs * 32 // 4,
                n_epochs=4,
                clip_range=0.1,
                ent_coef=0.01,
                learning_rate=lr,
                seed=seed,
                noise_scale=NoiseScaleConfig(schemes=("minibatch", "envs"), every=1),
            )
            run = folder / f"lr{lr:g}_s{seed}"
            run.mkdir()
            agent.set_logger(run_logger(run, run / "progress.csv", None))
            agent.env.reset()  # type: ignore[union-attr]  # the ROM loads before the clock starts
            built.append(agent)
    return built


def main(args: Args) -> None:
    th.set_num_threads(1)
    seconds: dict[str, float] = defaultdict(float)
    patches = [
        (ale_py.env.AtariEnv, "step", "emulators"),
        (DummyVecEnv, "step_wait", "vec_env"),
        (population_module, "collect_population_rollouts", "rollout"),
        (population_module, "population_update", "update"),
        (population_module, "measure_due", "measurement"),
        (Logger, "dump", "logs"),
    ]
    with tempfile.TemporaryDirectory() as folder:
        population = population_module.Population(members(args, Path(folder)))
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        for owner, name, part in patches:
            setattr(owner, name, timed(seconds, part, getattr(owner, name)))
        try:
            start = time.perf_counter()
            population.learn([args.agent_steps] * len(population.members), [None] * len(population.members))
            total = time.perf_counter() - start
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)
    # exclusive times: the emulators run inside step_wait, which runs inside the rollout
    split = {
        "emulators": seconds["emulators"],
        "vec_env": seconds["vec_env"] - seconds["emulators"],
        "rollout": seconds["rollout"] - seconds["vec_env"],
        "update": seconds["update"],
        "measurement": seconds["measurement"],
        "logs": seconds["logs"],
    }
    split["other"] = total - sum(split.values())
    agent_steps = args.agent_steps * len(population.members)
    print(f"{len(population.members)} members x {args.n_envs} envs, {agent_steps:,} agent steps in {total:.1f} s")
    for part, part_s in split.items():
        print(f"  {part:>11}: {part_s:6.2f} s ({part_s / total:5.1%})")
    if args.out is not None:
        record = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "processor": platform.processor(), "cores": os.cpu_count()},
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
            "agent_steps": agent_steps,
            "wall_s": total,
            "seconds": split,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
