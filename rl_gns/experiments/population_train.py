"""Several planned runs trained as one population in one process (:class:`rl_gns.core.agents.population.Population`), each
member writing its own ordinary run directory, as ``rl-gns train`` would.

Reads top to bottom like :mod:`rl_gns.experiments.train`, whose pieces it uses: the plans, checked to be one
population (:func:`check_population`) -> every member's lock -> envs and agents (new or from checkpoints),
``config.json`` -> learn together, writing checkpoints -> each member's model and ``summary.json`` as it leaves.

A population differs only in seeds and learning rates (``MEMBER_SETTINGS`` of :mod:`rl_gns.experiments.config`):
one rollout size of a sweep is the natural unit. Checkpoints are taken at one iteration boundary for every member
still training, written one member after another, and a signal or deadline stops them all there. A member's
checkpoint holds the population's torch generator (the actions of all members are drawn from it at once) and the
member's own NumPy generator (its minibatch permutations) and its games in progress (:mod:`rl_gns.core.envs.games`), so a
population resumed from checkpoints of one boundary goes on as it would have; each is also an ordinary checkpoint
that ``rl-gns train --resume`` can go on from alone. A kill while the checkpoints are written (SIGKILL) leaves the
members written so far at the new boundary and the others at the one before, and a half-written ``.tmp-`` directory
that resuming removes: the members then resume from different boundaries, with a warning, and go on from each one's
own checkpoint.
"""

from __future__ import annotations

import random
import signal
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch as th

from rl_gns.core.agents.population import Population
from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.envs.games import save_games
from rl_gns.experiments.callbacks import Snapshots
from rl_gns.experiments.config import TrainConfig, population_settings
from rl_gns.experiments.plan import RunPlan
from rl_gns.experiments.signals import Interrupted, StopOnSignal
from rl_gns.experiments.train import (
    OpenRun,
    checkpoint_clock,
    claim,
    close_run,
    open_run,
    write_run_checkpoint,
)
from rl_gns.records.checkpoint import load_rng_states, remove_torn
from rl_gns.records.lock import RunLock
from rl_gns.records.rundir import RunDir

#: Wall seconds between the population's progress lines.
PROGRESS_EVERY_S = 60.0


def check_population(plans: Sequence[RunPlan]) -> None:
    """Check, before anything is written, that planned runs can train as one population.

    :raises ValueError: naming the first setting in which two runs differ, or why a run trains alone.
    """
    if not plans:
        raise ValueError("a population needs at least one run")
    shared = population_settings(plans[0].config)
    for plan in plans:
        other = population_settings(plan.config)
        if shared is None or other is None:
            raise ValueError(f"{plan.out}: adaptive and data-parallel runs train alone, not in a population")
        differ = [name for name in shared if shared[name] != other[name]]
        if differ:
            raise ValueError(f"{plan.out} differs from {plans[0].out} in {', '.join(differ)}: not one population")
    if len({plan.out.resolve() for plan in plans}) < len(plans):
        raise ValueError("two runs of a population write one run directory")


def train_population(plans: Sequence[RunPlan]) -> list[Path]:
    """Train planned runs (new or resumed) as one population and return their directories; a member is finished
    (``summary.json``) when it leaves at its target or budget. A population stopped at ``max_wall_minutes`` returns
    with checkpoints for the members still training.

    :raises ValueError: if the runs cannot train together (:func:`check_population`).
    :raises rl_gns.experiments.signals.Interrupted: after SIGINT, SIGTERM or SIGHUP, with a checkpoint of every member still
        training.
    :raises rl_gns.records.lock.RunLockedError: if another process holds one of the run directories.
    """
    check_population(plans)
    steps = sorted({plan.checkpoint.env_steps for plan in plans if plan.checkpoint is not None})
    if len(steps) > 1:
        warnings.warn(
            f"rl-gns: the members resume from checkpoints at {', '.join(f'{s:,}' for s in steps)} agent steps (a kill "
            "while they were written): each goes on from its own, not as the population would have gone on",
            stacklevel=2,
        )
    config = plans[0].config
    if config.torch_threads is not None:
        th.set_num_threads(config.torch_threads)
    locks: list[RunLock] = []
    try:
        for plan in plans:
            locks.append(claim(plan))
        return _train(plans, config)
    finally:
        for lock in locks:  # a finished member's directory keeps no lock file, as a lone run's
            lock.release(unlink=RunDir(lock.run_path).status() == "done")


