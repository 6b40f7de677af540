"""K Stable-Baselines3 actor-critics of one architecture as one network, vmapped over their stacked parameters
(:func:`torch.func.functional_call` + :func:`torch.func.vmap`), and PPO's losses of K members at once.

Shape glossary: ``K`` members, ``N`` samples per member, ``M`` samples per minibatch, ``A`` discrete actions, ``*obs``
one observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn
from torch.func import functional_call, vmap

from rl_gns.core.agents.ppo_loss import clipped_losses


class _LogitsAndValues(nn.Module):
    """An SB3 actor-critic's action logits and values: the part of ``evaluate_actions`` before the distribution, over
    the policy's own modules, each registered once (SB3 registers a shared features extractor under three names).

    :param policy: an actor-critic with a discrete action space.
    """

    def __init__(self, policy: ActorCriticPolicy) -> None:
        super().__init__()
        self.observation_space = policy.observation_space
        self.normalize_images = policy.normalize_images
        self.share_features_extractor = policy.share_features_extractor
        if self.share_features_extractor:
            self.features_extractor = policy.features_extractor
        else:
            self.pi_features_extractor = policy.pi_features_extractor
            self.vf_features_extractor = policy.vf_features_extractor
        self.mlp_extractor = policy.mlp_extractor
        self.action_net = policy.action_net
        self.value_net = policy.value_net

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        features = preprocess_obs(obs, self.observation_space, normalize_images=self.normalize_images)
        if self.share_features_extractor:
            latent_pi, latent_vf = self.mlp_extractor(self.features_extractor(features))
        else:
            latent_pi = self.mlp_extractor.forward_actor(self.pi_features_extractor(features))
            latent_vf = self.mlp_extractor.forward_critic(self.vf_features_extractor(features))
        return self.action_net(latent_pi), self.value_net(latent_vf).flatten()


#: Activations that act on each element alone, so that they apply to ``(K, N, features)`` as to ``(N, features)``.
ELEMENTWISE = (nn.Tanh, nn.ReLU, nn.ELU, nn.LeakyReLU, nn.SiLU, nn.GELU, nn.Sigmoid, nn.Identity)


#: One step of a stacked MLP: a linear layer's parameter names (weight, bias), or an elementwise activation module.
MlpStep = tuple[str, str] | nn.Module


def mlp_steps(heads: _LogitsAndValues) -> tuple[list[MlpStep], list[MlpStep]] | None:
    """The actor's and the critic's steps from a flat observation to the logits and the value, where the actor-critic
    is SB3's MLP (a flatten extractor, ``nn.Sequential`` nets of ``nn.Linear`` and elementwise activations, linear
    heads); ``None`` for any other (a CNN), which :class:`PopulationPolicy` vmaps instead."""
    if len(heads.observation_space.shape or ()) != 1:
        return None
    extractors = (
        [heads.features_extractor]
        if heads.share_features_extractor
        else [heads.pi_features_extractor, heads.vf_features_extractor]
    )
    if any(type(extractor) is not FlattenExtractor for extractor in extractors):
        return None
    names = {id(module): name for name, module in heads.named_modules()}

    def steps(net: nn.Module, head: nn.Module) -> list[MlpStep] | None:
        out: list[MlpStep] = []
        for module in [*(net if isinstance(net, nn.Sequential) else [net]), head]:
            if type(module) is nn.Linear and module.bias is not None:
                out.append((f"{names[id(module)]}.weight", f"{names[id(module)]}.bias"))
            elif type(module) in ELEMENTWISE:
                out.append(module)
            else:
                return None
        return out

    actor = steps(heads.mlp_extractor.policy_net, heads.action_net)
    critic = steps(heads.mlp_extractor.value_net, heads.value_net)
    return None if actor is None or critic is None else (actor, critic)


def stacked_mlp(x: th.Tensor, steps: Sequence[MlpStep], params: dict[str, th.Tensor]) -> th.Tensor:
    """``K`` MLPs on their own inputs: ``x_{l+1}[k] = x_l[k] W_l[k]ᵀ + b_l[k]`` (one ``baddbmm`` per layer) with the
    activations between.

    :param x: ``(K, N, in)`` inputs.
    :param steps: :func:`mlp_steps`' actor or critic.
    :param params: ``{name: (K, *shape)}`` stacked parameters.
    :return: ``(K, N, out)``.
    """
    for step in steps:
        if isinstance(step, tuple):
            weight, bias = params[step[0]], params[step[1]]
            x = th.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
        else:
            x = step(x)
    return x


class PopulationPolicy:
    """K SB3 actor-critics of one architecture evaluated as one network over their stacked parameters: SB3's MLP as
    batched matrix products (:func:`stacked_mlp`), any other network vmapped (``functional_call`` + ``vmap``).

    The parameters are stacked anew at every call (``torch.stack`` is differentiable), so gradients flow to each
    member's own parameters and its own optimiser steps them.

    :param policies: the members' actor-critics: the same class, parameter names and shapes; a discrete action space.
    :raises ValueError: if they differ in architecture or the action space is not discrete.
    """

    def __init__(self, policies: Sequence[ActorCriticPolicy]) -> None:
        if not policies:
            raise ValueError("a population needs at least one member")
        first = policies[0]
        if not isinstance(first.action_space, spaces.Discrete):
            raise ValueError(f"the population trainer supports discrete actions (Atari), got {first.action_space}")
        shapes = [{name: p.shape for name, p in policy.named_parameters()} for policy in policies]
        if any(type(policy) is not type(first) for policy in policies) or any(s != shapes[0] for s in shapes):
            raise ValueError("population members must share one policy class and architecture")
        self.policies = list(policies)
        heads = [_LogitsAndValues(policy) for policy in policies]
        if {id(p) for p in first.parameters()} != {id(p) for p in heads[0].parameters()}:
            raise ValueError(
                f"{type(first).__name__} has parameters outside its features extractor, mlp_extractor, "
                "action_net and value_net: the population trainer cannot batch it"
            )
        self._heads = heads[0]
        self._names = [name for name, _ in self._heads.named_parameters()]
        self._params = [list(member.parameters()) for member in heads]
        self._batched = vmap(self._one_member)
        self._mlp = mlp_steps(self._heads)

    def _one_member(self, params: dict[str, th.Tensor], obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return functional_call(self._heads, params, (obs,))

    @property
    def names(self) -> list[str]:
        """The parameter names of one member, in the order of :meth:`parameters` and :meth:`stacked_parameters`."""
        return self._names

    def parameters(self, k: int) -> list[nn.Parameter]:
        """Member ``k``'s parameters (every parameter of its policy), listed once."""
        return self._params[k]

    @property
    def size(self) -> int:
        """K, the number of members."""
        return len(self.policies)

    def stacked_parameters(self) -> dict[str, th.Tensor]:
        """``{name: (K, *shape)}``: every member's parameters, stacked (differentiable)."""
        return {name: th.stack(tensors) for name, tensors in zip(self._names, zip(*self._params, strict=True), strict=True)}

    def logits_and_values(self, obs: th.Tensor, params: dict[str, th.Tensor] | None = None) -> tuple[th.Tensor, th.Tensor]:
        """Action logits ``(K, N, A)`` and values ``(K, N)`` of each member on its own observations ``(K, N, *obs)``.

        :param params: the members' parameters as :meth:`stacked_parameters` gives them (stacked once for many calls
            at the same parameters, as during a rollout); if unset, stacked now.
        """
        params = self.stacked_parameters() if params is None else params
        if self._mlp is None:
            return self._batched(params, obs)
        features = preprocess_obs(obs, self._heads.observation_space, normalize_images=self._heads.normalize_images)
        assert isinstance(features, th.Tensor)
        actor, critic = self._mlp
        return stacked_mlp(features, actor, params), stacked_mlp(features, critic, params).squeeze(-1)

    def set_training_mode(self, mode: bool) -> None:
        """Put every member in training (``True``) or evaluation mode, as SB3's ``set_training_mode``."""
        for policy in self.policies:
            policy.set_training_mode(mode)


