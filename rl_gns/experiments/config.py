"""Typed settings of the experiments, each group defined once and composed.

- :class:`EnvSettings`: which game and how it is observed;
- :class:`PPOSettings`: PPO hyperparameters every experiment shares (rl-zoo3's Atari values,
  :data:`rl_gns.core.agents.defaults.RL_ZOO3_ATARI_PPO`), and the named recipe (``--regime``, :data:`REGIMES`) that sets them;
- :class:`MeasureSettings`: how the gradient noise scale is measured;
- :class:`TrainConfig`: one run, all three plus what a sweep or benchmark varies per run.

Sweeps and benchmarks hold the shared groups and build each run with :func:`dataclasses.replace`
on a base :class:`TrainConfig` (:func:`base_train_config`), so no setting is copied field by field.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, TypeVar, get_type_hints

import tyro

from rl_gns.core.agents.defaults import RL_ZOO3_ATARI_PPO
from rl_gns.core.maths.settings import AdaptiveConfig, NoiseScaleConfig
from rl_gns.core.maths.targets import DEFAULT_WINDOW
from rl_gns.records.schema import check_current, require

_ZOO = RL_ZOO3_ATARI_PPO


@dataclass
class EnvSettings:
    """Which Atari game, and how the agent observes it.

    Backends: ``ale_vector``, ale-py's native multithreaded vector env; ``sb3``, Stable-Baselines3's ``make_atari_env``
    with a ``DummyVecEnv`` (the reference); ``ram``, the 128 RAM bytes as observation with an MLP policy, cheap on a
    CPU, with the same game protocol and raw scores as the pixel backends.
    """

    env: str = "BeamRider"
    """Atari game: BeamRider, ALE/BeamRider-v5, BeamRiderNoFrameskip-v4 or beam_rider."""
    backend: Literal["ale_vector", "sb3", "ram"] = "ale_vector"
    """ale_vector: ale-py's vector env; sb3: make_atari_env + DummyVecEnv (reference); ram: the 128 RAM bytes, MLP policy."""
    sticky_actions: float = 0.0
    """Repeat-action probability (0: the DeepMind/NoFrameskip-v4 protocol of the published PPO scores; ALE v5: 0.25)."""


#: A named training recipe (``--regime``): ``ppo``, rl-zoo3's PPO; ``one-step``, one gradient step per rollout on the
#: whole rollout, the paper's A2C regime.
Regime = Literal["ppo", "one-step"]

#: What each regime sets, by field name, in every settings dataclass that has the field (a field the user gives
#: still wins: :func:`apply_regime`). ``ppo`` is the fields' defaults. ``one-step`` is OpenAI baselines' A2C, which
#: McCandlish et al. (2018) used for Atari, run as PPO: one epoch of one minibatch, so PPO's ratio is 1 where the
#: gradient is taken and its clipped loss has A2C's gradient; 5-step rollouts, RMSprop (SB3 A2C's α 0.99, ε 1e-5),
#: no advantage normalisation, GAE λ 1 (A2C's n-step returns), a constant learning rate of 7e-4 (at 16 envs in a
#: sweep's rule). ``n_minibatches`` gives a sweep's M, and a run's ``minibatch_size`` = rollout size / M.
REGIMES: dict[str, dict[str, Any]] = {
    "ppo": {},
    "one-step": {
        "n_steps": 5,
        "n_epochs": 1,
        "n_minibatches": 1,
        "optimizer": "rmsprop",
        "normalize_advantage": False,
        "gae_lambda": 1.0,
        "gamma": 0.99,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "learning_rate": 7e-4,
        "anneal": False,
        "lr_ref": 7e-4,
        "n_envs_ref": 16,
    },
}


@dataclass
class PPOSettings:
    """PPO hyperparameters shared by every run of an experiment (defaults: rl-zoo3 Atari; ``--regime`` sets them)."""

    regime: Regime = "ppo"
    """ppo: rl-zoo3's PPO recipe; one-step: one gradient step on each whole rollout (A2C: n_steps 5, RMSprop); flags win."""
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
    optimizer: Literal["adam", "rmsprop"] = "adam"
    """adam: SB3 PPO's Adam (ε 1e-5); rmsprop: SB3 A2C's RMSprop (α 0.99, ε 1e-5)."""
    normalize_advantage: bool = True
    """Normalise the advantages per minibatch (PPO); A2C does not."""


