"""``rl-gns train``: PPO on vectorized Atari with noise-scale logging, one run directory per run.

Reads top to bottom: config -> env -> model -> learn -> save -> plot. The run directory holds
``config.json`` (resolved settings), ``progress.csv`` and TensorBoard events (SB3 logger keys
``rollout/``, ``train/``, ``time/``, ``gns/``, one row per PPO iteration at its env step),
``episodes.csv`` (every finished game), ``model.zip``, ``summary.json`` (written last: the run
finished) and ``training.png``.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3.common.logger import configure
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import get_linear_fn

import rl_gns
from rl_gns.adaptive import AdaptiveConfig, AdaptivePPO
from rl_gns.atari import FRAME_SKIP, make_atari_vec_env, resolve_game
from rl_gns.callbacks import EpisodeLogger
from rl_gns.noise_scale import cumulative_b_simple
from rl_gns.plots import PlotConfig, plot_run
from rl_gns.ppo import NoiseScaleConfig, NoiseScalePPO
from rl_gns.progress import read_progress
from rl_gns.targets import DEFAULT_WINDOW


@dataclass
class TrainConfig:
    """Train PPO (Stable-Baselines3) on an Atari game while measuring the gradient noise scale."""

    env: str = "BeamRider"
    """Atari game: BeamRider, ALE/BeamRider-v5, BeamRiderNoFrameskip-v4 or beam_rider."""
    n_envs: int = 8
    """Parallel environments; a rollout is n_envs * n_steps agent steps."""
    total_steps: int = 1_000_000
    """Training budget in agent steps (1 agent step = 4 emulator frames); rounded up to whole rollouts."""
    out: Path = Path("runs/beam")
    """Run directory to create (config.json, progress.csv, TensorBoard events, model.zip, training.png)."""
    overwrite: bool = False
    """Replace an existing run directory instead of refusing to start."""
    seed: int = 0
    """Seed of the agent, the environments (env i gets seed + i) and the noise-scale sampler."""
    device: str = "cpu"
    """Torch device: cpu (fastest for this small CNN on few envs), cuda, or auto."""

    # PPO, rl-zoo3 Atari settings
    n_steps: int = 128
    """Agent steps per env per rollout."""
    minibatch_size: int = 256
    """Samples per gradient step (SB3's batch_size); must divide the rollout size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 2.5e-4
    """Adam step size (per gradient step); decayed linearly to 0 unless --no-anneal."""
    clip_range: float = 0.1
    """PPO ratio clip ε; decayed linearly to 0 unless --no-anneal."""
    anneal: bool = True
    """Decay learning rate and clip range linearly over total_steps (rl-zoo3). A decaying learning rate
    raises the noise scale late in training (B_simple ∝ 1/temperature): use --no-anneal to compare runs."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    gamma: float = 0.99
    """Discount per agent step."""
    gae_lambda: float = 0.95
    """GAE λ."""
    max_grad_norm: float = 0.5
    """Gradient clipping norm (the noise scale is measured before clipping)."""

    # Environment
    backend: Literal["ale_vector", "sb3", "ram"] = "ale_vector"
    """ale_vector: ale-py's native multithreaded vector env; sb3: make_atari_env + DummyVecEnv (reference);
    ram: the 128 RAM bytes with an MLP policy (cheap on a CPU; same game protocol and raw scores)."""
    sticky_actions: float = 0.0
    """Repeat-action probability (0: DeepMind/NoFrameskip-v4 protocol of the published PPO scores; ALE v5 uses 0.25)."""

    # Noise scale
    gns: bool = True
    """Measure the gradient noise scale (--no-gns trains the same agent without measuring)."""
    gns_scheme: tuple[Literal["minibatch", "envs"], ...] = NoiseScaleConfig.schemes
    """One or more schemes, each logged under gns/<scheme>/: minibatch: B_big = one random minibatch split into small
    batches; envs: whole env trajectories per small batch."""
    gns_losses: tuple[Literal["policy", "value", "total"], ...] = NoiseScaleConfig.losses
    """Losses whose noise scale is measured."""
    gns_every: int = NoiseScaleConfig.every
    """Measure every k PPO iterations (each measured loss costs about one forward-backward over b_big samples)."""
    gns_b_big: int | None = None
    """Big-batch size in samples (default: minibatch_size, or the rollout size for --gns-scheme envs)."""
    gns_b_small: int | None = None
    """Small-batch size in samples (default: b_big / 4)."""
    gns_ema_beta: float = NoiseScaleConfig.ema_beta
    """Decay per measurement of the moving averages of |G|² and tr(Σ)."""

    # Adaptive rollout size (McCandlish et al. App. D)
    adaptive_r: float | None = None
    """Grow n_envs during training to rollout_size = sqrt(r · M · B_simple) (power-of-2 envs, never shrinking), r in
    agent steps per PPO iteration; learning_rate applies at the starting n_envs and scales by sqrt(n_envs ratio).
    Needs --no-anneal. Default: fixed n_envs."""
    max_n_envs: int = 64
    """Largest env count of an adaptive run."""
    adaptive_loss: Literal["policy", "value", "total"] = AdaptiveConfig.loss
    """Loss whose noise scale drives the adaptive rollout size (total: the best resolved on Beam Rider)."""
    adaptive_min_measurements: int = AdaptiveConfig.min_measurements
    """Noise-scale measurements before an adaptive run first grows."""

    stop_score: float | None = None
    """Stop once the mean raw score of the last score_window games reaches this (default: train the whole budget)."""
    score_window: int = DEFAULT_WINDOW
    """Games averaged by the running score (episodes.csv keeps every game)."""
    torch_threads: int | None = None
    """Torch intra-op threads (default: torch's choice, one per core)."""
    progress_bar: bool | None = None
    """Show a progress bar (default: only when stderr is a terminal)."""

    @property
    def rollout_size(self) -> int:
        """Agent steps per PPO iteration."""
        return self.n_envs * self.n_steps

    def noise_scale_config(self) -> NoiseScaleConfig | None:
        """The measurement settings, or ``None`` with ``--no-gns``."""
        if not self.gns:
            return None
        return NoiseScaleConfig(
            schemes=tuple(self.gns_scheme),
            losses=tuple(self.gns_losses),
            every=self.gns_every,
            b_big=self.gns_b_big,
            b_small=self.gns_b_small,
            ema_beta=self.gns_ema_beta,
        )

    def adaptive_config(self) -> AdaptiveConfig | None:
        """The adaptive rollout-size settings, or ``None`` for a fixed ``n_envs``."""
        if self.adaptive_r is None:
            return None
        return AdaptiveConfig(
            self.adaptive_r, self.max_n_envs, self.adaptive_loss, self.adaptive_min_measurements, self.gns_scheme[0]
        )


def schedule(value: float, anneal: bool) -> float | Schedule:
    """A linear decay from ``value`` to 0 over training, or the constant ``value``."""
    return get_linear_fn(value, 0.0, 1.0) if anneal else value


def check(config: TrainConfig) -> tuple[str, dict[str, tuple[int, int]]]:
    """Validate a configuration without writing anything.

    :return: the ale-py ROM id and the noise-scale ``{scheme: (b_small, b_big)}`` (empty with ``--no-gns``).
    :raises UnknownGameError: for an unknown game, naming close matches.
    :raises FileExistsError: if ``config.out`` holds a run and ``overwrite`` is off.
    :raises ValueError: for PPO or noise-scale settings that cannot run.
    """
    game = resolve_game(config.env)
    if config.rollout_size % config.minibatch_size:
        raise ValueError(f"minibatch_size {config.minibatch_size} must divide the rollout size {config.rollout_size}")
    noise_scale = config.noise_scale_config()
    sizes = noise_scale.all_sizes(config.n_envs, config.n_steps, config.minibatch_size) if noise_scale else {}
    if config.adaptive_r is not None:
        check_adaptive(config)
    if (config.out / "config.json").exists() and not config.overwrite:
        raise FileExistsError(f"{config.out} already holds a run; pass --overwrite or choose another --out")
    return game, sizes


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
    noise_scale = config.noise_scale_config()
    if noise_scale is None or config.adaptive_loss not in noise_scale.losses:
        raise ValueError(f"--adaptive-loss {config.adaptive_loss} must be measured (--gns and --gns-losses)")
    n_minibatches = config.rollout_size // config.minibatch_size
    noise_scale.all_sizes(config.max_n_envs, config.n_steps, config.max_n_envs * config.n_steps // n_minibatches)


def run_average(progress: dict[str, np.ndarray], scheme: str, loss: str) -> float | None:
    """B_simple of ``loss`` averaged over the whole run (:func:`cumulative_b_simple`); ``None`` if never measured."""
    g2_key = f"gns/{scheme}/g2_{loss}_raw"
    if g2_key not in progress:
        return None
    return float(cumulative_b_simple(progress[g2_key], progress[f"gns/{scheme}/trace_sigma_{loss}_raw"])[-1])


def train(config: TrainConfig) -> Path:
    """Run one training run into ``config.out`` and return that directory.

    Raises what :func:`check` raises, before anything is written.
    """
    # --- resolve and check everything before writing anything
    game, sizes = check(config)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)

    # --- record the resolved configuration
    resolved = {
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
        "game": game,
        "rollout_size": config.rollout_size,
        "frame_skip": FRAME_SKIP,
        "gns_sizes": {scheme: {"b_small": b_small, "b_big": b_big} for scheme, (b_small, b_big) in sizes.items()},
        "versions": {
            "rl_gns": rl_gns.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "python": platform.python_version(),
        },
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch_threads": th.get_num_threads()},
    }
    (out / "config.json").write_text(json.dumps(resolved, indent=2) + "\n")

    # --- environments and agent
    make_env = partial(make_atari_vec_env, game, backend=config.backend, repeat_action_probability=config.sticky_actions)
    env = make_env(config.n_envs, config.seed)
    if config.torch_threads is not None:
        th.set_num_threads(config.torch_threads)
    adaptive = config.adaptive_config()
    model_class, adaptive_kwargs = (
        (NoiseScalePPO, {}) if adaptive is None else (AdaptivePPO, {"adaptive": adaptive, "make_env": make_env})
    )
    model = model_class(
        "MlpPolicy" if config.backend == "ram" else "CnnPolicy",
        env,
        noise_scale=config.noise_scale_config(),
        n_steps=config.n_steps,
        batch_size=config.minibatch_size,
        n_epochs=config.n_epochs,
        learning_rate=schedule(config.learning_rate, config.anneal),
        clip_range=schedule(config.clip_range, config.anneal),
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        max_grad_norm=config.max_grad_norm,
        seed=config.seed,
        device=config.device,
        **adaptive_kwargs,
    )
    model.set_logger(configure(str(out), ["stdout", "csv", "tensorboard"]))

    # --- train
    show_bar = sys.stderr.isatty() if config.progress_bar is None else config.progress_bar
    start = time.perf_counter()
    episodes = EpisodeLogger(out / "episodes.csv", stop_score=config.stop_score, window=config.score_window)
    model.learn(total_timesteps=config.total_steps, callback=episodes, progress_bar=show_bar)
    wall_s = time.perf_counter() - start
    model.save(out / "model.zip")
    model.get_env().close()  # an adaptive run may have replaced env

    # --- summarise and plot from the files on disk
    progress = read_progress(out / "progress.csv")
    scores = [ep["r"] for ep in model.ep_info_buffer]
    summary = {
        "env_steps": model.num_timesteps,
        "frames": model.num_timesteps * FRAME_SKIP,
        "iterations": len(progress["time/total_timesteps"]),
        "wall_s": round(wall_s, 2),
        "agent_steps_per_s": round(model.num_timesteps / wall_s, 1),
        "score_last_100_mean": float(np.mean(scores)) if scores else None,
        "stop_score_reached_at": episodes.reached_at,
        "n_envs_final": model.n_envs,
        "n_scored_episodes": len(scores),
        **{
            f"b_simple_{name}_{scheme}": ema.b_simple
            for scheme, emas in (model.gns_emas or {}).items()
            for name, ema in emas.items()
        },
        **{
            f"b_simple_{name}_{scheme}_run_average": run_average(progress, scheme, name)
            for scheme, emas in (model.gns_emas or {}).items()
            for name in emas
        },
    }
    plot_run(PlotConfig(out))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")  # last: marks the run finished
    return out