class PPOLosses(NamedTuple):
    """PPO's losses and diagnostics on one minibatch of each member: each ``(K,)``, a mean over the member's ``M``
    samples."""

    policy: th.Tensor
    """Clipped surrogate ``-mean(min(A·r, A·clip(r, 1±ε)))``."""
    value: th.Tensor
    """``mean((returns - V)²)``, ``V`` clipped around the old values by ``ε_vf`` where given."""
    entropy: th.Tensor
    """``-mean(entropy)``."""
    total: th.Tensor
    """``policy + ent_coef · entropy + vf_coef · value``, the loss PPO descends."""
    clip_fraction: th.Tensor
    """Fraction of samples with ``|r - 1| > ε``."""
    approx_kl: th.Tensor
    """``mean((r - 1) - log r)``, SB3's estimate of the KL divergence from the old policy (no gradient)."""


def ppo_losses(
    logits: th.Tensor,
    values: th.Tensor,
    batch: dict[str, th.Tensor],
    eps: th.Tensor,
    eps_vf: th.Tensor | None,
    normalize_advantage: bool,
    ent_coef: float,
    vf_coef: float,
) -> PPOLosses:
    """SB3's PPO losses of K members on their own minibatches, as ``PPO.train`` computes them for one
    (:func:`~rl_gns.core.agents.ppo_loss.clipped_losses` over each member's minibatch).

    :param logits: ``(K, M, A)`` action logits at the current parameters.
    :param values: ``(K, M)`` values at the current parameters.
    :param batch: ``actions``, ``old_log_prob``, ``advantages``, ``old_values``, ``returns``, each ``(K, M)``.
    :param eps: ``(K, 1)`` ratio clip ``ε`` of each member.
    :param eps_vf: ``(K, 1)`` value clip, or ``None`` for none.
    :param normalize_advantage: normalise advantages per member and minibatch, ``(A - mean) / (std + 1e-8)`` (not for
        ``M = 1``, as SB3).
    :param ent_coef: entropy coefficient.
    :param vf_coef: value coefficient.
    """
    distribution = th.distributions.Categorical(logits=logits)
    log_prob = distribution.log_prob(batch["actions"])
    advantages = batch["advantages"]
    if normalize_advantage and advantages.shape[1] > 1:
        advantages = (advantages - advantages.mean(1, keepdim=True)) / (advantages.std(1, keepdim=True) + 1e-8)
    losses = clipped_losses(log_prob, distribution.entropy(), values, batch["old_log_prob"], advantages,
                            batch["old_values"], batch["returns"], eps, eps_vf)  # fmt: skip
    policy, value, entropy, log_ratio, ratio = losses
    with th.no_grad():
        clip_fraction = ((ratio - 1).abs() > eps).float().mean(1)
        approx_kl = ((ratio - 1) - log_ratio).mean(1)
    return PPOLosses(policy, value, entropy, policy + ent_coef * entropy + vf_coef * value, clip_fraction, approx_kl)
