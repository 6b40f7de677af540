"""``NoiseScalePPO``: Stable-Baselines3 PPO that measures the gradient noise scale while it trains."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import get_device

from rl_gns.core.agents.measure import GradNorms, GradNormTap, SumOverRanks, measure_rollout
from rl_gns.core.agents.policies import ChannelsLastCnnPolicy
from rl_gns.core.maths.names import gns_key, size_key, tracker_key
from rl_gns.core.maths.noise_scale import NoiseScaleTracker, g2_and_trace
from rl_gns.core.maths.schemes import SCHEMES, Scheme
from rl_gns.core.maths.settings import NoiseScaleConfig

#: A measurement's squared gradient norms, per scheme and loss (:func:`~rl_gns.core.agents.measure.measure_rollout`).
Measured = dict[Scheme, dict[str, GradNorms]]


#: The measurement a ``NoiseScalePPO`` makes unless told otherwise; it adapts to the sizes. Where a rollout
#: cannot be measured with it (a single env has no groups of trajectories), it falls back to
#: :data:`DEFAULT_FALLBACK` (logged under ``gns/minibatch/``), and where that fails too it switches itself off with a
#: warning (a measurement given explicitly is refused instead).
DEFAULT_NOISE_SCALE = NoiseScaleConfig()
#: The default's fallback where there are fewer than 2 envs: the ``minibatch`` scheme.
DEFAULT_FALLBACK = NoiseScaleConfig(schemes=("minibatch",))


class TrainingDivergedError(RuntimeError):
    """An update left the policy's parameters NaN or infinite: no later iteration can train or act."""


