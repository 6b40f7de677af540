"""Data-parallel PPO over ``torch.distributed``, with the gradient noise scale measured for free.

``D`` ranks (processes; gloo on CPUs, NCCL on GPUs) each step their own ``n_envs`` environments and hold their own
rollout. They train like **one** process holding the union of their rollouts (``D * n_envs`` envs):

- each epoch, rank 0 draws the permutation of the global rollout (NumPy's global RNG, as SB3 draws it) and
  broadcasts it; each global minibatch of ``minibatch_size`` samples is the same as one process would draw, and each
  rank computes the loss on its own share of it (:class:`SharedRolloutBuffer`);
- advantages are normalised with the mean and standard deviation of the global minibatch (one all-reduce of three
  numbers), so the result does not depend on ``D``;
- each parameter's gradient is weighted by its rank's share of the minibatch and all-reduced (summed) as soon as
  backward accumulates it (``register_post_accumulate_grad_hook``), before SB3 clips the norm: every rank then
  clips and steps the same global mean gradient, and the parameters stay identical on every rank.

The free noise scale (McCandlish et al. 2018, App. A.1): at every optimiser step the hook also sees the local mean
gradient ``G_r`` of each rank (``b_r`` samples) before the all-reduce, and the global one ``G`` (``B`` samples)
after it. With ``A = Σ_r (b_r / B) |G_r|²`` (sample-weighted mean over ranks; ``E A = |G|² + D tr Σ / B`` for
independent samples) and ``C = |G|²`` (``E C = |G|² + tr Σ / B``), :func:`~rl_gns.core.maths.noise_scale.g2_and_trace`
with ``b_small = B / D`` and ``b_big = B`` is unbiased for ``|G|²`` and ``tr Σ``, whatever the shares ``b_r``.
Caveats, which the fixed-parameter measurement does not have: the parameters move between the optimiser steps of
an update, later epochs reuse data the parameters were already fitted on (the ratio is no longer 1), and the
samples of a minibatch come from one rollout (the ``minibatch`` scheme's correlation bias). The first epoch's
steps are logged as scheme ``ranks``; all epochs' as ``ranks_all``.
"""

from __future__ import annotations

import math
import time
import warnings
import weakref
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import torch as th
import torch.distributed as dist
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from stable_baselines3.common.vec_env import VecEnv

from rl_gns.core.agents.measure import GradNormTap, SumOverRanks, normalize_advantages
from rl_gns.core.agents.ppo import NoiseScaleConfig, NoiseScalePPO
from rl_gns.core.maths.batching import env_seed
from rl_gns.core.maths.names import size_key, tracker_key
from rl_gns.core.maths.noise_scale import NoiseScaleTracker, g2_and_trace
from rl_gns.core.maths.schemes import FREE_SCHEMES, Scheme


def rank_and_size() -> tuple[int, int]:
    """``(rank, world_size)`` of the default process group; ``(0, 1)`` without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def comm_device() -> th.device:
    """Where collective tensors live: the current CUDA device under NCCL, else the CPU."""
    if dist.get_backend() == "nccl":
        return th.device("cuda", th.cuda.current_device())
    return th.device("cpu")


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """``obj`` of rank ``src`` on every rank (pickled; ``obj`` unchanged without a process group)."""
    if rank_and_size()[1] == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src, device=comm_device())
    return box[0]


def gather_objects(obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank (``[obj]`` without a process group)."""
    size = rank_and_size()[1]
    if size == 1:
        return [obj]
    out: list[Any] = [None] * size
    dist.all_gather_object(out, obj)
    return out


def agree(*flags: bool) -> tuple[bool, ...]:
    """Rank 0's ``flags`` on every rank: decisions taken from a rank's own clock (a checkpoint is due) made common."""
    return tuple(broadcast_object(tuple(flags)))


def rank_seed(seed: int, rank: int) -> int:
    """The torch seed of ``rank``: ``seed`` on rank 0 (so one rank samples as one process does), an independent
    stream from ``(seed, rank)`` on the others (the same seed on every rank would draw the same action noise)."""
    if rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def sum_over_ranks(tensor: th.Tensor) -> None:
    """All-reduce (sum) ``tensor`` in place over the ranks, through the collective's device."""
    moved = tensor.to(comm_device())
    dist.all_reduce(moved)
    tensor.copy_(moved)


