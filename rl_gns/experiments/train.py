"""``rl-gns train``: PPO on vectorized Atari with noise-scale logging, one run directory per run.

Reads top to bottom: check -> record the config (or reload a checkpoint) -> env -> model -> learn, writing
checkpoints -> save -> summarise. The run directory follows :mod:`rl_gns.records.rundir`; ``summary.json`` is
written last. The CLI draws ``training.png`` afterwards (a report: :mod:`rl_gns.reports.run_plot`).

Resuming (``--resume DIR``) goes on from the run's newest checkpoint (:mod:`rl_gns.records.checkpoint`) as if
nothing had happened, except for the games in progress: the envs start new games (seeded ``seed +
env_steps``), the games cut off are counted in ``summary.json`` (``games_dropped``), and SB3's
``time/time_elapsed`` and ``time/fps`` restart. Rows logged after the checkpoint are dropped and logged again.

Data-parallel (``--nproc D``, or the ranks ``torchrun`` starts): every rank runs :func:`train_rank` with its share
of the envs (:class:`~rl_gns.core.distributed.DataParallelPPO`); rank 0 resolves the settings and the checkpoint and
sends them to the others, and alone writes the run directory.
"""

from __future__ import annotations

import io
import math
import os
import platform
import sys
import time
from dataclasses import asdict, fields, replace
from datetime import datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3.common.logger import Logger, TensorBoardOutputFormat
from torch.distributed.elastic.multiprocessing.errors import record

from rl_gns.core.adaptive import AdaptivePPO, EnvFactory
from rl_gns.core.advice import DEFAULT_PREDICTOR, Advice, parse_predictor
from rl_gns.core.atari import FRAME_SKIP, make_atari_vec_env, resolve_game
from rl_gns.core.defaults import schedule
from rl_gns.core.distributed import DataParallelPPO, broadcast_object, gather_objects, rank_and_size, sizes_over_ranks
from rl_gns.core.noise_scale import b_simple_interval
from rl_gns.core.ppo import NoiseScalePPO
from rl_gns.experiments.callbacks import Checkpointer, EpisodeLogger, RanksProgressBar
from rl_gns.experiments.config import RUN_CONTROL, TrainConfig, to_json, train_config_from_json, training_settings
from rl_gns.experiments.launch import RankFailedError, join, launch, under_torchrun, world_size_from_env
from rl_gns.records.checkpoint import (
    Checkpoint,
    CheckpointError,
    global_rng_state,
    latest_checkpoint,
    load_rng_states,
    remove_checkpoints,
    set_global_rng_state,
    write_checkpoint,
)
from rl_gns.records.logs import run_logger, truncate_after
from rl_gns.records.rundir import (
    EPISODES,
    ERROR,
    MODEL,
    PLOT,
    PROGRESS,
    STEP_KEY,
    SUMMARY,
    RunDir,
    noise_columns,
    run_advice,
)

__all__ = ["TrainConfig", "check", "train"]


class Resolved(NamedTuple):
    """What :func:`check` resolves from a configuration."""

    game: str
    """ale-py ROM id."""
    gns_sizes: dict[str, tuple[int, int]]
    """``{scheme: (b_small, b_big)}`` of the measurement (empty with ``--no-gns``)."""
    out: Path
    """The run directory."""
    checkpoint: Checkpoint | None
    """The checkpoint to resume from (``--resume``), ``None`` for a new run."""


def default_out(game: str, seed: int) -> Path:
    """``runs/<game>_s<seed>_<date-time>``, CleanRL-style, so runs never collide."""
    return Path("runs") / f"{game}_s{seed}_{datetime.now():%Y%m%d-%H%M%S}"