@dataclass
class MeasureSettings:
    """How the gradient noise scale is measured (see :class:`rl_gns.NoiseScaleConfig`).

    Schemes (``--gns-scheme``, one or more, each logged under ``gns/<scheme>/``; ``docs/measurement.md``): ``envs``,
    the default, takes the whole rollout as the big batch, split into groups of whole env trajectories, and is
    unbiased on RL data; ``minibatch`` takes one random minibatch as the big batch, split into small batches, and its
    ``|G|²`` is biased upwards on RL data.
    """

    gns: bool = True
    """Measure the gradient noise scale (--no-gns trains the same agent without measuring)."""
    gns_scheme: tuple[Literal["minibatch", "envs"], ...] = NoiseScaleConfig.schemes
    """envs (whole env trajectories; unbiased on RL data) and/or minibatch (biased upwards on RL data); docs/measurement.md."""
    gns_losses: tuple[Literal["policy", "value", "total"], ...] = NoiseScaleConfig.losses
    """Losses whose noise scale is measured."""
    gns_every: int = NoiseScaleConfig.every
    """Measure every k PPO iterations (each measured loss costs about one forward-backward pass over b_big samples)."""
    gns_b_big: int | None = None
    """Big-batch size in samples, with one scheme only; if unset, minibatch_size, or the rollout size for envs."""
    # Not flags (Python API only): any b_small gives the same unbiased estimate, only its variance changes; and the
    # analyses and the console pool the raw estimates, not the moving averages that ema_beta smooths (logged only).
    gns_b_small: Annotated[int | None, tyro.conf.Suppress] = None
    """Small-batch size in samples, with one scheme only; if unset, b_big / 4."""
    gns_ema_beta: Annotated[float, tyro.conf.Suppress] = NoiseScaleConfig.ema_beta
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
    """Data-parallel ranks (n_envs / nproc envs each) training as one; under torchrun, all ranks (docs/data-parallel.md)."""
    total_steps: int = 1_000_000
    """Training budget in agent steps (1 agent step = 4 emulator frames); rounded up to whole rollouts."""
    out: Path | None = None
    """Run directory to create; if unset, runs/<game>_s<seed>_<date-time>."""
    overwrite: bool = False
    """Replace an existing run directory instead of refusing to start."""
    seed: int = 0
    """Seed of the agent, the environments (env i gets seed + i) and the noise-scale sampler."""
    init_from: Path | None = None
    """Start from the policy and Adam state of this saved agent (model.zip), as probe's branches do; if unset, a new agent."""
    device: str = "cpu"
    """Torch device: cpu (fastest for this small CNN on few envs), cuda, or auto."""
    minibatch_size: int = _ZOO["batch_size"]
    """Samples per gradient step (SB3's batch_size); must divide the rollout size."""
    learning_rate: float = _ZOO["learning_rate"]
    """Optimiser step size, decayed linearly to 0 unless --no-anneal; 0 holds the policy fixed (it plays and measures only)."""
    anneal: bool = True
    """Decay learning rate and clip range linearly (rl-zoo3); it inflates the late noise scale: compare with --no-anneal."""

    adaptive_r: float | None = None
    """Grow the rollout to sqrt(r · B_noise), r in agent steps per PPO iteration; needs --no-anneal. If unset: fixed n_envs."""
    max_n_envs: int = AdaptiveConfig.max_n_envs
    """Largest env count of an adaptive run (it grows in powers of 2, never shrinking)."""
    adaptive_predictor: str = AdaptiveConfig.predictor
    """Noise-scale candidate <mb|env>[_xM]_<policy|value|total> whose prediction is B_noise (its scheme and loss measured)."""
    adaptive_min_measurements: int = AdaptiveConfig.min_measurements
    """Noise-scale measurements before an adaptive run first grows."""

    stop_score: float | None = None
    """Stop once the mean raw score of the last score_window games reaches this; if unset, train the whole budget."""
    # Not a flag of train: a sweep sets it for the learning rates of one size and seed (SweepConfig.race).
    race_file: Annotated[Path | None, tyro.conf.Suppress] = None
    """The file of a race to stop_score (rl_gns.experiments.callbacks.EpisodeLogger); if unset, the run races no other."""
    score_window: int = DEFAULT_WINDOW
    """Games averaged by the running score (episodes.csv keeps every game)."""
    torch_threads: int | None = None
    """Torch intra-op threads; if unset, torch's choice, one per core."""
    progress_bar: Annotated[bool | None, tyro.conf.arg(metavar="{True,False}")] = None
    """Show a progress bar; if unset, only when stderr is a terminal."""
    verbose: bool = False
    """Print SB3's table of every logged value each iteration, instead of one line (progress.csv holds them all)."""

    resume: Path | None = None
    """Continue the unfinished run in this directory from its last checkpoint; training flags must match its config.json."""
    checkpoint_minutes: float | None = 10.0
    """Checkpoint after the iteration that passes this many wall-clock minutes since the last; 0: every one; None: no timer."""
    checkpoint_steps: int | None = None
    """Also write a checkpoint every this many agent steps; if unset, time trigger only."""
    max_wall_minutes: float | None = None
    """Stop cleanly, with a checkpoint, before this many wall-clock minutes of training (resume with --resume DIR)."""
    snapshot_steps: int | None = None
    """Keep the agent every this many agent steps, as <out>/snapshots/<steps>.zip for probe --at; if unset, none."""

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


