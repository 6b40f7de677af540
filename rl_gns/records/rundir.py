"""The run directory: the one schema every experiment writes and every report reads.

A run directory (``rl-gns train --out DIR``, or one run of a sweep or benchmark under ``runs/``) holds:

=================  ============================================================================
``config.json``    the resolved settings, versions and machine (written first)
``progress.csv``   SB3 logger rows, one per PPO iteration at its env step (``time/total_timesteps``)
``episodes.csv``   every finished game: ``env_steps``, raw ``score``, ``length_frames``, ``wall_s``
``events.out.*``   TensorBoard events of the same rows
``model.zip``      the trained agent (SB3 ``save``)
``summary.json``   totals and final noise scales (written **last**: its presence means "finished")
``training.png``   score and noise scale over training (``rl-gns plot`` redraws it)
``error.txt``      why a run of a sweep or benchmark failed (absent otherwise)
=================  ============================================================================

Noise-scale columns are ``gns/<scheme>/<quantity>_<loss>`` (``gns/minibatch/g2_policy_raw``). Runs
written before 2026-11-22 measured one scheme, named in ``config.json`` (``gns_scheme``), and logged
``gns/<quantity>_<loss>``; :meth:`RunDir.noise_columns` reads both.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rl_gns.core.advice import DEFAULT_PREDICTOR, Advice, advise, parse_predictor
from rl_gns.core.noise_scale import NoiseSums

CONFIG = "config.json"
PROGRESS = "progress.csv"
EPISODES = "episodes.csv"
SUMMARY = "summary.json"
ERROR = "error.txt"
PLOT = "training.png"
MODEL = "model.zip"

#: The env-step x-axis of ``progress.csv`` (SB3's key), agent steps.
STEP_KEY = "time/total_timesteps"
#: Columns of ``episodes.csv``.
EPISODE_FIELDS = ("env_steps", "score", "length_frames", "wall_s")

Status = Literal["done", "failed", "unfinished"]


def read_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Columns of a CSV of numbers with a header (SB3's ``progress.csv``, ``episodes.csv``) as float arrays.

    Empty cells (a key not recorded in that row) become NaN.

    :param path: the CSV file.
    :return: ``{key: (R,) array}`` for the ``R`` rows; ``{}`` for a file with no rows.
    """
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    keys = list(rows[0].keys())
    return {key: np.array([float(row[key]) if row.get(key) not in (None, "") else np.nan for row in rows]) for key in keys}


def write_json(path: Path, data: Any) -> None:
    """Write JSON so that a kill at any instant leaves the old file or the new one, never a torn one."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as f:
        f.write(json.dumps(data, indent=2, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, path)


def read_json(path: Path) -> Any:
    """Read a JSON file, with the path in the error if it is missing."""
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    return json.loads(path.read_text())


@dataclass(frozen=True)
class RunDir:
    """One run directory, read and written through the schema above.

    :param path: the directory.
    """

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        """Path of one of the schema's files (``CONFIG``, ``PROGRESS``, ...)."""
        return self.path / name

    def status(self) -> Status:
        """``done`` (``summary.json`` written), ``failed`` (``error.txt``), or ``unfinished`` (running or killed)."""
        if self.file(SUMMARY).exists():
            return "done"
        return "failed" if self.file(ERROR).exists() else "unfinished"

    def is_started(self) -> bool:
        """Whether the run has written its configuration."""
        return self.file(CONFIG).exists()

    def config(self) -> dict:
        return read_json(self.file(CONFIG))

    def summary(self) -> dict:
        return read_json(self.file(SUMMARY))

    def write_config(self, config: dict) -> None:
        write_json(self.file(CONFIG), config)

    def write_summary(self, summary: dict) -> None:
        """Write ``summary.json``; call it last: it marks the run finished."""
        write_json(self.file(SUMMARY), summary)

    def write_error(self, text: str) -> None:
        self.file(ERROR).write_text(text)

    def progress(self) -> dict[str, np.ndarray]:
        """``progress.csv`` columns (:func:`read_csv`); ``{}`` before the first row."""
        path = self.file(PROGRESS)
        return read_csv(path) if path.exists() else {}

    def episodes(self) -> dict[str, np.ndarray]:
        """``episodes.csv`` columns, each ``(N,)`` for the ``N`` finished games (empty arrays before the first)."""
        path = self.file(EPISODES)
        games = read_csv(path) if path.exists() else {}
        return {key: games.get(key, np.array([])) for key in EPISODE_FIELDS}

    def env_steps(self, progress: dict[str, np.ndarray] | None = None) -> int:
        """Agent steps trained so far (the last logged row); 0 before the first."""
        progress = self.progress() if progress is None else progress
        return int(progress[STEP_KEY][-1]) if progress else 0


def noise_columns(
    progress: dict[str, np.ndarray], config: dict, scheme: str, loss: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(env_steps_T, g2_T, trace_sigma_T)``: the raw estimates of one scheme and loss per logged row
    (NaN where that row has no measurement); ``None`` if the run never measured them.

    :param progress: the run's ``progress.csv`` columns.
    :param config: the run's ``config.json`` (names the scheme of runs logged before schemes had prefixes).
    :param scheme: ``minibatch`` or ``envs``.
    :param loss: ``policy``, ``value`` or ``total``.
    """
    g2_key, trace_key = f"gns/{scheme}/g2_{loss}_raw", f"gns/{scheme}/trace_sigma_{loss}_raw"
    if g2_key not in progress and config.get("gns_scheme") == scheme:  # one scheme, logged without a prefix
        g2_key, trace_key = f"gns/g2_{loss}_raw", f"gns/trace_sigma_{loss}_raw"
    if g2_key not in progress:
        return None
    return progress[STEP_KEY], progress[g2_key], progress[trace_key]


def noise_sums(
    progress: dict[str, np.ndarray], config: dict, scheme: str, loss: str, until_env_steps: float = math.inf
) -> NoiseSums:
    """Pooled raw estimates of one scheme and loss over the rows at or before ``until_env_steps`` (agent steps)."""
    columns = noise_columns(progress, config, scheme, loss)
    if columns is None:
        return NoiseSums()
    steps_T, g2_T, trace_sigma_T = columns
    rows = steps_T <= until_env_steps
    return NoiseSums.of(g2_T[rows], trace_sigma_T[rows])


def measured_schemes(config: dict) -> tuple[str, ...]:
    """The schemes a run measured, from its ``config.json`` (empty with ``--no-gns``); a data-parallel run's free
    measurement (``ranks``, loss ``total``) comes last."""
    if not config.get("gns", True):
        return ()
    scheme = config.get("gns_scheme", ("minibatch",))
    schemes = (scheme,) if isinstance(scheme, str) else tuple(scheme)
    return (*schemes, "ranks") if config.get("nproc", 1) > 1 else schemes


def run_advice(progress: dict[str, np.ndarray], config: dict, predictor: str = DEFAULT_PREDICTOR) -> Advice | None:
    """The advice of a run's files (:func:`rl_gns.core.advice.advise`); ``None`` if it did not measure the
    predictor's scheme and loss. An adaptive run is judged at its last env count."""
    scheme, _, loss = parse_predictor(predictor)
    columns = noise_columns(progress, config, scheme, loss)
    if columns is None:
        return None
    n_envs = int(progress["gns/n_envs"][-1]) if "gns/n_envs" in progress else config["n_envs"]
    n_minibatches = config["rollout_size"] // config["minibatch_size"]
    return advise(predictor, columns[1], columns[2], n_envs, config["n_steps"], n_minibatches)
