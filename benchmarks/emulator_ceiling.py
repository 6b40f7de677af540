"""The emulator ceiling: agent steps/s of the Atari envs alone, stepped with uniformly random actions.

No policy, no learning: the rate a trainer on this machine cannot exceed with these envs. Measured for the
envs rl-gns trains on (``ale_vector``: ale-py's native vector env, all cores by default) and for SB3's reference
stack (``sb3``: ``make_atari_env`` + ``DummyVecEnv``, one core), at each ``n_envs``.

    python benchmarks/emulator_ceiling.py --n-envs 8 64 256 --out results/benchmarks/emulator_ceiling_cpu.json
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import tyro

from rl_gns import make_atari_vec_env

Backend = Literal["ale_vector", "sb3", "ram"]


@dataclass
class Args:
    """Step Atari envs with random actions and report agent steps/s."""

    env: str = "BeamRider"
    """Atari game."""
    n_envs: list[int] = field(default_factory=lambda: [8, 64])
    """Env counts to measure, one after the other."""
    backends: list[Backend] = field(default_factory=lambda: ["ale_vector"])
    """Env stacks to measure."""
    num_threads: int = 0
    """Emulator threads of ale_vector (0: ale-py's choice, one per core)."""
    seconds: float = 10.0
    """Timed stepping per (backend, n_envs), in wall-clock seconds, after one warm-up second."""
    seed: int = 0
    """Seed of the envs and of the random actions."""
    out: Path | None = None
    """JSON record (default: print only)."""


def ceiling(env: str, n_envs: int, backend: Backend, num_threads: int, seconds: float, seed: int) -> float:
    """Agent steps/s of ``n_envs`` envs of ``backend`` stepped with uniformly random actions for ``seconds`` (s)."""
    vec_env = make_atari_vec_env(env, n_envs, seed, backend=backend, num_threads=num_threads)
    rng = np.random.default_rng(seed)
    n_actions = int(vec_env.action_space.n)  # type: ignore[attr-defined]
    vec_env.reset()
    steps, start, timed_from = 0, time.perf_counter(), None
    while True:
        vec_env.step(rng.integers(n_actions, size=n_envs))
        now = time.perf_counter()
        if timed_from is None and now - start >= 1.0:
            timed_from, steps = now, 0
        elif timed_from is not None:
            steps += n_envs
            if now - timed_from >= seconds:
                break
    vec_env.close()
    return steps / (now - timed_from)


def main(args: Args) -> None:
    rows = []
    for backend in args.backends:
        for n_envs in args.n_envs:
            rate = ceiling(args.env, n_envs, backend, args.num_threads, args.seconds, args.seed)
            rows.append({"backend": backend, "n_envs": n_envs, "agent_steps_per_s": rate})
            print(f"{args.env} {backend:>10} n_envs {n_envs:4d}: {rate:9.0f} agent steps/s", flush=True)
    if args.out is not None:
        date = datetime.now(UTC).isoformat(timespec="seconds")
        record = {"date": date, "cores": os.cpu_count(), "env": args.env, "rows": rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
