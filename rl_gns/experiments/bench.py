"""``rl-gns bench``: the benchmark suite, every game of a tier × seeds, trained with noise-scale logging.

Stage one of two (run -> the report, ``rl-gns bench --report-only`` alone), talking through files. The suite is data shipped
with the package (:mod:`rl_gns.records.tables`): the games and their reference scores, and the tiers
(``smoke``, ``cpu``, ``full``). Each run is a ``rl-gns train`` run directory ``<out>/runs/<game>_s<seed>/``
launched by :func:`rl_gns.experiments.runner.run_all`. ``<out>/bench.json`` records the tier and the game
table; a directory made with other settings is refused.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from rl_gns.core.envs.atari import resolve_game
from rl_gns.experiments.config import REGIMES, Regime, TrainConfig, apply_regime, base_train_config
from rl_gns.experiments.runner import ExecutionConfig, check_directory, check_run_count, check_runs, connect, run_all
from rl_gns.records.lock import RunLock
from rl_gns.records.rundir import BENCH, write_json
from rl_gns.records.tables import load_games, load_suites

#: Settings that select or execute runs without changing what a run trains: they may change on resume.
SELECTION_FIELDS = ("games", "seeds", "executor", "workers", "threads_per_run", "ray_address", "out")


@dataclass
class Tier:
    """One tier of the suites table: what every run of the tier trains (rl-zoo3 settings unless overridden)."""

    total_steps: int
    """Budget per run, agent steps."""
    n_envs: int
    """Parallel environments."""
    seeds: int
    """Runs per game (seeds 0 .. seeds-1)."""
    every: int
    """Measure the noise scale every k PPO iterations."""
    games: tuple[str, ...]
    """ale-py ROM ids of the tier's games."""
    description: str = ""
    """What the tier is for."""
    n_steps: int | None = None
    """Agent steps per env per rollout; if unset, rl-zoo3's."""
    minibatch_size: int | None = None
    """Samples per gradient step; if unset, rl-zoo3's."""
    n_epochs: int | None = None
    """Passes over each rollout; if unset, rl-zoo3's."""

    def train_overrides(self) -> dict:
        """The fields of :class:`TrainConfig` the tier sets."""
        overrides = {"total_steps": self.total_steps, "n_envs": self.n_envs, "gns_every": self.every}
        optional = {"n_steps": self.n_steps, "minibatch_size": self.minibatch_size, "n_epochs": self.n_epochs}
        return overrides | {key: value for key, value in optional.items() if value is not None}


@dataclass
class BenchConfig(ExecutionConfig):
    """Train every game of a benchmark tier for several seeds with noise-scale logging."""

    suite: str = "cpu"
    """Tier: smoke (checks the pipeline, seconds), cpu (early noise scales, first learning, ~1 h on 2 cores), full (10M)."""
    out: Path = Path("runs/bench")
    """Benchmark directory (bench.json, specs/, runs/<game>_s<seed>/, then results.json, report.md)."""
    games: tuple[str, ...] | None = None
    """Run only these games of the tier (any name rl-gns train accepts; if unset, all of the tier's)."""
    seeds: int | None = None
    """Seeds per game, overriding the tier's."""
    suite_file: Path | None = None
    """The tiers, TOML; if unset, the table shipped with rl-gns, envs/suites.toml in the repository."""
    games_file: Path | None = None
    """The games, TOML: random, human and published PPO scores, target scores; if unset, the shipped table."""
    regime: Regime = "ppo"
    """ppo: the tier's PPO settings; one-step: one gradient step per rollout (n_steps 5, RMSprop) at the tier's n_envs."""


def load_tier(config: BenchConfig) -> Tier:
    """The tier ``config.suite``; its games default to every game of the game table.

    :raises ValueError: for an unknown tier.
    """
    tiers = load_suites(config.suite_file)["tiers"]
    if config.suite not in tiers:
        raise ValueError(f"unknown suite {config.suite!r}; choose one of {', '.join(tiers)}")
    entry = dict(tiers[config.suite])
    entry["games"] = tuple(entry.get("games", load_games(config.games_file)))
    return Tier(**entry)


