"""A population of PPO agents trained as one batched network: K Stable-Baselines3 ``PPO`` members of one
architecture, their forward passes vmapped over stacked parameters, their updates taken together.

Each member stays an ordinary SB3 ``PPO``: its own policy parameters, Adam, learning-rate and clip schedules, rollout
buffer, logger and seed. What the population shares is the arithmetic: one forward and one backward pass over
``K × minibatch_size`` samples in place of K, through :func:`torch.func.functional_call` and :func:`torch.func.vmap`
over the members' own modules, and one optimiser step over their stacked parameters per group of members with equal
optimiser settings (:class:`~rl_gns.core.agents.population_optim.StackedOptimizers`), written back to each member's own
parameters and optimiser when its update ends.

Shape glossary: ``K`` members, ``N`` samples per member (``n_envs * n_steps``), ``M`` samples per minibatch,
``A`` discrete actions, ``*obs`` one observation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.utils import explained_variance, obs_as_tensor

from rl_gns.core.agents.measure import rollout_samples
from rl_gns.core.agents.population_measure import measure_due
from rl_gns.core.agents.population_optim import StackedOptimizers
from rl_gns.core.agents.population_policy import PopulationPolicy, ppo_losses
from rl_gns.core.agents.ppo import NoiseScalePPO

__all__ = ["Population", "PopulationPolicy", "check_members", "collect_population_rollouts", "population_update"]

#: PPO settings every member must share (a population differs only in seeds and learning rates).
SHARED_SETTINGS = (
    "n_envs",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "normalize_advantage",
    "target_kl",
    "device",
)


def check_members(members: Sequence[PPO]) -> None:
    """Check that K SB3 ``PPO`` agents can train as one population: one architecture (:class:`PopulationPolicy`) and
    the same :data:`SHARED_SETTINGS`; seeds and learning rates may differ.

    :raises ValueError: naming the first setting that differs.
    """
    if not members:
        raise ValueError("a population needs at least one member")
    first = members[0]
    for name in SHARED_SETTINGS:
        values = [getattr(member, name) for member in members]
        if any(value != values[0] for value in values):
            raise ValueError(f"population members must share {name}; got {values}")
    rollout_size = first.n_envs * first.n_steps
    if rollout_size % first.batch_size:
        raise ValueError(
            f"the population trainer needs minibatch_size ({first.batch_size}) to divide the rollout size ({rollout_size})"
        )
    if first.clip_range_vf is not None and any(member.clip_range_vf is None for member in members):
        raise ValueError("population members must all clip the value or all not")


class _TrainLog:
    """One member's ``train/`` diagnostics over an update, as ``PPO.train`` collects them."""

    def __init__(self) -> None:
        self.policy: list[float] = []
        self.value: list[float] = []
        self.entropy: list[float] = []
        self.clip_fraction: list[float] = []
        self.approx_kl: list[float] = []  # of the last epoch the member started
        self.loss = float("nan")

    def add(self, row: np.ndarray) -> float:
        """Append one minibatch's ``(policy, value, entropy, total, clip_fraction, approx_kl)``; return its KL."""
        policy, value, entropy, self.loss, clip_fraction, approx_kl = (float(x) for x in row)
        self.policy.append(policy)
        self.value.append(value)
        self.entropy.append(entropy)
        self.clip_fraction.append(clip_fraction)
        self.approx_kl.append(approx_kl)
        return approx_kl

    def record(self, member: PPO, clip_range: float, clip_range_vf: float | None) -> None:
        """Log what ``PPO.train`` logs, under the same keys."""
        logger, buffer = member.logger, member.rollout_buffer
        logger.record("train/entropy_loss", np.mean(self.entropy))
        logger.record("train/policy_gradient_loss", np.mean(self.policy))
        logger.record("train/value_loss", np.mean(self.value))
        logger.record("train/approx_kl", np.mean(self.approx_kl))
        logger.record("train/clip_fraction", np.mean(self.clip_fraction))
        logger.record("train/loss", self.loss)
        logger.record("train/explained_variance", explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        logger.record("train/n_updates", member._n_updates, exclude="tensorboard")
        logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            logger.record("train/clip_range_vf", clip_range_vf)


def clip_ranges(members: Sequence[PPO]) -> tuple[list[float], list[float]]:
    """Each member's PPO clip range ε now, and its value clip range where it has one (empty where none has)."""
    clip_range = [float(m.clip_range(m._current_progress_remaining)) for m in members]  # type: ignore[operator]
    clip_range_vf = [
        float(m.clip_range_vf(m._current_progress_remaining))  # type: ignore[operator]
        for m in members
        if m.clip_range_vf is not None
    ]
    return clip_range, clip_range_vf


def still_stepping(
    members: Sequence[PPO], active: list[bool], logs: list[_TrainLog], diagnostics: np.ndarray, optimizers: StackedOptimizers
) -> list[int]:
    """Log each active member's minibatch diagnostics; a member whose approximate KL passes ``1.5 · target_kl``
    stops here (its update ends, as ``PPO.train``'s loop breaks: ``active`` is cleared and its parameters written
    back). Return the members that take this minibatch's step.

    :param diagnostics: ``(6, K)`` policy, value, entropy and total loss, clip fraction and approximate KL.
    """
    stepping = []
    for k in (k for k in range(len(members)) if active[k]):
        approx_kl = logs[k].add(diagnostics[:, k])
        target_kl = members[k].target_kl
        active[k] = target_kl is None or approx_kl <= 1.5 * target_kl
        if active[k]:
            stepping.append(k)
        else:
            optimizers.write_back(k)
    return stepping


def step(
    members: Sequence[PPO], optimizers: StackedOptimizers, total_K: th.Tensor, stepping: list[int], max_grad_norm: float
) -> None:
    """One gradient step of the members ``stepping`` on their total losses ``(K,)``: clipped to ``max_grad_norm`` and
    taken by each member's optimizer; a member that taps its gradient norms (measurement on) records its own."""
    optimizers.zero_grad()
    total_K[stepping].sum().backward()
    for k, norm in optimizers.clip_and_step(stepping, max_grad_norm).items():
        member = members[k]
        if isinstance(member, NoiseScalePPO) and member._gns_tap is not None:
            member._gns_tap.add(norm)


def population_update(members: Sequence[PPO], population: PopulationPolicy, rngs: Sequence[np.random.RandomState]) -> None:
    """``stable_baselines3.PPO.train()`` for every member at once: the same epochs, minibatches, advantage
    normalisation, clipped losses (:func:`ppo_losses`), gradient clipping, Adam step, early stop on ``target_kl`` and
    ``train/`` logs, with one batched forward and backward pass per minibatch.

    Member ``k`` draws its minibatch permutation of each epoch from ``rngs[k]`` as SB3 draws it from NumPy's global
    generator (``np.random.permutation``), so a member whose generator is in the state a lone run's global one would
    be in gets the lone run's minibatches.

    :param members: K agents with filled rollout buffers (:func:`check_members`); their buffers are left unflattened.
    :param population: their policies, in the same order.
    :param rngs: one NumPy generator per member (its minibatch permutations).
    """
    k_members = len(members)
    if len(rngs) != k_members or population.size != k_members:
        raise ValueError(f"{k_members} members, {population.size} policies and {len(rngs)} generators")
    first = members[0]
    population.set_training_mode(True)
    for member in members:
        member._update_learning_rate(member.policy.optimizer)
    clip_range, clip_range_vf = clip_ranges(members)
    device = first.device
    eps = th.tensor(clip_range, device=device)[:, None]
    eps_vf = th.tensor(clip_range_vf, device=device)[:, None] if clip_range_vf else None
    n_samples = first.n_envs * first.n_steps
    rollouts = [rollout_samples(member.rollout_buffer, np.arange(n_samples))._asdict() for member in members]
    data = {name: th.stack([rollout[name] for rollout in rollouts]) for name in rollouts[0]}  # (K, N, ...)
    data["actions"] = data["actions"].long().flatten(1)
    rows = th.arange(k_members, device=device)[:, None]
    optimizers = StackedOptimizers(
        population.names, [population.parameters(k) for k in range(k_members)], [m.policy.optimizer for m in members]
    )
    active = [True] * k_members
    logs = [_TrainLog() for _ in members]
    for _ in range(first.n_epochs):
        started = [k for k in range(k_members) if active[k]]
        for k in started:
            logs[k].approx_kl = []
        perms = np.stack([rngs[k].permutation(n_samples) if active[k] else np.arange(n_samples) for k in range(k_members)])
        for start in range(0, n_samples, first.batch_size):
            idx = th.as_tensor(perms[:, start : start + first.batch_size], device=device)
            batch = {name: tensor[rows, idx] for name, tensor in data.items()}  # (K, M, ...)
            logits, values = population.logits_and_values(batch.pop("observations"), optimizers.parameters())
            losses = ppo_losses(
                logits, values, batch, eps, eps_vf, first.normalize_advantage, float(first.ent_coef), first.vf_coef
            )
            diagnostics = (
                th.stack([losses.policy, losses.value, losses.entropy, losses.total, losses.clip_fraction, losses.approx_kl])
                .detach()
                .cpu()
                .numpy()
            )
            stepping = still_stepping(members, active, logs, diagnostics, optimizers)
            if not stepping:
                break
            step(members, optimizers, losses.total, stepping, first.max_grad_norm)
        for k in started:
            members[k]._n_updates += 1
    for k in (k for k in range(k_members) if active[k]):
        optimizers.write_back(k)
    for k, member in enumerate(members):
        logs[k].record(member, clip_range[k], clip_range_vf[k] if clip_range_vf else None)


def as_tensor(obs: object, device: th.device) -> th.Tensor:
    """One member's last observations as a tensor (SB3's ``obs_as_tensor``; Atari observations are arrays)."""
    tensor = obs_as_tensor(obs, device)  # type: ignore[arg-type]
    if not isinstance(tensor, th.Tensor):
        raise ValueError("the population trainer takes array observations (Atari), not dict observations")
    return tensor


def collect_population_rollouts(
    members: Sequence[PPO], population: PopulationPolicy, callbacks: Sequence[BaseCallback], n_rollout_steps: int
) -> list[bool]:
    """``stable_baselines3.PPO.collect_rollouts`` for every member at once: one batched forward pass per step for all
    members, each member's own envs stepped together (``step_async`` for all, then ``step_wait``), each member's
    callback, episode info, timeout bootstrapping and rollout buffer as SB3 has them.

    Actions are sampled from torch's global generator in one call for all members, as SB3 samples a lone agent's:
    a population of one draws exactly the actions of a lone run with the same forward pass.

    :param members: K agents, their last observations set (``_setup_learn``).
    :param population: their policies, in the same order.
    :param callbacks: each member's callback (as ``_setup_learn`` returns it).
    :param n_rollout_steps: steps per env (``n_steps``).
    :return: per member, ``True`` if it collected a full rollout (returns and advantages computed), ``False`` if its
        callback stopped it (as SB3's ``collect_rollouts`` returns).
    """
    device = members[0].device
    population.set_training_mode(False)
    for member, callback in zip(members, callbacks, strict=True):
        member.rollout_buffer.reset()
        callback.on_rollout_start()
    going = [True] * len(members)
    with th.no_grad():
        params = population.stacked_parameters()  # fixed during the rollout
    for n_steps in range(n_rollout_steps):
        with th.no_grad():
            obs = th.stack([as_tensor(member._last_obs, device) for member in members])
            logits, values = population.logits_and_values(obs, params)
            # SB3's distribution validates its arguments; unchecked, the draw from torch's generator is the same
            distribution = th.distributions.Categorical(logits=logits, validate_args=False)
            sampled = distribution.sample()
            log_probs = distribution.log_prob(sampled)
        all_actions = sampled.cpu().numpy()
        live = [k for k, on in enumerate(going) if on]
        for k in live:
            members[k].env.step_async(all_actions[k])  # type: ignore[union-attr]
        for k in live:
            member, callback, actions = members[k], callbacks[k], all_actions[k]
            env = member.env
            assert env is not None
            new_obs, rewards, dones, infos = env.step_wait()
            member.num_timesteps += env.num_envs
            callback.update_locals(
                {
                    "self": member,
                    "env": env,
                    "callback": callback,
                    "rollout_buffer": member.rollout_buffer,
                    "n_rollout_steps": n_rollout_steps,
                    "n_steps": n_steps,
                    "actions": actions,
                    "values": values[k],
                    "log_probs": log_probs[k],
                    "new_obs": new_obs,
                    "rewards": rewards,
                    "dones": dones,
                    "infos": infos,
                }
            )
            if not callback.on_step():
                going[k] = False
                continue
            member._update_info_buffer(infos, dones)
            for idx, done in enumerate(dones):  # bootstrap on time limits, as SB3 does
                if (
                    done
                    and infos[idx].get("terminal_observation") is not None
                    and infos[idx].get("TimeLimit.truncated", False)
                ):
                    terminal_obs = member.policy.obs_to_tensor(infos[idx]["terminal_observation"])[0]
                    with th.no_grad():
                        rewards[idx] += member.gamma * member.policy.predict_values(terminal_obs)[0]
            member.rollout_buffer.add(
                member._last_obs,  # type: ignore[arg-type]
                actions.reshape(-1, 1),
                rewards,
                member._last_episode_starts,  # type: ignore[arg-type]
                values[k],
                log_probs[k],
            )
            member._last_obs = new_obs  # type: ignore[assignment]
            member._last_episode_starts = dones
    done_members = [k for k, on in enumerate(going) if on]
    with th.no_grad():
        obs = th.stack([as_tensor(member._last_obs, device) for member in members])
        _, last_values = population.logits_and_values(obs, params)
    for k in done_members:
        members[k].rollout_buffer.compute_returns_and_advantage(
            last_values=last_values[k],
            dones=members[k]._last_episode_starts,  # type: ignore[arg-type]
        )
        callbacks[k].update_locals({"rollout_buffer": members[k].rollout_buffer})
        callbacks[k].on_rollout_end()
    return going


class Population:
    """K :class:`~rl_gns.core.agents.ppo.NoiseScalePPO` agents of one architecture and PPO settings (seeds and learning
    rates may differ) trained in one process: rollouts with one batched forward pass per step
    (:func:`collect_population_rollouts`), updates with one batched forward and backward pass per minibatch
    (:func:`population_update`), the noise-scale measurements with one batched pass per small batch
    (:func:`~rl_gns.core.agents.population_measure.measure_due`), each member's logs and callbacks its own.

    A member whose callback stops it (a target reached, a deadline) or whose budget is spent leaves the population;
    the others go on.

    :param members: the agents, each with its own envs (``n_envs`` of them), logger and seed.
    :param rngs: each member's minibatch-permutation generator; if unset, seeded with the member's seed, the state a
        lone run's NumPy global generator has when it starts training.
    :raises ValueError: if the members cannot train together (:func:`check_members`).
    """

    def __init__(self, members: Sequence[NoiseScalePPO], rngs: Sequence[np.random.RandomState] | None = None) -> None:
        check_members(members)
        if any(type(member) is not NoiseScalePPO for member in members):
            raise ValueError("population members must be NoiseScalePPO agents (data-parallel and adaptive ones train alone)")
        self.members = list(members)
        self.rngs = list(rngs) if rngs is not None else [np.random.RandomState(member.seed) for member in members]
        if len(self.rngs) != len(self.members):
            raise ValueError(f"{len(self.members)} members and {len(self.rngs)} generators")
        self._batched: tuple[tuple[int, ...], PopulationPolicy] | None = None
        """The members of the batched policy last built, and that policy (:meth:`_policies`)."""

    def learn(
        self,
        total_timesteps: Sequence[int],
        callbacks: Sequence[MaybeCallback],
        reset_num_timesteps: bool = True,
        tb_log_name: str = "PPO",
        at_boundary: Callable[[Sequence[int]], bool] = lambda training: True,
        on_leave: Callable[[list[int]], None] = lambda leaving: None,
    ) -> bool:
        """``PPO.learn`` for every member at once (``log_interval`` 1, no progress bar).

        :param total_timesteps: each member's budget in agent steps (as ``PPO.learn`` takes it).
        :param callbacks: each member's callback(s).
        :param reset_num_timesteps: as for ``PPO.learn``.
        :param tb_log_name: as for ``PPO.learn``.
        :param at_boundary: called before every iteration with the members still training (the previous update and
            its log rows done, nothing of the next iteration begun); ``False`` stops the whole population there.
        :param on_leave: called with the indices of the members that leave together: their budgets spent, or their
            callbacks stopped them.
        :return: ``True`` if every member left, ``False`` if ``at_boundary`` stopped the population.
        """
        members = self.members
        setups = [
            member._setup_learn(total, callback, reset_num_timesteps, tb_log_name, False)
            for member, total, callback in zip(members, total_timesteps, callbacks, strict=True)
        ]
        totals = [total for total, _ in setups]
        hooks = [callback for _, callback in setups]
        for member, total, callback in zip(members, totals, hooks, strict=True):
            callback.on_training_start({"self": member, "total_timesteps": total, "callback": callback}, {})
        iterations = [0] * len(members)
        training = [k for k, member in enumerate(members) if member.num_timesteps < totals[k]]
        self._leave([k for k in range(len(members)) if k not in training], hooks, on_leave)  # budgets spent before
        self._batched = None
        while training and at_boundary(training):
            going = collect_population_rollouts(
                [members[k] for k in training], self._policies(training), [hooks[k] for k in training], members[0].n_steps
            )
            self._leave([k for k, on in zip(training, going, strict=True) if not on], hooks, on_leave)
            training = [k for k, on in zip(training, going, strict=True) if on]
            if training:
                self._update(training, totals, iterations)
                self._leave([k for k in training if members[k].num_timesteps >= totals[k]], hooks, on_leave)
                training = [k for k in training if members[k].num_timesteps < totals[k]]
        for k in training:  # stopped at a boundary
            hooks[k].on_training_end()
        return not training

    def _policies(self, training: list[int]) -> PopulationPolicy:
        """The batched policy of the members ``training``, built again only when they change."""
        if self._batched is None or self._batched[0] != tuple(training):
            self._batched = (tuple(training), PopulationPolicy([self.members[k].policy for k in training]))
        return self._batched[1]

    def _update(self, training: list[int], totals: list[int], iterations: list[int]) -> None:
        """One iteration's logs, noise-scale measurements and update of the members ``training``, their rollouts
        collected (as ``PPO.learn`` does after ``collect_rollouts``)."""
        members, population = self.members, self._policies(training)
        for k in training:
            iterations[k] += 1
            members[k]._update_current_progress_remaining(members[k].num_timesteps, totals[k])
            members[k].dump_logs(iterations[k])
        measured = measure_due([members[k] for k in training], population)
        for i, k in enumerate(training):
            members[k].before_update(*measured.get(i, (None, None)))
        population_update([members[k] for k in training], population, [self.rngs[k] for k in training])
        for k in training:
            members[k].after_update()

    @staticmethod
    def _leave(leaving: list[int], hooks: Sequence[BaseCallback], on_leave: Callable[[list[int]], None]) -> None:
        """End the training of the members ``leaving`` (their callbacks' ``on_training_end``), then tell ``on_leave``."""
        if not leaving:
            return
        for k in leaving:
            hooks[k].on_training_end()
        on_leave(leaving)
