"""Cost of noise-scale measurement: end-to-end PPO throughput with measurement on vs off, in one run.

The configurations train the same agent from the same seed (so they do identical environment and
update work), in alternating chunks so that both see the same machine conditions; the ratio of
their total wall times is the overhead, and the median of the per-chunk ratios is robust to slow
spells of a shared machine. Writes a JSON record and prints a table.

    python benchmarks/overhead.py --env BeamRider --n-envs 8 --out benchmarks/results/overhead_cpu.json
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch as th
import tyro

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.measure import LOSSES
from rl_gns.ppo import ATARI_PPO_KWARGS


@dataclass
class Args:
    """Measure the wall-time overhead of noise-scale measurement on a real Atari game."""

    env: str = "BeamRider"
    """Atari game."""
    n_envs: int = 8
    """Parallel environments (rl-zoo3 Atari PPO settings otherwise: n_steps 128, minibatch 256, 4 epochs)."""
    chunk_steps: int = 4096
    """Agent steps per timed chunk of one configuration (4 iterations: one measurement at the default)."""
    n_chunks: int = 12
    """Timed chunks per configuration (alternating between configurations)."""
    warmup_steps: int = 2048
    """Untimed agent steps per configuration first."""
    seed: int = 0
    """Seed shared by all configurations."""
    device: str = "cpu"
    """Torch device."""
    out: Path = Path("benchmarks/results/overhead_cpu.json")
    """Where to write the JSON record."""


CONFIGS: dict[str, NoiseScaleConfig | None] = {
    "off": None,
    "default": NoiseScaleConfig(),
    "all_losses_every_iteration": NoiseScaleConfig(losses=LOSSES, every=1),
}


def main(args: Args) -> dict:
    models = {}
    for name, noise_scale in CONFIGS.items():
        env = make_atari_vec_env(args.env, args.n_envs, seed=args.seed)
        models[name] = NoiseScalePPO(
            "CnnPolicy", env, noise_scale=noise_scale, seed=args.seed, device=args.device, **ATARI_PPO_KWARGS
        )
        models[name].learn(args.warmup_steps)

    seconds = {name: [] for name in CONFIGS}
    for chunk in range(args.n_chunks):
        order = list(CONFIGS)[chunk % len(CONFIGS) :] + list(CONFIGS)[: chunk % len(CONFIGS)]
        for name in order:
            start = time.perf_counter()
            models[name].learn(args.chunk_steps, reset_num_timesteps=False)
            seconds[name].append(time.perf_counter() - start)
            print(f"chunk {chunk} {name:>28}: {args.chunk_steps / seconds[name][-1]:7.1f} agent steps/s", flush=True)

    total_off = sum(seconds["off"])
    per_chunk = {name: np.array(s) / np.array(seconds["off"]) for name, s in seconds.items()}
    record = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(args).items()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": th.get_num_threads(), "device": args.device},
        "configs": {name: (asdict(cfg) if cfg else None) for name, cfg in CONFIGS.items()},
        "seconds": seconds,
        "agent_steps_per_s": {name: args.n_chunks * args.chunk_steps / sum(s) for name, s in seconds.items()},
        "time_ratio_vs_off": {name: sum(s) / total_off for name, s in seconds.items()},
        "median_chunk_time_ratio_vs_off": {name: float(np.median(r)) for name, r in per_chunk.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print("\n| configuration | agent steps/s | wall time / off | median of chunk ratios |\n|---|---|---|---|")
    for name in CONFIGS:
        print(
            f"| {name} | {record['agent_steps_per_s'][name]:.1f} | {record['time_ratio_vs_off'][name]:.3f}"
            f" | {record['median_chunk_time_ratio_vs_off'][name]:.3f} |"
        )
    return record


if __name__ == "__main__":
    main(tyro.cli(Args))