def sizes_over_ranks(
    noise_scale: NoiseScaleConfig, n_envs: int, n_steps: int, minibatch_size: int, n_ranks: int
) -> dict[Scheme, tuple[int, int]]:
    """``{scheme: (b_small, b_big)}`` of a fixed-parameter measurement whose big batch is spread over ``n_ranks``
    ranks of ``n_envs`` envs each: the sizes one process with every rank's envs would measure
    (:meth:`~rl_gns.core.agents.ppo.NoiseScaleConfig.sizes`), each rank holding ``b_big / n_ranks`` samples as whole small
    batches. A default ``b_small`` that does not divide a rank's part becomes their greatest common divisor.

    :param minibatch_size: the global minibatch (samples per optimiser step over all ranks).
    :raises ValueError: where the big batch does not split so, or explicit sizes do not fit.
    """
    sizes = noise_scale.all_sizes(n_envs * n_ranks, n_steps, minibatch_size)
    if n_ranks == 1:
        return sizes
    for scheme, (b_small, b_big) in sizes.items():
        if b_big % n_ranks:
            raise ValueError(
                f"noise scale ({scheme}): b_big ({b_big}) does not split into {n_ranks} equal parts, one per rank"
            )
        part = b_big // n_ranks
        if part > n_envs * n_steps:
            raise ValueError(
                f"noise scale ({scheme}): a rank's part of b_big ({part}) exceeds its rollout ({n_envs * n_steps})"
            )
        if part % b_small and noise_scale.b_small is not None:
            raise ValueError(f"noise scale ({scheme}): b_small ({b_small}) must divide each rank's part of b_big ({part})")
        sizes[scheme] = (math.gcd(b_small, part), b_big)
    return sizes


def weak_hook(method: Callable[..., None]) -> Callable[..., None]:
    """``method`` as a hook that does not keep its object alive: a tensor holds its hooks where Python's garbage
    collector cannot see them, so a bound method there would keep the agent, and its emulators, alive forever."""
    ref = weakref.WeakMethod(method)

    def hook(*args: Any) -> None:
        bound = ref()
        if bound is not None:
            bound(*args)

    return hook


