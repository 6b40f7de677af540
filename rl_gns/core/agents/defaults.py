"""rl-zoo3's PPO settings for Atari: the one place rl-gns takes its defaults from.

Source: rl-zoo3 ``hyperparams/ppo.yml``, entry ``atari`` (the settings behind its published
``benchmark.md`` scores): 8 envs, ``n_steps`` 128, minibatch 256, 4 epochs, learning rate 2.5e-4 and
clip range 0.1 both decayed linearly to 0 over training, entropy coefficient 0.01, value coefficient
0.5. The remaining values (``gamma``, ``gae_lambda``, ``max_grad_norm``) are SB3's PPO defaults, which
rl-zoo3 keeps for Atari.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from stable_baselines3.common.type_aliases import Schedule

#: rl-zoo3 Atari PPO, in SB3's names (``batch_size`` is the minibatch); rates decay linearly unless stated otherwise.
RL_ZOO3_ATARI_PPO: dict[str, Any] = {
    "n_envs": 8,
    "n_steps": 128,
    "batch_size": 256,
    "n_epochs": 4,
    "learning_rate": 2.5e-4,
    "clip_range": 0.1,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "max_grad_norm": 0.5,
}


def schedule(value: float, anneal: bool) -> float | Schedule:
    """A linear decay from ``value`` to 0 over training (rl-zoo3's ``lin_`` schedules), or the constant ``value``."""
    from stable_baselines3.common.utils import LinearSchedule  # SB3 and torch load with the agent, not the settings

    return LinearSchedule(value, 0.0, 1.0) if anneal else value


def atari_ppo_kwargs(anneal: bool = True) -> dict[str, Any]:
    """Keyword arguments of ``stable_baselines3.PPO`` for rl-zoo3's Atari settings (without ``n_envs``).

    :param anneal: decay the learning rate and clip range linearly to 0 (rl-zoo3); ``False`` keeps them
        constant (what sweeps and timing runs use, so that a run does not depend on its budget).
    """
    kwargs = {key: value for key, value in RL_ZOO3_ATARI_PPO.items() if key != "n_envs"}
    kwargs["learning_rate"] = schedule(kwargs["learning_rate"], anneal)
    kwargs["clip_range"] = schedule(kwargs["clip_range"], anneal)
    return kwargs


#: The optimisers a run may step with: ``adam``, SB3's PPO default (its policy sets Adam's ε to 1e-5); ``rmsprop``,
#: SB3's A2C default (``use_rms_prop=True``: α 0.99, ε 1e-5, no weight decay).
Optimizer = Literal["adam", "rmsprop"]


def optimizer_policy_kwargs(optimizer: Optimizer) -> dict[str, Any]:
    """The ``policy_kwargs`` of an SB3 agent that steps with ``optimizer``: none for Adam (SB3's own choice), SB3
    A2C's for RMSprop."""
    if optimizer == "adam":
        return {}
    if optimizer == "rmsprop":
        import torch as th  # loads with the agent, not the settings

        return {"optimizer_class": th.optim.RMSprop, "optimizer_kwargs": {"alpha": 0.99, "eps": 1e-5, "weight_decay": 0}}
    raise ValueError(f"unknown optimizer {optimizer!r}: use adam or rmsprop")
