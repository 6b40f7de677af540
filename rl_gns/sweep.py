"""``rl-gns sweep``: train at many rollout sizes (env counts), seeds and learning rates.

Stage one of three (sweep -> analyze -> report), talking through files: each run is a
``rl-gns train`` run directory under ``<out>/runs/`` whose ``summary.json`` (written last) marks
it finished. Rerunning the same command skips finished runs and restarts unfinished ones; a
failing run is reported in ``<out>/runs/<run>/error.txt`` and does not stop the others.

Each run is a separate process (``python -m rl_gns.sweep <spec.json>``), launched by a local pool
of ``workers`` or, with ``--backend ray``, as Ray tasks on a running cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

from tqdm import tqdm

from rl_gns.ppo import NoiseScaleConfig
from rl_gns.targets import DEFAULT_WINDOW
from rl_gns.train import TrainConfig
from rl_gns.train import check as check_run


@dataclass
class ExecutionConfig:
    """Where the runs of a sweep or a benchmark execute: one process per run, a local pool or Ray tasks."""

    executor: Literal["local", "ray"] = "local"
    """local: a pool of processes on this machine; ray: Ray tasks on the cluster at --ray-address."""
    workers: int | None = None
    """Runs at once for the local executor (default: CPU cores // threads_per_run)."""
    threads_per_run: int = 1
    """Torch threads (and Ray CPUs) per run."""
    ray_address: str | None = None
    """Address of a running Ray cluster (e.g. ray://head:10001 or auto); default: start a local Ray instance.
    --out must be at the same path on every node (a shared filesystem)."""
    device: str = "cpu"
    """Torch device of every run."""


@dataclass
class SweepConfig(ExecutionConfig):
    """Train PPO at several env counts, learning rates and seeds, each run until the highest target or its budget."""

    env: str = "BeamRider"
    """Atari game."""
    targets: tuple[float, ...] = (600.0, 800.0, 1000.0)
    """Target scores (mean raw score of the last --window games); runs stop at the highest."""
    n_envs: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    """Env counts; the rollout size is n_envs * n_steps agent steps."""
    seeds: int = 2
    """Seeds per (env count, learning rate): 0 .. seeds-1."""
    out: Path = Path("sweeps/beam")
    """Sweep directory (sweep.json, specs/, runs/<run>/)."""
    budget_steps: int = 5_000_000
    """Budget per run in agent steps, if the highest target is not reached first."""
    backend: Literal["ale_vector", "sb3", "ram"] = "ale_vector"
    """Environment backend of every run (ram: RAM observations + MLP policy, cheap on a CPU)."""

    # PPO: n_steps, minibatches per epoch and epochs fixed; both batch sizes scale with n_envs
    n_steps: int = 128
    """Agent steps per env per rollout."""
    n_minibatches: int = 4
    """M, minibatches per epoch: minibatch_size = rollout_size / M."""
    n_epochs: int = 4
    """Passes over each rollout."""
    clip_range: float = 0.1
    """PPO ratio clip (constant: no annealing in sweeps, so runs do not depend on their budget)."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""

    # Learning-rate grid, re-tuned at every rollout size
    lr_ref: float = 2.5e-4
    """Adam step size at n_envs_ref envs (rl-zoo3 Atari)."""
    n_envs_ref: int = 8
    """Env count at which lr_ref applies."""
    lr_rule: Literal["sqrt", "linear", "constant"] = "sqrt"
    """Grid centre: lr_ref * (n_envs / n_envs_ref)^p with p = 0.5 (Adam's square-root rule), 1 or 0."""
    lr_points: int = 3
    """Learning rates per rollout size, spaced by lr_factor around the centre."""
    lr_factor: float = 2.0
    """Ratio between neighbouring learning rates of the grid."""

    window: int = DEFAULT_WINDOW
    """Games averaged by the score measure (the same at every size)."""
    gns_every: int = NoiseScaleConfig.every
    """Measure the noise scale every k PPO iterations."""
    gns_scheme: tuple[Literal["minibatch", "envs"], ...] = NoiseScaleConfig.schemes
    """Noise-scale schemes of every run (envs: big batch = the whole rollout, the most samples per measurement)."""
    gns_losses: tuple[Literal["policy", "value", "total"], ...] = NoiseScaleConfig.losses
    """Losses whose noise scale is measured."""

    def learning_rates(self, n_envs: int) -> list[float]:
        """The grid at one env count: centre * lr_factor^k for k symmetric around 0."""
        power = {"sqrt": 0.5, "linear": 1.0, "constant": 0.0}[self.lr_rule]
        centre = self.lr_ref * (n_envs / self.n_envs_ref) ** power
        offsets = [k - (self.lr_points - 1) / 2 for k in range(self.lr_points)]
        return [float(f"{centre * self.lr_factor**k:.3g}") for k in offsets]

    def runs(self) -> dict[str, TrainConfig]:
        """Every run of the sweep, by run name."""
        specs = {}
        for n_envs in self.n_envs:
            rollout_size = n_envs * self.n_steps
            if rollout_size % self.n_minibatches:
                raise ValueError(
                    f"rollout size {rollout_size} ({n_envs} envs) does not split into {self.n_minibatches} minibatches"
                )
            for lr in self.learning_rates(n_envs):
                for seed in range(self.seeds):
                    name = f"n{n_envs:04d}_lr{lr:.2e}_s{seed}"
                    specs[name] = TrainConfig(
                        env=self.env,
                        n_envs=n_envs,
                        total_steps=self.budget_steps,
                        out=self.out / "runs" / name,
                        overwrite=True,
                        seed=seed,
                        device=self.device,
                        n_steps=self.n_steps,
                        minibatch_size=rollout_size // self.n_minibatches,
                        n_epochs=self.n_epochs,
                        learning_rate=lr,
                        clip_range=self.clip_range,
                        anneal=False,
                        ent_coef=self.ent_coef,
                        backend=self.backend,
                        gns_scheme=self.gns_scheme,
                        gns_every=self.gns_every,
                        gns_losses=self.gns_losses,
                        stop_score=max(self.targets),
                        score_window=self.window,
                        torch_threads=self.threads_per_run,
                        progress_bar=False,
                    )
        return specs


def is_finished(run_dir: Path) -> bool:
    """A run is finished once its ``summary.json`` exists (written last by ``rl-gns train``)."""
    return (run_dir / "summary.json").exists()


#: Settings that say how a sweep executes, not what it trains: they may change when a sweep is resumed.
EXECUTION_FIELDS = ("executor", "workers", "threads_per_run", "ray_address")


def settings(config: SweepConfig) -> dict:
    """The sweep's settings as JSON values (what ``sweep.json`` records)."""
    return json.loads(json.dumps(asdict(config), default=str))


def check_same_settings(record: Path, now: dict, ignore: tuple[str, ...]) -> None:
    """Refuse to reuse a directory whose ``record`` (``sweep.json``, ``bench.json``) holds other settings.

    :param record: the JSON settings file written by the first run of the command in that directory.
    :param now: the settings of this invocation, as JSON values.
    :param ignore: keys that may differ (how runs execute, not what they train).
    :raises ValueError: naming the keys that differ.
    """
    if not record.exists():
        return
    before = json.loads(record.read_text())
    changed = sorted(k for k in now if k not in ignore and before.get(k) != now[k])
    if changed:
        raise ValueError(f"{record.parent} holds runs with other settings ({', '.join(changed)}); use another --out")


def check(config: SweepConfig) -> None:
    """Validate the sweep without writing anything (raises ``ValueError`` with the reason)."""
    if not config.targets or not config.n_envs or config.seeds < 1 or config.lr_points < 1:
        raise ValueError("a sweep needs targets, n_envs, seeds >= 1 and lr_points >= 1")
    check_same_settings(config.out / "sweep.json", settings(config), EXECUTION_FIELDS)
    for spec in config.runs().values():
        check_run(spec)


def _write_spec(path: Path, spec: TrainConfig) -> None:
    data = {f.name: getattr(spec, f.name) for f in fields(spec)}
    data["out"] = str(spec.out)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _read_spec(path: Path) -> TrainConfig:
    data = json.loads(Path(path).read_text())
    data["out"] = Path(data["out"])
    data["gns_losses"] = tuple(data["gns_losses"])
    data["gns_scheme"] = tuple(data["gns_scheme"])
    return TrainConfig(**data)


def run_spec(spec_path: str | Path, log_path: str | Path) -> int:
    """Run one spec in a child process, output to ``log_path``; returns its exit status."""
    with open(log_path, "w") as log:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        return subprocess.run(
            [sys.executable, "-m", "rl_gns.sweep", str(spec_path)], stdout=log, stderr=log, env=env
        ).returncode


def _record_outcome(run_dir: Path, returncode: int, log_path: Path) -> str:
    if returncode == 0 and is_finished(run_dir):
        return "done"
    tail = log_path.read_text().splitlines()[-30:] if log_path.exists() else []
    (run_dir / "error.txt").write_text(f"exit status {returncode}\n" + "\n".join(tail) + "\n")
    return "failed"


def run_all(
    out: Path,
    specs: dict[str, TrainConfig],
    executor: Literal["local", "ray"] = "local",
    workers: int | None = None,
    threads_per_run: int = 1,
    ray_address: str | None = None,
    label: str = "sweep",
) -> dict[str, str]:
    """Run every unfinished run of ``specs``, each in its own process; return ``{run name: "done" | "skipped" | "failed"}``.

    Finished runs (with ``summary.json``) are skipped, unfinished ones restart from scratch, and a failing
    run leaves ``error.txt`` in its directory without stopping the others.

    :param out: directory of the spec files (``<out>/specs/<run>.json``); each run writes to its ``spec.out``.
    :param specs: the runs, by name.
    :param executor: ``local``: a pool of ``workers`` processes; ``ray``: Ray tasks of ``threads_per_run`` CPUs.
    :param workers: runs at once for the local executor (default: CPU cores // threads_per_run).
    :param threads_per_run: Ray CPUs per run.
    :param ray_address: a running Ray cluster; ``None`` starts a local Ray instance.
    :param label: what the progress lines call the collection of runs (``sweep``, ``bench``).
    """
    (out / "specs").mkdir(parents=True, exist_ok=True)
    outcome = {name: "skipped" for name, spec in specs.items() if is_finished(spec.out)}
    todo = [name for name in specs if name not in outcome]
    for name in todo:  # unfinished runs restart from scratch
        shutil.rmtree(specs[name].out, ignore_errors=True)
        specs[name].out.mkdir(parents=True)
        _write_spec(out / "specs" / f"{name}.json", specs[name])
    print(f"{label} {out}: {len(specs)} runs, {len(outcome)} finished before, {len(todo)} to run", flush=True)

    def paths(name: str) -> tuple[Path, Path]:
        return out / "specs" / f"{name}.json", specs[name].out / "log.txt"

    bar = tqdm(total=len(todo), desc="runs", unit="run", disable=not todo)
    if executor == "local":
        n_workers = workers or max(1, (os.cpu_count() or 1) // threads_per_run)
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            futures = {pool.submit(run_spec, *paths(name)): name for name in todo}
            for future in as_completed(futures):
                name = futures[future]
                outcome[name] = _record_outcome(specs[name].out, future.result(), paths(name)[1])
                bar.set_postfix_str(f"{name}: {outcome[name]}")
                bar.update()
    else:
        import ray

        ray.init(address=ray_address, ignore_reinit_error=True, log_to_driver=False)
        remote_run = ray.remote(num_cpus=threads_per_run)(run_spec)
        refs = {remote_run.remote(*map(str, paths(name))): name for name in todo}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            name = refs[ready[0]]
            outcome[name] = _record_outcome(specs[name].out, ray.get(ready[0]), paths(name)[1])
            bar.set_postfix_str(f"{name}: {outcome[name]}")
            bar.update()
    bar.close()
    failed = sorted(name for name, status in outcome.items() if status == "failed")
    print(f"{label} {out}: {sum(s != 'failed' for s in outcome.values())}/{len(specs)} finished", flush=True)
    for name in failed:
        print(f"  failed: {name} (see {specs[name].out / 'error.txt'})", flush=True)
    return outcome


def sweep(config: SweepConfig) -> dict[str, str]:
    """Run every unfinished run of the sweep; return ``{run name: "done" | "skipped" | "failed"}``."""
    check(config)
    specs = config.runs()
    (config.out / "runs").mkdir(parents=True, exist_ok=True)
    sweep_record = {**settings(config), "runs": sorted(specs)}
    (config.out / "sweep.json").write_text(json.dumps(sweep_record, indent=2) + "\n")
    return run_all(
        config.out, specs, config.executor, config.workers, config.threads_per_run, config.ray_address, label="sweep"
    )


if __name__ == "__main__":  # one run of a sweep: python -m rl_gns.sweep <spec.json>
    from rl_gns.train import train

    train(_read_spec(sys.argv[1]))
