"""Does a population member learn as a lone agent does? Score curves and steps to a target, several seeds.

The same K agents (seeds 0..K-1, one learning rate, RAM, the probe trunks' protocol: 8 envs, ``n_steps`` 32, 4
minibatches, 4 epochs, learning rate 5e-4, clip range 0.1) train twice: each alone (``NoiseScalePPO.learn``) and all
together as one :class:`rl_gns.core.agents.population.Population`. Members draw their actions from one shared generator,
so each plays other games than it would alone: the question is whether the two engines learn alike within the
spread of seeds, not whether they are equal.

Per agent: the running score (mean raw score of the last 20 games) at every multiple of ``--every`` agent steps, and
the agent steps at which it first reaches each target. Written after each engine.

    python benchmarks/population_learning.py --out results/benchmarks/population_learning.json
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch as th
import tyro
from stable_baselines3.common.callbacks import BaseCallback

from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.population import Population


@dataclass
class Args:
    """Train K agents alone and as one population; compare their score curves and steps to targets."""

    env: str = "BeamRider"
    """Atari game (RAM observations)."""
    agents: int = 6
    """K: seeds 0..K-1."""
    agent_steps: int = 100_000
    """Agent steps each agent trains."""
    targets: list[float] = field(default_factory=lambda: [450.0, 500.0, 550.0])
    """Running scores (raw, last 20 games) whose first crossing is recorded, in agent steps."""
    every: int = 10_000
    """Agent steps between points of the score curve."""
    out: Path | None = None
    """JSON record (default: print only)."""


class Scores(BaseCallback):
    """Collects the raw game scores an agent finishes (``info["episode"]``), with the agent steps at each."""

    def __init__(self) -> None:
        super().__init__()
        self.games: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.games.append((self.num_timesteps, float(info["episode"]["r"])))
        return True


def agent(args: Args, seed: int) -> NoiseScalePPO:
    """One agent of the protocol."""
    env = make_atari_vec_env(args.env, 8, seed, backend="ram")
    return NoiseScalePPO(
        "MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=4, learning_rate=5e-4, clip_range=0.1, ent_coef=0.01,
        seed=seed, device="cpu",
    )  # fmt: skip


def summary(args: Args, games: list[tuple[int, float]]) -> dict:
    """The running score (last 20 games) at every ``args.every`` agent steps, and the agent steps at which it first
    reaches each target (``None``: not within the budget)."""
    steps = np.array([s for s, _ in games])
    scores = np.array([r for _, r in games])
    full = np.arange(len(scores)) >= 19  # a running score of 20 games
    running = np.array([scores[max(0, i - 19) : i + 1].mean() for i in range(len(scores))])
    curve = []
    for at in range(args.every, args.agent_steps + 1, args.every):
        seen = steps <= at
        curve.append(float(running[seen][-1]) if seen.any() else None)
    reached = {}
    for target in args.targets:
        crossed = full & (running >= target)
        reached[str(target)] = int(steps[crossed][0]) if crossed.any() else None
    return {"games": len(games), "curve": curve, "steps_to_target": reached}


def main(args: Args) -> None:
    th.set_num_threads(1)
    record: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
    }
    seeds = range(args.agents)
    start = time.perf_counter()
    lone = []
    for seed in seeds:
        scores = Scores()
        agent(args, seed).learn(args.agent_steps, callback=scores)
        lone.append(summary(args, scores.games))
    record["lone"] = {"agents": lone, "wall_s": time.perf_counter() - start}
    start = time.perf_counter()
    members, callbacks = [agent(args, seed) for seed in seeds], [Scores() for _ in seeds]
    Population(members).learn([args.agent_steps] * args.agents, callbacks)
    record["population"] = {"agents": [summary(args, c.games) for c in callbacks], "wall_s": time.perf_counter() - start}
    for engine in ("lone", "population"):
        agents = record[engine]["agents"]
        finals = [a["curve"][-1] for a in agents if a["curve"][-1] is not None]
        reached = {t: [a["steps_to_target"][str(t)] for a in agents] for t in args.targets}
        print(f"{engine:>10}: final running score {np.mean(finals):.1f} (sd {np.std(finals, ddof=1):.1f}, "
              f"{len(finals)} agents); agent steps to each target: {reached}", flush=True)  # fmt: skip
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
