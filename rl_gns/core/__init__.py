"""The core library. The maths (``noise_scale``, ``tradeoff``, ``targets``, ``advice``, ``throughput``, ``batching``,
``names``) and the engines' settings (``settings``) import numpy and scipy alone; the measurement and the agents
(``measure``, ``ppo``, ``adaptive``, ``distributed``, ``policies``, ``defaults``) stand on torch and
Stable-Baselines3; ``atari`` holds the envs. Imports nothing else of rl-gns; writes no files beyond SB3's own."""
