"""Checkpoints of an unfinished run: ``<run>/checkpoints/<env steps>/``, written atomically, verified on reading.

A checkpoint directory holds:

==============  ===========================================================================================
``model.zip``   the agent as SB3's ``save`` writes it: policy, optimizer, counters and schedules' progress,
                noise-scale averages, pooled history and measurement RNG, adaptive state, score window
``rng.pkl``     the global RNG states (torch, NumPy, ``random``) that SB3 seeds once at the start, one per rank
``games.pkl``   the games in progress of each rank's envs (:mod:`rl_gns.core.envs.games`), or ``None`` for a rank whose
                envs cannot save them
``state.json``  what the run directory needs to go on: agent steps, iterations, wall time, games dropped,
                the rows each log held, the rl-gns version and settings it was made with
``manifest.json`` the layout version and the SHA-256 of each file above
==============  ===========================================================================================

It is written into a hidden temporary directory and renamed into place (an atomic ``rename``), so a kill at
any instant leaves the previous checkpoint or the new one. The newest :data:`KEEP` are kept. Reading
verifies every file against the manifest (an edited ``state.json`` fails like a corrupted model) and falls back to
an older checkpoint, with a warning, past a corrupted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from rl_gns.records.logs import check_regular, read_text
from rl_gns.records.schema import Count, NonNegative, Whole, require

CHECKPOINTS = "checkpoints"
#: Checkpoints kept per run (the newest ones); the older one is the fallback if the newest is corrupted.
KEEP = 2
#: Version of the checkpoint layout (2: one RNG state per rank; 3: a manifest covers every file; 4: the games in
#: progress).
FORMAT = 4
MANIFEST = "manifest.json"
#: The files of a checkpoint that the manifest covers, by the layouts this version reads (3: resumed with new games).
FILES = {3: ("model.zip", "rng.pkl", "state.json"), 4: ("model.zip", "rng.pkl", "games.pkl", "state.json")}
#: ``state.json``: what resuming reads of it (older checkpoints lack ``settings`` and ``rl_gns``).
STATE_FIELDS: dict[str, Any] = {
    "env_steps": Whole,
    "n_envs": Count,
    "wall_s": NonNegative,
    "games_dropped": Whole,
    "resumes": Whole,
    "log_rows": dict[str, Whole],
    "settings": dict | None,
    "rl_gns": str | None,
}
#: What each rank's entry of ``rng.pkl`` holds (:func:`global_rng_state`).
RNG_KEYS = frozenset({"torch", "numpy", "random"})


def checkpoint_dirs(root: Path) -> list[Path]:
    """The checkpoint directories in a run's ``checkpoints/``, oldest first: the entries named as
    :func:`write_checkpoint` names them, the agent steps in 12 digits, so that their order by name is their order by
    agent steps. Anything else there (``768`` renamed by hand, a ``.tmp-`` directory a kill left) is not a checkpoint.

    :param root: ``<run>/checkpoints``.
    """
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if len(p.name) == 12 and p.name.isdigit() and p.name.isascii())


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupted, or made by another version or other settings."""


@dataclass(frozen=True)
class Checkpoint:
    """One verified checkpoint."""

    path: Path
    """Its directory."""
    state: dict[str, Any]
    """``state.json``: ``env_steps``, ``iterations``, ``n_envs``, ``wall_s``, ``games_dropped``, ``resumes``,
    ``log_rows``, ``rl_gns``, ``settings``."""
    layout: int = FORMAT
    """The layout it was written in (``manifest.json``'s ``format``)."""

    @property
    def model(self) -> Path:
        return self.path / "model.zip"

    @property
    def env_steps(self) -> int:
        return int(self.state["env_steps"])

    @property
    def games(self) -> Path | None:
        """``games.pkl``; ``None`` in a checkpoint of layout 3, which saved no games."""
        return self.path / "games.pkl" if "games.pkl" in FILES[self.layout] else None


def global_rng_state() -> dict[str, Any]:
    """The global RNG states SB3 draws from (seeded once by ``set_random_seed``): torch (and CUDA), NumPy, ``random``."""
    state: dict[str, Any] = {"torch": th.get_rng_state(), "numpy": np.random.get_state(), "random": random.getstate()}
    if th.cuda.is_available():
        state["cuda"] = th.cuda.get_rng_state_all()
    return state


