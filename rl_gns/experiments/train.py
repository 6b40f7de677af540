"""``rl-gns train``: PPO on vectorized Atari with noise-scale logging, one run directory per run.

Reads top to bottom: check -> record the config -> env -> model -> learn -> save -> summarise. The run
directory follows :mod:`rl_gns.records.rundir`; ``summary.json`` is written last. The CLI draws
``training.png`` afterwards (a report: :mod:`rl_gns.reports.run_plot`).
"""

from __future__ import annotations

import math
import platform
import sys
import time
from dataclasses import asdict
from datetime import datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3.common.logger import TensorBoardOutputFormat, configure

from rl_gns.core.adaptive import AdaptivePPO
from rl_gns.core.advice import DEFAULT_PREDICTOR, Advice, parse_predictor
from rl_gns.core.atari import FRAME_SKIP, make_atari_vec_env, resolve_game
from rl_gns.core.defaults import schedule
from rl_gns.core.noise_scale import b_simple_interval
from rl_gns.core.ppo import NoiseScalePPO
from rl_gns.experiments.callbacks import EpisodeLogger
from rl_gns.experiments.config import TrainConfig
from rl_gns.records.rundir import MODEL, RunDir, noise_columns, run_advice

__all__ = ["TrainConfig", "check", "train"]


class Resolved(NamedTuple):
    """What :func:`check` resolves from a configuration."""

    game: str
    """ale-py ROM id."""
    gns_sizes: dict[str, tuple[int, int]]
    """``{scheme: (b_small, b_big)}`` of the measurement (empty with ``--no-gns``)."""
    out: Path
    """The run directory."""


def default_out(game: str, seed: int) -> Path:
    """``runs/<game>_s<seed>_<date-time>``, CleanRL-style, so runs never collide."""
    return Path("runs") / f"{game}_s{seed}_{datetime.now():%Y%m%d-%H%M%S}"


def check(config: TrainConfig) -> Resolved:
    """Validate a configuration without writing anything.

    :raises UnknownGameError: for an unknown game, naming close matches.
    :raises FileExistsError: if ``config.out`` holds a run and ``overwrite`` is off.
    :raises ValueError: for settings that cannot run, with the reason.
    """
    game = resolve_game(config.env)
    for name in ("n_envs", "n_steps", "n_epochs", "total_steps", "minibatch_size", "score_window"):
        if getattr(config, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(config, name)}")
    if not config.learning_rate > 0:
        raise ValueError(f"--learning-rate must be > 0, got {config.learning_rate}")
    if config.rollout_size % config.minibatch_size:
        raise ValueError(f"minibatch_size {config.minibatch_size} must divide the rollout size {config.rollout_size}")
    if th.device(config.device).type == "cuda" and not th.cuda.is_available():
        raise ValueError("--device cuda asked for, but torch sees no CUDA device here")
    noise_scale = config.noise_scale_config()
    sizes = noise_scale.all_sizes(config.n_envs, config.n_steps, config.minibatch_size) if noise_scale else {}
    if config.adaptive_r is not None:
        check_adaptive(config)
    out = default_out(game, config.seed) if config.out is None else config.out
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a directory")
    if RunDir(out).is_started() and not config.overwrite:
        raise FileExistsError(f"{out} already holds a run; pass --overwrite or choose another --out")
    return Resolved(game, {str(scheme): size for scheme, size in sizes.items()}, out)


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
    """Run one training run and return its directory. Raises what :func:`check` raises, before anything is written."""
    # --- resolve and check everything before writing anything
    resolved = check(config)
    run = RunDir(resolved.out)
    run.path.mkdir(parents=True, exist_ok=True)
    if config.torch_threads is not None:
        th.set_num_threads(config.torch_threads)
    run.write_config(run_record(config, resolved))

    # --- environments and agent
    make_env = partial(
        make_atari_vec_env, resolved.game, backend=config.backend, repeat_action_probability=config.sticky_actions
    )
    ppo_kwargs: dict[str, Any] = {
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
    policy = "MlpPolicy" if config.backend == "ram" else "CnnPolicy"
    env = make_env(config.n_envs, config.seed)
    adaptive = config.adaptive_config()
    if adaptive is None:
        model = NoiseScalePPO(policy, env, **ppo_kwargs)
    else:
        model = AdaptivePPO(policy, env, adaptive=adaptive, make_env=make_env, **ppo_kwargs)
    model.set_logger(configure(str(run.path), ["stdout", "csv", "tensorboard"]))

    # --- train
    show_bar = sys.stderr.isatty() if config.progress_bar is None else config.progress_bar
    start = time.perf_counter()
    episodes = EpisodeLogger(run.file("episodes.csv"), stop_score=config.stop_score, window=config.score_window)
    model.learn(total_timesteps=config.total_steps, callback=episodes, progress_bar=show_bar)
    wall_s = time.perf_counter() - start
    model.save(run.file(MODEL))
    trained_env = model.get_env()  # an adaptive run may have replaced env
    assert trained_env is not None
    trained_env.close()

    # --- summarise from the files on disk, with the advice; summary.json last: it marks the run finished
    totals = summary(run, model, wall_s, episodes.reached_at)
    advice = run_advice(run.progress(), run.config())
    lines = advice.lines() if advice else [f"critical rollout size: the predictor {DEFAULT_PREDICTOR} was not measured"]
    print("\n".join(lines), flush=True)
    key = "advice/critical_rollout_size"
    for output in model.logger.output_formats:  # the advice as TensorBoard text, without a row in progress.csv
        if isinstance(output, TensorBoardOutputFormat):
            output.write({key: "  \n".join(lines)}, {key: None}, model.num_timesteps)  # type: ignore[dict-item]
    run.write_summary({**totals, "advice": advice_record(advice, lines)})
    return run.path


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
        "n_envs_final": model.n_envs,
        "n_scored_episodes": len(scores),
        "device": str(model.device),
        "game": config["game"],
        **noise,
    }
