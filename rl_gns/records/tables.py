"""The data tables that ship with rl-gns: the Atari game table and the benchmark tiers.

They are edited in the repository as ``envs/atari_games.toml`` and ``envs/suites.toml`` (comments there
give sources and units) and installed inside the package (``rl_gns/envs/``), so every command finds them
after a plain ``pip install`` from any working directory.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from rl_gns.core.shipped import shipped_path
from rl_gns.records.logs import check_exists, check_regular
from rl_gns.records.schema import GAME_FIELDS, PAPER_RANGES_FIELDS, Count, RecordError, require, require_game

GAMES_FILE = "atari_games.toml"
SUITES_FILE = "suites.toml"

#: A tier of the suites table (its units in ``envs/suites.toml``); a field that admits ``None`` may be left out.
TIER_ENTRY: dict[str, Any] = {
    "description": str | None,
    "total_steps": Count,
    "n_envs": Count,
    "seeds": Count,
    "every": Count,
    "n_steps": Count | None,
    "minibatch_size": Count | None,
    "n_epochs": Count | None,
    "games": list[str] | None,
}


def read_table(path: Path | None, name: str) -> dict:
    """Parse a TOML table: ``path`` if given, else the shipped table ``name``.

    :raises FileNotFoundError: naming the missing file.
    :raises RunFileError: for a path that is not a regular file (:func:`~rl_gns.records.rundir.check_regular`).
    :raises RecordError: for a file that is not TOML.
    """
    path = shipped_path(name) if path is None else path
    check_exists(path)
    check_regular(path, "a TOML file")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise RecordError(f"{path}: not valid TOML ({error})") from error


def require_entries(table: dict, path: Path, name: str, kinds: dict[str, Any]) -> dict[str, dict]:
    """``table[name]``, a table of entries each with the fields ``kinds`` and no other.

    :raises RecordError: naming the file, the entry and the field.
    """
    entries = require(table, path, {name: dict[str, dict]})[name]
    for key, entry in entries.items():
        where = f"{path}: {name}.{key}"
        require(entry, where, kinds)
        unknown = sorted(set(entry) - set(kinds))
        if unknown:
            raise RecordError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(kinds)})")
    return entries


def load_games(path: Path | None = None) -> dict[str, dict]:
    """The game table, ``{ale-py ROM id: entry}`` (random, human and published PPO scores, target score).

    :raises RecordError: for a table without ``games`` or an entry without one of :data:`~rl_gns.records.schema.GAME_FIELDS`.
    """
    path = shipped_path(GAMES_FILE) if path is None else path
    games = require_entries(read_table(path, GAMES_FILE), path, "games", GAME_FIELDS)
    return {name: require_game(entry, f"{path}: games.{name}") for name, entry in games.items()}


def load_suites(path: Path | None = None) -> dict:
    """The benchmark tiers (``tiers``) and the paper's Atari ranges (``paper_ranges_frames``).

    :raises RecordError: for a table without them, or a tier whose fields are not :data:`TIER_ENTRY`'s.
    """
    path = shipped_path(SUITES_FILE) if path is None else path
    suites = require(read_table(path, SUITES_FILE), path, {"paper_ranges_frames": dict})
    require(suites["paper_ranges_frames"], f"{path}: paper_ranges_frames", PAPER_RANGES_FIELDS)
    require_entries(suites, path, "tiers", TIER_ENTRY)
    return suites