def set_global_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`global_rng_state` captured (CUDA states only where CUDA is present)."""
    th.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["random"])
    if "cuda" in state and th.cuda.is_available():
        th.cuda.set_rng_state_all(state["cuda"])


def sha256(path: Path) -> str:
    """The SHA-256 of a file, as hex, read in blocks of 1 MiB.

    :raises rl_gns.records.logs.RunFileError: if the path is not a regular file (a FIFO would block the read for ever).
    """
    check_regular(path, "a file")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(
    run_path: Path,
    save_model: Callable[[Path], None],
    state: dict[str, Any],
    rng_states: list[dict[str, Any]],
    games: list[bytes | None],
) -> Path:
    """Write a checkpoint of a run at ``state["env_steps"]`` and prune all but the newest :data:`KEEP`.

    :param run_path: the run directory.
    :param save_model: writes the agent to the given ``.zip`` path (``model.save``).
    :param state: what :attr:`Checkpoint.state` holds.
    :param rng_states: :func:`global_rng_state` of each rank, in rank order (one for a single process).
    :param games: :func:`rl_gns.core.envs.games.save_games` of each rank's envs, in rank order.
    :return: the checkpoint's directory.
    """
    root = run_path / CHECKPOINTS
    root.mkdir(exist_ok=True)
    remove_torn(run_path)
    final = root / f"{int(state['env_steps']):012d}"
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
    save_model(tmp / "model.zip")
    with open(tmp / "rng.pkl", "wb") as f:
        pickle.dump(rng_states, f)
    with open(tmp / "games.pkl", "wb") as f:
        pickle.dump(games, f)
    (tmp / "state.json").write_text(json.dumps(state, indent=2) + "\n")
    manifest = {"format": FORMAT, "files": {name: sha256(tmp / name) for name in FILES[FORMAT]}}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    for name in (*FILES[FORMAT], MANIFEST):
        _fsync(tmp / name)
    if final.exists():  # the same step again (a resumed run that stopped at once): replace it
        shutil.rmtree(final)
    os.rename(tmp, final)
    _fsync(root)
    for old in checkpoint_dirs(root)[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def verify(path: Path) -> Checkpoint:
    """Read and check one checkpoint directory: every file against the manifest, and the agent steps of
    ``state.json`` against the directory's name.

    :raises CheckpointError: if a file is missing, unreadable, edited or cut short, or the layout is another.
    """
    try:
        manifest = json.loads(read_text(path / MANIFEST, "a JSON file"))
        layout = manifest.get("format")
        if layout not in FILES:
            raise CheckpointError(f"checkpoint {path} has layout {layout}, this rl-gns reads {' and '.join(map(str, FILES))}")
        if sorted(manifest["files"]) != sorted(FILES[layout]):
            raise CheckpointError(
                f"checkpoint {path}: its manifest lists {sorted(manifest['files'])}, not {sorted(FILES[layout])}"
            )
        for name, digest in manifest["files"].items():
            if sha256(path / name) != digest:
                raise CheckpointError(f"checkpoint {path}: {name} does not match its checksum")
        state = require(json.loads(read_text(path / "state.json", "a JSON file")), path / "state.json", STATE_FIELDS)
        if state["env_steps"] != int(path.name):
            raise CheckpointError(f"checkpoint {path}: state.json says {state['env_steps']} agent steps")
        with zipfile.ZipFile(path / "model.zip") as archive:
            damaged = archive.testzip()
        if damaged is not None:
            raise CheckpointError(f"checkpoint {path}: model.zip's {damaged} is damaged")
        checkpoint = Checkpoint(path, state, layout)
        load_rng_states(checkpoint)
        load_games(checkpoint)
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, AttributeError, TypeError, RecursionError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"checkpoint {path} is corrupted: {error}") from error
    return checkpoint


def latest_checkpoint(run_path: Path) -> Checkpoint | None:
    """The newest checkpoint of a run that verifies, warning about any newer one that does not.

    :return: ``None`` if the run has no checkpoint directory at all.
    :raises CheckpointError: if it has checkpoints and none verifies.
    """
    root = run_path / CHECKPOINTS
    candidates = checkpoint_dirs(root)[::-1]
    if not candidates:
        return None
    errors = []
    for path in candidates:
        try:
            checkpoint = verify(path)
        except CheckpointError as error:
            errors.append(str(error))
            continue
        for message in errors:
            warnings.warn(f"rl-gns: {message}; using the older {path.name}", stacklevel=2)
        return checkpoint
    raise CheckpointError(f"no usable checkpoint in {root}: " + "; ".join(errors))


def load_rng_states(checkpoint: Checkpoint) -> list[dict[str, Any]]:
    """The global RNG states of each rank saved with a checkpoint (our own pickle, checked against its SHA-256).

    :raises CheckpointError: if the file does not hold one state per rank (edited, and its checksum with it).
    """
    try:
        with open(checkpoint.path / "rng.pkl", "rb") as f:
            states = pickle.load(f)  # written by write_checkpoint, checksum verified
    except Exception as error:  # unpickling bytes that are not a pickle can raise anything
        raise CheckpointError(f"checkpoint {checkpoint.path}: rng.pkl cannot be read ({error!r})") from error
    if not isinstance(states, list) or not states or not all(isinstance(s, dict) and s.keys() >= RNG_KEYS for s in states):
        raise CheckpointError(f"checkpoint {checkpoint.path}: rng.pkl does not hold one RNG state per rank")
    return states


def load_games(checkpoint: Checkpoint) -> list[bytes | None] | None:
    """The games in progress of each rank saved with a checkpoint (our own pickle, checked against its SHA-256);
    ``None`` for a checkpoint of layout 3, which saved none.

    :raises CheckpointError: if the file does not hold one entry per rank, each pickled games or ``None``.
    """
    if checkpoint.games is None:
        return None
    try:
        with open(checkpoint.games, "rb") as f:
            games = pickle.load(f)  # written by write_checkpoint, checksum verified
    except Exception as error:  # unpickling bytes that are not a pickle can raise anything
        raise CheckpointError(f"checkpoint {checkpoint.path}: games.pkl cannot be read ({error!r})") from error
    if not isinstance(games, list) or not games or not all(g is None or isinstance(g, bytes) for g in games):
        raise CheckpointError(f"checkpoint {checkpoint.path}: games.pkl does not hold one entry per rank")
    return games


def remove_torn(run_path: Path) -> None:
    """Delete the hidden ``.tmp-`` directories of a run's ``checkpoints/``: checkpoints a kill left half written
    (never read as checkpoints, :func:`checkpoint_dirs`)."""
    root = run_path / CHECKPOINTS
    for torn in root.glob(".tmp-*") if root.is_dir() else ():
        shutil.rmtree(torn, ignore_errors=True)


def remove_checkpoints(run_path: Path) -> None:
    """Delete a run's checkpoints (its ``model.zip`` and ``summary.json`` supersede them once it finishes)."""
    shutil.rmtree(run_path / CHECKPOINTS, ignore_errors=True)
