"""Measuring must not change training, nor must rl-gns's speed-ups: parameters after N iterations.

Trains the same agent from the same seed on a real Atari game (rl-zoo3 PPO settings): rl-gns with
every loss measured every iteration, with measurement off, and with NCHW convolutions, and plain SB3
PPO (with torch's default threads and with 1 thread); prints the largest absolute parameter
difference between runs (0.0 = bit-identical) and, relative to how far training moved the parameters,
how far the channels-last default and plain SB3 on 1 thread end from plain SB3. Float rounding that
differs flips a sampled action now and then, after which the runs see different games: they are
different samples of the same training, as plain SB3 itself is across thread counts.

    python benchmarks/determinism.py --env BeamRider --n-envs 8 --iterations 8
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch as th
import tyro
from stable_baselines3 import PPO

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import atari_ppo_kwargs
from rl_gns.core.maths.names import LOSSES


@dataclass
class Args:
    """Compare parameters after training with and without noise-scale measurement."""

    env: str = "BeamRider"
    """Atari game."""
    n_envs: int = 8
    """Parallel environments (n_steps 128, minibatch 256, 4 epochs)."""
    iterations: int = 8
    """PPO iterations per run."""
    seed: int = 0
    """Seed shared by the runs."""
    out: Path = Path(__file__).resolve().parents[1] / Path("results/benchmarks/determinism_cpu.json")
    """Where to write the JSON record."""


def train(args: Args, algo: type[PPO], iterations: int, threads: int | None = None, **kwargs) -> list[th.Tensor]:
    default_threads = th.get_num_threads()
    th.set_num_threads(threads or default_threads)
    env = make_atari_vec_env(args.env, args.n_envs, seed=args.seed)
    model = algo("CnnPolicy", env, seed=args.seed, device="cpu", **atari_ppo_kwargs(anneal=False), **kwargs)
    if iterations:
        model.learn(iterations * args.n_envs * 128)
    th.set_num_threads(default_threads)
    return [p.detach().clone() for p in model.policy.parameters()]


def max_abs_difference(a: list[th.Tensor], b: list[th.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


def main(args: Args) -> dict:
    n = args.iterations
    measuring = NoiseScaleConfig(losses=LOSSES, every=1)
    runs = {
        "measure_every_iteration_all_losses": train(args, NoiseScalePPO, n, noise_scale=measuring),
        "measurement_off": train(args, NoiseScalePPO, n, noise_scale=None),
        "measure_every_iteration_nchw": train(args, NoiseScalePPO, n, noise_scale=measuring, channels_last=False),
        "plain_sb3_ppo": train(args, PPO, n),
        "plain_sb3_ppo_1_thread": train(args, PPO, n, threads=1),
    }
    initial = train(args, PPO, 0)
    reference = runs["measure_every_iteration_all_losses"]
    plain = runs["plain_sb3_ppo"]
    moved = max_abs_difference(plain, initial)
    record = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(args).items()},
        "max_abs_param_difference_vs_measuring": {name: max_abs_difference(reference, p) for name, p in runs.items()},
        "max_abs_param_difference_nchw_vs_plain_sb3": max_abs_difference(runs["measure_every_iteration_nchw"], plain),
        "max_abs_param_change_by_training": moved,
        "channels_last_vs_plain_sb3_relative_to_change": max_abs_difference(reference, plain) / moved,
        "plain_sb3_1_thread_vs_default_threads_relative_to_change": max_abs_difference(runs["plain_sb3_ppo_1_thread"], plain)
        / moved,
        "n_parameters": sum(p.numel() for p in reference),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return record


if __name__ == "__main__":
    main(tyro.cli(Args))
