"""The data tables that ship with rl-gns: the Atari game table and the benchmark tiers.

They are edited in the repository as ``envs/atari_games.toml`` and ``envs/suites.toml`` (comments there
give sources and units) and installed inside the package (``rl_gns/envs/``), so every command finds them
after a plain ``pip install`` from any working directory.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

GAMES_FILE = "atari_games.toml"
SUITES_FILE = "suites.toml"


def table_path(name: str) -> Path:
    """Path of a shipped table: inside an installed package, or ``envs/`` of a source checkout."""
    installed = Path(str(resources.files("rl_gns") / "envs" / name))
    if installed.exists():
        return installed
    return Path(__file__).resolve().parents[2] / "envs" / name


def read_table(path: Path | None, name: str) -> dict:
    """Parse a TOML table: ``path`` if given, else the shipped table ``name``.

    :raises FileNotFoundError: naming the missing file.
    """
    path = table_path(name) if path is None else path
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    return tomllib.loads(path.read_text())


def load_games(path: Path | None = None) -> dict[str, dict]:
    """The game table, ``{ale-py ROM id: entry}`` (random, human and published PPO scores, target score)."""
    return read_table(path, GAMES_FILE)["games"]


def load_suites(path: Path | None = None) -> dict:
    """The benchmark tiers (``tiers``) and the paper's Atari ranges (``paper_ranges_frames``)."""
    return read_table(path, SUITES_FILE)