class SharedRolloutBuffer(RolloutBuffer):
    """SB3's ``RolloutBuffer`` holding one rank's share of a rollout spread over ``D`` ranks.

    :meth:`get` yields this rank's part of each global minibatch (the minibatch one process holding every rank's
    envs would draw: global flat index ``rank * n_envs * n_steps + local index``), and sets :attr:`share`, its
    fraction of the minibatch. A rank with no sample in a minibatch gets one sample with ``share = 0``, so that every
    rank runs the same number of backward passes. With :attr:`normalize_advantage` set, advantages are normalised
    over the global minibatch, as SB3 normalises a minibatch in one process (``(A - mean) / (std + 1e-8)``, ``std``
    with Bessel's correction). Without a process group it is SB3's buffer.
    """

    share: float = 1.0
    """``b_r / B``: this rank's samples in the minibatch last yielded over the minibatch's samples."""
    normalize_advantage: bool = False
    """Normalise the advantages over the global minibatch (set by :class:`DataParallelPPO` in place of SB3's)."""

    def get(self, batch_size: int | None = None) -> Generator[RolloutBufferSamples, None, None]:
        rank, size = rank_and_size()
        n_local = self.buffer_size * self.n_envs
        n_global = n_local * size
        order = th.from_numpy(np.random.permutation(n_global)) if rank == 0 else th.empty(n_global, dtype=th.int64)
        if size > 1:
            order = order.to(comm_device())
            dist.broadcast(order, src=0)
        order_global = order.cpu().numpy()
        assert self.full, "the rollout is not complete"
        if not self.generator_ready:
            for name in ("observations", "actions", "values", "log_probs", "advantages", "returns"):
                self.__dict__[name] = self.swap_and_flatten(self.__dict__[name])
            self.generator_ready = True
        batch_size = n_global if batch_size is None else batch_size
        for start in range(0, n_global, batch_size):
            chunk = order_global[start : start + batch_size]
            mine = chunk[chunk // n_local == rank] - rank * n_local
            self.share = len(mine) / len(chunk)
            samples = self._get_samples(mine if len(mine) else np.zeros(1, dtype=np.int64))
            if self.normalize_advantage:
                samples = normalize_advantages(samples, self._sum_over_minibatch)
            yield samples

    def _sum_over_minibatch(self, tensor: th.Tensor) -> None:
        """Sum ``tensor`` over the ranks' shares of the minibatch, in place (a stand-in sample adds nothing)."""
        if self.share == 0:
            tensor.zero_()
        sum_over_ranks(tensor)


class DataParallelPPO(NoiseScalePPO):
    """:class:`~rl_gns.core.agents.ppo.NoiseScalePPO` on ``D`` ranks of the default ``torch.distributed`` process group
    (see the module docstring); on one process (no process group) it trains exactly as ``NoiseScalePPO``.

    Each rank passes its own ``env`` (its share of the envs, ``n_envs`` per rank), the same ``seed`` and the
    **global** ``batch_size`` (samples per optimiser step over all ranks). Env ``i`` of rank ``r`` is seeded with
    ``seed + r * n_envs + i``, as one process seeds the same env; torch's sampling RNG gets :func:`rank_seed`.
    ``num_timesteps`` counts agent steps of all ranks.
    Rank 0 broadcasts its initial parameters. The fixed-parameter measurement has the sizes one process with every
    rank's envs would have (:func:`sizes_over_ranks`): each rank holds its part of the big batch as whole small
    batches, and the sums of their gradients and squared norms are all-reduced; the free measurement is logged under
    ``gns/ranks/`` and ``gns/ranks_all/`` (loss ``total``, ``b_small = B / D``, ``b_big = B``). ``train/``
    values are averaged over the ranks. Finished games of every rank are gathered after each rollout
    (:meth:`gather_games`) into every rank's ``ep_info_buffer``.

    ``target_kl`` (an early stop that each rank would take on its own data) is refused with more than one rank.

    :param policy: as for :class:`stable_baselines3.PPO`.
    :param env: this rank's envs.
    :param kwargs: keyword arguments of :class:`~rl_gns.core.agents.ppo.NoiseScalePPO` (``batch_size`` global).
    """

    def __init__(self, policy: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        self.rank, self.world_size = rank_and_size()
        if self.world_size > 1 and kwargs.get("target_kl") is not None:
            raise ValueError("target_kl stops each rank on its own data: it cannot be used with more than one rank")
        if kwargs.get("rollout_buffer_class") not in (None, SharedRolloutBuffer):
            raise ValueError("DataParallelPPO holds its rollout in a SharedRolloutBuffer")
        kwargs["rollout_buffer_class"] = SharedRolloutBuffer
        self._hooks: list[Any] = []
        self._grad_sync = False
        self._step_norms: list[tuple[th.Tensor, th.Tensor]] = []  # per optimiser step: (share * |G_r|², |G|²)
        self._local_sq: th.Tensor | float = 0.0
        self._global_sq: th.Tensor | float = 0.0
        self._new_games: list[tuple[int, float, int, float]] = []
        self.all_reduce_s = 0.0
        """Wall seconds in the gradient all-reduces so far (waiting for the slowest rank included)."""
        self._rollout_start_steps = 0
        with warnings.catch_warnings():  # SB3 compares the global minibatch with this rank's rollout
            warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
            super().__init__(policy, env, *args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        if self.world_size == 1:
            return
        for tensor in self.policy.state_dict().values():
            dist.broadcast(tensor, src=0)
        if self.seed is not None:  # SB3 seeded torch and env i with seed (+ i) on every rank
            th.manual_seed(rank_seed(self.seed, self.rank))
            if self.env is not None:
                self.env.seed(env_seed(self.seed, self.rank, self.n_envs))  # env i of rank r: seed + its global index
        params = [p for p in self.policy.parameters() if p.requires_grad]
        if self._gns_tap is not None:  # re-registered below, after the all-reduce, so that it sees global gradients
            self._gns_tap.remove()
        self._hooks = [p.register_post_accumulate_grad_hook(weak_hook(self._all_reduce_grad)) for p in params]
        self._hooks.append(self.policy.optimizer.register_step_pre_hook(weak_hook(self._close_step)))
        if self.noise_scale is not None:
            self._gns_tap = GradNormTap(params, self.policy.optimizer)
            if self.batch_size % self.world_size == 0:
                for scheme in FREE_SCHEMES:
                    self.gns_sizes[scheme] = (self.batch_size // self.world_size, self.batch_size)  # type: ignore[index]
                    assert self.gns_trackers is not None
                    tracker = NoiseScaleTracker(scheme, "total", self.noise_scale.ema_beta)
                    self.gns_trackers.setdefault(tracker_key(scheme, "total"), tracker)
            else:
                warnings.warn(
                    f"rl-gns: no free noise scale: the minibatch ({self.batch_size}) does not split into {self.world_size} "
                    "equal shares",
                    stacklevel=2,
                )

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_hooks", "_step_norms", "_local_sq", "_global_sq", "rank", "world_size"]

    @property
    def free_noise_scale(self) -> bool:
        """Whether the free (all-reduce) noise scale is measured."""
        return "ranks" in self.gns_sizes

    # --- gradients: weighted by the rank's share, all-reduced before SB3 clips them
    def _all_reduce_grad(self, param: th.Tensor) -> None:
        if not self._grad_sync:
            return
        grad = param.grad
        assert grad is not None
        share = self.rollout_buffer.share  # type: ignore[attr-defined]
        if self.free_noise_scale:
            self._local_sq = self._local_sq + share * grad.detach().square().sum()
        grad.mul_(share)
        start = time.perf_counter()
        dist.all_reduce(grad)
        self.all_reduce_s += time.perf_counter() - start
        if self.free_noise_scale:
            self._global_sq = self._global_sq + grad.detach().square().sum()

    def _close_step(self, *_: object) -> None:
        if self._grad_sync and self.free_noise_scale:
            self._step_norms.append((th.as_tensor(self._local_sq), th.as_tensor(self._global_sq)))
        self._local_sq = self._global_sq = 0.0

    def _ppo_update(self) -> None:
        if self.world_size == 1:
            return super()._ppo_update()
        buffer = self.rollout_buffer
        assert isinstance(buffer, SharedRolloutBuffer)
        buffer.normalize_advantage, normalize = self.normalize_advantage, self.normalize_advantage
        self.normalize_advantage, self._grad_sync = False, True  # SB3 would normalise over this rank's share only
        try:
            super()._ppo_update()
        finally:
            self.normalize_advantage, self._grad_sync = normalize, False
        if self._step_norms:
            self._record_free_estimate()
        self._average_train_logs()

    def _record_free_estimate(self) -> None:
        """Fold this update's free estimates (:mod:`rl_gns.core.agents.distributed`) into the ``ranks`` averages."""
        local_S, global_S = (th.stack(column).double() for column in zip(*self._step_norms, strict=True))
        self._step_norms = []
        local_S = local_S.to(comm_device())
        dist.all_reduce(local_S)  # A = Σ_r share_r |G_r|² per step
        weighted_S, global_S = local_S.cpu(), global_S.cpu()
        per_epoch = len(weighted_S) // self.n_epochs
        for scheme, steps in (("ranks", slice(0, per_epoch)), ("ranks_all", slice(None))):
            b_small, b_big = self.gns_sizes[scheme]  # type: ignore[index]
            estimate = g2_and_trace(float(weighted_S[steps].mean()), float(global_S[steps].mean()), b_small, b_big)
            self._record_estimate(scheme, "total", *estimate)  # type: ignore[arg-type]
            self.logger.record(size_key(scheme, "b_small"), b_small)
            self.logger.record(size_key(scheme, "b_big"), b_big)

    def _average_train_logs(self) -> None:
        """Average the ``train/`` values SB3 computed on each rank's share over the ranks."""
        keys = sorted(k for k, v in self.logger.name_to_value.items() if k.startswith("train/") and np.isscalar(v))
        values = th.tensor([float(self.logger.name_to_value[k]) for k in keys], dtype=th.float64, device=comm_device())
        dist.all_reduce(values)
        for key, value in zip(keys, (values / self.world_size).tolist(), strict=True):
            if key not in ("train/n_updates", "train/clip_range", "train/clip_range_vf"):
                self.logger.record(key, value)

    def _measurement_sizes(self, noise_scale: NoiseScaleConfig) -> dict[Scheme, tuple[int, int]]:
        return sizes_over_ranks(noise_scale, self.n_envs, self.n_steps, self.batch_size, self.world_size)

    @property
    def _measuring_ranks(self) -> int:
        return self.world_size

    @property
    def _sum_over_ranks(self) -> SumOverRanks:
        return None if self.world_size == 1 else sum_over_ranks

    # --- rollouts: agent steps of every rank, games of every rank
    def collect_rollouts(self, env: VecEnv, *args: Any, **kwargs: Any) -> bool:
        """Collect this rank's rollout; ``num_timesteps`` then counts the agent steps of every rank."""
        self._rollout_start_steps = start = self.num_timesteps
        go_on = super().collect_rollouts(env, *args, **kwargs)
        self.num_timesteps = start + self.world_size * (self.num_timesteps - start)
        return go_on

    def global_steps(self) -> int:
        """Agent steps of every rank so far, during a rollout as well (ranks step in lockstep)."""
        start = self._rollout_start_steps
        return start + self.world_size * (self.num_timesteps - start)

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        super()._update_info_buffer(infos, dones)
        for info in infos:
            episode = info.get("episode")
            if episode is not None:
                self._new_games.append((self.global_steps(), float(episode["r"]), int(episode["l"]), time.time()))

    def gather_games(self) -> list[tuple[int, float, int, float]]:
        """The games every rank finished since the last call, as ``(env_steps, score, length, unix time)`` sorted by
        agent steps (ties in rank order); other ranks' games are added to this rank's ``ep_info_buffer``.
        A collective: every rank calls it at the same point (the end of a rollout)."""
        per_rank = gather_objects(self._new_games)
        self._new_games = []
        if self.ep_info_buffer is not None:
            for rank, games in enumerate(per_rank):
                if rank != self.rank:
                    self.ep_info_buffer.extend({"r": score, "l": length, "t": 0.0} for _, score, length, _ in games)
        return sorted((game for games in per_rank for game in games), key=lambda game: game[0])
