"""The training engines, on torch and Stable-Baselines3: ``NoiseScalePPO`` (``ppo``) and its measurement at fixed
parameters (``measure``, the PPO loss in ``ppo_loss``), its policy (``policies``) and rl-zoo3 defaults
(``defaults``); the adaptive (``adaptive``) and data-parallel (``distributed``) agents; and the population engine that
trains many agents as one (``population``, ``population_measure``, ``population_optim``, ``population_policy``)."""
