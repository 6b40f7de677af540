"""The settings of the core's training engines, as plain dataclasses that import no torch: how the noise scale is
measured (:class:`NoiseScaleConfig`) and how an adaptive rollout grows (:class:`AdaptiveConfig`). A command's
settings hold them, so that its ``--help`` and a run's ``config.json`` load without torch; :mod:`rl_gns.core.agents.ppo` and
:mod:`rl_gns.core.agents.adaptive` (where saved agents of earlier versions name them) import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rl_gns.core.maths.advice import DEFAULT_PREDICTOR
from rl_gns.core.maths.batching import check_counts
from rl_gns.core.maths.names import LOSSES, Loss
from rl_gns.core.maths.schemes import SCHEMES, Scheme, scheme


@dataclass(frozen=True)
class NoiseScaleConfig:
    """How :class:`NoiseScalePPO` measures the gradient noise scale."""

    schemes: tuple[Scheme, ...] = ("envs",)
    """One or more of :data:`~rl_gns.core.maths.schemes.SCHEMES`: ``envs`` (default): the big batch is ``b_big / n_steps``
    whole env trajectories, the small batches groups of ``b_small / n_steps`` envs, as data-parallel workers would
    hold them; unbiased on RL data (the steps of one trajectory are correlated); its value-loss B_simple is the
    default candidate predictor of the critical rollout size (``env_value``), which no criterion has yet shown to
    beat a constant (``docs/prediction-criterion.md``). ``minibatch``: a big batch of ``b_big`` samples drawn at
    random from the rollout (a PPO minibatch), split into small batches of ``b_small``; B_simple per gradient step,
    in samples; its |G|² is biased upwards on RL data by ``(tr Σ_traj - tr Σ_step) / (N - 1)``
    (``results/validation/ground_truth.md``). Each scheme is logged under ``gns/<scheme>/``."""
    losses: tuple[Loss, ...] = LOSSES
    """Losses to measure, from ``policy``, ``value``, ``total`` (the loss PPO optimises)."""
    every: int = 4
    """Measure every ``every`` PPO iterations (rollouts). A measurement costs one forward pass over ``b_big``
    samples and one backward pass per loss; an rl-zoo3 update is 4 epochs of forward-backward passes over the
    rollout (``benchmarks/speed.py`` measures the cost in wall time, ``docs/performance.md``)."""
    b_big: int | None = None
    """Big-batch size in samples (agent steps), with a single scheme only. Default: the minibatch size
    (``minibatch``) or the rollout size (``envs``)."""
    b_small: int | None = None
    """Small-batch size in samples, with a single scheme only; must divide ``b_big``. Default: ``b_big / 4``
    (``envs``: a quarter of the envs)."""
    ema_beta: float = 0.95
    """Decay of the moving averages of ``g2`` and ``trace_sigma``, per measurement."""

    def check(self) -> None:
        """Check the settings that do not depend on the rollout (the messages name each setting as ``rl-gns train``'s
        flag, ``--gns-<field>``, as :class:`~rl_gns.core.maths.batching.Batching`'s do; ``b_small`` and ``ema_beta``,
        which are not flags, as the run settings name them, ``gns_<field>``).

        :raises ValueError: with the reason.
        """
        check_counts(gns_every=self.every, gns_b_big=self.b_big)
        if self.b_small is not None and self.b_small < 1:
            raise ValueError(f"gns_b_small must be >= 1, got {self.b_small}")
        if not self.losses or set(self.losses) - set(LOSSES) or len(set(self.losses)) != len(self.losses):
            raise ValueError(f"noise scale losses must be distinct names from {LOSSES}, got {self.losses}")
        if not self.schemes or set(self.schemes) - set(SCHEMES) or len(set(self.schemes)) != len(self.schemes):
            raise ValueError(f"noise scale schemes must be distinct names from {tuple(SCHEMES)}, got {self.schemes}")
        if len(self.schemes) > 1 and (self.b_big or self.b_small):
            raise ValueError("b_big and b_small can only be set with a single noise scale scheme")
        if not 0.0 <= self.ema_beta < 1.0:
            raise ValueError(f"gns_ema_beta must be in [0, 1), got {self.ema_beta}")

    def sizes(self, name: Scheme, n_envs: int, n_steps: int, minibatch_size: int) -> tuple[int, int]:
        """Resolve and check ``(b_small, b_big)`` of the scheme ``name`` for a rollout of ``n_envs * n_steps``
        samples: the scheme's own defaults and rules (:meth:`~rl_gns.core.maths.schemes.SchemeSpec.default_sizes`), then
        those of every scheme.

        :raises ValueError: with the reason, when the settings cannot be measured.
        """
        self.check()
        rollout_size = n_envs * n_steps
        b_small, b_big = scheme(name).default_sizes(n_envs, n_steps, minibatch_size, self.b_big, self.b_small)
        if not 0 < b_small < b_big:
            raise ValueError(f"noise scale ({name}) needs 0 < b_small < b_big, got b_small={b_small}, b_big={b_big}")
        if b_big % b_small:
            raise ValueError(f"b_small ({b_small}) must divide b_big ({b_big})")
        if b_big > rollout_size:
            raise ValueError(f"b_big ({b_big}) exceeds the rollout size n_envs * n_steps = {rollout_size}")
        return b_small, b_big

    def all_sizes(self, n_envs: int, n_steps: int, minibatch_size: int) -> dict[Scheme, tuple[int, int]]:
        """``{scheme: (b_small, b_big)}`` for every scheme (see :meth:`sizes`).

        :raises ValueError: also for no scheme at all, which would measure nothing.
        """
        self.check()
        return {name: self.sizes(name, n_envs, n_steps, minibatch_size) for name in self.schemes}


@dataclass(frozen=True)
class AdaptiveConfig:
    """How :class:`AdaptivePPO` grows the rollout."""

    r: float
    """Exchange rate: agent steps one PPO iteration is worth. The rollout size is sqrt(r · M · B_simple)."""
    max_n_envs: int = 64
    """Largest env count the rollout may grow to."""
    predictor: str = DEFAULT_PREDICTOR
    """Noise-scale candidate whose prediction of the critical rollout size drives the rule (its scheme and loss must
    be measured), e.g. ``env_value`` or ``mb_xM_total`` (:func:`~rl_gns.core.maths.advice.parse_predictor`)."""
    min_measurements: int = 8
    """Noise-scale measurements before the first growth (the average of fewer is mostly noise)."""
