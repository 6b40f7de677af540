"""The run plan: one function turns the settings of ``rl-gns train`` into an immutable, checked :class:`RunPlan`.

Every check of a run happens in :func:`plan_run`, before anything touches the disk: finite numbers, ranges that
mean something, a device that exists, a memory estimate that refuses what cannot fit, the run directory and its
lock, and, for ``--resume``, the flags the user gave against the run's own settings, the checkpoint verified
whole and the logs reaching it. Everything downstream takes the plan and derives nothing again.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Collection
from dataclasses import MISSING, dataclass, fields, replace
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import torch as th
from stable_baselines3.common.save_util import load_from_zip_file

from rl_gns.core.agents.distributed import sizes_over_ranks
from rl_gns.core.envs.atari import agent_spaces, resolve_game
from rl_gns.core.maths.advice import parse_predictor
from rl_gns.core.maths.batching import Batching
from rl_gns.experiments.config import (
    RUN_CONTROL,
    TrainConfig,
    to_json,
    train_config_from_json,
    training_settings,
)
from rl_gns.experiments.launch import under_torchrun, world_size_from_env
from rl_gns.records.checkpoint import Checkpoint, CheckpointError, latest_checkpoint
from rl_gns.records.lock import check_unlocked
from rl_gns.records.logs import OutputError, check_path_name, check_writable, split_at
from rl_gns.records.rundir import (
    CONFIG,
    EPISODES,
    PROGRESS,
    STEP_KEY,
    RunDir,
    RunFileError,
    check_own_directories,
    longest_run_path,
    row_values,
)
from rl_gns.records.schema import changed_settings, relocated, same_setting
from rl_gns.records.study import check_kind, check_no_strangers, check_not_inside

#: Bytes a rollout buffer holds per sample of a pixel observation (SB3 stores 4 stacked 84x84 frames as float32).
PIXEL_SAMPLE_BYTES = 4 * 84 * 84 * 4
#: Bytes of one emulator with its frame buffers (ale-py, measured: about 1.6 MiB), rounded up.
EMULATOR_BYTES = 2 * 2**20
#: Every setting: what a spec file of a sweep or benchmark names (each must agree with the run it resumes).
EVERY_SETTING = tuple(f.name for f in fields(TrainConfig))
#: The most passes over one rollout: published PPO settings make 3 to 30, and past a few hundred the clipped
#: objective has no policy gradient left, so the run only spends time; a count far beyond it is a typing slip that
#: would hold the first update for days.
MAX_EPOCHS = 1_000
#: The measurement's settings, which a run with --no-gns does not use.
MEASURE_SETTINGS = ("gns_scheme", "gns_losses", "gns_every", "gns_b_big", "gns_b_small", "gns_ema_beta")
#: The adaptive run's settings, which a run at a fixed n_envs (no --adaptive-r) does not use.
ADAPTIVE_SETTINGS = ("max_n_envs", "adaptive_predictor", "adaptive_min_measurements")
#: Largest seed: env seeds run up to ``seed + total_steps + n_envs`` and ale-py takes 32-bit signed seeds.
MAX_SEED = 2**31 - 1


def largest_seed(total_steps: int, n_envs: int) -> int:
    """The largest seed a run may have: its env seeds run up to ``seed + total_steps + n_envs`` (:data:`MAX_SEED`).

    :param total_steps: the run's budget in agent steps.
    :param n_envs: its parallel envs.
    """
    return MAX_SEED - total_steps - n_envs


@dataclass(frozen=True)
class RunPlan:
    """Everything a run needs, checked and derived once.

    :param config: the settings (for ``--resume``, those of the run resumed, with this invocation's run controls).
    :param game: the ale-py ROM id.
    :param batching: ``n_envs``, ``n_steps``, minibatches and ranks, and what they give.
    :param gns_sizes: ``{scheme: (b_small, b_big)}`` of the measurement, in samples (empty with ``--no-gns``): checked
        here, written to ``config.json`` and given to the agent (``NoiseScalePPO``'s ``planned_gns_sizes``), which does
        not derive them again.
    :param out: the run directory.
    :param checkpoint: the verified checkpoint to resume from; ``None`` for a new run.
    """

    config: TrainConfig
    game: str
    batching: Batching
    gns_sizes: dict[str, tuple[int, int]]
    out: Path
    checkpoint: Checkpoint | None

    @property
    def n_envs_per_rank(self) -> int:
        """Envs each rank steps: the batching's, or as many as the checkpoint's agent had (an adaptive run grows)."""
        if self.checkpoint is None:
            return self.batching.n_envs_per_rank
        return int(self.checkpoint.state["n_envs"]) // self.batching.nproc

    def env_seed(self, rank: int = 0) -> int:
        """Seed of this rank's first env: new games after the checkpoint's agent steps when resuming."""
        env_steps = 0 if self.checkpoint is None else self.checkpoint.env_steps
        return self.batching.env_seed(self.config.seed, rank, env_steps)


def flag(name: str) -> str:
    """The command-line flag of a setting: ``n_envs`` -> ``--n-envs``."""
    return "--" + name.replace("_", "-")


def check_no_repeats(config: object, names: tuple[str, ...]) -> None:
    """Refuse a list setting that names a value twice: a study would train or measure it twice and weigh it twice.

    :param config: the settings, read by attribute.
    :param names: the list settings to check (``n_envs``, ...).
    :raises ValueError: naming the flag and its values.
    """
    for name in names:
        values = getattr(config, name)
        if len(set(values)) < len(values):
            raise ValueError(f"{flag(name)} repeats a value: {list(values)}")


def check_inert(config: object, inert: dict[str, str], given: Collection[str] | None = None) -> None:
    """Refuse a setting given a value other than its default where the other settings leave it no effect: a flag the
    command would drop silently (``--gns-every 8`` with ``--no-gns``).

    :param config: the settings, a dataclass whose fields have defaults.
    :param inert: ``{setting: why it has no effect}`` for the settings that have none with ``config``'s others
        (``{"gns_every": "with --no-gns"}``).
    :param given: the settings the user named; ``None``: every setting.
    :raises ValueError: naming the flag, its value and the reason.
    """
    for field in fields(config):  # type: ignore[arg-type]
        if field.name not in inert or (given is not None and field.name not in given):
            continue
        default = field.default if field.default_factory is MISSING else field.default_factory()
        value = getattr(config, field.name)
        if value != default:
            shown = " ".join(map(str, value)) if isinstance(value, tuple) else value
            raise ValueError(f"{flag(field.name)} {shown} has no effect {inert[field.name]}")


def inert_train_settings(config: TrainConfig) -> dict[str, str]:
    """The settings of a run that ``config``'s others leave without effect: the measurement's without the
    measurement, the adaptive run's without ``--adaptive-r``, a snapshot or checkpoint period past the budget."""
    inert: dict[str, str] = {}
    if not config.gns:
        inert |= {name: "with --no-gns" for name in MEASURE_SETTINGS}
    if config.adaptive_r is None:
        inert |= {name: "without --adaptive-r" for name in ADAPTIVE_SETTINGS}
    for name in ("snapshot_steps", "checkpoint_steps"):
        if (getattr(config, name) or 0) > config.total_steps:
            inert[name] = f"past --total-steps {config.total_steps:,} (the run ends first)"
    return inert


def plan_run(config: TrainConfig, given: Collection[str] | None = None) -> RunPlan:
    """Check every setting of a run and derive what it needs, writing nothing.

    :param config: the settings as given.
    :param given: the settings the user named (field names), whatever their value; with ``--resume`` each must
        agree with the run's own setting. ``None``: every setting that differs from its default.
    :raises ValueError: for settings that cannot run, with the reason (:class:`CheckpointError` for a checkpoint
        that cannot be resumed, :class:`~rl_gns.records.lock.RunLockedError` for a run another process writes).
    :raises FileExistsError: if the run directory holds a run and neither ``--overwrite`` nor ``--resume`` is given.
    """
    if given is None:
        default = TrainConfig()
        given = [f.name for f in fields(TrainConfig) if getattr(config, f.name) != getattr(default, f.name)]
    check_values(config)
    check_inert(config, inert_train_settings(config), given)
    config = resume_config(config, given)
    game = resolve_game(config.env)
    batching = Batching.of_minibatch_size(config.n_envs, config.n_steps, config.minibatch_size, config.nproc)
    check_device(config.device, batching.nproc)
    check_torchrun(batching)
    check_memory(config, batching)
    if config.adaptive_r is not None:
        check_adaptive(config, batching)
    if config.init_from is not None:
        check_init_from(config, batching)
    if config.race_file is not None and (config.stop_score is None or batching.nproc > 1):
        raise ValueError("race_file: a race is to --stop-score, by runs of one process (--nproc 1)")
    noise_scale = config.noise_scale_config()
    sizes = (
        sizes_over_ranks(noise_scale, batching.n_envs_per_rank, batching.n_steps, batching.minibatch_size, batching.nproc)
        if noise_scale
        else {}
    )
    gns_sizes = {str(scheme): size for scheme, size in sizes.items()}
    if config.resume is not None:
        check_resumable_path(config.resume)
        check_unlocked(config.resume)
        check_own_directories(config.resume)
        return RunPlan(config, game, batching, gns_sizes, config.resume, resumable_checkpoint(config))
    out = default_out(game, config.seed) if config.out is None else config.out
    check_out(out, config.overwrite)
    return RunPlan(config, game, batching, gns_sizes, out, None)


def default_out(game: str, seed: int) -> Path:
    """``runs/<game>_s<seed>_<date-time>``, CleanRL-style, so runs never collide."""
    return Path("runs") / f"{game}_s{seed}_{datetime.now():%Y%m%d-%H%M%S}"


#: The largest learning rate: Adam moves each parameter by about the learning rate per step, so from 1 on one step is
#: as large as the weights of SB3's networks themselves, and near float32's largest value its step overflows.
MAX_LEARNING_RATE = 1.0
#: The smallest positive learning rate: below float32's smallest normal number the agent's step is lost to rounding.
SMALLEST_LEARNING_RATE = float(th.finfo(th.float32).tiny)


def check_learning_rate(learning_rate: float) -> None:
    """Refuse a learning rate that no agent trains with: above :data:`MAX_LEARNING_RATE`, or positive and below
    :data:`SMALLEST_LEARNING_RATE` (0, a fixed policy, is a learning rate)."""
    if learning_rate > MAX_LEARNING_RATE or 0 < learning_rate < SMALLEST_LEARNING_RATE:
        raise ValueError(
            f"--learning-rate must be 0 (a fixed policy) or in [{SMALLEST_LEARNING_RATE:.2e}, {MAX_LEARNING_RATE:g}], "
            f"got {learning_rate:g}"
        )


def check_epochs(n_epochs: int) -> None:
    """Refuse more than :data:`MAX_EPOCHS` passes over a rollout (one line)."""
    if n_epochs > MAX_EPOCHS:
        raise ValueError(f"--n-epochs must be at most {MAX_EPOCHS:,} passes over a rollout, got {n_epochs:,}")


def check_seed_range(config: TrainConfig) -> None:
    """Refuse env counts, budgets and seeds whose env seeds leave ale-py's 32-bit range (:data:`MAX_SEED`)."""
    if config.n_envs >= MAX_SEED:
        raise ValueError(f"--n-envs must be below {MAX_SEED:,} (each env has its own 32-bit seed), got {config.n_envs:,}")
    if largest_seed(config.total_steps, config.n_envs) < 0:
        raise ValueError(f"--total-steps must be at most {MAX_SEED - config.n_envs:,} agent steps, got {config.total_steps:,}")
    if not 0 <= config.seed <= largest_seed(config.total_steps, config.n_envs):
        raise ValueError(
            f"--seed must be in [0, {largest_seed(config.total_steps, config.n_envs):,}] for this budget, got {config.seed}"
        )


def check_values(config: TrainConfig) -> None:
    """Refuse numbers that are not finite or outside the range where they mean something (one line each)."""
    positive = ("clip_range", "max_grad_norm", "adaptive_r", "max_wall_minutes")
    non_negative = ("learning_rate", "ent_coef", "vf_coef", "checkpoint_minutes")  # learning rate 0: a fixed policy
    for name in (f.name for f in fields(TrainConfig)):
        value = getattr(config, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{flag(name)} must be a finite number, got {value}")
        if value is None or isinstance(value, bool):
            continue
        if name in positive and not value > 0:
            raise ValueError(f"{flag(name)} must be > 0, got {value}")
        if name in non_negative and not value >= 0:
            raise ValueError(f"{flag(name)} must be >= 0, got {value}")
    # n_envs, n_steps, nproc and minibatch_size are checked by Batching (n_envs first: a regime derives minibatch_size
    # from it), the measurement's settings by NoiseScaleConfig: each once
    at_least_one = (
        "n_epochs",
        "total_steps",
        "score_window",
        "max_n_envs",
        "adaptive_min_measurements",
        "torch_threads",
        "checkpoint_steps",
        "snapshot_steps",
    )
    for name in at_least_one:
        value = getattr(config, name)
        if value is not None and value < 1:
            raise ValueError(f"{flag(name)} must be >= 1, got {value}")
    check_epochs(config.n_epochs)
    if config.torch_threads is not None and config.torch_threads > (os.cpu_count() or 1):
        raise ValueError(f"--torch-threads must be at most this machine's {os.cpu_count()} cores, got {config.torch_threads}")
    check_learning_rate(config.learning_rate)
    parse_predictor(config.adaptive_predictor)  # recorded in config.json whether or not the run is adaptive
    check_fractions(config)
    check_seed_range(config)


def check_fractions(config: TrainConfig) -> None:
    """Refuse a discount, GAE λ or sticky-action probability outside the range where it means something."""
    if not 0.0 < config.gamma <= 1.0:
        raise ValueError(f"--gamma must be in (0, 1], got {config.gamma}")
    if not 0.0 <= config.gae_lambda <= 1.0:
        raise ValueError(f"--gae-lambda must be in [0, 1], got {config.gae_lambda}")
    if not 0.0 <= config.sticky_actions < 1.0:
        raise ValueError(f"--sticky-actions is a probability below 1, got {config.sticky_actions}")


def resume_config(config: TrainConfig, given: Collection[str]) -> TrainConfig:
    """The settings of the run ``config.resume`` names (its ``config.json``), with the run-control settings
    (:data:`~rl_gns.experiments.config.RUN_CONTROL`) given now; unchanged if ``config.resume`` is ``None``.

    :param given: the settings the user named: a training setting among them must equal the run's.
    :raises ValueError: if there is no unfinished run there, or a given training setting differs from the run's.
    """
    if config.resume is None:
        return config
    run = RunDir(config.resume)
    if not run.is_started():
        raise ValueError(f"--resume {run.path}: no run there (no config.json)")
    if run.status() == "done":
        raise ValueError(f"--resume {run.path}: the run is finished (summary.json)")
    if "out" in given and config.out is not None and config.out.resolve() != run.path.resolve():
        raise ValueError(f"--resume {run.path} goes on in the run's own directory; --out {config.out} names another")
    if "overwrite" in given and config.overwrite:
        raise ValueError(f"--resume {run.path} keeps what the run wrote; --overwrite would replace it")
    stored = train_config_from_json(run.config().settings, run.file(CONFIG))
    differ = changed_settings(to_json(stored), to_json(config), RUN_CONTROL)
    changed = [name for name in given if name in differ]
    if changed:
        was = ", ".join(f"{flag(name)} {getattr(stored, name)}" for name in changed)
        raise ValueError(f"--resume {run.path}: the run was started with {was}; a resumed run keeps its settings")
    now = {name: getattr(config, name) for name in RUN_CONTROL if name in given}
    # a deadline is this invocation's; the run stays where it is
    this_time = {"max_wall_minutes": config.max_wall_minutes, "out": run.path, "overwrite": False, "resume": run.path}
    return replace(stored, **{**now, **this_time, **moved_paths(stored, run)})


def moved(run: RunDir) -> tuple[str, str] | None:
    """``(the run's directory as its config.json recorded it, where it lies now)``, as
    :func:`~rl_gns.records.schema.relocated` takes them; ``None`` where the record names none."""
    recorded_out = run.config().settings.get("out")
    return (recorded_out, str(run.path)) if isinstance(recorded_out, str) else None


def moved_paths(stored: TrainConfig, run: RunDir) -> dict[str, Path]:
    """The files a run's settings name (``init_from``, ``race_file``) where they lie now, had the run moved with them
    (:func:`~rl_gns.records.schema.relocated`: the same place relative to the run's directory as recorded)."""
    where = moved(run)
    if where is None:
        return {}
    named = {name: getattr(stored, name) for name in ("init_from", "race_file") if getattr(stored, name) is not None}
    return {name: Path(relocated(str(path), *where)) for name, path in named.items()}


def resumable_checkpoint(config: TrainConfig) -> Checkpoint:
    """The newest checkpoint of the run ``config.resume`` that verifies whole, made by this rl-gns with ``config``'s
    settings, and whose logs reach it.

    :raises CheckpointError: if there is none, it was made by another version or with other settings, or the
        run's logs were cut before it.
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
    # a run moved with what its paths name (a probe's branches and the agent they start from) is compared where it lies
    where = moved(RunDir(config.resume))
    changed = sorted(
        key
        for key in now.keys() | settings.keys()
        if key not in now or key not in settings or not same_setting(key, settings[key], now[key], where)
    )
    if changed:
        raise CheckpointError(f"checkpoint {checkpoint.path} was made with other settings ({', '.join(changed)})")
    check_logs_reach(RunDir(config.resume), checkpoint)
    return checkpoint


def check_logs_reach(run: RunDir, checkpoint: Checkpoint) -> None:
    """Refuse to resume over a gap or a tangle: each log must hold at least the rows it held when the checkpoint was
    written, in the order of their agent steps (one row per iteration in ``progress.csv``; games in the order they
    ended in ``episodes.csv``).

    :raises CheckpointError: naming the log that was cut, deleted, or whose rows were repeated, reordered, or hold
        a cell that is not a number (the readers of the finished run would refuse it).
    """
    for name, step_key, strictly in ((PROGRESS, STEP_KEY, True), (EPISODES, "env_steps", False)):
        expected = int(checkpoint.state["log_rows"][name])
        try:
            header, kept, _ = split_at(run.file(name), step_key, checkpoint.env_steps)
            row_values(run.file(name), header, kept)
        except RunFileError as error:
            raise CheckpointError(f"--resume {run.path}: {error}") from None
        except ValueError as error:
            raise CheckpointError(f"--resume {run.path}: {name} is not a log of agent steps ({error})") from None
        steps = [float(row[header.index(step_key)]) for row in kept]
        if any(later < earlier or (strictly and later == earlier) for earlier, later in itertools.pairwise(steps)):
            raise CheckpointError(
                f"--resume {run.path}: {name}'s rows are not in the order of their agent steps (repeated or reordered)"
            )
        if len(kept) < expected:
            raise CheckpointError(
                f"--resume {run.path}: {name} holds {len(kept)} rows up to the checkpoint at {checkpoint.env_steps:,} agent "
                f"steps, but held {expected} when it was written: the log was cut, and resuming would leave a gap"
            )


def check_device(device: str, nproc: int) -> None:
    """Refuse a torch device that does not exist here (``cpu``, ``cuda[:i]``, ``mps`` or ``auto``).

    :param nproc: ranks on this machine; each takes its own GPU on ``cuda``.
    """
    try:
        parsed = th.device(device) if device != "auto" else None
    except RuntimeError:
        raise ValueError(f"--device {device!r} is not a torch device: use cpu, cuda, cuda:<i>, mps or auto") from None
    if parsed is None:
        return
    if parsed.type == "cpu":
        if parsed.index not in (None, 0):  # torch has one CPU device; SB3 takes any other index for a GPU
            raise ValueError(f"--device {device}: torch has one CPU device, cpu (cpu:0)")
        return
    if parsed.type == "cuda":
        check_cuda(device, parsed.index, nproc)
    elif parsed.type == "mps":
        if not th.backends.mps.is_available():
            raise ValueError(f"--device {device}: torch sees no Apple GPU (MPS) here")
    else:
        raise ValueError(f"--device {device}: rl-gns trains on cpu, cuda or mps")


def check_cuda(device: str, index: int | None, nproc: int) -> None:
    """Refuse ``--device cuda[:index]`` where torch sees no such GPU, or fewer GPUs than ``nproc`` ranks (each takes
    its own; under torchrun the launcher places them)."""
    n_gpus = th.cuda.device_count() if th.cuda.is_available() else 0
    if n_gpus == 0:
        raise ValueError(f"--device {device}: torch sees no CUDA device here")
    if index is not None and index >= n_gpus:
        raise ValueError(f"--device {device}: torch sees {n_gpus} CUDA devices here")
    if nproc > 1 and not under_torchrun() and nproc > n_gpus:
        raise ValueError(f"--nproc {nproc} ranks on --device cuda, but torch sees {n_gpus} GPUs here")


def available_memory_bytes() -> int | None:
    """Memory this machine can still give, from ``/proc/meminfo`` (``None`` where that does not exist)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def memory_estimate_bytes(config: TrainConfig, batching: Batching) -> int:
    """A lower bound of what a run holds: its emulators and its rollout buffer (the adaptive maximum, if any)."""
    n_envs = max(batching.n_envs, config.max_n_envs if config.adaptive_r is not None else 0)
    sample_bytes = 128 * 4 if config.backend == "ram" else PIXEL_SAMPLE_BYTES
    return n_envs * (EMULATOR_BYTES + batching.n_steps * sample_bytes)


def check_memory(config: TrainConfig, batching: Batching) -> None:
    """Refuse a run whose emulators and rollout buffer alone would not fit in this machine's free memory."""
    need, free = memory_estimate_bytes(config, batching), available_memory_bytes()
    if free is not None and need > free:
        raise ValueError(
            f"--n-envs {batching.n_envs} x --n-steps {batching.n_steps} needs at least {need / 2**30:.1f} GiB "
            f"(emulators and rollout buffer), and this machine has {free / 2**30:.1f} GiB free"
        )


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse a run directory that cannot be written, or that holds a run (unless ``overwrite``) or a live one."""
    if out == Path("."):
        raise ValueError("--out must name a run directory, not the current one")
    check_writable(out, longest_run_path())
    check_kind(out, "run")
    check_not_inside(out, "run")
    if out.is_dir():
        check_unlocked(out)
        check_own_directories(out)
        check_no_strangers(out, "run")
    if RunDir(out).is_started() and not overwrite:
        raise FileExistsError(f"{out} already holds a run; pass --overwrite, --resume {out}, or another --out")


def check_resumable_path(run: Path) -> None:
    """Refuse to resume a run whose directory a run cannot write to (:func:`check_path_name`: a name that is not
    UTF-8, a path too long for what a run writes inside it), which a run trained elsewhere can be moved to.

    :raises OutputError: naming the path, and how to go on (the run itself is intact).
    """
    try:
        check_path_name(run, longest_run_path())
    except OutputError as error:
        raise OutputError(f"--resume {error}; the run is intact: move it to another directory and resume it there") from None


def check_adaptive(config: TrainConfig, batching: Batching) -> None:
    """Validate adaptive rollout-size settings (raises ``ValueError`` with the reason)."""
    if batching.nproc > 1:
        raise ValueError("--adaptive-r grows the envs of one process: it cannot be used with --nproc > 1")
    for name, n in (("n_envs", config.n_envs), ("max_n_envs", config.max_n_envs)):
        if n & (n - 1):
            raise ValueError(f"an adaptive run grows by powers of 2: {flag(name)} must be a power of 2, got {n}")
    if config.max_n_envs <= config.n_envs:
        raise ValueError(f"--max-n-envs ({config.max_n_envs}) must be above --n-envs ({config.n_envs}): the run only grows")
    if config.anneal:
        raise ValueError("an adaptive run rescales a constant learning rate at each growth: pass --no-anneal")
    predictor = parse_predictor(config.adaptive_predictor)
    scheme, loss = predictor.scheme, predictor.loss
    noise_scale = config.noise_scale_config()
    if noise_scale is None or loss not in noise_scale.losses or scheme not in noise_scale.schemes:
        raise ValueError(
            f"--adaptive-predictor {config.adaptive_predictor}: the {loss} loss must be measured with scheme {scheme} "
            "(--gns, --gns-scheme, --gns-losses)"
        )
    grown = replace(batching, n_envs=config.max_n_envs)
    noise_scale.all_sizes(grown.n_envs, grown.n_steps, grown.minibatch_size)


def check_init_from(config: TrainConfig, batching: Batching) -> None:
    """A branch starts from a saved agent of one process with a fixed env count, that sees and does what an agent of
    the run's game and backend sees and does."""
    init_from = config.init_from
    assert init_from is not None
    if not init_from.is_file() or init_from.suffix != ".zip":
        raise ValueError(f"--init-from {init_from}: not a saved agent (model.zip)")
    if batching.nproc > 1 or config.adaptive_r is not None:
        raise ValueError("--init-from starts one process at a fixed env count: not with --nproc > 1 or --adaptive-r")
    try:
        saved = load_from_zip_file(init_from, load_data=True, device="cpu")[0] or {}
        observation, action = saved["observation_space"], saved["action_space"]
        was = (tuple(sorted(observation.shape)), int(action.n))
    except Exception as error:  # a zip of something else: SB3 raises what the file makes it raise
        raise ValueError(f"--init-from {init_from}: not a saved agent ({type(error).__name__}: {error})") from None
    now = agent_spaces(config.env, config.backend)
    if was != now:
        raise ValueError(
            f"--init-from {init_from}: the agent sees observations of shape {tuple(observation.shape)} and has {was[1]} "
            f"actions; {config.env} on --backend {config.backend} gives observations of {math.prod(now[0])} values "
            f"and has {now[1]} actions"
        )


def check_torchrun(batching: Batching) -> None:
    """Under ``torchrun``, ``--nproc`` must count the ranks it started."""
    if under_torchrun() and world_size_from_env() != batching.nproc:
        raise ValueError(f"--nproc {batching.nproc}, but torchrun started {world_size_from_env()} ranks (WORLD_SIZE)")
