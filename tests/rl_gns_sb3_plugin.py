"""Pytest plugin: run Stable-Baselines3's own test suite with ``PPO`` rebound to ``rl_gns.NoiseScalePPO``.

The drop-in promise, checked by SB3's tests: ``.ci/run`` downloads the source distribution of the installed
SB3 version and runs its PPO tests with ``PYTHONPATH=tests python -m pytest -p rl_gns_sb3_plugin <sb3 tests>
-k "ppo or PPO"``. SB3's test modules import ``PPO`` when they are collected, after this hook has run.
The rebound class is ``NoiseScalePPO`` under the name ``PPO``, because SB3 writes the class name into
warnings that its tests match ("You are trying to run PPO on the GPU").
"""

import stable_baselines3
import stable_baselines3.ppo

from rl_gns import NoiseScalePPO

PPO = type("PPO", (NoiseScalePPO,), {"__doc__": NoiseScalePPO.__doc__})


def pytest_configure(config) -> None:
    stable_baselines3.PPO = PPO
    stable_baselines3.ppo.PPO = PPO
