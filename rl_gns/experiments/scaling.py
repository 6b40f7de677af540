"""``rl-gns scaling`` (measure stage): PPO throughput, time split and peak memory against ``n_envs`` and ranks.

One fresh process per ``n_envs`` (so peak memory is its own), or ``D`` fresh ranks of a data-parallel
:class:`~rl_gns.core.agents.distributed.DataParallelPPO` (``--nproc``): env-only throughput with random actions,
then end-to-end :class:`rl_gns.NoiseScalePPO` (default measurement, rl-zoo3 settings with constant
rates) with ``n_steps``, the number of minibatches ``M`` (or the minibatch size) and ``n_epochs`` fixed:
per-iteration rollout and update time (and, on several ranks, the time in gradient all-reduces) and peak memory.
``<out>/settings.json`` records the settings (a directory measured with other settings is refused) and
``<out>/measurements.jsonl`` gets one JSON line per ``(n_envs, nproc)``, appended as each finishes, so a rerun
skips those measured. The report stage
(:mod:`rl_gns.reports.scaling_report`) fits the throughput model and predicts.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch as th
from torch.distributed.elastic.multiprocessing.errors import record

from rl_gns.core.agents.defaults import RL_ZOO3_ATARI_PPO, atari_ppo_kwargs
from rl_gns.core.agents.distributed import DataParallelPPO, gather_objects, rank_and_size
from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.envs.atari import make_atari_vec_env, resolve_game
from rl_gns.core.maths.batching import Batching
from rl_gns.experiments.config import TrainConfig
from rl_gns.experiments.launch import join, launch
from rl_gns.experiments.plan import check_device, check_epochs, check_memory, check_no_repeats
from rl_gns.experiments.runner import check_directory
from rl_gns.experiments.timing import env_steps_per_s, peak_rss_mib, time_phases
from rl_gns.records.lock import RunLock
from rl_gns.records.rundir import write_json
from rl_gns.records.scaling_log import MEASUREMENTS, SETTINGS, append_measurement, read_measurements


@dataclass
class ScalingConfig:
    """Measure PPO throughput against n_envs on this machine.

    With ``--nproc``, each rank steps ``n_envs / nproc`` envs with its share of the cores as torch threads; the
    throughput model is fitted on the one-process measurements (nproc 1). The default 4 timed iterations include one
    default noise-scale measurement (every 4th iteration), so the update time includes its amortised cost.
    """

    env: str = "BeamRider"
    """Atari game."""
    n_envs: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256])
    """Env counts to measure, smallest first."""
    nproc: list[int] = field(default_factory=lambda: [1])
    """Data-parallel ranks at each n_envs (n_envs / nproc envs each; skipped if not dividing); the model uses nproc 1."""
    out: Path = Path("runs/scaling")
    """Directory for settings.json and measurements.jsonl (then scaling.json, report.md, scaling.png)."""
    n_steps: int = RL_ZOO3_ATARI_PPO["n_steps"]
    """Agent steps per env per rollout (fixed)."""
    n_minibatches: int = 4
    """Minibatches per epoch, M, fixed as in a sweep (the minibatch grows with n_envs; rl-zoo3's 256 at 8 envs)."""
    minibatch_size: int | None = None
    """Fix the minibatch instead (rl-zoo3: 256 samples), so M grows with n_envs; overrides --n-minibatches."""
    n_epochs: int = RL_ZOO3_ATARI_PPO["n_epochs"]
    """Passes over each rollout (fixed)."""
    iterations: int = 4
    """Timed PPO iterations per n_envs, after an untimed warm-up (the default 4 include one noise-scale measurement)."""
    env_agent_steps: int = 16384
    """Agent steps of the env-only measurement per n_envs (at least 32 vector steps)."""
    device: str = "cpu"
    """Torch device of the agent."""

    def batching(self, n_envs: int) -> Batching:
        """The batching of the measurement at ``n_envs`` on one process: ``--n-minibatches`` fixed, or
        ``--minibatch-size`` fixed, as :class:`~rl_gns.core.maths.batching.Batching` checks them.

        :raises ValueError: for a count below 1, or minibatches that do not split the rollout.
        """
        if self.minibatch_size is not None:
            return Batching.of_minibatch_size(n_envs, self.n_steps, self.minibatch_size)
        return Batching(n_envs, self.n_steps, self.n_minibatches)

    def settings(self) -> dict:
        """What ``settings.json`` records: what is measured, not which env counts."""
        keys = ("env", "n_steps", "n_minibatches", "minibatch_size", "n_epochs", "iterations", "env_agent_steps", "device")
        return {key: getattr(self, key) for key in keys}


def check(config: ScalingConfig) -> None:
    """Validate settings before anything is written (raises ``ValueError``)."""
    resolve_game(config.env)
    if not config.n_envs or min(config.n_envs) < 1:
        raise ValueError(f"--n-envs must be positive integers, got {config.n_envs}")
    if not config.nproc or min(config.nproc) < 1:
        raise ValueError(f"--nproc must be positive integers, got {config.nproc}")
    check_no_repeats(config, ("n_envs", "nproc"))
    check_device(config.device, max(config.nproc))
    if config.iterations < 1 or config.n_epochs < 1 or config.n_steps < 2:
        raise ValueError("iterations and n_epochs must be >= 1 and n_steps >= 2")
    check_epochs(config.n_epochs)
    if config.env_agent_steps < 1:
        raise ValueError(f"--env-agent-steps must be >= 1, got {config.env_agent_steps}")
    for n_envs in config.n_envs:
        try:
            config.batching(n_envs)
        except ValueError as error:
            raise ValueError(f"--n-envs {n_envs}: {error}") from None
    check_memory(TrainConfig(env=config.env, backend="ale_vector"), config.batching(max(config.n_envs)))
    check_directory(config.out, "scaling measurement", config.settings())


def measure_n_envs(config: ScalingConfig, n_envs: int) -> dict:
    """Env-only and end-to-end throughput, time split and peak memory at one ``n_envs`` (run in a fresh process,
    or on every rank of a fresh process group, each rank with ``n_envs / nproc`` envs; rank 0's times)."""
    rank, n_ranks = rank_and_size()
    n_rank = n_envs // n_ranks
    env = make_atari_vec_env(resolve_game(config.env), n_rank, seed=rank * n_rank)
    env_sps = sum(gather_objects(env_steps_per_s(env, max(32, config.env_agent_steps // n_envs))))  # concurrently
    batching = config.batching(n_envs)
    rollout_size = batching.rollout_size
    ppo_kwargs = {**atari_ppo_kwargs(anneal=False), "n_steps": config.n_steps, "n_epochs": config.n_epochs}
    ppo_kwargs["batch_size"] = batching.minibatch_size
    agent = DataParallelPPO if n_ranks > 1 else NoiseScalePPO
    model = agent("CnnPolicy", env, seed=0, device=config.device, **ppo_kwargs)
    model.learn(rollout_size)  # warm-up iteration
    times = time_phases(model)
    all_reduce_s = getattr(model, "all_reduce_s", 0.0)
    start = time.perf_counter()
    model.learn(config.iterations * rollout_size, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    all_reduce_s = getattr(model, "all_reduce_s", 0.0) - all_reduce_s
    env.close()
    return {
        "n_envs": n_envs,
        "nproc": n_ranks,
        "rollout_size": rollout_size,
        "minibatch_size": ppo_kwargs["batch_size"],
        "env_only_agent_steps_per_s": env_sps,
        "agent_steps_per_s": config.iterations * rollout_size / wall,
        "seconds_per_iteration": wall / config.iterations,
        "rollout_s_per_iteration": times.rollout_s / config.iterations,
        "update_s_per_iteration": times.update_s / config.iterations,
        "all_reduce_s_per_iteration": all_reduce_s / config.iterations,
        "peak_rss_mib": sum(gather_objects(peak_rss_mib())),
    }


@record
def _measure_rank(config: ScalingConfig, n_envs: int) -> dict:
    join(config.device)
    th.set_num_threads(max(1, (os.cpu_count() or 1) // rank_and_size()[1]))
    return measure_n_envs(config, n_envs)


def _measure_child(config: ScalingConfig, n_envs: int, queue: mp.Queue) -> None:
    queue.put(measure_n_envs(config, n_envs))


def measure(config: ScalingConfig) -> list[dict]:
    """Measure every ``(n_envs, nproc)`` not yet in ``measurements.jsonl``, each in fresh processes, appending as it
    goes, holding the directory's lock.

    :raises rl_gns.records.lock.RunLockedError: if another process writes the directory.
    """
    check(config)
    with RunLock(config.out).acquire():
        check_directory(config.out, "scaling measurement", config.settings())  # again, under the lock
        return _measure(config)


def _measure(config: ScalingConfig) -> list[dict]:
    """:func:`measure`, with the directory's lock held."""
    write_json(config.out / SETTINGS, config.settings())
    path = config.out / MEASUREMENTS
    done = {(row["n_envs"], row.get("nproc", 1)) for row in read_measurements(config.out)}
    context = mp.get_context("spawn")
    for n_envs, nproc in ((n, d) for n in config.n_envs for d in config.nproc if n % d == 0):
        if (n_envs, nproc) in done:
            print(f"scaling: n_envs {n_envs}, nproc {nproc} measured before, skipped", flush=True)
            continue
        if nproc > 1:
            row = launch(_measure_rank, nproc, config, n_envs)[0]
        else:
            queue = context.Queue()
            process = context.Process(target=_measure_child, args=(config, n_envs, queue))
            process.start()
            row = queue.get()
            process.join()
        append_measurement(path, row)
        print(
            f"scaling: n_envs {n_envs:>4}, nproc {nproc}: env-only {row['env_only_agent_steps_per_s']:7.0f}, end to end"
            f" {row['agent_steps_per_s']:6.0f} agent steps/s; rollout {row['rollout_s_per_iteration']:.2f} s +"
            f" update {row['update_s_per_iteration']:.2f} s (all-reduce {row['all_reduce_s_per_iteration']:.2f} s) per"
            f" iteration; peak {row['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    return read_measurements(config.out)