Settings = TypeVar("Settings")


def apply_regime(config: Settings, given: Collection[str]) -> Settings:
    """``config`` with its regime's settings (:data:`REGIMES`) in every field it has that the user did not give; the one
    place a regime is applied (the command line applies it to a command's settings once, as parsed).

    A run's ``minibatch_size`` becomes its rollout size over the regime's ``n_minibatches`` (one-step: the rollout).

    :param config: a settings dataclass with a ``regime`` field (``rl-gns train``'s, ``sweep``'s or ``bench``'s).
    :param given: the settings the user named (field names): each keeps its value.
    """
    regime = REGIMES[config.regime]  # type: ignore[attr-defined]
    names = {f.name for f in fields(config)}  # type: ignore[arg-type]
    changes = {name: value for name, value in regime.items() if name in names and name not in given}
    if "n_minibatches" in regime and "minibatch_size" in names and "minibatch_size" not in given:
        n_steps = changes.get("n_steps", config.n_steps)  # type: ignore[attr-defined]
        changes["minibatch_size"] = config.n_envs * n_steps // regime["n_minibatches"]  # type: ignore[attr-defined]
    return replace(config, **changes)  # type: ignore[type-var]


def training_settings(config: TrainConfig) -> dict[str, Any]:
    """What a run trains, as JSON values: every field but :data:`RUN_CONTROL` (a checkpoint must match them)."""
    return {key: value for key, value in to_json(config).items() if key not in RUN_CONTROL}


#: The settings in which the runs of one population (:mod:`rl_gns.experiments.population_train`) may differ.
MEMBER_SETTINGS = ("seed", "learning_rate", "out", "resume", "overwrite", "race_file")


def population_settings(config: TrainConfig) -> dict[str, Any] | None:
    """What a run shares with the other members of a population, as JSON values (every field but
    :data:`MEMBER_SETTINGS`); ``None`` for a run that trains alone (adaptive, data-parallel)."""
    if config.adaptive_r is not None or config.nproc != 1:
        return None
    return {key: value for key, value in to_json(config).items() if key not in MEMBER_SETTINGS}


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


def train_config_from_json(data: Any, path: PurePath | str) -> TrainConfig:
    """Inverse of :func:`to_json` for a :class:`TrainConfig` (extra keys, such as resolved values, are ignored).

    :param data: the JSON object of a run's ``config.json`` or spec file.
    :param path: that file, named in errors.
    :raises RecordError: naming the file and field, if a setting is not of its field's kind.
    """
    check_current(data, path)
    hints = get_type_hints(TrainConfig)
    data = require(data, path, {f.name: hints[f.name] for f in fields(TrainConfig)}, optional=True)
    kwargs: dict[str, Any] = {}
    for f in fields(TrainConfig):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name in ("out", "resume", "init_from", "race_file"):
            value = None if value is None else Path(value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return TrainConfig(**kwargs)
