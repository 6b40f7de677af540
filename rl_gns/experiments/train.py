"""``rl-gns train``: PPO on vectorized Atari with noise-scale logging, one run directory per run.

Reads top to bottom: the plan (:mod:`rl_gns.experiments.plan`, every check, nothing written) -> the run directory's
lock -> env -> model (or a checkpoint's) -> config.json -> learn, writing checkpoints -> save -> summarise. The run
directory follows :mod:`rl_gns.records.rundir`; ``summary.json`` is written last. The CLI draws ``training.png``
afterwards (a report: :mod:`rl_gns.reports.run_plot`).

One process writes a run directory: it holds the directory's lock (:mod:`rl_gns.records.lock`) from before its first
write until it exits, and a second ``train``, ``--resume`` or ``--overwrite`` on it is refused. SIGINT, SIGTERM
and SIGHUP stop training after the PPO iteration in progress, with a checkpoint (:mod:`rl_gns.experiments.signals`).

Resuming (``--resume DIR``) goes on from the run's newest checkpoint (:mod:`rl_gns.records.checkpoint`) as if
nothing had happened, in the same games (:mod:`rl_gns.core.envs.games`); only SB3's ``time/time_elapsed`` and ``time/fps``
restart. Where the games in progress could not be saved (the ``ale_vector`` backend, or a checkpoint of an older
rl-gns), the envs start new games (seeded ``seed + env_steps``) and the games cut off are counted in
``summary.json`` (``games_dropped``). Rows logged after the checkpoint are dropped and logged again.

Data-parallel (``--nproc D``, or the ranks ``torchrun`` starts): every rank runs :func:`train_rank` with its share
of the envs (:class:`~rl_gns.core.agents.distributed.DataParallelPPO`); rank 0's plan holds for every rank, and rank 0
alone writes the run directory.
"""

from __future__ import annotations

import io
import json
import math
import os
import platform
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3.common.logger import HumanOutputFormat, KVWriter, Logger, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv
from torch.distributed.elastic.multiprocessing.errors import record

from rl_gns.core.agents.adaptive import AdaptivePPO, EnvFactory
from rl_gns.core.agents.defaults import optimizer_policy_kwargs, schedule
from rl_gns.core.agents.distributed import DataParallelPPO, broadcast_object, gather_objects, rank_and_size
from rl_gns.core.agents.ppo import NoiseScalePPO
from rl_gns.core.envs.atari import FRAME_SKIP, make_atari_vec_env
from rl_gns.core.envs.games import restore_games, save_games
from rl_gns.core.maths.advice import MIN_MEASUREMENTS, Advice, advise, predictor_for, run_settings
from rl_gns.core.maths.names import tracker_key
from rl_gns.core.maths.schemes import Candidate
from rl_gns.experiments.callbacks import CheckpointClock, Checkpointer, EpisodeLogger, RanksProgressBar, Snapshots
from rl_gns.experiments.config import TrainConfig, to_json, training_settings
from rl_gns.experiments.console import ConsoleLine
from rl_gns.experiments.launch import RankFailedError, join, launch, under_torchrun
from rl_gns.experiments.plan import RunPlan, plan_run
from rl_gns.experiments.signals import Interrupted, StopOnSignal
from rl_gns.records.checkpoint import (
    CHECKPOINTS,
    checkpoint_dirs,
    global_rng_state,
    load_games,
    load_rng_states,
    remove_checkpoints,
    set_global_rng_state,
    write_checkpoint,
)
from rl_gns.records.compact import compact_run
from rl_gns.records.lock import RunLock
from rl_gns.records.logs import read_rows, run_logger, truncate_after
from rl_gns.records.rundir import (
    EPISODES,
    ERROR,
    MODEL,
    PLOT,
    PROGRESS,
    SNAPSHOTS,
    STEP_KEY,
    SUMMARY,
    RunDir,
    drop_snapshots_after,
)
from rl_gns.records.schema import NoiseScaleSummary, RunSummary

__all__ = ["TrainConfig", "plan_run", "train"]


def run_record(plan: RunPlan) -> dict:
    """What ``config.json`` holds: every setting, the resolved values, versions and machine."""
    config, batching = plan.config, plan.batching
    return {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
        "out": str(plan.out),
        "game": plan.game,
        "rollout_size": batching.rollout_size,
        "n_minibatches": batching.n_minibatches,
        "frame_skip": FRAME_SKIP,
        "gns_sizes": {scheme: {"b_small": small, "b_big": big} for scheme, (small, big) in plan.gns_sizes.items()},
        "versions": {
            "rl_gns": version("rl-gns"),
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "python": platform.python_version(),
        },
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch_threads": th.get_num_threads()},
    }