def check(config: TrainConfig) -> Resolved:
    """Validate a configuration without writing anything.

    :raises UnknownGameError: for an unknown game, naming close matches.
    :raises FileExistsError: if ``config.out`` holds a run and ``overwrite`` is off.
    :raises ValueError: for settings that cannot run, with the reason (:class:`CheckpointError` for a checkpoint
        that cannot be resumed).
    """
    config = resume_config(config)
    game = resolve_game(config.env)
    for name in ("n_envs", "nproc", "n_steps", "n_epochs", "total_steps", "minibatch_size", "score_window"):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    if not config.learning_rate > 0:
        raise ValueError(f"--learning-rate must be > 0, got {config.learning_rate}")
    if config.rollout_size % config.minibatch_size:
        raise ValueError(f"minibatch_size {config.minibatch_size} must divide the rollout size {config.rollout_size}")
    if th.device(config.device).type == "cuda" and not th.cuda.is_available():
        raise ValueError("--device cuda asked for, but torch sees no CUDA device here")
    check_ranks(config)
    noise_scale = config.noise_scale_config()
    n_envs_rank = config.n_envs // config.nproc
    sizes = (
        sizes_over_ranks(noise_scale, n_envs_rank, config.n_steps, config.minibatch_size, config.nproc) if noise_scale else {}
    )
    if config.adaptive_r is not None:
        check_adaptive(config)
    if config.checkpoint_minutes is not None and config.checkpoint_minutes < 0:
        raise ValueError(f"--checkpoint-minutes must be >= 0, got {config.checkpoint_minutes}")
    for name in ("checkpoint_steps", "max_wall_minutes"):
        if getattr(config, name) is not None and not getattr(config, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(config, name)}")
    sizes_record = {str(scheme): size for scheme, size in sizes.items()}
    if config.resume is not None:
        return Resolved(game, sizes_record, config.resume, check_checkpoint(config))
    out = default_out(game, config.seed) if config.out is None else config.out
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a directory")
    if RunDir(out).is_started() and not config.overwrite:
        raise FileExistsError(f"{out} already holds a run; pass --overwrite, --resume {out}, or another --out")
    return Resolved(game, sizes_record, out, None)


def resume_config(config: TrainConfig) -> TrainConfig:
    """The settings of the run ``config.resume`` names, from its ``config.json``, with the run-control fields
    (:data:`~rl_gns.experiments.config.RUN_CONTROL`) that ``config`` sets to other than their defaults (the others
    as the run had them, but for ``max_wall_minutes``: a deadline is this invocation's); unchanged if
    ``config.resume`` is ``None``.

    :raises ValueError: if there is no unfinished run there, or ``config`` sets a training setting to another value.
    """
    if config.resume is None:
        return config
    run = RunDir(config.resume)
    if not run.is_started():
        raise ValueError(f"--resume {run.path}: no run there (no config.json)")
    if run.status() == "done":
        raise ValueError(f"--resume {run.path}: the run is finished (summary.json)")
    stored = train_config_from_json(run.config())
    default = TrainConfig()
    changed = [
        f.name
        for f in fields(TrainConfig)
        if f.name not in RUN_CONTROL and getattr(config, f.name) not in (getattr(default, f.name), getattr(stored, f.name))
    ]
    if changed:
        was = ", ".join(f"--{name.replace('_', '-')} {getattr(stored, name)}" for name in changed)
        raise ValueError(f"--resume {run.path}: the run was started with {was}; a resumed run keeps its settings")
    given = {name: getattr(config, name) for name in RUN_CONTROL if getattr(config, name) != getattr(default, name)}
    this_time = {"max_wall_minutes": config.max_wall_minutes, "out": run.path, "overwrite": False, "resume": run.path}
    return replace(stored, **{**given, **this_time})


def check_checkpoint(config: TrainConfig) -> Checkpoint:
    """The newest usable checkpoint of the run ``config.resume``, made by this rl-gns with ``config``'s settings.

    :raises CheckpointError: if there is none, or it was made by another version or with other settings.
    """
    assert config.resume is not None
    checkpoint = latest_checkpoint(config.resume)
    if checkpoint is None:
        raise CheckpointError(
            f"--resume {config.resume}: no checkpoint (the run stopped before its first); start it again with --overwrite"
        )
    made_by = checkpoint.state.get("rl_gns")
    if made_by != version("rl-gns"):
        raise CheckpointError(f"checkpoint {checkpoint.path} was made by rl-gns {made_by}, this is {version('rl-gns')}")
    settings, now = checkpoint.state.get("settings", {}), training_settings(config)
    changed = sorted(key for key in now.keys() | settings.keys() if settings.get(key) != now.get(key))
    if changed:
        raise CheckpointError(f"checkpoint {checkpoint.path} was made with other settings ({', '.join(changed)})")
    return checkpoint


