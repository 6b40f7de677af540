"""K members' pixel vector envs stepped one after the other against stepped at once, with random actions.

A population steps each member's own ale-py vector env (``ale_vector``, ``n_envs`` emulators, ``--num-threads``
threads each). ``step_async`` starts an env's emulator threads and ``step_wait`` waits for them, so starting every
member's env before waiting for any lets K envs use K × threads cores, where stepping each in turn (``step``) uses
one env's threads at a time. No policy, no learning: the emulators alone.

    python benchmarks/concurrent_envs.py --members 2 --n-envs 8 --num-threads 1 \
        --out results/benchmarks/concurrent_envs_cpu.json
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import tyro

from rl_gns import make_atari_vec_env


@dataclass
class Args:
    """Agent steps/s of K pixel vector envs stepped in turn and at once."""

    env: str = "BeamRider"
    """Atari game."""
    members: int = 2
    """K, the vector envs (one per population member)."""
    n_envs: int = 8
    """Emulators per vector env."""
    num_threads: int = 1
    """Emulator threads per vector env."""
    steps: int = 500
    """Timed steps of every env, per mode."""
    out: Path | None = None
    """JSON record (default: print only)."""


def rate(args: Args, at_once: bool) -> float:
    """Agent steps/s of ``members`` envs stepped ``steps`` times, at once or in turn (after 20 untimed steps)."""
    envs = [make_atari_vec_env(args.env, args.n_envs, seed, num_threads=args.num_threads) for seed in range(args.members)]
    rng = np.random.default_rng(0)
    n_actions = int(envs[0].action_space.n)  # type: ignore[attr-defined]
    for env in envs:
        env.reset()
    start = 0.0
    for step in range(20 + args.steps):
        if step == 20:
            start = time.perf_counter()
        actions = [rng.integers(n_actions, size=args.n_envs) for _ in envs]
        if at_once:
            for env, a in zip(envs, actions, strict=True):
                env.step_async(a)
            for env in envs:
                env.step_wait()
        else:
            for env, a in zip(envs, actions, strict=True):
                env.step(a)
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return args.steps * args.members * args.n_envs / elapsed


def main(args: Args) -> None:
    in_turn, at_once = rate(args, at_once=False), rate(args, at_once=True)
    print(
        f"{args.members} x {args.n_envs} envs: in turn {in_turn:,.0f}, at once {at_once:,.0f} agent steps/s "
        f"({at_once / in_turn:.2f}x)"
    )
    if args.out is not None:
        record = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
            "in_turn_agent_steps_per_s": in_turn,
            "at_once_agent_steps_per_s": at_once,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
