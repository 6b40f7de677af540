"""A whole sweep with the two engines of ``rl-gns sweep``, side by side, beside the emulator ceiling.

The validation protocol (``n_steps`` 32, 4 minibatches, 4 epochs, clip 0.1, the noise scale measured every iteration
with both schemes and three losses; RAM and the MLP; ``sizes × seeds × learning rates`` runs), each run trained for a
fixed budget (a target no run reaches), through the real CLI:

- ``process``: one process per run (``--engine process``), ``--workers`` at once;
- ``population``: one process per rollout size, its ``seeds × learning rates`` runs trained together
  (``--engine population``), ``--workers`` at once;
- ``baseline``: one process per run, as ``process``, with the ``rl_gns`` of another checkout (``--baseline-checkout``,
  e.g. the code of the day a speed goal was set), so that a change can be timed against the code it improves on;
- ``ceiling``: at each size, ``--workers`` processes at once, each stepping the envs of one population
  (``seeds × learning rates × n_envs``) with uniformly random actions (``emulator_ceiling.py``): the agent steps/s
  that no engine can exceed on this machine.

Per size, an engine's rate is per core: the agent steps of the size's runs over the seconds they trained (from their
``summary.json``; a population's runs share its seconds, and each half of a population split across workers counts
its own). The whole sweep's rate is every agent step over the command's wall time, process starts and imports
included. Run it on an idle machine; rows print as they come.

    python benchmarks/sweep_engines.py --out results/benchmarks/sweep_engines_cpu.json
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import tyro
from emulator_ceiling import ceiling

Engine = Literal["process", "population", "baseline"]


@dataclass
class Args:
    """Wall time and agent steps/s of one sweep with each engine, and the emulator ceiling at each size."""

    env: str = "BeamRider"
    """Atari game (RAM observations)."""
    n_envs: list[int] = field(default_factory=lambda: [2, 4, 8, 16, 32])
    """Env counts of the sweep."""
    seeds: int = 3
    """Seeds per (env count, learning rate)."""
    lr_points: int = 2
    """Learning rates per env count."""
    budget_steps: int = 16384
    """Agent steps every run trains."""
    workers: int = 2
    """Processes at once, for both engines and the ceiling."""
    engines: list[Engine] = field(default_factory=lambda: ["process", "population"])
    """Engines to time, one after the other."""
    baseline_checkout: Path | None = None
    """Another checkout of rl-gns, whose ``rl_gns`` the ``baseline`` engine runs (one process per run)."""
    ceiling_seconds: float = 5.0
    """Timed stepping per size for the ceiling, seconds."""
    out: Path | None = None
    """JSON record (default: print only)."""


def timed_sweep(args: Args, engine: Engine, out: Path) -> dict:
    """Run the sweep with ``engine`` into ``out`` and return its wall time and per-size rates."""
    command = [
        sys.executable, "-m", "rl_gns", "sweep", "--env", args.env, "--backend", "ram", "--n-steps", "32",
        "--n-minibatches", "4", "--n-epochs", "4", "--clip-range", "0.1", "--ent-coef", "0.01", "--lr-ref", "5e-4",
        "--lr-points", str(args.lr_points), "--seeds", str(args.seeds), "--gns-every", "1",
        "--gns-scheme", "minibatch", "envs", "--targets", "1e9", "--budget-steps", str(args.budget_steps),
        "--n-envs", *map(str, args.n_envs), "--workers", str(args.workers), "--out", str(out),
    ]  # fmt: skip
    env, cwd = {**os.environ, "OMP_NUM_THREADS": "1"}, None
    if engine == "baseline":  # the other checkout's code (python -m puts the working directory first on the path)
        if args.baseline_checkout is None:
            raise SystemExit("the baseline engine needs --baseline-checkout")
        cwd = args.baseline_checkout.resolve()
        env["PYTHONPATH"] = str(cwd)
    else:
        command += ["--engine", engine]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    wall_s = time.perf_counter() - start
    # a population's members share its seconds: each job (a process, or a population's log naming its members) counts
    # once, with its longest member's time
    jobs = {path.name: [path.name] for path in (out / "runs").iterdir()}
    for log in (out / "specs").glob("*.population.log"):
        members = re.findall(r"/runs/([^/:\s]+): finished", log.read_text())
        jobs = {name: runs for name, runs in jobs.items() if name not in members} | {log.name: members}
    by_size: dict[int, list[tuple[int, float]]] = {}
    for runs in jobs.values():
        summaries = [json.loads((out / "runs" / name / "summary.json").read_text()) for name in runs]
        steps, seconds = sum(s["env_steps"] for s in summaries), max(s["wall_s"] for s in summaries)
        by_size.setdefault(summaries[0]["n_envs_final"], []).append((steps, seconds))
    sizes = {n_envs: sum(s for s, _ in jobs) / sum(w for _, w in jobs) for n_envs, jobs in sorted(by_size.items())}
    total = sum(s for size_jobs in by_size.values() for s, _ in size_jobs)
    return {"wall_s": wall_s, "agent_steps": total, "agent_steps_per_s": total / wall_s, "per_size": sizes}


def ceiling_at(args: Args, n_envs: int) -> float:
    """Agent steps/s per core of ``workers`` processes each stepping one population's envs at once."""
    k = args.seeds * args.lr_points
    with ProcessPoolExecutor(args.workers) as pool:
        futures = [pool.submit(ceiling, args.env, k * n_envs, "ram", 0, args.ceiling_seconds, i) for i in range(args.workers)]
        rates = [future.result() for future in futures]
    return sum(rates) / len(rates)


def main(args: Args) -> None:
    root = Path(tempfile.mkdtemp(prefix="sweep-engines-"))
    try:
        engines = {}
        for engine in args.engines:
            result = engines[engine] = timed_sweep(args, engine, root / engine)
            print(f"{engine:>10}: {result['wall_s']:.0f} s, {result['agent_steps_per_s']:,.0f} agent steps/s", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for n_envs in args.n_envs:
        row = {"n_envs": n_envs, "ceiling_per_core": ceiling_at(args, n_envs)}
        row.update({f"{engine}_per_core": result["per_size"][n_envs] for engine, result in engines.items()})
        rows.append(row)
        print("  ".join(f"{key} {value:,.0f}" for key, value in row.items()), flush=True)
    whole_ceiling = args.workers * sum(row["ceiling_per_core"] for row in rows) / len(rows)
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cores": os.cpu_count()},
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
        "engines": {engine: {k: v for k, v in result.items() if k != "per_size"} for engine, result in engines.items()},
        "whole_sweep_ceiling_agent_steps_per_s": whole_ceiling,
        "rows": rows,
    }
    if args.baseline_checkout is not None:
        record["baseline_commit"] = subprocess.run(
            ["git", "-C", str(args.baseline_checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    if "population" in engines:
        for engine in (engine for engine in engines if engine != "population"):
            record[f"speedup_over_{engine}"] = engines[engine]["wall_s"] / engines["population"]["wall_s"]
            print(f"whole sweep: {record[f'speedup_over_{engine}']:.2f}x faster with populations than {engine}")
    print(f"ceiling of the whole sweep: {whole_ceiling:,.0f} agent steps/s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
