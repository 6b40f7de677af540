"""An RL problem whose PPO gradient statistics are known exactly: ground truth for the noise-scale estimator.

Episodes of a fixed length ``H`` in a tiny MDP: the state is ``(t, x)`` with ``x ∈ {0, 1}`` (one-hot
observation of size ``2H``), ``x_0`` uniform, ``x_{t+1} = a_t`` (the action chooses the next state),
reward ``r_t = mean_reward[x_t, a_t] + noise·ε`` with ``ε = ±1`` equally likely, and the episode ends
after ``H`` steps. ``H = 1`` gives i.i.d. steps (one-step episodes). A rollout of ``n_envs`` envs ×
``n_steps`` steps, ``n_steps`` a multiple of ``H``, holds whole episodes only, so its envs, and its
episodes, are independent, and every step's advantage (GAE, as SB3 computes it) and return depend on its
own episode alone.

Enumerating every episode (``2·(2·2)^H`` of them) with its probability gives, at the policy's fixed
parameters and **without** advantage normalisation, for each of PPO's losses (``policy``, ``value``,
``total``; the per-sample gradients come from :func:`rl_gns.core.agents.measure.ppo_loss_terms` on single samples):

- ``G``, the expected gradient of the mean loss of a rollout (every position of an episode alike);
- ``tr Σ_marginal = E|g|² − |G|²`` over one step drawn uniformly from a rollout: the noise random samples see;
- ``tr Σ_env = H · tr Cov(ḡ_episode)``: the per-sample noise of whole-trajectory groups, ``ḡ`` the mean
  gradient of one episode's steps.

With ``normalize_advantage`` the advantages are normalised with their population mean and standard
deviation, the large-batch limit of PPO's per-minibatch normalisation.

The two-batch estimator is then unbiased for ``(|G|², tr Σ_env)`` with whole-trajectory small batches
(scheme ``envs``), while random samples of one rollout of ``N`` samples (scheme ``minibatch``) give in
expectation ``|G|² + (tr Σ_env − tr Σ_marginal)/(N − 1)`` and ``(N tr Σ_marginal − tr Σ_env)/(N − 1)``
(:func:`minibatch_expectation`): the rollout's own deviation from ``G`` counts as signal.

Shape glossary: ``E`` episodes, ``H`` steps per episode, ``P`` parameters.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import RolloutBufferSamples

from rl_gns.core.agents.measure import ppo_loss_terms
from rl_gns.core.maths.names import LOSSES


@dataclass(frozen=True)
class ChainMDP:
    """The problem's settings (see the module docstring).

    :param horizon: ``H``, steps per episode (1: i.i.d. steps).
    :param mean_reward: ``(2, 2)`` mean reward of action ``a`` in state ``x``.
    :param noise: reward noise amplitude (``±noise``, equally likely).
    :param gamma: discount per step.
    :param gae_lambda: GAE λ.
    :param clip_range: PPO's ratio clip (inactive at fixed parameters, where the ratio is 1).
    :param ent_coef: entropy coefficient of the total loss.
    :param vf_coef: value coefficient of the total loss.
    """

    horizon: int = 3
    mean_reward: tuple[tuple[float, float], tuple[float, float]] = ((1.0, 0.0), (0.0, 2.0))
    noise: float = 1.0
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5

    @property
    def observation_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 1.0, (2 * self.horizon,), np.float32)

    @property
    def action_space(self) -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def observation(self, t: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``(..., 2H)`` one-hot observations of states ``(t, x)``."""
        obs = np.zeros((*np.shape(t), 2 * self.horizon), np.float32)
        np.put_along_axis(obs, (2 * np.asarray(t) + np.asarray(x))[..., None], 1.0, axis=-1)
        return obs

    def make_policy(self, seed: int = 0, scale: float = 0.5) -> ActorCriticPolicy:
        """A linear actor-critic (SB3's ``ActorCriticPolicy``, no hidden layers) with random parameters."""
        th.manual_seed(seed)
        policy = ActorCriticPolicy(
            self.observation_space, self.action_space, lambda _: 0.0, net_arch={"pi": [], "vf": []}, ortho_init=False
        )
        with th.no_grad():
            for p in policy.parameters():
                p.normal_(0.0, scale)
        return policy

    def tables(self, policy: ActorCriticPolicy) -> tuple[np.ndarray, np.ndarray]:
        """``(π, V)``: ``(H, 2, 2)`` action probabilities and ``(H, 2)`` values of every state ``(t, x)``."""
        t, x = np.meshgrid(np.arange(self.horizon), np.arange(2), indexing="ij")
        with th.no_grad():
            obs = th.as_tensor(self.observation(t, x).reshape(-1, 2 * self.horizon))
            probs = policy.get_distribution(obs).distribution.probs.numpy()  # type: ignore[union-attr]
            values = policy.predict_values(obs).numpy()
        return probs.reshape(self.horizon, 2, 2), values.reshape(self.horizon, 2)

    def advantages(self, rewards_EH: np.ndarray, values_EH: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """GAE advantages and returns of whole episodes, as SB3's ``RolloutBuffer`` computes them (no bootstrap
        after the last step: the episode ended). ``(E, H)`` each."""
        advantages = np.zeros_like(rewards_EH)
        last = np.zeros(len(rewards_EH))
        for t in reversed(range(self.horizon)):
            next_value = values_EH[:, t + 1] if t + 1 < self.horizon else 0.0
            delta = rewards_EH[:, t] + self.gamma * next_value - values_EH[:, t]
            last = delta + self.gamma * self.gae_lambda * last * (t + 1 < self.horizon)
            advantages[:, t] = last
        return advantages, advantages + values_EH

    def episodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every episode: ``(x_EH, a_EH, eps_EH, prob_E)`` without the policy's probabilities (see :meth:`exact`)."""
        # one row per episode: x_0, then per step a code 0..3 = 2·action + (noise sign > 0)
        codes = np.array(list(itertools.product(range(2), *[range(4)] * self.horizon)))
        actions = codes[:, 1:] // 2
        eps = np.where(codes[:, 1:] % 2, 1.0, -1.0)
        x = np.concatenate([codes[:, :1], actions[:, :-1]], axis=1)  # x_{t+1} = a_t
        return x, actions, eps, np.full(len(codes), 0.5 * 0.5**self.horizon)


class ChainEnv(gym.Env[np.ndarray, np.integer]):
    """:class:`ChainMDP` as a gymnasium env, so that PPO itself can collect rollouts of it.

    Episodes end (``terminated``) after ``H`` steps; a rollout of ``n_steps`` a multiple of ``H`` from a reset
    holds whole episodes only, as :func:`sample_rollout` does.

    :param problem: the MDP.
    """

    def __init__(self, problem: ChainMDP) -> None:
        self.problem = problem
        self.observation_space = problem.observation_space
        self.action_space = problem.action_space
        self._t, self._x = 0, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t, self._x = 0, int(self.np_random.integers(0, 2))
        return self.problem.observation(np.asarray(self._t), np.asarray(self._x)), {}

    def step(self, action: np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        a = int(action)
        reward = self.problem.mean_reward[self._x][a] + self.problem.noise * self.np_random.choice((-1.0, 1.0))
        self._t, self._x = self._t + 1, a
        terminated = self._t == self.problem.horizon
        obs = self.problem.observation(np.asarray(self._t % self.problem.horizon), np.asarray(self._x))
        return obs, float(reward), terminated, False, {}


def per_sample_gradients(policy: ActorCriticPolicy, problem: ChainMDP, samples: RolloutBufferSamples) -> dict[str, np.ndarray]:
    """``{loss: (n, P)}``: the gradient of each loss of PPO on each sample alone (advantages as given)."""
    params = [p for p in policy.parameters() if p.requires_grad]
    out: dict[str, list[np.ndarray]] = {loss: [] for loss in LOSSES}
    for i in range(len(samples.advantages)):
        one = RolloutBufferSamples(*(x[i : i + 1] for x in samples))
        terms = ppo_loss_terms(policy, one, problem.clip_range)
        losses = {
            "policy": terms.policy,
            "value": terms.value,
            "total": terms.policy + problem.ent_coef * terms.entropy + problem.vf_coef * terms.value,
        }
        for loss, value in losses.items():
            grads = th.autograd.grad(value, params, retain_graph=True, allow_unused=True)
            out[loss].append(np.concatenate([(g if g is not None else th.zeros_like(p)).flatten().numpy()
                                             for g, p in zip(grads, params, strict=True)]))  # fmt: skip
    return {loss: np.array(rows) for loss, rows in out.items()}


@dataclass(frozen=True)
class ExactNoise:
    """Exact gradient statistics of one loss (see the module docstring)."""

    g2: float
    """``|G|²``."""
    trace_marginal: float
    """``tr Σ_marginal``, per sample."""
    trace_env: float
    """``tr Σ_env``, per sample."""

    @property
    def b_simple_env(self) -> float:
        return self.trace_env / self.g2


def exact(problem: ChainMDP, policy: ActorCriticPolicy, normalize_advantage: bool = False) -> dict[str, ExactNoise]:
    """Exact ``|G|²``, ``tr Σ_marginal`` and ``tr Σ_env`` of every loss, by enumerating the episodes.

    :param normalize_advantage: normalise the advantages with their population mean and standard deviation
        (over steps drawn uniformly from rollouts): the limit of PPO's per-batch normalisation for large batches.
    """
    probs, values = problem.tables(policy)
    x, a, eps, weight = problem.episodes()
    t = np.broadcast_to(np.arange(problem.horizon), x.shape)
    mean_reward = np.array(problem.mean_reward)
    rewards = mean_reward[x, a] + problem.noise * eps
    weight = weight * np.prod(probs[t, x, a], axis=1)  # the policy's probability of each action sequence
    advantages, returns = problem.advantages(rewards, values[t, x])
    if normalize_advantage:
        mean = weight @ advantages.mean(axis=1)
        std = np.sqrt(weight @ ((advantages - mean) ** 2).mean(axis=1))
        advantages = (advantages - mean) / std
    samples = RolloutBufferSamples(
        th.as_tensor(problem.observation(t, x).reshape(-1, 2 * problem.horizon)),
        th.as_tensor(a.reshape(-1, 1), dtype=th.float32),
        th.as_tensor(values[t, x].reshape(-1), dtype=th.float32),
        th.as_tensor(np.log(probs[t, x, a]).reshape(-1), dtype=th.float32),
        th.as_tensor(advantages.reshape(-1), dtype=th.float32),
        th.as_tensor(returns.reshape(-1), dtype=th.float32),
    )
    result = {}
    for loss, g_nP in per_sample_gradients(policy, problem, samples).items():
        g_EHP = g_nP.reshape(len(weight), problem.horizon, -1).astype(np.float64)
        mean_EP = g_EHP.mean(axis=1)
        G = weight @ mean_EP
        second_moment = weight @ (g_EHP**2).sum(axis=2).mean(axis=1)
        episode_var = weight @ ((mean_EP - G) ** 2).sum(axis=1)
        result[loss] = ExactNoise(float(G @ G), float(second_moment - G @ G), float(problem.horizon * episode_var))
    return result


def minibatch_expectation(noise: ExactNoise, rollout_size: int) -> tuple[float, float]:
    """What the ``minibatch`` scheme estimates on average, ``(E g2, E trace_sigma)``, for rollouts of ``N`` samples:
    ``|G|² + (tr Σ_env − tr Σ_marginal)/(N − 1)`` and ``(N tr Σ_marginal − tr Σ_env)/(N − 1)``."""
    n = rollout_size
    excess = (noise.trace_env - noise.trace_marginal) / (n - 1)
    return noise.g2 + excess, (n * noise.trace_marginal - noise.trace_env) / (n - 1)


def sample_rollout(
    problem: ChainMDP, policy: ActorCriticPolicy, n_envs: int, n_steps: int, rng: np.random.Generator
) -> RolloutBuffer:
    """A rollout of whole episodes in a real SB3 ``RolloutBuffer``, returns and advantages computed by SB3."""
    if n_steps % problem.horizon:
        raise ValueError(f"n_steps ({n_steps}) must be a multiple of the horizon ({problem.horizon})")
    probs, values = problem.tables(policy)
    buffer = RolloutBuffer(n_steps, problem.observation_space, problem.action_space, "cpu", problem.gae_lambda,
                           problem.gamma, n_envs)  # fmt: skip
    mean_reward = np.array(problem.mean_reward)
    x = np.zeros(n_envs, dtype=int)
    for step in range(n_steps):
        t = step % problem.horizon
        if t == 0:
            x = rng.integers(0, 2, n_envs)
        a = (rng.random(n_envs) < probs[t, x, 1]).astype(int)
        reward = mean_reward[x, a] + problem.noise * rng.choice((-1.0, 1.0), n_envs)
        buffer.add(
            problem.observation(np.full(n_envs, t), x),
            a[:, None],
            reward.astype(np.float32),
            np.full(n_envs, t == 0),
            th.as_tensor(values[t, x], dtype=th.float32),
            th.as_tensor(np.log(probs[t, x, a]), dtype=th.float32),
        )
        x = a
    buffer.compute_returns_and_advantage(th.zeros(n_envs), np.ones(n_envs, dtype=bool))
    return buffer
