"""K training processes of one configuration at once, sharing the machine's cores and its GPU: aggregate agent steps/s.

How a sweep uses a machine: several independent runs (plain SB3 PPO, or rl-gns with its default measurement) at the
same time, each in its own process with ``cores / K`` torch and emulator threads. Each process builds its agent
(``speed.build``: the same configurations and PPO settings as ``speed.py``) and trains one warm-up iteration; then all
start together (a barrier) and train ``--iterations`` PPO iterations. The aggregate rate is every process's agent
steps over the wall time from the common start to the last process's end.

    python benchmarks/concurrent_runs.py --configs a_sb3 c_default --processes 4 --n-envs 16 --device cuda \
        --out concurrent_runs_gpu.json
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.synchronize import Barrier
from pathlib import Path

import torch as th
import tyro
from speed import build, machine

from rl_gns.core.agents.defaults import RL_ZOO3_ATARI_PPO


@dataclass
class Args:
    """Aggregate agent steps/s of K concurrent training processes."""

    env: str = "BeamRider"
    """Atari game."""
    configs: list[str] = field(default_factory=lambda: ["a_sb3", "c_default"])
    """Configurations of speed.py, one after the other (a_sb3: plain SB3 PPO; c_default: rl-gns, default measurement)."""
    processes: list[int] = field(default_factory=lambda: [4])
    """Process counts K, one after the other."""
    n_envs: int = 16
    """Environments per process."""
    iterations: int = 4
    """Timed PPO iterations per process (each n_envs × 128 agent steps)."""
    device: str = "cpu"
    """Torch device every process uses."""
    out: Path = Path("concurrent_runs.json")
    """JSON record, rewritten after each (configuration, K)."""


def run_one(name: str, args: Args, seed: int, threads: int, barrier: Barrier, queue: mp.Queue) -> None:
    """Build, warm up one iteration, wait for the others, then train and report (start, end) in wall-clock seconds."""
    th.set_num_threads(threads)
    model = build(name, args.env, args.n_envs, seed, args.device, num_threads=threads)
    rollout_size = args.n_envs * RL_ZOO3_ATARI_PPO["n_steps"]
    model.learn(rollout_size)
    barrier.wait()
    start = time.time()
    model.learn(args.iterations * rollout_size, reset_num_timesteps=False)
    queue.put((start, time.time()))


def bench(name: str, processes: int, args: Args) -> dict:
    """Aggregate and per-process agent steps/s of ``processes`` concurrent runs of configuration ``name``."""
    context = mp.get_context("spawn")
    threads = max(1, (os.cpu_count() or 1) // processes)
    barrier, queue = context.Barrier(processes), context.Queue()
    procs = [context.Process(target=run_one, args=(name, args, seed, threads, barrier, queue)) for seed in range(processes)]
    for proc in procs:
        proc.start()
    spans = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    steps = args.iterations * args.n_envs * RL_ZOO3_ATARI_PPO["n_steps"]
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return {
        "configuration": name,
        "processes": processes,
        "threads_per_process": threads,
        "n_envs_per_process": args.n_envs,
        "aggregate_agent_steps_per_s": processes * steps / wall,
        "per_process_agent_steps_per_s": [steps / (end - start) for start, end in spans],
        "wall_s": wall,
    }


def main(args: Args) -> None:
    record = {
        "command": " ".join(["python", *sys.argv]),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(args).items()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "rows": [],
    }
    for processes in args.processes:
        for name in args.configs:
            row = bench(name, processes, args)
            record["rows"].append(row)
            args.out.write_text(json.dumps(record, indent=2) + "\n")
            print(
                f"{name:>10} x {processes} processes, n_envs {args.n_envs} each: "
                f"{row['aggregate_agent_steps_per_s']:8.0f} agent steps/s together",
                flush=True,
            )


if __name__ == "__main__":
    main(tyro.cli(Args))
