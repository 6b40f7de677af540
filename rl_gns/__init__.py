"""rl-gns: the gradient noise scale for reinforcement learning (PPO on vectorized Atari).

Layers, each importing only those below it:

- :mod:`rl_gns.core`: estimator maths, measurement, ``NoiseScalePPO``, policies, Atari envs, the pure
  tradeoff, target and throughput maths (no file I/O beyond SB3's own);
- :mod:`rl_gns.records`: the run-directory schema and the shipped data tables (the only file formats);
- :mod:`rl_gns.experiments`: commands that *write* run directories (train, sweep, bench, scaling);
- :mod:`rl_gns.reports`: commands that only *read* them (plots, sweep analysis, benchmark, scaling and
  adaptive reports);
- :mod:`rl_gns.cli`: the ``rl-gns`` command on top.
"""

from importlib.metadata import version

from rl_gns.core.atari import AtariVecEnv, UnknownGameError, make_atari_vec_env, resolve_game
from rl_gns.core.noise_scale import NoiseScaleEMA, NoiseSums, b_simple, g2_and_trace
from rl_gns.core.ppo import NoiseScaleConfig, NoiseScalePPO

__version__ = version("rl-gns")

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
