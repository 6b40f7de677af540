"""A throughput model of PPO on ``n_envs`` environments and ``D`` data-parallel devices (pure maths).

AdaptDL's "goodput" idea (throughput times statistical efficiency), with seconds per PPO iteration::

    rollout_s(n) = n_steps · (α + β·n)                                 α: per vector step, β: per env step
    update_s(n)  = n_epochs · M · γ + δ · n_epochs · n · n_steps       γ: per gradient step, δ: per sample-epoch

With ``D`` data-parallel devices each holding ``n / D`` envs and a ``1 / D`` share of every minibatch (an
ideal all-reduce, so a lower bound on time), ``β·n`` and ``δ·…`` are divided by ``D``. Wall time to a
target is ``S(B) · seconds_per_iteration(n, D)`` with ``B = n·n_steps`` and a fitted
``S(B) = S_min + E_min / B`` (McCandlish et al. eq. 2.11).

Shape glossary: ``K`` measured env counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from rl_gns.core.maths.tradeoff import TradeoffFit


@dataclass(frozen=True)
class ThroughputModel:
    """Seconds per PPO iteration as a function of ``n_envs`` and data-parallel devices (see the module docstring)."""

    alpha: float
    """Rollout seconds per vector step, independent of n_envs (Python, launch overheads)."""
    beta: float
    """Rollout seconds per agent step (emulation, inference, buffer)."""
    gamma: float
    """Update seconds per gradient step, independent of the minibatch size."""
    delta: float
    """Update seconds per sample per epoch (forward and backward)."""
    n_steps: int
    n_epochs: int
    n_minibatches: int | None = None
    """Minibatches per epoch when fixed (a sweep's protocol); else ``minibatch_size`` is."""
    minibatch_size: int | None = None
    """Samples per minibatch when fixed (rl-zoo3's protocol); the number of minibatches then grows with n_envs."""

    def minibatches(self, n_envs: np.ndarray | float) -> np.ndarray:
        """Minibatches per epoch, M: fixed, or ``n_envs · n_steps / minibatch_size``."""
        n = np.asarray(n_envs, dtype=float)
        if self.minibatch_size is not None:
            return n * self.n_steps / self.minibatch_size
        assert self.n_minibatches is not None, "one of n_minibatches and minibatch_size must be set"
        return np.full_like(n, self.n_minibatches)

    def rollout_s(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """``n_steps · (α + β·n_envs / D)``, seconds."""
        return self.n_steps * (self.alpha + self.beta * np.asarray(n_envs, dtype=float) / devices)

    def update_s(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """``n_epochs · M · γ + δ · n_epochs · n_envs · n_steps / D``, seconds."""
        samples = self.n_epochs * np.asarray(n_envs, dtype=float) * self.n_steps
        return self.n_epochs * self.minibatches(n_envs) * self.gamma + self.delta * samples / devices

    def seconds_per_iteration(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """Rollout plus update seconds of one PPO iteration."""
        return self.rollout_s(n_envs, devices) + self.update_s(n_envs, devices)


def fit_throughput_model(
    n_envs_K: np.ndarray,
    rollout_s_K: np.ndarray,
    update_s_K: np.ndarray,
    n_steps: int,
    n_epochs: int,
    n_minibatches: int | None = None,
    minibatch_size: int | None = None,
) -> ThroughputModel:
    """Non-negative least squares of the two linear laws, each in relative error (every size weighs alike).

    :param n_envs_K: ``(K,)`` env counts measured.
    :param rollout_s_K: ``(K,)`` rollout seconds per iteration.
    :param update_s_K: ``(K,)`` update seconds per iteration.
    :param n_steps: agent steps per env per rollout.
    :param n_epochs: passes over each rollout.
    :param n_minibatches: minibatches per epoch if fixed, else ``None``.
    :param minibatch_size: samples per minibatch if fixed, else ``None`` (exactly one of the two). Then the
        gradient steps grow in step with the samples, so only their joint per-sample cost is identified:
        it is returned as ``delta``, with ``gamma = 0``.
    """
    if (n_minibatches is None) == (minibatch_size is None):
        raise ValueError("give exactly one of n_minibatches and minibatch_size")
    shape = ThroughputModel(0.0, 0.0, 0.0, 0.0, n_steps, n_epochs, n_minibatches, minibatch_size)
    n = np.asarray(n_envs_K, dtype=float)
    rollout = np.asarray(rollout_s_K, dtype=float)
    update = np.asarray(update_s_K, dtype=float)
    rollout_design = np.stack([np.full_like(n, n_steps), n_steps * n], axis=1) / rollout[:, None]
    (alpha, beta), _ = nnls(rollout_design, np.ones_like(n))
    if minibatch_size is None:
        update_design = np.stack([n_epochs * shape.minibatches(n), n_epochs * n * n_steps], axis=1) / update[:, None]
        (gamma, delta), _ = nnls(update_design, np.ones_like(n))
    else:  # gradient steps grow with the samples: gamma and delta are one per-sample cost, reported as delta
        (delta,), _ = nnls((n_epochs * n * n_steps / update)[:, None], np.ones_like(n))
        gamma = 0.0
    return ThroughputModel(
        float(alpha), float(beta), float(gamma), float(delta), n_steps, n_epochs, n_minibatches, minibatch_size
    )


def predicted_wall_s(model: ThroughputModel, fit: TradeoffFit, n_envs: np.ndarray, devices: int = 1) -> np.ndarray:
    """Wall seconds to the target: ``S(B) · seconds_per_iteration(n_envs, D)`` with ``B = n_envs · n_steps``;
    NaN where ``n_envs < D`` (a device holds at least one env)."""
    n = np.asarray(n_envs, dtype=float)
    wall = fit.steps(n * model.n_steps) * model.seconds_per_iteration(n, devices)
    return np.where(n >= devices, wall, np.nan)
