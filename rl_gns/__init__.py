"""rl-gns: the gradient noise scale for reinforcement learning (PPO on vectorized Atari)."""

from rl_gns.atari import AtariVecEnv, UnknownGameError, make_atari_vec_env, resolve_game
from rl_gns.noise_scale import NoiseScaleEMA, b_simple, g2_and_trace
from rl_gns.ppo import NoiseScaleConfig, NoiseScalePPO

__version__ = "0.1.0"

__all__ = [
    "AtariVecEnv",
    "NoiseScaleConfig",
    "NoiseScaleEMA",
    "NoiseScalePPO",
    "UnknownGameError",
    "b_simple",
    "g2_and_trace",
    "make_atari_vec_env",
    "resolve_game",
]
