"""rl-gns against plain Stable-Baselines3 PPO, side by side on one game: agent steps/s, rollout/update split, peak memory.

Configurations (rl-zoo3 Atari PPO settings: n_steps 128, minibatch 256, 4 epochs, same network and
hyperparameters in all):

- ``a_sb3``: plain ``stable_baselines3.PPO`` on ``make_atari_env`` + ``DummyVecEnv`` + ``VecFrameStack(4)``,
  what users run today;
- ``b_off``: ``rl_gns.NoiseScalePPO`` without measurement (native ale-py vector env, channels-last
  convolutions);
- ``c_default``: ``NoiseScalePPO`` with the default measurement (3 losses every 4 iterations);
- ``d_all_every_iteration``: every loss measured every iteration;
- ablations, opt-in: ``b_off_nchw`` (``b_off`` with NCHW convolutions: the native env alone) and
  ``b_off_rollout_1_thread`` (``b_off`` with single-threaded rollout inference).

Each configuration lives in its own worker process (so peak memory is its own); the workers take
turns, one chunk of PPO iterations at a time, in a rotating order, so all see the same machine
conditions. Ratios are of total wall time; the median of per-chunk ratios is robust to a slow spell.
Results are written after each ``n_envs`` (a killed run keeps what finished).

    python benchmarks/speed.py --n-envs 4 8 16 --out results/benchmarks/speed_cpu.json
"""

from __future__ import annotations

import json
import multiprocessing as mp
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path

import ale_py
import numpy as np
import stable_baselines3
import torch as th
import tyro
from stable_baselines3 import PPO

import rl_gns
from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import RL_ZOO3_ATARI_PPO, atari_ppo_kwargs
from rl_gns.core.maths.names import LOSSES
from rl_gns.experiments.timing import peak_rss_mib, time_phases

DEFAULT_CONFIGS = ("a_sb3", "b_off", "c_default", "d_all_every_iteration")
ALL_CONFIGS = (*DEFAULT_CONFIGS, "b_off_nchw", "b_off_rollout_1_thread")


@dataclass
class Args:
    """Benchmark rl-gns against plain SB3 PPO on a real Atari game."""

    env: str = "BeamRider"
    """Atari game."""
    n_envs: list[int] = field(default_factory=lambda: [4, 8, 16])
    """Env counts to benchmark, one after the other."""
    configs: list[str] = field(default_factory=lambda: list(DEFAULT_CONFIGS))
    """Configurations, from a_sb3, b_off, c_default, d_all_every_iteration, b_off_nchw, b_off_rollout_1_thread."""
    chunk_iterations: int = 4
    """PPO iterations per timed chunk (4: one default measurement per chunk)."""
    n_chunks: int = 4
    """Timed chunks per configuration."""
    warmup_iterations: int = 1
    """Untimed iterations per configuration first."""
    seed: int = 0
    """Seed shared by all configurations."""
    device: str = "cpu"
    """Torch device."""
    out: Path = Path(__file__).resolve().parents[1] / Path("results/benchmarks/speed_cpu.json")
    """JSON record, rewritten after each n_envs."""


def build(name: str, env: str, n_envs: int, seed: int, device: str, num_threads: int = 0) -> PPO:
    """The PPO agent of configuration ``name``; ``num_threads`` emulator threads for ale-py's vector env (0: its choice)."""
    if name == "a_sb3":
        sb3_env = make_atari_vec_env(env, n_envs, seed, backend="sb3")
        return PPO("CnnPolicy", sb3_env, seed=seed, device=device, **atari_ppo_kwargs(anneal=False))
    variants = {
        "b_off": {"noise_scale": None},
        "c_default": {"noise_scale": NoiseScaleConfig()},
        "d_all_every_iteration": {"noise_scale": NoiseScaleConfig(losses=LOSSES, every=1)},
        "b_off_nchw": {"noise_scale": None, "channels_last": False},
        "b_off_rollout_1_thread": {"noise_scale": None, "rollout_threads": 1},
    }
    vec_env = make_atari_vec_env(env, n_envs, seed, num_threads=num_threads)
    return NoiseScalePPO("CnnPolicy", vec_env, seed=seed, device=device, **variants[name], **atari_ppo_kwargs(anneal=False))


def worker(conn: Connection, name: str, args: Args, n_envs: int) -> None:
    """Build one configuration, warm it up, then run timed chunks on request."""
    model = build(name, args.env, n_envs, args.seed, args.device)
    rollout_size = n_envs * RL_ZOO3_ATARI_PPO["n_steps"]
    model.learn(args.warmup_iterations * rollout_size)
    times = time_phases(model)
    conn.send("ready")
    while conn.recv() != "stop":
        rollout_before, update_before = times.rollout_s, times.update_s
        wall_start = time.perf_counter()
        model.learn(args.chunk_iterations * rollout_size, reset_num_timesteps=False)
        wall = time.perf_counter() - wall_start
        conn.send({"wall_s": wall, "rollout_s": times.rollout_s - rollout_before, "update_s": times.update_s - update_before})
    conn.send({"peak_rss_mib": peak_rss_mib()})


