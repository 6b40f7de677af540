"""``rl-gns bench``: the benchmark suite, every game of a tier × seeds, trained with noise-scale logging.

Stage one of two (run -> report), talking through files. The suite is data: the games and their
reference scores in ``envs/atari_games.toml``, the tiers (``smoke``, ``cpu``, ``full``) in
``envs/suites.toml``. Each run is a ``rl-gns train`` run directory ``<out>/runs/<game>_s<seed>/``,
launched with the sweep machinery (:func:`rl_gns.sweep.run_all`): one process per run, a local pool
or Ray tasks, finished runs skipped, killed runs restarted, failures left in ``error.txt``.
``<out>/bench.json`` records the tier and the game table; a directory made with other settings is
refused. The report stage (:mod:`rl_gns.bench_report`, also ``rl-gns bench-report <out>``) reads only
that directory.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from rl_gns.atari import resolve_game
from rl_gns.sweep import ExecutionConfig, check_same_settings, run_all
from rl_gns.train import TrainConfig
from rl_gns.train import check as check_run

#: Settings that select or execute runs without changing what a run trains: they may change on resume.
SELECTION_FIELDS = ("games", "seeds", "executor", "workers", "threads_per_run", "ray_address", "bootstrap", "sweeps")


@dataclass
class Tier:
    """One tier of ``envs/suites.toml``: what every run of the tier trains."""

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
    n_steps: int = TrainConfig.n_steps
    """Agent steps per env per rollout."""
    minibatch_size: int = TrainConfig.minibatch_size
    """Samples per gradient step."""
    n_epochs: int = TrainConfig.n_epochs
    """Passes over each rollout."""


@dataclass
class BenchConfig(ExecutionConfig):
    """Train every game of a benchmark tier for several seeds with noise-scale logging, then write the report."""

    suite: str = "cpu"
    """Tier of --suite-file: smoke (CI, seconds per game), cpu (2-core CPU, ~2 min per run), full (10M agent steps)."""
    out: Path = Path("bench/cpu")
    """Benchmark directory (bench.json, specs/, runs/<game>_s<seed>/, results.json, report.md)."""
    games: tuple[str, ...] | None = None
    """Run only these games of the tier (any name rl-gns train accepts; default: all of the tier's)."""
    seeds: int | None = None
    """Seeds per game, overriding the tier's."""
    suite_file: Path = Path("envs/suites.toml")
    """The tiers (relative paths are from the working directory: run from the checkout's root)."""
    games_file: Path = Path("envs/atari_games.toml")
    """The games: random, human and published PPO scores, target scores."""
    sweeps: tuple[Path, ...] = (Path("sweeps/beamrider_ram"),)
    """Analysed sweep directories (results.json) whose fitted B_crit the report shows next to their game."""
    bootstrap: int = 2000
    """Bootstrap resamples of the report's confidence intervals."""


def load_tier(suite_file: Path, name: str, all_games: list[str]) -> Tier:
    """The tier ``name`` of ``suite_file``; its games default to ``all_games``.

    :raises ValueError: for an unknown tier.
    """
    tiers = tomllib.loads(suite_file.read_text())["tiers"]
    if name not in tiers:
        raise ValueError(f"unknown suite {name!r} in {suite_file}; choose one of {', '.join(tiers)}")
    entry = dict(tiers[name])
    entry["games"] = tuple(entry.get("games", all_games))
    return Tier(**entry)


def load_games(games_file: Path) -> dict[str, dict]:
    """The game table, ``{ale-py ROM id: entry}`` (see the comments of ``envs/atari_games.toml``)."""
    return tomllib.loads(games_file.read_text())["games"]


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
    specs = {}
    for game in selected_games(config, tier):
        for seed in range(config.seeds or tier.seeds):
            name = f"{game}_s{seed}"
            specs[name] = TrainConfig(
                env=game,
                n_envs=tier.n_envs,
                total_steps=tier.total_steps,
                out=config.out / "runs" / name,
                overwrite=True,
                seed=seed,
                device=config.device,
                n_steps=tier.n_steps,
                minibatch_size=tier.minibatch_size,
                n_epochs=tier.n_epochs,
                gns_every=tier.every,
                torch_threads=config.threads_per_run,
                progress_bar=False,
            )
    return specs


def record(config: BenchConfig) -> dict:
    """What ``bench.json`` records: the settings, the tier, and the game table and paper ranges the report uses."""
    games = load_games(config.games_file)
    tier = load_tier(config.suite_file, config.suite, list(games))
    suite = tomllib.loads(config.suite_file.read_text())
    settings = {
        "suite": config.suite,
        "device": config.device,
        "tier": asdict(tier),
        "games_table": {game: games[game] for game in tier.games},
        "paper_ranges_frames": suite["paper_ranges_frames"],
        **{key: getattr(config, key) for key in SELECTION_FIELDS},
    }
    return json.loads(json.dumps(settings, default=str))  # as JSON values, comparable with bench.json


def check(config: BenchConfig) -> None:
    """Validate the benchmark without writing anything (raises ``ValueError`` with the reason)."""
    if config.seeds is not None and config.seeds < 1:
        raise ValueError("--seeds must be >= 1")
    games = load_games(config.games_file)
    tier = load_tier(config.suite_file, config.suite, list(games))
    unknown = [game for game in tier.games if game not in games]
    if unknown:
        raise ValueError(f"suite {config.suite!r} names games missing from {config.games_file}: {unknown}")
    check_same_settings(config.out / "bench.json", record(config), SELECTION_FIELDS)
    for spec in runs(config, tier).values():
        check_run(spec)


def bench(config: BenchConfig) -> Path:
    """Run every unfinished run of the tier, then write the report; return the report's path."""
    from rl_gns.bench_report import BenchReportConfig, report

    check(config)
    tier = load_tier(config.suite_file, config.suite, list(load_games(config.games_file)))
    (config.out / "runs").mkdir(parents=True, exist_ok=True)
    (config.out / "bench.json").write_text(json.dumps(record(config), indent=2) + "\n")
    run_all(
        config.out,
        runs(config, tier),
        config.executor,
        config.workers,
        config.threads_per_run,
        config.ray_address,
        label="bench",
    )
    return report(BenchReportConfig(config.out, bootstrap=config.bootstrap, sweeps=config.sweeps))
