"""Throughput of PPO on Atari: agent steps per second end to end, its rollout/update split, peak memory.

Shared by ``benchmarks/speed.py`` (rl-gns against plain Stable-Baselines3) and ``rl-gns scaling``
(how throughput grows with ``n_envs``). Times are wall-clock seconds; steps are agent steps
(1 agent step = 4 emulator frames).
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv


@dataclass
class PhaseTimes:
    """Wall time spent in each phase of PPO iterations, in seconds."""

    rollout_s: float = 0.0
    """In ``collect_rollouts``: env steps, policy inference, buffer writes, GAE."""
    update_s: float = 0.0
    """In ``train``: the PPO update (and, for rl-gns, its noise-scale measurement)."""
    iterations: int = 0
    """PPO iterations (``train`` calls) counted."""


def time_phases(model: OnPolicyAlgorithm) -> PhaseTimes:
    """Time ``model``'s rollouts and updates from now on, without changing what they do.

    Wraps the instance's ``collect_rollouts`` and ``train`` (works for plain SB3 PPO as well as
    :class:`rl_gns.NoiseScalePPO`); the returned :class:`PhaseTimes` accumulates.

    :param model: an on-policy SB3 algorithm.
    :return: the accumulator, updated in place by every later rollout and update.
    """
    times = PhaseTimes()
    collect_rollouts, train = model.collect_rollouts, model.train

    def timed_collect_rollouts(*args: Any, **kwargs: Any) -> bool:
        start = time.perf_counter()
        try:
            return collect_rollouts(*args, **kwargs)
        finally:
            times.rollout_s += time.perf_counter() - start

    def timed_train() -> None:
        start = time.perf_counter()
        train()
        times.update_s += time.perf_counter() - start
        times.iterations += 1

    model.collect_rollouts = timed_collect_rollouts  # type: ignore[method-assign]
    model.train = timed_train  # type: ignore[method-assign]
    return times


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def env_steps_per_s(env: VecEnv, n_steps: int, seed: int = 0) -> float:
    """Env-only throughput: step ``env`` with uniformly random actions, no policy.

    :param env: a vectorized env with a discrete action space (reset here).
    :param n_steps: steps of the whole vector (each is ``env.num_envs`` agent steps).
    :param seed: seed of the random actions.
    :return: agent steps per second.
    """
    rng = np.random.default_rng(seed)
    env.reset()
    actions = rng.integers(0, env.action_space.n, size=(n_steps, env.num_envs))  # type: ignore[attr-defined]
    start = time.perf_counter()
    for step_actions in actions:
        env.step(step_actions)
    return n_steps * env.num_envs / (time.perf_counter() - start)
