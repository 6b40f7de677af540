"""Typed settings of the experiments, each group defined once and composed.

- :class:`EnvSettings`: which game and how it is observed;
- :class:`PPOSettings`: PPO hyperparameters every experiment shares (rl-zoo3's Atari values,
  :data:`rl_gns.core.defaults.RL_ZOO3_ATARI_PPO`);
- :class:`MeasureSettings`: how the gradient noise scale is measured;
- :class:`TrainConfig`: one run, all three plus what a sweep or benchmark varies per run.

Sweeps and benchmarks hold the shared groups and build each run with :func:`dataclasses.replace`
on a base :class:`TrainConfig` (:func:`base_train_config`), so no setting is copied field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from rl_gns.core.adaptive import AdaptiveConfig
from rl_gns.core.defaults import RL_ZOO3_ATARI_PPO
from rl_gns.core.ppo import NoiseScaleConfig
from rl_gns.core.targets import DEFAULT_WINDOW

_ZOO = RL_ZOO3_ATARI_PPO


@dataclass
class EnvSettings:
    """Which Atari game, and how the agent observes it."""

    env: str = "BeamRider"
    """Atari game: BeamRider, ALE/BeamRider-v5, BeamRiderNoFrameskip-v4 or beam_rider."""
    backend: Literal["ale_vector", "sb3", "ram"] = "ale_vector"
    """ale_vector: ale-py's native multithreaded vector env; sb3: make_atari_env + DummyVecEnv (reference);
    ram: the 128 RAM bytes with an MLP policy (cheap on a CPU; same game protocol and raw scores)."""
    sticky_actions: float = 0.0
    """Repeat-action probability (0: the DeepMind/NoFrameskip-v4 protocol of the published PPO scores; ALE v5: 0.25)."""


@dataclass
class PPOSettings:
    """PPO hyperparameters shared by every run of an experiment (defaults: rl-zoo3 Atari)."""

    n_steps: int = _ZOO["n_steps"]
    """Agent steps per env per rollout; a rollout is n_envs * n_steps agent steps."""
    n_epochs: int = _ZOO["n_epochs"]
    """Passes over each rollout."""
    clip_range: float = _ZOO["clip_range"]
    """PPO ratio clip ε (decayed linearly to 0 over training where the learning rate is)."""
    ent_coef: float = _ZOO["ent_coef"]
    """Entropy bonus coefficient."""
    vf_coef: float = _ZOO["vf_coef"]
    """Value loss coefficient."""
    gamma: float = _ZOO["gamma"]
    """Discount per agent step."""
    gae_lambda: float = _ZOO["gae_lambda"]
    """GAE λ."""
    max_grad_norm: float = _ZOO["max_grad_norm"]
    """Gradient clipping norm (the noise scale is measured before clipping)."""


@dataclass
class MeasureSettings:
    """How the gradient noise scale is measured (see :class:`rl_gns.NoiseScaleConfig`)."""

    gns: bool = True
    """Measure the gradient noise scale (--no-gns trains the same agent without measuring)."""
    gns_scheme: tuple[Literal["minibatch", "envs"], ...] = NoiseScaleConfig.schemes
    """One or more schemes, each logged under gns/<scheme>/. envs (default; unbiased on RL data): the big batch is the
    whole rollout, split into groups of whole env trajectories; minibatch: the big batch is one random minibatch, split
    into small batches (its |G|² is biased upwards on RL data)."""
    gns_losses: tuple[Literal["policy", "value", "total"], ...] = NoiseScaleConfig.losses
    """Losses whose noise scale is measured."""
    gns_every: int = NoiseScaleConfig.every
    """Measure every k PPO iterations (each measured loss costs about one forward-backward pass over b_big samples)."""
    gns_b_big: int | None = None
    """Big-batch size in samples, with one scheme only; if unset, minibatch_size, or the rollout size for envs."""
    gns_b_small: int | None = None
    """Small-batch size in samples, with one scheme only; if unset, b_big / 4."""
    gns_ema_beta: float = NoiseScaleConfig.ema_beta
    """Decay per measurement of the moving averages of |G|² and tr(Σ)."""

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


@dataclass
class TrainConfig(MeasureSettings, PPOSettings, EnvSettings):
    """Train PPO (Stable-Baselines3) on an Atari game while measuring the gradient noise scale."""

    n_envs: int = _ZOO["n_envs"]
    """Parallel environments; a rollout is n_envs * n_steps agent steps."""
    nproc: int = 1
    """Data-parallel processes (ranks) on this machine, each stepping n_envs / nproc envs; gradients are averaged
    over the ranks before every optimiser step, so they train as one process (docs/data-parallel.md). Under
    torchrun, the ranks torchrun starts (WORLD_SIZE) on every machine together."""
    total_steps: int = 1_000_000
    """Training budget in agent steps (1 agent step = 4 emulator frames); rounded up to whole rollouts."""
    out: Path | None = None
    """Run directory to create; if unset, runs/<game>_s<seed>_<date-time>."""
    overwrite: bool = False
    """Replace an existing run directory instead of refusing to start."""
    seed: int = 0
    """Seed of the agent, the environments (env i gets seed + i) and the noise-scale sampler."""
    init_from: Path | None = None
    """Start from the policy and Adam state of this saved agent (a model.zip) instead of a new one: a branch of
    rl-gns probe. If unset: a new agent."""
    device: str = "cpu"
    """Torch device: cpu (fastest for this small CNN on few envs), cuda, or auto."""
    minibatch_size: int = _ZOO["batch_size"]
    """Samples per gradient step (SB3's batch_size); must divide the rollout size."""
    learning_rate: float = _ZOO["learning_rate"]
    """Adam step size; decayed linearly to 0 over training unless --no-anneal. 0 holds the policy fixed (with
    --init-from: play and measure the noise scale at fixed parameters)."""
    anneal: bool = True
    """Decay learning rate and clip range linearly over total_steps (rl-zoo3). A decaying learning rate raises the
    noise scale late in training (B_simple ∝ 1/temperature): use --no-anneal to compare runs."""

    adaptive_r: float | None = None
    """Grow n_envs during training to rollout_size = sqrt(r · B_noise) (power-of-2 envs, never shrinking), B_noise the
    critical rollout size --adaptive-predictor predicts, r in agent steps per PPO iteration (McCandlish et al. App. D).
    Needs --no-anneal. If unset: fixed n_envs."""
    max_n_envs: int = AdaptiveConfig.max_n_envs
    """Largest env count of an adaptive run."""
    adaptive_predictor: str = AdaptiveConfig.predictor
    """Noise-scale candidate whose predicted critical rollout size drives an adaptive run (its scheme and loss must be
    measured): <mb|env>[_xM]_<policy|value|total>."""
    adaptive_min_measurements: int = AdaptiveConfig.min_measurements
    """Noise-scale measurements before an adaptive run first grows."""

    stop_score: float | None = None
    """Stop once the mean raw score of the last score_window games reaches this; if unset, train the whole budget."""
    score_window: int = DEFAULT_WINDOW
    """Games averaged by the running score (episodes.csv keeps every game)."""
    torch_threads: int | None = None
    """Torch intra-op threads; if unset, torch's choice, one per core."""
    progress_bar: Annotated[bool | None, tyro.conf.arg(metavar="{True,False}")] = None
    """Show a progress bar; if unset, only when stderr is a terminal."""
    verbose: bool = False
    """Print SB3's table of every logged value each iteration, instead of one line (progress.csv holds them all)."""

    resume: Path | None = None
    """Continue the unfinished run in this directory from its last checkpoint, with the settings of its config.json
    (flags that contradict them are refused; the run-control flags below, --device, --torch-threads and --progress-bar
    may change, and keep the run's values unless given)."""
    checkpoint_minutes: float | None = 10.0
    """Write a checkpoint (under <out>/checkpoints/) after the PPO iteration that passes this many wall-clock minutes
    since the last one; 0: after every iteration; None (--checkpoint-minutes None): no time trigger."""
    checkpoint_steps: int | None = None
    """Also write a checkpoint every this many agent steps; if unset, time trigger only."""
    max_wall_minutes: float | None = None
    """Stop cleanly, with a checkpoint, before this many wall-clock minutes of training (resume with --resume DIR)."""
    snapshot_steps: int | None = None
    """Keep the agent every this many agent steps, as <out>/snapshots/<agent steps>.zip (never pruned; the points
    `rl-gns probe --at` branches from). If unset: none."""

    @property
    def rollout_size(self) -> int:
        """Agent steps per PPO iteration."""
        return self.n_envs * self.n_steps

    def adaptive_config(self) -> AdaptiveConfig | None:
        """The adaptive rollout-size settings, or ``None`` for a fixed ``n_envs``."""
        if self.adaptive_r is None:
            return None
        return AdaptiveConfig(self.adaptive_r, self.max_n_envs, self.adaptive_predictor, self.adaptive_min_measurements)


#: Settings that say how and where a run executes, not what it trains: they may change when it is resumed.
RUN_CONTROL = (
    "out",
    "overwrite",
    "resume",
    "device",
    "torch_threads",
    "progress_bar",
    "verbose",
    "checkpoint_minutes",
    "checkpoint_steps",
    "max_wall_minutes",
    "snapshot_steps",
)


def training_settings(config: TrainConfig) -> dict[str, Any]:
    """What a run trains, as JSON values: every field but :data:`RUN_CONTROL` (a checkpoint must match them)."""
    return {key: value for key, value in to_json(config).items() if key not in RUN_CONTROL}


def base_train_config(settings: object, **overrides: Any) -> TrainConfig:
    """A :class:`TrainConfig` taking every field that ``settings`` shares with it (its :class:`EnvSettings`,
    :class:`PPOSettings` and :class:`MeasureSettings` groups), then ``overrides``.

    :param settings: a dataclass instance composed of some of the setting groups (a sweep's or a benchmark's config).
    :param overrides: fields of :class:`TrainConfig` to set.
    """
    train_fields = {f.name for f in fields(TrainConfig)}
    shared = {f.name: getattr(settings, f.name) for f in fields(settings) if f.name in train_fields}  # type: ignore[arg-type]
    return TrainConfig(**{**shared, **overrides})


def to_json(config: object) -> dict[str, Any]:
    """A dataclass config as JSON values (paths as strings, tuples as lists)."""
    out: dict[str, Any] = {}
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        out[f.name] = str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
    return out


def train_config_from_json(data: dict[str, Any]) -> TrainConfig:
    """Inverse of :func:`to_json` for a :class:`TrainConfig` (extra keys, such as resolved values, are ignored)."""
    kwargs: dict[str, Any] = {}
    for f in fields(TrainConfig):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name in ("out", "resume", "init_from"):
            value = None if value is None else Path(value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return TrainConfig(**kwargs)