def train(plan: RunPlan) -> Path:
    """Run one training run, or resume one, as planned, and return its directory. A run stopped at
    ``max_wall_minutes`` returns without ``summary.json``.

    With ``nproc > 1`` (and not under ``torchrun``), starts ``nproc`` ranks on this machine
    (:func:`rl_gns.experiments.launch.launch`) and waits for them.

    :raises rl_gns.experiments.launch.RankFailedError: if a rank dies or fails (the run can be resumed).
    :raises rl_gns.experiments.signals.Interrupted: after SIGINT, SIGTERM or SIGHUP, with a checkpoint written.
    :raises rl_gns.records.lock.RunLockedError: if another process took the run directory since it was planned.
    :raises OSError: if the disk fails (full, read-only), with the command that goes on from the last checkpoint
        (:func:`how_to_go_on`).
    """
    if plan.batching.nproc > 1 and not under_torchrun():
        try:
            return launch(train_worker, plan.batching.nproc, plan)[0]
        except RankFailedError as error:
            raise RankFailedError(f"{error}; {how_to_go_on(plan.out)}") from None
    try:
        return train_rank(plan)
    except OSError as error:  # a full or read-only disk: the last checkpoint still holds
        where = f"{error.strerror}: {error.filename}" if error.filename else error.strerror or str(error)
        raise OSError(error.errno, f"{where}; {how_to_go_on(plan.out)}") from None


def train_under_torchrun(config: TrainConfig, given: Collection[str]) -> Path:
    """One rank that ``torchrun`` started: join the process group, take rank 0's plan, train."""
    join(config.device)
    return train_rank(plan_on_rank_0(config, given))


def resume_command(out: Path) -> str:
    """The shell command that goes on with a run (its path quoted for the shell)."""
    return f"rl-gns train --resume {shlex.quote(str(out))}"


def how_to_go_on(out: Path) -> str:
    """What a user does after a run failed on the way: resume from its last checkpoint, or, before its first, start
    it again."""
    if checkpoint_dirs(out / CHECKPOINTS):
        return f"go on from the last checkpoint with: {resume_command(out)}"
    return "it stopped before its first checkpoint: start it again (--overwrite) once that is fixed"


@record
def train_worker(plan: RunPlan) -> Path:
    """One rank of a data-parallel run that :func:`train` launched (its errors reach the launcher)."""
    join(plan.config.device)
    return train_rank(plan)


def train_rank(plan: RunPlan) -> Path:
    """Train as one rank of the process group the launcher set up (joined already), or as the only process; rank 0
    holds the run directory's lock throughout."""
    if rank_and_size()[0] != 0:
        return run_training(plan)
    lock, finished = claim(plan), False
    try:
        out = run_training(plan)
        finished = RunDir(out).status() == "done"
        return out
    finally:
        lock.release(unlink=finished)  # a finished run's directory keeps no lock file


@dataclass
class OpenRun:
    """A run between its start and its end, as rank 0 holds it: the directory, the agent, what its checkpoints and
    summary record, and the logger of its games."""

    plan: RunPlan
    run: RunDir
    model: NoiseScalePPO
    state: dict[str, Any]
    """``env_steps``, ``wall_s`` (seconds of the earlier slices), ``games_dropped`` and ``resumes``."""
    episodes: EpisodeLogger


def open_run(plan: RunPlan, console: KVWriter | None, rank: int = 0) -> OpenRun:
    """Start or resume the planned run on this rank: its envs and agent, then (rank 0) ``config.json`` for a new run
    and the logger. Nothing is written before the envs and agent exist: a run that cannot start leaves no run behind.

    :param console: what rank 0 prints per iteration; ``None``: nothing (the member of a population).
    :param rank: this process's rank (ranks other than 0 log nothing).
    """
    config, checkpoint = plan.config, plan.checkpoint
    run = RunDir(plan.out)
    make_env = partial(make_atari_vec_env, plan.game, backend=config.backend, repeat_action_probability=config.sticky_actions)
    env = make_env(plan.n_envs_per_rank, plan.env_seed(rank))
    if checkpoint is None:
        model = new_model(plan, env, make_env)
        state = {"env_steps": 0, "wall_s": 0.0, "games_dropped": 0, "resumes": 0}
        if rank == 0:
            run.write_config(run_record(plan))
    else:
        model, kept_games = resumed_model(plan, env, make_env)
        dropped = 0 if kept_games else checkpoint.state["n_envs"]
        state = {**checkpoint.state, "games_dropped": checkpoint.state["games_dropped"] + dropped}
        state["resumes"] += 1
    if rank == 0:
        resume_step = None if checkpoint is None else checkpoint.env_steps
        model.set_logger(run_logger(run.path, run.file(PROGRESS), console, resume_step))
    else:
        model.set_logger(Logger(None, []))
    episodes = EpisodeLogger(
        run.file(EPISODES),
        stop_score=config.stop_score,
        window=config.score_window,
        wall_offset_s=state["wall_s"],
        race=config.race_file,
    )
    return OpenRun(plan, run, model, state, episodes)