def check_ranks(config: TrainConfig) -> None:
    """Validate data-parallel settings (raises ``ValueError`` with the reason)."""
    if config.n_envs % config.nproc:
        raise ValueError(f"--nproc {config.nproc} must divide --n-envs {config.n_envs}: each rank steps n_envs / nproc envs")
    if config.nproc == 1:
        return
    if config.adaptive_r is not None:
        raise ValueError("--adaptive-r grows the envs of one process: it cannot be used with --nproc > 1")
    if under_torchrun():
        if world_size_from_env() != config.nproc:
            raise ValueError(f"--nproc {config.nproc}, but torchrun started {world_size_from_env()} ranks (WORLD_SIZE)")
    elif th.device(config.device).type == "cuda" and config.nproc > th.cuda.device_count():
        raise ValueError(f"--nproc {config.nproc} ranks on --device cuda, but torch sees {th.cuda.device_count()} GPUs here")


def check_adaptive(config: TrainConfig) -> None:
    """Validate adaptive rollout-size settings (raises ``ValueError`` with the reason)."""
    if not (config.adaptive_r is not None and config.adaptive_r > 0):
        raise ValueError(f"--adaptive-r must be > 0, got {config.adaptive_r}")
    for name, n in (("n_envs", config.n_envs), ("max_n_envs", config.max_n_envs)):
        if n < 1 or n & (n - 1):
            raise ValueError(f"an adaptive run grows by powers of 2: {name} must be a power of 2, got {n}")
    if config.max_n_envs < config.n_envs:
        raise ValueError(f"max_n_envs ({config.max_n_envs}) must be >= n_envs ({config.n_envs})")
    if config.anneal:
        raise ValueError("an adaptive run rescales a constant learning rate at each growth: pass --no-anneal")
    scheme, _, loss = parse_predictor(config.adaptive_predictor)
    noise_scale = config.noise_scale_config()
    if noise_scale is None or loss not in noise_scale.losses or scheme not in noise_scale.schemes:
        raise ValueError(
            f"--adaptive-predictor {config.adaptive_predictor}: the {loss} loss must be measured with scheme {scheme} "
            "(--gns, --gns-scheme, --gns-losses)"
        )
    n_minibatches = config.rollout_size // config.minibatch_size
    noise_scale.all_sizes(config.max_n_envs, config.n_steps, config.max_n_envs * config.n_steps // n_minibatches)


def run_record(config: TrainConfig, resolved: Resolved) -> dict:
    """What ``config.json`` holds: every setting, the resolved values, versions and machine."""
    return {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
        "out": str(resolved.out),
        "game": resolved.game,
        "rollout_size": config.rollout_size,
        "frame_skip": FRAME_SKIP,
        "gns_sizes": {scheme: {"b_small": small, "b_big": big} for scheme, (small, big) in resolved.gns_sizes.items()},
        "versions": {
            "rl_gns": version("rl-gns"),
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "python": platform.python_version(),
        },
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch_threads": th.get_num_threads()},
    }


def train(config: TrainConfig) -> Path:
    """Run one training run, or resume one (``config.resume``), and return its directory. Raises what :func:`check`
    raises, before anything is written. A run stopped at ``max_wall_minutes`` returns without ``summary.json``.

    With ``config.nproc > 1`` (and not under ``torchrun``), starts ``nproc`` ranks on this machine
    (:func:`rl_gns.experiments.launch.launch`) and waits for them.

    :raises rl_gns.experiments.launch.RankFailedError: if a rank dies or fails (the run can be resumed).
    """
    if not under_torchrun():
        config = resume_config(config)  # a resumed run keeps its --nproc
    if config.nproc > 1 and not under_torchrun():
        out = check(config).out
        try:
            return launch(train_worker, config.nproc, config)[0]
        except RankFailedError as error:
            raise RankFailedError(f"{error}; go on from the last checkpoint with: rl-gns train --resume {out}") from None
    return train_rank(config)


@record
def train_worker(config: TrainConfig) -> Path:
    """One rank of a data-parallel run that :func:`train` launched (its errors reach the launcher)."""
    return train_rank(config)


def train_rank(config: TrainConfig) -> Path:
    """Train as one rank of the process group the launcher set up (joined here), or as the only process."""
    if under_torchrun():
        config = join_ranks(config)
    rank, n_ranks = rank_and_size()
    # --- resolve and check everything before writing anything: rank 0 decides, for every rank
    config, resolved = resolve_on_rank_0(config)
    run = RunDir(resolved.out)
    checkpoint = resolved.checkpoint
    if rank == 0 and checkpoint is None:
        clear_run_files(run)
        run.path.mkdir(parents=True, exist_ok=True)
        run.write_config(run_record(config, resolved))
    elif rank == 0 and checkpoint is not None:  # rows logged after the checkpoint are logged again
        for name, step_key in ((PROGRESS, STEP_KEY), (EPISODES, "env_steps")):
            truncate_after(run.file(name), step_key, checkpoint.env_steps)
    if config.torch_threads is not None:
        th.set_num_threads(config.torch_threads)

    # --- environments and agent
    make_env = partial(
        make_atari_vec_env, resolved.game, backend=config.backend, repeat_action_probability=config.sticky_actions
    )
    if checkpoint is None:
        model = new_model(config, make_env)
        state = {"env_steps": 0, "wall_s": 0.0, "games_dropped": 0, "resumes": 0}
    else:
        model = resumed_model(config, make_env, checkpoint)
        state = {**checkpoint.state, "games_dropped": checkpoint.state["games_dropped"] + checkpoint.state["n_envs"]}
        state["resumes"] += 1
        if rank == 0:
            print(f"resuming {run.path} at {checkpoint.env_steps:,} agent steps ({checkpoint.path.name})", flush=True)
    if rank == 0:
        model.set_logger(run_logger(run.path, run.file(PROGRESS), None if checkpoint is None else checkpoint.env_steps))
    else:
        model.set_logger(Logger(None, []))

    # --- train, with checkpoints
    show_bar = rank == 0 and (sys.stderr.isatty() if config.progress_bar is None else config.progress_bar)
    start = time.perf_counter()

    def save_checkpoint() -> None:
        rng_states = gather_objects(global_rng_state())
        if rank != 0:
            return
        wall_s = state["wall_s"] + time.perf_counter() - start
        record = {**state, "env_steps": model.num_timesteps, "iterations": model.iterations, "n_envs": model.n_envs * n_ranks}
        provenance = {"wall_s": wall_s, "rl_gns": version("rl-gns"), "settings": training_settings(config)}
        write_checkpoint(run.path, model.save, {**record, **provenance}, rng_states)

    episodes = EpisodeLogger(
        run.file(EPISODES), stop_score=config.stop_score, window=config.score_window, wall_offset_s=state["wall_s"]
    )
    checkpoints = Checkpointer(
        save_checkpoint,
        every_s=None if config.checkpoint_minutes is None else 60 * config.checkpoint_minutes,
        every_steps=config.checkpoint_steps,
        deadline_s=None if config.max_wall_minutes is None else 60 * config.max_wall_minutes,
    )
    model.learn(
        total_timesteps=config.total_steps - model.num_timesteps,
        callback=[episodes, checkpoints, *([RanksProgressBar(n_ranks)] if show_bar and n_ranks > 1 else [])],
        reset_num_timesteps=False,
        progress_bar=show_bar and n_ranks == 1,
    )
    wall_s = state["wall_s"] + time.perf_counter() - start
    trained_env = model.get_env()  # an adaptive run may have replaced env
    assert trained_env is not None
    trained_env.close()
    if rank != 0:
        return run.path
    if checkpoints.stopped_for_deadline:
        model.logger.close()  # flushes TensorBoard
        print(
            f"stopped before --max-wall-minutes {config.max_wall_minutes} at {model.num_timesteps:,} agent steps "
            f"of {config.total_steps:,}; go on with: rl-gns train --resume {run.path}",
            flush=True,
        )
        return run.path
    model.save(run.file(MODEL))

    # --- summarise from the files on disk, with the advice; summary.json last: it marks the run finished
    totals = summary(run, model, wall_s, episodes.reached_at)
    totals.update(resumes=state["resumes"], games_dropped=state["games_dropped"], checkpoints_written=checkpoints.n_saved)
    totals["checkpoint_s_mean"] = round(checkpoints.save_s / checkpoints.n_saved, 3) if checkpoints.n_saved else None
    advice = run_advice(run.progress(), run.config())
    lines = advice.lines() if advice else [f"critical rollout size: the predictor {DEFAULT_PREDICTOR} was not measured"]
    print("\n".join(lines), flush=True)
    key = "advice/critical_rollout_size"
    for output in model.logger.output_formats:  # the advice as TensorBoard text, without a row in progress.csv
        if isinstance(output, TensorBoardOutputFormat):
            output.write({key: "  \n".join(lines)}, {key: None}, model.num_timesteps)  # type: ignore[dict-item]
    model.logger.close()
    run.write_summary({**totals, "advice": advice_record(advice, lines)})
    remove_checkpoints(run.path)
    return run.path


def join_ranks(config: TrainConfig) -> TrainConfig:
    """Join the process group of a launched rank; by default its torch threads share the machine's cores with the
    machine's other ranks."""
    join(config.device)
    if config.torch_threads is not None:
        return config
    return replace(config, torch_threads=max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def resolve_on_rank_0(config: TrainConfig) -> tuple[TrainConfig, Resolved]:
    """The settings (those of the run resumed) and :func:`check`'s resolution, as rank 0 finds them, on every rank;
    what rank 0 raises, every rank raises.

    :raises ValueError: also if the ranks were started with different settings.
    """
    given = gather_objects(to_json(config))
    differ = [f"rank {r}: --{key.replace('_', '-')}" for r, c in enumerate(given) for key in c if c[key] != given[0][key]]
    if differ:
        raise ValueError(f"the ranks were started with other settings than rank 0 ({', '.join(differ)})")
    outcome: tuple[TrainConfig, Resolved] | Exception | None = None
    if rank_and_size()[0] == 0:
        try:
            config = resume_config(config)
            outcome = (config, check(config))
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
        "seed": config.seed,
        "device": config.device,
    }


def new_model(config: TrainConfig, make_env: EnvFactory) -> NoiseScalePPO:
    """A new agent on ``config.n_envs`` new envs (an :class:`AdaptivePPO` with ``--adaptive-r``; on several ranks, a
    :class:`~rl_gns.core.distributed.DataParallelPPO` on this rank's share of the envs)."""
    policy = "MlpPolicy" if config.backend == "ram" else "CnnPolicy"
    rank, n_ranks = rank_and_size()
    n_envs = config.n_envs // n_ranks
    env = make_env(n_envs, config.seed + rank * n_envs)
    if n_ranks > 1:
        return DataParallelPPO(policy, env, **ppo_kwargs(config))
    adaptive = config.adaptive_config()
    if adaptive is None:
        return NoiseScalePPO(policy, env, **ppo_kwargs(config))
    return AdaptivePPO(policy, env, adaptive=adaptive, make_env=make_env, **ppo_kwargs(config))


def resumed_model(config: TrainConfig, make_env: EnvFactory, checkpoint: Checkpoint) -> NoiseScalePPO:
    """The agent of a checkpoint (SB3's ``load``) on new envs, with the global RNG states it was saved with.

    The envs start new games seeded ``seed + env_steps`` (not replays of the first games), as many as the
    agent had (an adaptive run may have grown).
    """
    rank, n_ranks = rank_and_size()
    n_envs = checkpoint.state["n_envs"] // n_ranks
    seed = config.seed + checkpoint.env_steps + rank * n_envs
    env = make_env(n_envs, seed)
    if n_ranks > 1:  # rank 0 reads the checkpoint for every rank: the others need no shared disk
        saved, rng_states = broadcast_object(
            (checkpoint.model.read_bytes(), load_rng_states(checkpoint)) if rank == 0 else None
        )
        model: NoiseScalePPO = DataParallelPPO.load(io.BytesIO(saved), env=env, device=config.device)
    elif config.adaptive_r is None:
        model, rng_states = NoiseScalePPO.load(checkpoint.model, env=env, device=config.device), load_rng_states(checkpoint)
    else:
        model = AdaptivePPO.load(checkpoint.model, env=env, device=config.device, make_env=make_env)
        rng_states = load_rng_states(checkpoint)
    env.seed(seed)  # SB3's load seeded the envs with the run's seed again (set_random_seed); the next reset uses this
    set_global_rng_state(rng_states[rank])
    return model


def clear_run_files(run: RunDir) -> None:
    """Remove what an earlier run left in a directory being reused (``--overwrite``): its logs, appended to
    otherwise, its checkpoints, model and summary."""
    if not run.path.is_dir():
        return
    for path in run.path.glob("events.out.tfevents.*"):
        path.unlink()
    for name in (PROGRESS, EPISODES, MODEL, SUMMARY, ERROR, PLOT):
        run.file(name).unlink(missing_ok=True)
    remove_checkpoints(run.path)


def advice_record(advice: Advice | None, lines: list[str]) -> dict:
    """The advice as ``summary.json`` holds it (``high`` is ``null`` where ``|G|²`` is not resolved)."""
    if advice is None:
        return {"predictor": DEFAULT_PREDICTOR, "text": lines}
    b = advice.b_crit
    return {
        "predictor": advice.predictor,
        "b_crit": b.point if math.isfinite(b.point) else None,
        "b_crit_ci95": [b.low, b.high if b.resolved else None],
        "n_envs_critical": advice.n_envs_critical[0] if math.isfinite(b.point) else None,
        "text": lines,
    }


def summary(run: RunDir, model: NoiseScalePPO, wall_s: float, reached_at: int | None) -> dict:
    """Totals of a finished run and its noise scales: the moving average at the end and the run average
    (``Σ tr(Σ) / Σ |G|²`` over every measurement), per scheme and loss."""
    progress, config = run.progress(), run.config()
    scores = [ep["r"] for ep in model.ep_info_buffer or []]
    noise: dict[str, float | list[float | None]] = {}
    for scheme, emas in (model.gns_emas or {}).items():
        for loss, ema in emas.items():
            noise[f"b_simple_{loss}_{scheme}"] = ema.b_simple
            columns = noise_columns(progress, config, scheme, loss)
            if columns is not None:
                average = b_simple_interval(columns[1], columns[2])
                noise[f"b_simple_{loss}_{scheme}_run_average"] = average.point
                noise[f"b_simple_{loss}_{scheme}_run_average_ci95"] = [average.low, average.high if average.resolved else None]
    return {
        "env_steps": model.num_timesteps,
        "frames": model.num_timesteps * FRAME_SKIP,
        "iterations": len(progress.get("time/total_timesteps", [])),
        "wall_s": round(wall_s, 2),
        "agent_steps_per_s": round(model.num_timesteps / wall_s, 1),
        "score_last_100_mean": float(np.mean(scores)) if scores else None,
        "stop_score_reached_at": reached_at,
        "n_envs_final": model.n_envs * rank_and_size()[1],
        "nproc": rank_and_size()[1],
        "n_scored_episodes": len(scores),
        "device": str(model.device),
        "game": config["game"],
        **noise,
    }