def _train(plans: Sequence[RunPlan], config: TrainConfig) -> list[Path]:
    # --- every member's envs and agent, config.json, logger; then the generators the population draws from
    for plan in plans:
        remove_torn(plan.out)  # half-written checkpoints a kill left
    opened = [open_run(plan, console=None) for plan in plans]
    members = [run.model for run in opened]
    rngs, resumed = restored_generators(plans, members)
    population = Population(members, rngs)
    print(
        f"population of {len(plans)} runs, {plans[0].batching.rollout_size:,} agent steps per iteration each, "
        f"budget {config.total_steps:,}: {resumed} resumed, {len(plans) - resumed} new",
        flush=True,
    )

    # --- learn together; checkpoints at the same boundary for every member; each member closes as it leaves
    start = time.perf_counter()
    first_steps = sum(member.num_timesteps for member in members)
    left: list[int] = []

    said = start

    def at_boundary(training: Sequence[int]) -> bool:
        nonlocal said
        steps = max(member.num_timesteps for member in members)
        if time.perf_counter() - said >= PROGRESS_EVERY_S:
            said = time.perf_counter()
            rate = sum(member.num_timesteps for member in members) - first_steps
            print(
                f"[{steps:,}/{config.total_steps:,} agent steps] {len(training)} training, {len(left)} finished, "
                f"{rate / (said - start):,.0f} agent steps/s in all",
                flush=True,
            )
        if clock.due(steps):
            began = time.perf_counter()
            shared = th.get_rng_state()
            for k in training:
                rng_state = {"torch": shared, "numpy": rngs[k].get_state(), "random": random.getstate()}
                write_run_checkpoint(opened[k], time.perf_counter() - start, [rng_state], [save_games(members[k])])
            clock.saved(steps, began)
        return not clock.stopped

    def on_leave(leaving: list[int]) -> None:
        wall_s = time.perf_counter() - start  # the same for all that leave now, however long closing them takes
        for k in leaving:
            env = members[k].get_env()
            assert env is not None
            env.close()
            print(f"{opened[k].run.path}: finished at {members[k].num_timesteps:,} agent steps", flush=True)
            close_run(opened[k], wall_s, {**clock.lifecycle(), "population_size": len(plans)})
            left.append(k)

    with StopOnSignal() as signals:
        clock = checkpoint_clock(config, signals.requested)
        clock.start(max(member.num_timesteps for member in members))
        population.learn(
            [config.total_steps - member.num_timesteps for member in members],
            [
                [run.episodes, *([Snapshots(run.run.path, config.snapshot_steps)] if config.snapshot_steps else [])]
                for run in opened
            ],
            reset_num_timesteps=False,
            at_boundary=at_boundary,
            on_leave=on_leave,
        )
    paused = [opened[k] for k in range(len(plans)) if k not in left]
    if paused:
        pause(paused, clock.saved_at, signals.signum, config.max_wall_minutes)
    return [run.run.path for run in opened]


def restored_generators(plans: Sequence[RunPlan], members: Sequence[NoiseScalePPO]) -> tuple[list[np.random.RandomState], int]:
    """Each member's minibatch-permutation generator, seeded with its seed or as its checkpoint left it; torch's
    global generator as the checkpoints left it (every member checkpointed at one boundary holds the same torch
    state). Return the generators and how many members resumed."""
    rngs = [np.random.RandomState(member.seed) for member in members]
    saved = {k: load_rng_states(plan.checkpoint)[0] for k, plan in enumerate(plans) if plan.checkpoint is not None}
    for k, state in saved.items():
        rngs[k].set_state(state["numpy"])
    if saved:
        th.set_rng_state(next(iter(saved.values()))["torch"])
    return rngs, len(saved)


def pause(paused: Sequence[OpenRun], saved_at: int, signum: int | None, max_wall_minutes: float | None) -> None:
    """Close the logs of the members that did not finish (TensorBoard flushed) and say where they stopped.

    :param saved_at: agent steps of the checkpoints they stopped at.
    :param signum: the signal that stopped them, if one did; otherwise the wall-clock limit did.
    :raises Interrupted: if a signal stopped them.
    """
    for run in paused:
        run.model.logger.close()
    where = f"at {saved_at:,} agent steps; the command that started them goes on from there"
    if signum is not None:
        name = signal.Signals(signum).name
        raise Interrupted(signum, f"stopped {len(paused)} runs by {name} with checkpoints {where}")
    print(f"stopped {len(paused)} runs before --max-wall-minutes {max_wall_minutes} {where}", flush=True)