def write_run_checkpoint(opened: OpenRun, wall_s: float, rng_states: list[dict[str, Any]], games: list[bytes | None]) -> None:
    """Write a checkpoint of an open run as its agent is now (rank 0).

    :param wall_s: seconds of training of this slice so far.
    :param rng_states: the global RNG states the agent draws from, one per rank.
    :param games: the games in progress of each rank (:func:`rl_gns.core.envs.games.save_games`).
    """
    run, model, config = opened.run, opened.model, opened.plan.config
    log_rows = {name: len(read_rows(run.file(name))[1]) for name in (PROGRESS, EPISODES)}
    n_envs = model.n_envs * opened.plan.batching.nproc
    record = {**opened.state, "env_steps": model.num_timesteps, "iterations": model.iterations, "n_envs": n_envs}
    provenance = {"rl_gns": version("rl-gns"), "settings": training_settings(config)}
    wall_s += opened.state["wall_s"]
    state = {**record, "wall_s": wall_s, "log_rows": log_rows, **provenance}
    write_checkpoint(run.path, model.save, state, rng_states, games)


def close_run(opened: OpenRun, wall_s: float, lifecycle: dict[str, Any]) -> Path:
    """Finish an open run that trained to its end (rank 0): ``model.zip``, the advice (printed and logged), then
    ``summary.json`` last, which marks the run finished, and its checkpoints removed.

    :param wall_s: seconds of training of this slice.
    :param lifecycle: checkpoints written and their mean cost, and what else the summary's values add.
    """
    plan, run, model = opened.plan, opened.run, opened.model
    model.save(run.file(MODEL))
    settings = run_settings(run_record(plan))
    predictor = predictor_for(settings)
    advice = final_advice(model, plan, predictor, settings)
    if advice:
        lines = advice.lines()
    elif model.noise_scale is None:
        lines = ["critical rollout size: no noise scale measured (--no-gns); `rl-gns probe` measures it directly"]
    else:
        lines = [f"critical rollout size: the predictor {predictor} was not measured"]
    print("\n".join(lines), flush=True)
    key = "advice/critical_rollout_size"
    for output in model.logger.output_formats:  # the advice as TensorBoard text, without a row in progress.csv
        if isinstance(output, TensorBoardOutputFormat):
            output.write({key: "  \n".join(lines)}, {key: None}, model.num_timesteps)  # type: ignore[dict-item]
    model.logger.close()
    lifecycle = {"resumes": opened.state["resumes"], "games_dropped": opened.state["games_dropped"], **lifecycle}
    wall_s += opened.state["wall_s"]
    reached_at = opened.episodes.reached_at
    run.write_summary(summary(plan, model, wall_s, reached_at, lifecycle, advice_record(advice, lines, predictor)))
    remove_checkpoints(run.path)
    compact_run(run.path)  # the finished run's logs in their compact form (rl_gns.records.compact)
    return run.path


