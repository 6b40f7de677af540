"""rl-gns: the gradient noise scale for reinforcement learning (PPO on vectorized Atari).

Layers, each importing only those below it:

- :mod:`rl_gns.core`: the maths (estimator, intervals, tradeoff, targets, advice, throughput, sizes and log names:
  numpy and scipy alone), the measurement and the agents (``NoiseScalePPO`` on torch and SB3), and the Atari envs;
- :mod:`rl_gns.testing`: exact ground truth for the estimator (a tabular MDP), on the core;
- :mod:`rl_gns.records`: the run-directory schema and the shipped data tables (the only file formats);
- :mod:`rl_gns.experiments`: commands that *write* run directories (train, sweep, bench, scaling);
- :mod:`rl_gns.reports`: commands that only *read* them (plots, sweep analysis, benchmark, scaling and
  adaptive reports);
- :mod:`rl_gns.cli`: the ``rl-gns`` command on top.

The names below load their modules on first use, so that ``import rl_gns.core.maths.noise_scale`` does not load torch.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rl_gns.core.agents.ppo import NoiseScaleConfig, NoiseScalePPO
    from rl_gns.core.envs.atari import AtariVecEnv, UnknownGameError, make_atari_vec_env, resolve_game
    from rl_gns.core.maths.noise_scale import NoiseScaleEMA, NoiseSums, b_simple, g2_and_trace

__version__ = version("rl-gns")

#: public name -> the module that defines it
_PUBLIC = {
    "AtariVecEnv": "rl_gns.core.envs.atari",
    "UnknownGameError": "rl_gns.core.envs.atari",
    "make_atari_vec_env": "rl_gns.core.envs.atari",
    "resolve_game": "rl_gns.core.envs.atari",
    "NoiseScaleEMA": "rl_gns.core.maths.noise_scale",
    "NoiseSums": "rl_gns.core.maths.noise_scale",
    "b_simple": "rl_gns.core.maths.noise_scale",
    "g2_and_trace": "rl_gns.core.maths.noise_scale",
    "NoiseScaleConfig": "rl_gns.core.agents.ppo",
    "NoiseScalePPO": "rl_gns.core.agents.ppo",
}

__all__ = [
    "AtariVecEnv",
    "NoiseScaleConfig",
    "NoiseScaleEMA",
    "NoiseScalePPO",
    "NoiseSums",
    "UnknownGameError",
    "b_simple",
    "g2_and_trace",
    "make_atari_vec_env",
    "resolve_game",
]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'rl_gns' has no attribute {name!r}")