class NoiseScalePPO(PPO):
    """PPO (Stable-Baselines3) that logs the gradient noise scale ``B_simple`` under ``gns/``.

    A drop-in subclass: it accepts everything ``PPO`` accepts, plus ``noise_scale``. Before each
    measured update, at the parameters that collected the rollout, it takes gradients of the PPO
    losses on ``b_big`` samples split into small batches of ``b_small`` and feeds the unbiased
    two-batch estimates of ``|G|²`` and ``tr(Σ)`` (McCandlish et al. 2018, App. A.1) to moving
    averages. Measurement uses ``torch.autograd.grad`` and its own RNG, so training is identical
    with measurement on or off.

    Each (scheme, loss) keeps a :class:`~rl_gns.core.maths.noise_scale.NoiseScaleTracker` in :attr:`gns_trackers`. The SB3
    logger receives (keys formatted by :mod:`rl_gns.core.maths.names`), per scheme ``S`` and per loss ``L`` in
    ``noise_scale.losses``: ``gns/S/g2_L_raw`` and ``gns/S/trace_sigma_L_raw`` (this iteration's unbiased estimates),
    ``gns/S/g2_L`` and ``gns/S/trace_sigma_L`` (their moving averages), ``gns/S/b_simple_L`` (the ratio of the moving
    averages, in samples), ``gns/S/b_simple_L_avg`` with ``_avg_low`` and ``_avg_high`` (the average over training so
    far, ``Σ raw trace_sigma / Σ raw g2``, and its 95 % interval: :func:`~rl_gns.core.maths.noise_scale.b_simple_interval`;
    the high end is ``inf`` while ``|G|²`` is not resolved), and ``gns/S/b_small``, ``gns/S/b_big``; and once per
    iteration ``gns/grad_norm_preclip`` (mean norm of the training gradients before clipping), ``gns/n_skipped``
    (non-finite measurements dropped) and ``gns/time_s``.

    Unlike plain PPO, each iteration's log row is written **after** its update, so ``train/`` and
    ``gns/`` values share the row (and env-step x-axis) of the rollout they were computed on.

    Two engineering options make it faster than plain PPO without changing what it learns (same
    network, data, minibatches and hyperparameters; ``benchmarks/speed.py`` measures it):
    channels-last convolutions on a CPU (``"CnnPolicy"`` becomes
    :class:`~rl_gns.core.agents.policies.ChannelsLastCnnPolicy`, other policies get channels-last weights;
    results equal NCHW to float rounding, ~1e-6 relative), and optionally rollouts on
    ``rollout_threads`` torch threads (1 helps on a busy machine, where OpenMP threads spin against
    the emulator threads, and costs on an idle one; the forward pass is bit-identical across
    thread counts).

    :param policy: as for :class:`stable_baselines3.PPO`.
    :param env: as for :class:`stable_baselines3.PPO`.
    :param noise_scale: measurement settings, or ``None`` to train without measuring. The default
        (:data:`DEFAULT_NOISE_SCALE`, groups of whole trajectories) falls back to the ``minibatch`` scheme with a
        single env, and switches itself off with a warning where the rollout is too small to measure at all (e.g.
        one env and a minibatch of 1 sample); settings given explicitly are refused instead.
    :param planned_gns_sizes: ``{scheme: (b_small, b_big)}`` in samples, as a caller that checked its settings before
        building the agent resolved them by the same rule (:meth:`NoiseScaleConfig.sizes`; ``rl-gns train`` passes its
        run plan's, also to SB3's ``load``); ``None`` (default): the agent resolves them from ``noise_scale`` itself.
        Not saved with the agent: a loaded agent resolves them again for its envs.
    :param channels_last: channels-last convolutions; ``None``: on a CPU device only.
    :param rollout_threads: torch threads while collecting rollouts (restored for the update);
        ``None`` (default) leaves the thread count alone.
    :param args: positional arguments of :class:`stable_baselines3.PPO`.
    :param kwargs: keyword arguments of :class:`stable_baselines3.PPO`.
    """

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: GymEnv | str,
        *args: Any,
        noise_scale: NoiseScaleConfig | None = DEFAULT_NOISE_SCALE,
        planned_gns_sizes: Mapping[str, tuple[int, int]] | None = None,
        channels_last: bool | None = None,
        rollout_threads: int | None = None,
        **kwargs: Any,
    ) -> None:
        if rollout_threads is not None and rollout_threads < 1:
            raise ValueError(f"rollout_threads must be >= 1 or None, got {rollout_threads}")
        self.noise_scale = noise_scale
        self.planned_gns_sizes = planned_gns_sizes
        self.channels_last = get_device(kwargs.get("device", "auto")).type == "cpu" if channels_last is None else channels_last
        if self.channels_last and policy == "CnnPolicy":
            policy = ChannelsLastCnnPolicy
        self.rollout_threads = rollout_threads
        self.gns_trackers: dict[str, NoiseScaleTracker] | None = None  # by tracker_key(scheme, loss)
        self.gns_sizes: dict[Scheme, tuple[int, int]] = {}
        self.gns_n_skipped = 0
        self._gns_rng: np.random.Generator | None = None
        self._gns_tap: GradNormTap | None = None
        self._n_train_calls = 0
        self._pending_dump: int | None = None
        super().__init__(policy, env, *args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        if self.channels_last:
            self.policy.to(memory_format=th.channels_last)  # type: ignore[call-overload]  # only 4-D tensors change
        if self.noise_scale is None:
            return
        try:
            self.gns_sizes = self._planned_or_measurement_sizes(self.noise_scale)
        except ValueError:
            if self.noise_scale is not DEFAULT_NOISE_SCALE:
                raise
            try:
                self.gns_sizes = self._measurement_sizes(DEFAULT_FALLBACK)
            except ValueError as fallback_error:
                warnings.warn(f"rl-gns: no noise-scale measurement in this run: {fallback_error}", stacklevel=2)
                self.noise_scale = None
                return
            self.noise_scale = DEFAULT_FALLBACK  # silently, as PPO runs one env silently; its keys say gns/minibatch/
        if self.gns_trackers is None:  # a loaded model keeps what it measured
            schemes, losses = self.noise_scale.schemes, self.noise_scale.losses
            beta = self.noise_scale.ema_beta
            self.gns_trackers = {
                tracker_key(scheme, loss): NoiseScaleTracker(scheme, loss, beta) for scheme in schemes for loss in losses
            }
        if self._gns_rng is None:
            self._gns_rng = np.random.default_rng(self.seed)
        self._gns_tap = GradNormTap(list(self.policy.parameters()), self.policy.optimizer)

    def _planned_or_measurement_sizes(self, noise_scale: NoiseScaleConfig) -> dict[Scheme, tuple[int, int]]:
        """The sizes the caller planned (``planned_gns_sizes``), else :meth:`_measurement_sizes`.

        :raises ValueError: for planned sizes of other schemes than ``noise_scale``'s.
        """
        if self.planned_gns_sizes is None:
            return self._measurement_sizes(noise_scale)
        if set(self.planned_gns_sizes) != set(noise_scale.schemes):
            raise ValueError(f"planned_gns_sizes: {sorted(self.planned_gns_sizes)}, not the schemes {noise_scale.schemes}")
        return {scheme: self.planned_gns_sizes[scheme] for scheme in noise_scale.schemes}

    def _measurement_sizes(self, noise_scale: NoiseScaleConfig) -> dict[Scheme, tuple[int, int]]:
        """``{scheme: (b_small, b_big)}`` of a measurement of this agent's rollouts (:meth:`NoiseScaleConfig.sizes`).

        :raises ValueError: where the rollout cannot be measured so.
        """
        return noise_scale.all_sizes(self.n_envs, self.n_steps, self.batch_size)

    @property
    def _measuring_ranks(self) -> int:
        """Data-parallel ranks that each hold ``1 / ranks`` of a measurement's big batch (1: this process alone)."""
        return 1

    @property
    def _sum_over_ranks(self) -> SumOverRanks:
        """Sums a tensor over the measuring ranks in place (``None``: this process alone)."""
        return None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_gns_tap", "planned_gns_sizes"]

    def collect_rollouts(self, *args: Any, **kwargs: Any) -> bool:
        """PPO's rollout collection, on ``rollout_threads`` torch threads."""
        if self.rollout_threads is None:
            return super().collect_rollouts(*args, **kwargs)
        threads = th.get_num_threads()
        th.set_num_threads(self.rollout_threads)
        try:
            return super().collect_rollouts(*args, **kwargs)
        finally:
            th.set_num_threads(threads)

    @property
    def iterations(self) -> int:
        """PPO iterations (updates) trained so far, over every ``learn`` call of this agent and of its saved copies."""
        return self._n_train_calls

    def dump_logs(self, iteration: int = 0) -> None:
        """Defer the log row until :meth:`train` has recorded this rollout's ``train/`` and ``gns/`` values.
        ``time/iterations`` counts from the agent's first iteration (:attr:`iterations`), across ``learn`` calls
        and a save and load, where SB3 counts from 1 in each ``learn`` call."""
        self._pending_dump = self._n_train_calls + 1

    def train(self) -> None:
        """Measure the noise scale (every ``noise_scale.every`` iterations), then run PPO's update."""
        self.before_update()
        try:
            self._ppo_update()
        except ValueError:  # SB3's distribution refuses NaN logits: a minibatch step made the parameters so
            self.check_finite()
            raise
        self.after_update()

    def before_update(self, measured: Measured | None = None, measured_s: float | None = None) -> None:
        """What :meth:`train` does before PPO's update: the noise-scale measurement, if this iteration is measured
        (:meth:`measurement_due`), at the parameters that collected the rollout. (A population trains its members'
        updates together, between their :meth:`before_update` and :meth:`after_update`.)

        :param measured: the measurement of this iteration taken elsewhere, on :meth:`measurement_batches`
            (a population measures its members together); ``None``: measure here.
        :param measured_s: this agent's share of the seconds that measurement took.
        """
        if self.measurement_due():
            self._measure_noise_scale(measured, measured_s)
        self._n_train_calls += 1

    def measurement_due(self) -> bool:
        """Whether the update about to run measures the noise scale (every ``noise_scale.every`` iterations)."""
        return self.noise_scale is not None and self._n_train_calls % self.noise_scale.every == 0

    def measurement_batches(self) -> dict[Scheme, tuple[int, np.ndarray]]:
        """Each scheme's small batches and the big batch of the measurement due now: ``{scheme: (n_small, (b_part,)
        flat rollout indices)}``, drawn from the measurement's own generator (this process's part of the big batch)."""
        assert self.noise_scale is not None and self._gns_rng is not None
        batches = {}
        for scheme in self.noise_scale.schemes:
            b_small, b_big = self.gns_sizes[scheme]
            b_part = b_big // self._measuring_ranks
            batches[scheme] = (
                b_part // b_small,
                SCHEMES[scheme].indices(self.n_envs, self.n_steps, b_part, self._gns_rng),
            )
        return batches

    def after_update(self) -> None:
        """What :meth:`train` does after PPO's update: the pre-clip gradient norms and the iteration's log row.

        :raises TrainingDivergedError: if the update left a parameter NaN or infinite (the next rollout could only fail).
        """
        self.check_finite()
        if self._gns_tap is not None:
            norms = self._gns_tap.pop()
            if norms:
                self.logger.record("gns/grad_norm_preclip", float(np.mean(norms)))
        if self._pending_dump is not None:
            iteration, self._pending_dump = self._pending_dump, None
            update = {key: value for key, value in self.logger.name_to_value.items() if key.startswith("train/")}
            super().dump_logs(iteration)
            for key, value in update.items():  # as with PPO, the last update's values stay readable after learn()
                self.logger.record(key, value)

    def check_finite(self) -> None:
        """Refuse to go on from parameters that are NaN or infinite, or from an update whose loss was (its gradient
        then means nothing, even where clipping kept the parameters finite).

        :raises TrainingDivergedError: naming the agent step and the settings that keep training finite.
        """
        remedy = "a smaller --learning-rate, --vf-coef or --ent-coef keeps them finite"
        if not all(bool(th.isfinite(param).all()) for param in self.policy.parameters()):
            raise TrainingDivergedError(
                f"training diverged: the policy's parameters are not finite in the update at {self.num_timesteps:,} "
                f"agent steps; {remedy}"
            )
        loss = self.logger.name_to_value.get("train/loss")
        if loss is not None and not math.isfinite(loss):
            raise TrainingDivergedError(
                f"training diverged: the loss of the update at {self.num_timesteps:,} agent steps is {loss}; {remedy}"
            )

    def _measure_noise_scale(self, measured: Measured | None, measured_s: float | None) -> None:
        assert self.noise_scale is not None
        start = time.perf_counter()
        if measured is None:
            self.policy.set_training_mode(True)  # as PPO.train does first: same forward pass
            progress = self._current_progress_remaining
            measured = {
                scheme: measure_rollout(
                    self.policy,
                    self.rollout_buffer,
                    indices,
                    n_small,
                    self.noise_scale.losses,
                    normalize_advantage=self.normalize_advantage,
                    clip_range=self.clip_range(progress),  # type: ignore[operator]
                    clip_range_vf=None if self.clip_range_vf is None else self.clip_range_vf(progress),  # type: ignore[operator]
                    ent_coef=float(self.ent_coef),
                    vf_coef=float(self.vf_coef),
                    sum_over_ranks=self._sum_over_ranks,
                )
                for scheme, (n_small, indices) in self.measurement_batches().items()
            }
        for scheme, norms in measured.items():
            b_small, b_big = self.gns_sizes[scheme]
            for name, loss_norms in norms.items():
                estimate = g2_and_trace(loss_norms.g2_small, loss_norms.g2_big, b_small, b_big)
                self._record_estimate(scheme, name, *estimate)
            self.logger.record(size_key(scheme, "b_small"), b_small)
            self.logger.record(size_key(scheme, "b_big"), b_big)
        self.logger.record("gns/n_skipped", self.gns_n_skipped)
        self.logger.record("gns/time_s", time.perf_counter() - start if measured_s is None else measured_s)

    def _ppo_update(self) -> None:
        """PPO's update (``stable_baselines3.PPO.train``)."""
        super().train()

    def _record_estimate(self, scheme: Scheme, name: str, g2: float, trace_sigma: float) -> tuple[float, float] | None:
        """Fold one loss's unbiased estimates ``g2`` and ``trace_sigma`` into its tracker and log them; skip and count
        non-finite ones.

        :return: the ``(g2, trace_sigma)`` folded in, or ``None`` when skipped.
        """
        assert self.gns_trackers is not None
        if not (math.isfinite(g2) and math.isfinite(trace_sigma)):
            self.gns_n_skipped += 1
            return None
        tracker = self.gns_trackers[tracker_key(scheme, name)]
        tracker.update(g2, trace_sigma)
        average = tracker.run_average()
        logged = {
            ("g2", "raw"): g2,
            ("trace_sigma", "raw"): trace_sigma,
            ("g2", ""): tracker.ema.g2,
            ("trace_sigma", ""): tracker.ema.trace_sigma,
            ("b_simple", ""): tracker.b_simple,
            ("b_simple", "avg"): average.point,
            ("b_simple", "avg_low"): average.low,
            ("b_simple", "avg_high"): average.high,
        }
        for (quantity, suffix), value in logged.items():
            self.logger.record(gns_key(scheme, quantity, name, suffix), value)
        return g2, trace_sigma
