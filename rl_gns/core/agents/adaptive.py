"""Adaptive rollout size: grow ``n_envs`` during training from the measured noise scale.

McCandlish et al. 2018, Appendix D: if one optimiser step is worth ``r`` examples (an exchange
rate, here agent steps per PPO iteration), the cost ``r·S + E`` to a target is least when each step
uses the batch ``B(s) = sqrt(r · B_noise(s))``. In PPO the batch is the rollout, and ``B_noise`` is the
critical rollout size a noise-scale candidate predicts (:mod:`rl_gns.core.maths.advice`): by default ``env_value``,
``B_simple`` of the value loss over groups of whole trajectories, in agent steps; a ``_xM_`` candidate is
``M × B_simple`` of minibatch gradients (``M`` minibatches per epoch). So

    rollout_size(s) = n_envs(s) · n_steps = sqrt(r · B_noise(s))

with ``n_steps``, ``M`` and ``n_epochs`` fixed (the minibatch grows with ``n_envs``) and Adam's
step size following the square-root rule of the sweeps, ``lr(n_envs) = lr_0 · sqrt(n_envs / n_envs_0)``.

``B_simple(s)`` is the average over training so far (``Σ raw trace_sigma / Σ raw g2`` since the
start), the steadiest estimate the measurements give (single estimates are mostly noise; see
README, Limits). It lags a growing noise scale, which only delays growth.

Growing keeps the games in progress where it can. A ``DummyVecEnv`` (the ``ram`` backend) is
extended: its gym envs, with their games, episode counters and ``Monitor``, carry on, and the new envs
are appended with fresh games. Other VecEnvs are replaced and their games in progress abandoned:
ale-py's native ``AtariVectorEnv`` (the ``ale_vector`` backend) holds a fixed set of emulators and
cannot add one, and the ``sb3`` backend's ``VecFrameStack`` keeps frame stacks that a rebuilt wrapper
would lose. Abandoned games never finish, so ``info["episode"]`` and ``episodes.csv`` hold only whole
games either way; their agent steps were trained on and count as experience. ``gns/games_abandoned``
counts them (0 for a ``DummyVecEnv``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.maths.advice import parse_predictor
from rl_gns.core.maths.batching import env_seed
from rl_gns.core.maths.names import N_ENVS_KEY, tracker_key
from rl_gns.core.maths.schemes import Scheme
from rl_gns.core.maths.settings import AdaptiveConfig

#: ``make_env(n_envs, seed) -> VecEnv``: builds the environments of a grown rollout.
EnvFactory = Callable[[int, int | None], VecEnv]


def adaptive_n_envs(b_noise: float, r: float, n_steps: int, n_envs: int, max_n_envs: int) -> int:
    """Env count for the next rollout: ``B = sqrt(r · B_noise)`` (McCandlish et al. 2018, App. D) as envs,
    ``2^round(log2(B / n_steps))``, clipped to ``[n_envs, max_n_envs]``: the rollout only grows.

    :param b_noise: predicted critical rollout size (:attr:`AdaptivePPO.b_noise`), agent steps; NaN or ``<= 0`` (not
        resolved yet) keeps ``n_envs``.
    :param r: exchange rate, agent steps per PPO iteration (> 0).
    :param n_steps: agent steps per env per rollout.
    :param n_envs: current env count (the smallest allowed).
    :param max_n_envs: largest env count allowed.
    :return: the env count, ``n_envs <= result <= max_n_envs``.
    """
    if not r > 0:
        raise ValueError(f"exchange rate r must be > 0, got {r}")
    if not (math.isfinite(b_noise) and b_noise > 0):
        return n_envs
    rollout_size = math.sqrt(r * b_noise)
    power_of_2 = 2 ** round(math.log2(rollout_size / n_steps))
    return max(n_envs, min(max_n_envs, power_of_2))


def scaled_learning_rate(learning_rate: float, n_envs: int, n_envs_0: int) -> float:
    """Adam's square-root rule (Hilton et al.; the sweeps' grid centre): ``lr_0 · sqrt(n_envs / n_envs_0)``
    when both PPO batch sizes scale by ``n_envs / n_envs_0``.

    :param learning_rate: ``lr_0``, the step size at ``n_envs_0`` envs.
    :param n_envs: env count now.
    :param n_envs_0: env count at which ``learning_rate`` applies.
    """
    return learning_rate * math.sqrt(n_envs / n_envs_0)


def extend_dummy_vec_env(env: DummyVecEnv, added: DummyVecEnv) -> DummyVecEnv:
    """One ``DummyVecEnv`` over the gym envs of ``env`` then those of ``added``, the same objects: games in
    progress, episode counters and ``Monitor`` statistics carry on. Neither env is reset; ``env`` must no
    longer be stepped (its gym envs belong to the result).

    :param env: the envs kept, first (indices ``0 .. env.num_envs - 1`` stay theirs).
    :param added: the envs appended, with the same observation and action spaces.
    """
    return DummyVecEnv([partial(_same, gym_env) for gym_env in [*env.envs, *added.envs]])


def _same(gym_env: gym.Env) -> gym.Env:
    """The env itself: ``DummyVecEnv`` builds its envs by calling factories."""
    return gym_env


class AdaptivePPO(NoiseScalePPO):
    """:class:`NoiseScalePPO` whose rollout grows during training by :func:`adaptive_n_envs`.

    After each update it computes the env count for the next rollout from the critical rollout size that
    ``adaptive.predictor`` predicts (its ``B_simple`` averaged since the start). When it grows, it appends new envs built with
    ``make_env`` to a ``DummyVecEnv`` (games in progress continue) or replaces any other VecEnv by
    ``make_env`` (games in progress abandoned), and rebuilds the rollout buffer, the minibatch size
    (``M`` fixed) and the constant learning rate (square-root rule); ``n_steps`` and ``n_epochs`` stay.

    Logged per iteration: ``gns/n_envs`` and ``train/rollout_size`` (of the rollout just trained on),
    ``gns/b_noise`` (the predicted critical rollout size from the average so far, agent steps), ``gns/games_abandoned``.

    :param make_env: ``make_env(n_envs, seed)`` builds a VecEnv of ``n_envs`` games (env ``i`` seeded ``seed + i``);
        not saved: ``AdaptivePPO.load(path, env, make_env=make_env)`` gives it back.
    :param adaptive: the rule's settings (saved with the agent).
    :param args: positional arguments of :class:`NoiseScalePPO`.
    :param kwargs: keyword arguments of :class:`NoiseScalePPO`; ``learning_rate`` must be a constant
        (it applies at the starting ``n_envs``) and ``noise_scale`` must measure the predictor's scheme and loss.
    """

    def __init__(
        self, *args: Any, make_env: EnvFactory | None = None, adaptive: AdaptiveConfig | None = None, **kwargs: Any
    ) -> None:
        if make_env is None or adaptive is None:  # SB3's load: it restores the state and takes make_env as a keyword
            if kwargs.get("_init_setup_model", True):
                raise TypeError("AdaptivePPO needs make_env and adaptive")
            super().__init__(*args, **kwargs)
            return
        self.make_env = make_env
        self.adaptive = adaptive
        self.games_abandoned = 0
        predictor = parse_predictor(adaptive.predictor)
        self.predictor_scheme, self.predictor_loss = predictor.scheme, predictor.loss
        super().__init__(*args, **kwargs)
        measured = self.noise_scale is not None and self.predictor_scheme in self.noise_scale.schemes
        if not measured or self.predictor_loss not in self.noise_scale.losses:  # type: ignore[union-attr]
            raise ValueError(
                f"adaptive rollout size needs the {self.predictor_loss!r} loss measured with scheme {self.predictor_scheme!r}"
            )
        if callable(self.learning_rate):
            raise ValueError("adaptive rollout size needs a constant learning rate (it is rescaled at each growth)")
        self.n_minibatches = self.n_envs * self.n_steps // self.batch_size
        self.units_factor = predictor.times(self.n_epochs, self.n_minibatches)
        self.n_envs_0, self.learning_rate_0 = self.n_envs, float(self.learning_rate)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "make_env"]

    @property
    def b_noise(self) -> float:
        """The predicted critical rollout size from ``B_simple`` averaged over training so far (agent steps), times
        ``M`` for a ``_xM_`` predictor; NaN until resolved."""
        assert self.gns_trackers is not None
        sums = self.gns_trackers[tracker_key(self.predictor_scheme, self.predictor_loss)].sums
        if sums.count < self.adaptive.min_measurements:
            return math.nan
        return self.units_factor * sums.b_simple

    def _record_estimate(self, scheme: Scheme, name: str, g2: float, trace_sigma: float) -> tuple[float, float] | None:
        estimate = super()._record_estimate(scheme, name, g2, trace_sigma)
        if scheme == self.predictor_scheme and name == self.predictor_loss and estimate is not None:
            self.logger.record("gns/b_noise", self.b_noise)
        return estimate

    def train(self) -> None:
        """PPO's update (with measurement), then grow the rollout for the next iteration if the rule says so."""
        self.logger.record(N_ENVS_KEY, self.n_envs)
        self.logger.record("train/rollout_size", self.n_envs * self.n_steps)
        self.logger.record("gns/games_abandoned", self.games_abandoned)
        super().train()
        n_envs = adaptive_n_envs(self.b_noise, self.adaptive.r, self.n_steps, self.n_envs, self.adaptive.max_n_envs)
        if n_envs != self.n_envs:
            self.grow(n_envs)

    def grow(self, n_envs: int) -> None:
        """Continue training with ``n_envs`` envs: more envs (:meth:`_grow_env`), a new rollout buffer,
        minibatch size and learning rate."""
        self._grow_env(n_envs)
        self.batch_size = n_envs * self.n_steps // self.n_minibatches
        self.learning_rate = scaled_learning_rate(self.learning_rate_0, n_envs, self.n_envs_0)
        self._setup_lr_schedule()
        self.rollout_buffer = self.rollout_buffer_class(  # type: ignore[misc]
            self.n_steps,
            self.observation_space,
            self.action_space,
            device=self.device,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            n_envs=n_envs,
            **self.rollout_buffer_kwargs,
        )
        assert self.noise_scale is not None
        self.gns_sizes = self.noise_scale.all_sizes(n_envs, self.n_steps, self.batch_size)

    def _grow_env(self, n_envs: int) -> None:
        """Set ``env``, ``n_envs``, ``_last_obs`` and ``_last_episode_starts`` for ``n_envs`` envs. A ``DummyVecEnv``
        keeps its envs and their games in progress (observations and episode starts as they were) and gains
        ``n_envs - self.n_envs`` new ones; any other VecEnv is closed, its games abandoned (``games_abandoned``),
        and replaced by ``n_envs`` new ones. New envs start new games, seeded ``seed + num_timesteps + i``."""
        assert self.env is not None and self._last_obs is not None and self._last_episode_starts is not None
        seed = None if self.seed is None else env_seed(self.seed, env_steps=self.num_timesteps)  # new games, no replays
        if isinstance(self.env, DummyVecEnv):
            added = self.make_env(n_envs - self.n_envs, seed)
            assert isinstance(added, DummyVecEnv), f"make_env built a {type(added).__name__}, not a DummyVecEnv"
            added_obs = added.reset()
            last_obs = np.concatenate([self._last_obs, added_obs])
            episode_starts = np.concatenate([self._last_episode_starts, np.ones((added.num_envs,), dtype=bool)])
            env: VecEnv = extend_dummy_vec_env(self.env, added)
        else:
            self.env.close()
            self.games_abandoned += self.n_envs
            env = self.make_env(n_envs, seed)
            last_obs = env.reset()  # type: ignore[assignment]
            episode_starts = np.ones((n_envs,), dtype=bool)
        self.n_envs = n_envs  # set_env checks the count against it
        self.set_env(env)  # discards _last_obs
        self._last_obs, self._last_episode_starts = last_obs, episode_starts
