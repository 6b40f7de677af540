"""What making an Atari env costs before its first step, against ale-py's ROM load alone.

For each game: the wall time of ``make_atari_vec_env(..., backend)`` followed by its seeded reset, per env, and the
time of one ``ALEInterface.loadROM`` (which ale-py runs when an env is made and again at every seeded reset; a RAM env
of rl-gns is made with its first reset's seed and loads once: ``rl_gns.core.envs.atari.SeededAtariEnv``). A short run
pays this once per env, so a sweep of many short runs at small sizes pays it many times.

    python benchmarks/env_construction.py --out results/benchmarks/env_construction_cpu.json

Where ``loadROM`` spends its time is a question for a native profiler, e.g.
``perf record -g python benchmarks/env_construction.py --loads 30 --n-envs 1`` and ``perf report --no-children``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import ale_py
import numpy as np
import tyro

from rl_gns import make_atari_vec_env
from rl_gns.core.envs.atari import resolve_game

Backend = Literal["ale_vector", "ram"]


@dataclass
class Args:
    """Time env construction and ROM loads."""

    games: list[str] = field(default_factory=lambda: ["BeamRider", "Seaquest", "SpaceInvaders"])
    """Atari games."""
    n_envs: list[int] = field(default_factory=lambda: [1, 8])
    """Env counts to construct, each as one vector env."""
    backend: Backend = "ram"
    """Env stack that is constructed."""
    loads: int = 5
    """Timed ``loadROM`` calls per game."""
    seed: int = 0
    """Seed of the envs."""
    out: Path | None = None
    """JSON record (default: print only)."""


def construction_seconds(game: str, n_envs: int, backend: Backend, seed: int) -> float:
    """Wall time (s) to make ``n_envs`` envs of ``backend`` (one emulator thread) and reset them with ``seed``."""
    start = time.perf_counter()
    vec_env = make_atari_vec_env(game, n_envs, seed, backend=backend, num_threads=1)
    vec_env.reset()
    seconds = time.perf_counter() - start
    vec_env.close()
    return seconds


def load_rom_seconds(game: str, loads: int) -> list[float]:
    """Wall time (s) of each of ``loads`` seeded ``loadROM`` calls of ``game`` on one ``ALEInterface``."""
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    rom = ale_py.roms.get_rom_path(resolve_game(game))
    assert rom is not None, f"ale-py ships no ROM for {game}"
    ale = ale_py.ALEInterface()
    times = []
    for i in range(loads):
        start = time.perf_counter()
        ale.setInt("random_seed", i)
        ale.loadROM(rom)
        times.append(time.perf_counter() - start)
    return times


def main(args: Args) -> None:
    rows = []
    for game in args.games:
        loads = load_rom_seconds(game, args.loads)
        row: dict[str, object] = {"game": game, "load_rom_s": float(np.median(loads)), "load_rom_all_s": loads}
        print(f"{game}: loadROM {np.median(loads) * 1e3:.0f} ms (median of {args.loads})", flush=True)
        for n_envs in args.n_envs:
            seconds = construction_seconds(game, n_envs, args.backend, args.seed)
            row[f"construct_per_env_s_{n_envs}"] = seconds / n_envs
            per_env_ms = seconds / n_envs * 1e3
            made = f"{n_envs} {args.backend} env(s) made and reset in {seconds:.2f} s"
            print(f"{game}: {made}, {per_env_ms:.0f} ms per env", flush=True)
        rows.append(row)
    if args.out is not None:
        date = datetime.now(UTC).isoformat(timespec="seconds")
        record = {"date": date, "cores": os.cpu_count(), "ale_py": ale_py.__version__, "backend": args.backend, "rows": rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