def run_training(plan: RunPlan) -> Path:
    """The run itself: envs, agent, learning with checkpoints, then the model, summary and advice (rank 0)."""
    rank, n_ranks = rank_and_size()
    config = plan.config
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1")) if under_torchrun() else 1
    threads = config.torch_threads or (max(1, (os.cpu_count() or 1) // local_ranks) if local_ranks > 1 else None)
    if threads is not None:
        th.set_num_threads(threads)

    # --- environments and agent, config.json, the logger
    console = (
        HumanOutputFormat(sys.stdout)
        if config.verbose
        else ConsoleLine(config.total_steps, predictor=predictor_for(run_settings(run_record(plan))))
    )
    opened = open_run(plan, console if rank == 0 else None, rank)
    model, run = opened.model, opened.run
    if rank == 0:
        if plan.checkpoint is None:
            batching = plan.batching
            print(
                f"training {plan.game} into {run.path}: {batching.n_envs} envs x {batching.n_steps} steps = "
                f"{batching.rollout_size:,} agent steps per iteration, budget {config.total_steps:,}",
                flush=True,
            )
        else:
            checkpoint = plan.checkpoint
            print(f"resuming {run.path} at {checkpoint.env_steps:,} agent steps ({checkpoint.path.name})", flush=True)

    # --- train, with checkpoints; SIGINT, SIGTERM or SIGHUP stop after the iteration in progress, with one
    show_bar = rank == 0 and (sys.stderr.isatty() if config.progress_bar is None else config.progress_bar)
    start = time.perf_counter()

    def save_checkpoint() -> None:
        rng_states, games = gather_objects(global_rng_state()), gather_objects(save_games(model))
        if rank == 0:
            write_run_checkpoint(opened, time.perf_counter() - start, rng_states, games)

    with StopOnSignal() as signals:
        checkpoints = Checkpointer(save_checkpoint, checkpoint_clock(config, signals.requested))
        model.learn(
            total_timesteps=config.total_steps - model.num_timesteps,
            callback=[
                opened.episodes,
                checkpoints,
                *([Snapshots(run.path, config.snapshot_steps)] if rank == 0 and config.snapshot_steps else []),
                *([RanksProgressBar(n_ranks)] if show_bar and n_ranks > 1 else []),
            ],
            reset_num_timesteps=False,
            progress_bar=show_bar and n_ranks == 1,
        )
    wall_s = time.perf_counter() - start
    trained_env = model.get_env()  # an adaptive run may have replaced env
    assert trained_env is not None
    trained_env.close()
    if rank != 0:
        return run.path
    clock = checkpoints.clock
    if clock.stopped:
        model.logger.close()  # flushes TensorBoard
        where = f"at {clock.saved_at:,} agent steps of {config.total_steps:,}; go on with: {resume_command(run.path)}"
        if signals.signum is not None:
            raise Interrupted(signals.signum, f"stopped by {signal.Signals(signals.signum).name} with a checkpoint {where}")
        print(f"stopped before --max-wall-minutes {config.max_wall_minutes} {where}", flush=True)
        return run.path
    return close_run(opened, wall_s, clock.lifecycle())


def checkpoint_clock(config: TrainConfig, stop_requested: Callable[[], bool]) -> CheckpointClock:
    """When a run of ``config`` writes checkpoints and stops: ``--checkpoint-minutes``, ``--checkpoint-steps`` and
    ``--max-wall-minutes``, or when ``stop_requested`` says so (a signal)."""
    return CheckpointClock(
        every_s=None if config.checkpoint_minutes is None else 60 * config.checkpoint_minutes,
        every_steps=config.checkpoint_steps,
        deadline_s=None if config.max_wall_minutes is None else 60 * config.max_wall_minutes,
        stop_requested=stop_requested,
    )


def claim(plan: RunPlan) -> RunLock:
    """Take the run directory's lock, check again what the plan saw (another process may have written it since), and
    make it ready: a new run clears what an earlier one left (``--overwrite``); a resumed run drops the rows logged
    after its checkpoint, which it logs again.

    :raises RunLockedError: if another process holds the run.
    :raises FileExistsError: if a run appeared there since the plan was made.
    """
    run = RunDir(plan.out)
    lock = RunLock(plan.out).acquire()
    if plan.checkpoint is None:
        if run.is_started() and not plan.config.overwrite:
            lock.release()
            raise FileExistsError(f"{plan.out} already holds a run; pass --overwrite, --resume {plan.out}, or another --out")
        clear_run_files(run)
    else:
        for name, step_key in ((PROGRESS, STEP_KEY), (EPISODES, "env_steps")):
            truncate_after(run.file(name), step_key, plan.checkpoint.env_steps)
        drop_snapshots_after(run.path, plan.checkpoint.env_steps)
    return lock


def plan_on_rank_0(config: TrainConfig, given: Collection[str]) -> RunPlan:
    """Rank 0's plan of the run, on every rank that ``torchrun`` started; what rank 0 raises, every rank raises.

    :raises ValueError: also if the ranks were started with different settings.
    """
    started = gather_objects(json.dumps(to_json(config), sort_keys=True))
    if any(text != started[0] for text in started):
        ranks = ", ".join(str(r) for r, text in enumerate(started) if text != started[0])
        raise ValueError(f"the ranks were started with other settings than rank 0 (ranks {ranks})")
    outcome: RunPlan | Exception | None = None
    if rank_and_size()[0] == 0:
        try:
            outcome = plan_run(config, given)
        except (ValueError, FileExistsError) as error:
            outcome = error
    outcome = broadcast_object(outcome)
    if isinstance(outcome, Exception):
        raise outcome
    assert outcome is not None
    return outcome


def ppo_kwargs(config: TrainConfig) -> dict[str, Any]:
    """``NoiseScalePPO`` keyword arguments of a configuration."""
    return {
        "noise_scale": config.noise_scale_config(),
        "n_steps": config.n_steps,
        "batch_size": config.minibatch_size,
        "n_epochs": config.n_epochs,
        "learning_rate": schedule(config.learning_rate, config.anneal),
        "clip_range": schedule(config.clip_range, config.anneal),
        "ent_coef": config.ent_coef,
        "vf_coef": config.vf_coef,
        "gamma": config.gamma,
        "gae_lambda": config.gae_lambda,
        "max_grad_norm": config.max_grad_norm,
        "normalize_advantage": config.normalize_advantage,
        "policy_kwargs": optimizer_policy_kwargs(config.optimizer),
        "seed": config.seed,
        "device": config.device,
    }


def new_model(plan: RunPlan, env: VecEnv, make_env: EnvFactory) -> NoiseScalePPO:
    """A new agent on ``env``, this rank's new envs (an :class:`AdaptivePPO` with ``--adaptive-r``; on several ranks,
    a :class:`~rl_gns.core.agents.distributed.DataParallelPPO`)."""
    config = plan.config
    policy = "MlpPolicy" if config.backend == "ram" else "CnnPolicy"
    planned = plan.gns_sizes  # the measurement's sizes the plan checked: the agent does not derive them again
    if plan.batching.nproc > 1:
        return DataParallelPPO(policy, env, planned_gns_sizes=planned, **ppo_kwargs(config))
    adaptive = config.adaptive_config()
    if adaptive is None:
        model = NoiseScalePPO(policy, env, planned_gns_sizes=planned, **ppo_kwargs(config))
        if config.init_from is not None:  # a probe's branch: the saved policy and Adam state, this run's schedules
            model.set_parameters(str(config.init_from), exact_match=True, device=config.device)
        return model
    return AdaptivePPO(policy, env, adaptive=adaptive, make_env=make_env, **ppo_kwargs(config))


def resumed_model(plan: RunPlan, env: VecEnv, make_env: EnvFactory) -> tuple[NoiseScalePPO, bool]:
    """The agent of the plan's checkpoint (SB3's ``load``) on ``env``, this rank's new envs (as many as the agent had:
    an adaptive run may have grown), with the global RNG states it was saved with, and in the games it was playing.

    :return: the agent, and whether it plays on in the saved games (``False``: it starts new ones).
    """
    config, checkpoint = plan.config, plan.checkpoint
    assert checkpoint is not None
    planned = plan.gns_sizes  # the sizes the plan checked; SB3's load sets them on the agent before its _setup_model
    rank, n_ranks = rank_and_size()
    if n_ranks > 1:  # rank 0 reads the checkpoint for every rank: the others need no shared disk
        saved, rng_states, games = broadcast_object(
            (checkpoint.model.read_bytes(), load_rng_states(checkpoint), load_games(checkpoint)) if rank == 0 else None
        )
        model: NoiseScalePPO = DataParallelPPO.load(
            io.BytesIO(saved), env=env, device=config.device, planned_gns_sizes=planned
        )
    else:
        rng_states, games = load_rng_states(checkpoint), load_games(checkpoint)
        if config.adaptive_r is None:
            model = NoiseScalePPO.load(checkpoint.model, env=env, device=config.device, planned_gns_sizes=planned)
        else:
            model = AdaptivePPO.load(checkpoint.model, env=env, device=config.device, make_env=make_env)
    set_global_rng_state(rng_states[rank])
    saved_games = None if games is None else games[rank]
    if saved_games is None:
        env.seed(plan.env_seed(rank))  # SB3's load seeded the envs with the run's seed again; the next reset uses this
        return model, False
    restore_games(model, saved_games)
    return model, True


def clear_run_files(run: RunDir) -> None:
    """Remove what an earlier run left in a directory being reused (``--overwrite``): its logs, appended to
    otherwise, its checkpoints, snapshots, model and summary."""
    if not run.path.is_dir():
        return
    for path in run.path.glob("events.out.tfevents.*"):
        path.unlink()
    for name in (PROGRESS, EPISODES, MODEL, SUMMARY, ERROR, PLOT):
        run.file(name).unlink(missing_ok=True)
    remove_checkpoints(run.path)
    shutil.rmtree(run.file(SNAPSHOTS), ignore_errors=True)


def final_advice(model: NoiseScalePPO, plan: RunPlan, predictor: str, settings: dict[str, Any]) -> Advice | None:
    """What the measurements of the run's predictor (:func:`rl_gns.core.maths.advice.predictor_for` its settings) over the
    whole run say (:func:`rl_gns.core.maths.advice.advise`), at the run's last env count; ``None`` if it did not measure the
    predictor's scheme and loss.

    :param settings: the run's settings (:func:`rl_gns.core.maths.advice.run_settings` of :func:`run_record`).
    """
    candidate = Candidate.parse(predictor)
    tracker = (model.gns_trackers or {}).get(tracker_key(candidate.scheme, candidate.loss))
    if tracker is None:
        return None
    n_envs = model.n_envs * plan.batching.nproc
    g2_T, trace_sigma_T = np.asarray(tracker.g2_T), np.asarray(tracker.trace_sigma_T)
    batching = plan.batching
    return advise(predictor, g2_T, trace_sigma_T, n_envs, batching.n_steps, batching.n_minibatches, settings)


def advice_record(advice: Advice | None, lines: list[str], predictor: str) -> dict:
    """The advice as ``summary.json`` holds it (``predictor``: the candidate of the run's regime, even unmeasured): no
    number from too few measurements; ``high`` is ``null`` where
    ``|G|²`` is not resolved; ``b_crit_with_predictor_error`` widens the interval by the predictor's checked error,
    ``null`` where it was not checked in the run's regime."""
    if advice is None:
        return {"predictor": predictor, "text": lines}
    b, enough = advice.b_crit, advice.n_measurements >= MIN_MEASUREMENTS
    identified = enough and b.resolved and math.isfinite(b.point) and b.point > 0  # else a lower bound at most
    widened = advice.with_predictor_error() if enough else None
    return {
        "predictor": advice.predictor,
        "n_measurements": advice.n_measurements,
        "b_crit": b.point if identified else None,
        "b_crit_ci95": [b.low, b.high if b.resolved else None] if enough else None,
        "b_crit_with_predictor_error": [widened[0], widened[1] if b.resolved else None] if widened else None,
        "n_envs_critical": advice.n_envs_critical[0] if identified else None,
        "text": lines,
    }


def summary(
    plan: RunPlan, model: NoiseScalePPO, wall_s: float, reached_at: int | None, lifecycle: dict[str, Any], advice: dict
) -> RunSummary:
    """Totals of a finished run and its noise scales: the moving average at the end and the run average
    (``Σ tr(Σ) / Σ |G|²`` over every measurement, with its 95 % interval), per scheme and loss.

    :param wall_s: seconds of training over every slice of the run.
    :param reached_at: agent steps at which the stop score was reached, if it was.
    :param lifecycle: resumes, games dropped, checkpoints written and their mean cost.
    :param advice: :func:`advice_record`.
    """
    scores = [ep["r"] for ep in model.ep_info_buffer or []]
    noise_scales = []
    for tracker in (model.gns_trackers or {}).values():
        average = tracker.run_average()
        ci95 = (average.low, average.high if average.resolved else None)
        noise_scales.append(NoiseScaleSummary(tracker.scheme, tracker.loss, tracker.b_simple, average.point, ci95))
    n_ranks = rank_and_size()[1]
    throughput = {
        "frames": model.num_timesteps * FRAME_SKIP,
        "agent_steps_per_s": round(model.num_timesteps / wall_s, 1),
        "nproc": n_ranks,
        "n_scored_episodes": len(scores),
        "device": str(model.device),
    }
    return RunSummary(
        env_steps=model.num_timesteps,
        iterations=model.iterations,
        wall_s=round(wall_s, 2),
        n_envs_final=model.n_envs * n_ranks,
        score_last_100_mean=float(np.mean(scores)) if scores else None,
        stop_score_reached_at=reached_at,
        game=plan.game,
        noise_scales=tuple(noise_scales),
        advice=advice,
        resumes=lifecycle["resumes"],
        games_dropped=lifecycle["games_dropped"],
        values={**throughput, **lifecycle},
    )
