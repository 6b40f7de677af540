"""Sweep throughput of the population trainer against one agent at a time, beside the emulator ceiling.

The sweep protocol (RAM and the MLP by default, or pixels and the Nature CNN with ``--backend ale_vector``; ``n_steps``
32, 4 minibatches per epoch, 4 epochs, the default noise-scale measurement), or with ``--regime`` a training regime's
own settings as ``rl-gns train --regime`` applies them (``one-step``: 5-step rollouts, one RMSprop step on the whole
rollout), at each env count ``n_envs``, for ``seeds × learning rates`` agents; each trains ``--agent-steps`` rounded up
to whole rollouts:

- ``lone``: each agent trains alone (``NoiseScalePPO.learn``), one after the other, as one sweep worker trains its runs
  (process start and imports, about 3 s per run, are not counted);
- ``population``: the same agents train together (:class:`rl_gns.core.agents.population.Population`);
- ``ceiling``: the same ``agents × n_envs`` envs stepped with uniformly random actions, no policy
  (``emulator_ceiling.py``): the rate neither can exceed on this machine.

Every env is reset once before the clock starts: its first reset loads the ROM (ale-py, about 0.05 s per env), a
cost per run that both engines pay alike and that would swamp a short timing at large env counts. SciPy's statistics,
which the first noise-scale interval imports (about a second), are imported before any timing too.

One process, ``--torch-threads`` torch threads (1 by default): run it on an idle machine. Rows are written after each
``n_envs``.

    python benchmarks/population_speed.py --out results/benchmarks/population_speed_cpu.json
    python benchmarks/population_speed.py --regime one-step --env Breakout --n-envs 8 16 32 64 128 256 \
        --learning-rates 7e-4 1.4e-3 --out results/benchmarks/population_speed_one_step_cpu.json
    python benchmarks/population_speed.py --backend ale_vector --device cuda --n-envs 8 32 --out population_gpu.json
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import scipy.stats  # noqa: F401  # imported once here, not inside the first timed engine
import torch as th
import tyro
from emulator_ceiling import ceiling

from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.population import Population
from rl_gns.experiments.config import TrainConfig, apply_regime
from rl_gns.experiments.train import ppo_kwargs


@dataclass
class Args:
    """Agent steps/s of a sweep slice trained one agent at a time and as one population."""

    env: str = "BeamRider"
    """Atari game."""
    backend: Literal["ram", "ale_vector"] = "ram"
    """ram: RAM observations and SB3's MLP; ale_vector: pixels (ale-py's vector env) and the Nature CNN."""
    device: str = "cpu"
    """Torch device of every agent."""
    torch_threads: int = 1
    """Torch threads of the process."""
    n_envs: list[int] = field(default_factory=lambda: [2, 4, 8, 16, 32])
    """Env counts (rollout size n_envs * n_steps)."""
    seeds: int = 3
    """Seeds per (env count, learning rate)."""
    learning_rates: list[float] = field(default_factory=lambda: [2.5e-4, 5e-4])
    """Learning rates per env count."""
    regime: Literal["ppo", "one-step"] | None = None
    """A training regime's settings (rl_gns.experiments.config.REGIMES) in place of --n-steps, --n-minibatches and
    --n-epochs and PPO's defaults; None: this benchmark's PPO protocol."""
    n_steps: int = 32
    """Steps per env per rollout."""
    n_minibatches: int = 4
    """Minibatches per epoch (minibatch_size = rollout size / n_minibatches)."""
    n_epochs: int = 4
    """PPO epochs per update."""
    agent_steps: int = 4096
    """Agent steps each agent trains, per engine (a multiple of every rollout size)."""
    ceiling_seconds: float = 5.0
    """Timed random-action stepping per env count, wall-clock seconds."""
    out: Path | None = None
    """JSON record (default: print only)."""


def agent_settings(args: Args, n_envs: int, learning_rate: float, seed: int) -> dict[str, Any]:
    """``NoiseScalePPO`` keyword arguments of one agent: this benchmark's PPO protocol, or ``--regime``'s settings as
    ``rl-gns train`` derives them (``apply_regime``, then ``ppo_kwargs``)."""
    if args.regime is None:
        rollout_size = n_envs * args.n_steps
        return {"n_steps": args.n_steps, "batch_size": rollout_size // args.n_minibatches, "n_epochs": args.n_epochs,
                "learning_rate": learning_rate, "seed": seed, "device": args.device}  # fmt: skip
    given = {"env", "backend", "n_envs", "learning_rate", "seed", "device", "regime"}
    config = TrainConfig(env=args.env, backend=args.backend, n_envs=n_envs, learning_rate=learning_rate, seed=seed,
                         device=args.device, regime=args.regime)  # fmt: skip
    return ppo_kwargs(apply_regime(config, given))


def agents(args: Args, n_envs: int) -> list[NoiseScalePPO]:
    """The slice's agents at ``n_envs``: every (learning rate, seed), each with its own envs, reset once."""
    built = [
        NoiseScalePPO(
            "MlpPolicy" if args.backend == "ram" else "CnnPolicy",
            make_atari_vec_env(args.env, n_envs, seed, backend=args.backend),
            **agent_settings(args, n_envs, lr, seed),
        )
        for lr in args.learning_rates
        for seed in range(args.seeds)
    ]
    for agent in built:
        agent.env.reset()  # type: ignore[union-attr]  # the ROM loads (untimed); learn() resets again
    return built


def main(args: Args) -> None:
    th.set_num_threads(args.torch_threads)
    rows = []
    for n_envs in args.n_envs:
        lone_agents = agents(args, n_envs)
        rollout_size = lone_agents[0].n_steps * n_envs
        steps = math.ceil(args.agent_steps / rollout_size) * rollout_size
        start = time.perf_counter()
        for agent in lone_agents:
            agent.learn(steps)
        lone_s = time.perf_counter() - start
        assert all(agent.num_timesteps == steps for agent in lone_agents)
        del lone_agents  # their envs closed with them: the population is not timed beside idle emulators
        members = agents(args, n_envs)
        start = time.perf_counter()
        Population(members).learn([steps] * len(members), [None] * len(members))
        population_s = time.perf_counter() - start
        total = steps * len(members)
        assert all(agent.num_timesteps == steps for agent in members)
        ceiling_rate = ceiling(args.env, n_envs * len(members), args.backend, 0, args.ceiling_seconds, 0)
        row = {
            "n_envs": n_envs,
            "agents": len(members),
            "agent_steps": total,
            "lone_steps_per_s": total / lone_s,
            "population_steps_per_s": total / population_s,
            "ceiling_steps_per_s": ceiling_rate,
        }
        rows.append(row)
        print(
            f"n_envs {n_envs:3d} x {len(members)} agents: lone {row['lone_steps_per_s']:6.0f} "
            f"({row['lone_steps_per_s'] / ceiling_rate:4.0%} of the ceiling), population {row['population_steps_per_s']:6.0f} "
            f"({row['population_steps_per_s'] / ceiling_rate:4.0%}), ceiling {ceiling_rate:6.0f} agent steps/s; "
            f"speed-up {lone_s / population_s:.2f}x",
            flush=True,
        )
        if args.out is not None:
            lone_total = sum(r["agent_steps"] / r["lone_steps_per_s"] for r in rows)
            population_total = sum(r["agent_steps"] / r["population_steps_per_s"] for r in rows)
            record = {
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {"platform": platform.platform(), "processor": platform.processor(), "cores": os.cpu_count()},
                "torch": th.__version__,
                "device": th.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
                "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
                "rows": rows,
                "slice_speedup": lone_total / population_total,
            }
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