def selected_games(config: BenchConfig, tier: Tier) -> list[str]:
    """ROM ids to run: the tier's games, or the subset ``config.games`` of them.

    :raises ValueError: for a game outside the tier (an unknown name raises ``UnknownGameError``).
    """
    if config.games is None:
        return list(tier.games)
    games = [resolve_game(name) for name in config.games]
    outside = [game for game in games if game not in tier.games]
    if outside:
        raise ValueError(f"games {outside} are not in suite {config.suite!r} ({', '.join(tier.games)})")
    return games


def runs(config: BenchConfig, tier: Tier) -> dict[str, TrainConfig]:
    """Every run to do, by run name ``<game>_s<seed>``."""
    regime = REGIMES[config.regime]
    overrides = {  # the regime's settings win over the tier's
        key: value
        for key, value in tier.train_overrides().items()
        if key not in regime and not (key == "minibatch_size" and "n_minibatches" in regime)
    }
    base = base_train_config(config, **overrides, overwrite=True, torch_threads=config.threads_per_run, progress_bar=False)
    base = apply_regime(base, given=overrides)
    specs = {}
    for game in selected_games(config, tier):
        for seed in range(config.seeds or tier.seeds):
            name = f"{game}_s{seed}"
            specs[name] = TrainConfig(**{**vars(base), "env": game, "seed": seed, "out": config.out / "runs" / name})
    return specs


def record(config: BenchConfig) -> dict:
    """What ``bench.json`` records: the settings, the tier, and the game table and paper ranges the report uses."""
    games = load_games(config.games_file)
    tier = load_tier(config)
    settings = {
        "suite": config.suite,
        "regime": config.regime,
        "device": config.device,
        "tier": {key: getattr(TrainConfig, key) if value is None else value for key, value in asdict(tier).items()},
        "games_table": {game: games[game] for game in tier.games},
        "paper_ranges_frames": load_suites(config.suite_file)["paper_ranges_frames"],
        **{key: getattr(config, key) for key in SELECTION_FIELDS},
    }
    return json.loads(json.dumps(settings, default=str))  # as JSON values, comparable with bench.json


def check(config: BenchConfig) -> None:
    """Validate the benchmark without writing anything (raises ``ValueError`` with the reason)."""
    if config.seeds is not None and config.seeds < 1:
        raise ValueError("--seeds must be >= 1")
    config.check_execution()
    games = load_games(config.games_file)
    tier = load_tier(config)
    unknown = [game for game in tier.games if game not in games]
    if unknown:
        raise ValueError(f"suite {config.suite!r} names games missing from the game table: {unknown}")
    selected = selected_games(config, tier)
    where = "--games" if config.games is not None else f"suite {config.suite!r}"
    if not selected:
        raise ValueError(f"{where} names no game: a benchmark trains at least one")
    if len(set(selected)) < len(selected):
        raise ValueError(f"{where} names a game twice: {selected} (as ale-py ROM ids)")
    check_run_count({"games": len(selected), "seeds": config.seeds or tier.seeds}, "benchmark")
    check_directory(config.out, "benchmark", record(config), SELECTION_FIELDS)
    check_runs(runs(config, tier).values())


def bench(config: BenchConfig) -> dict[str, str]:
    """Run every unfinished run of the tier, holding the benchmark directory's lock; return ``{run name: "done" |
    "skipped" | "failed"}``.

    :raises rl_gns.records.lock.RunLockedError: if another process writes the benchmark.
    """
    check(config)
    connect(config)  # a cluster that does not answer leaves nothing written
    with RunLock(config.out).acquire():
        # again, under the lock, what another command may have written since check(): the directory, not every run
        check_directory(config.out, "benchmark", record(config), SELECTION_FIELDS)
        (config.out / "runs").mkdir(parents=True, exist_ok=True)
        write_json(config.out / BENCH, record(config))
        return run_all(config.out, runs(config, load_tier(config)), config, label="bench")