def bench_n_envs(args: Args, n_envs: int) -> dict:
    """Alternate chunks of every configuration at one env count; return their timings and ratios."""
    context = mp.get_context("spawn")
    conns, procs = {}, {}
    for name in args.configs:
        conns[name], child = context.Pipe()
        procs[name] = context.Process(target=worker, args=(child, name, args, n_envs), daemon=True)
        procs[name].start()
        assert conns[name].recv() == "ready"
    chunks: dict[str, list[dict]] = {name: [] for name in args.configs}
    steps = args.chunk_iterations * n_envs * RL_ZOO3_ATARI_PPO["n_steps"]
    for chunk in range(args.n_chunks):
        order = args.configs[chunk % len(args.configs) :] + args.configs[: chunk % len(args.configs)]
        for name in order:
            conns[name].send("run")
            chunks[name].append(conns[name].recv())
            speed = steps / chunks[name][-1]["wall_s"]
            print(f"n_envs {n_envs} chunk {chunk} {name:>22}: {speed:7.1f} agent steps/s", flush=True)
    peaks = {}
    for name in args.configs:
        conns[name].send("stop")
        peaks[name] = conns[name].recv()["peak_rss_mib"]
        procs[name].join()

    def total(name: str, key: str) -> float:
        return sum(c[key] for c in chunks[name])

    n_steps_total = args.n_chunks * steps
    n_iterations = args.n_chunks * args.chunk_iterations
    summary = {
        name: {
            "agent_steps_per_s": n_steps_total / total(name, "wall_s"),
            "rollout_s_per_iteration": total(name, "rollout_s") / n_iterations,
            "update_s_per_iteration": total(name, "update_s") / n_iterations,
            "rollout_fraction": total(name, "rollout_s") / total(name, "wall_s"),
            "peak_rss_mib": peaks[name],
        }
        for name in args.configs
    }
    ratios = {}
    for base in ("a_sb3", "b_off"):
        if base in args.configs:
            ratios[f"speed_vs_{base}"] = {
                name: total(base, "wall_s") / total(name, "wall_s") for name in args.configs if name != base
            }
            ratios[f"median_chunk_speed_vs_{base}"] = {
                name: float(np.median([b["wall_s"] / c["wall_s"] for b, c in zip(chunks[base], chunks[name], strict=True)]))
                for name in args.configs
                if name != base
            }
    return {"chunks": chunks, "summary": summary, **ratios}


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    return {
        "platform": platform.platform(),
        "cpu": cpu or platform.processor(),
        "cores": mp.cpu_count(),
        "torch_threads": th.get_num_threads(),
        "versions": {
            "rl_gns": rl_gns.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "ale_py": ale_py.__version__,
            "python": platform.python_version(),
        },
    }


def print_table(results: dict) -> None:
    columns = [
        "n_envs",
        "configuration",
        "agent steps/s",
        "rollout s/iter",
        "update s/iter",
        "peak RSS MiB",
        "speed vs a",
        "speed vs b",
    ]
    print("\n| " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for n_envs, result in results.items():
        for name, s in result["summary"].items():
            vs_a = result.get("speed_vs_a_sb3", {}).get(name)
            vs_b = result.get("speed_vs_b_off", {}).get(name)
            print(
                f"| {n_envs} | {name} | {s['agent_steps_per_s']:.1f} | {s['rollout_s_per_iteration']:.2f}"
                f" | {s['update_s_per_iteration']:.2f} | {s['peak_rss_mib']:.0f}"
                f" | {'' if vs_a is None else f'{vs_a:.3f}'} | {'' if vs_b is None else f'{vs_b:.3f}'} |"
            )


def main(args: Args) -> dict:
    unknown = set(args.configs) - set(ALL_CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configurations {sorted(unknown)}: choose from {ALL_CONFIGS}")
    record = {
        "command": " ".join(["python", *sys.argv]),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(args).items()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "ppo_kwargs": atari_ppo_kwargs(anneal=False),
        "results": {},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for n_envs in args.n_envs:
        record["results"][str(n_envs)] = bench_n_envs(args, n_envs)
        args.out.write_text(json.dumps(record, indent=2) + "\n")
    print_table(record["results"])
    return record


if __name__ == "__main__":
    main(tyro.cli(Args))
