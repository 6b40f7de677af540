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

A finished run's logs are kept compact (:mod:`rl_gns.records.compact`: at the end of the run, or ``rl-gns compact``):
``progress.csv.xz`` holds the columns some reader reads, ``episodes.csv.xz`` the whole of ``episodes.csv``.
:meth:`RunDir.log` names the file that holds a log, and every reader here reads either form. ``rl-gns compact``
brings the gzip-compressed logs (``.csv.gz``) of runs written before 2026-12-05 to this form.

Noise-scale columns are ``gns/<scheme>/<quantity>_<loss>`` (``gns/minibatch/g2_policy_raw``); ``rl-gns compact``
brings the files of runs written before 2026-11-22 to this form (:mod:`rl_gns.records.compact`).

The readers never fail on a run that is still being written: a CSV row cut short by a kill is left out. A file
they cannot read (torn or edited JSON, a cell that is not a number) raises :class:`RunFileError`, whose one-line
message names the file.
"""

from __future__ import annotations

import csv
import json
import math
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rl_gns.core.maths.names import gns_key
from rl_gns.core.maths.noise_scale import NoiseSums
from rl_gns.records.checkpoint import CHECKPOINTS, MANIFEST
from rl_gns.records.logs import (
    XZ_SUFFIX,
    RunFileError,
    check_exists,
    check_regular,
    read_rows,
    read_text,
    write_atomically,
)
from rl_gns.records.schema import (
    CANDIDATE_FIELDS,
    PATH_SETTINGS,
    RESULTS_FIELDS,
    SWEEP_FIELDS,
    TARGET_RESULT_FIELDS,
    TRADEOFF_FIT_FIELDS,
    RecordError,
    RunConfig,
    RunSummary,
    check_current,
    conforms,
    relocated,
    require,
    same_setting,
)

CONFIG = "config.json"
PROGRESS = "progress.csv"
EPISODES = "episodes.csv"
SUMMARY = "summary.json"
ERROR = "error.txt"
#: A run's output when a sweep or benchmark runs it in its own process.
LOG = "log.txt"
PLOT = "training.png"
MODEL = "model.zip"
#: A probe directory's branch point (``rl-gns probe``).
PROBE = "probe.json"
#: A sweep's settings and runs (``rl-gns sweep``; a probe's branches).
SWEEP = "sweep.json"
#: An analysed sweep's fits and candidates, with its settings (``rl-gns analyze``).
RESULTS = "results.json"
#: A sweep's or benchmark's spec files, one per run (``specs/<run>.json``, what ``rl-gns run`` runs).
SPECS = "specs"
#: A benchmark's tier and games (``rl-gns bench``).
BENCH = "bench.json"
#: A probe directory's anchor run: the branch point's agent at fixed parameters.
ANCHOR = "anchor"
#: A probe directory's pilot run (criterion v8's targets): the branch point's agent training on at the run's settings.
PILOT = "pilot"
#: A run's kept agents (``rl-gns train --snapshot-steps``), ``<agent steps, 12 digits>.zip``.
SNAPSHOTS = "snapshots"


def compact_name(name: str) -> str:
    """The name of a log's compact form (``progress.csv.xz``), which a finished run keeps in its place."""
    return name + XZ_SUFFIX


def earlier_compact_name(name: str) -> str:
    """The name of a log's compact form as rl-gns before 2026-12-05 wrote it (``progress.csv.gz``), which
    ``rl-gns compact`` rewrites as :func:`compact_name`."""
    return name + ".gz"


#: The logs a finished run keeps in their compact form (:mod:`rl_gns.records.compact`).
LOGS = (PROGRESS, EPISODES)
#: The files a run writes in its directory (besides TensorBoard's event files).
RUN_FILES = (CONFIG, PROGRESS, EPISODES, SUMMARY, ERROR, LOG, PLOT, MODEL, *map(compact_name, LOGS))

#: The env-step x-axis of ``progress.csv`` (SB3's key), agent steps.
STEP_KEY = "time/total_timesteps"
#: Columns of ``episodes.csv``.
EPISODE_FIELDS = ("env_steps", "score", "length_frames", "wall_s")

Status = Literal["done", "failed", "unfinished"]


def longest_run_path() -> str:
    """The longest path, relative to its run directory, that a run writes here: a checkpoint being written
    (``checkpoints/.tmp-<8 characters>/manifest.json``), a snapshot being written, a file replaced whole
    (``.<name>.<8 characters>``), or TensorBoard's events (``events.out.tfevents.<time>.<host>.<pid>.<n>``), so that
    a run directory whose full path leaves no room for it is refused before the run starts."""
    paths = [
        f"{CHECKPOINTS}/.tmp-{'x' * 8}/{MANIFEST}",
        f"{SNAPSHOTS}/.tmp-{0:012d}.zip",
        *(f".{name}.{'x' * 8}" for name in RUN_FILES),
        f"events.out.tfevents.{0:010d}.{socket.gethostname()}.{0:07d}.{0:03d}",
    ]
    return max(paths, key=lambda path: len(os.fsencode(path)))


def snapshot_path(run_path: Path, env_steps: int) -> Path:
    """Where a run keeps its agent at ``env_steps`` agent steps (``rl-gns train --snapshot-steps``)."""
    return run_path / SNAPSHOTS / f"{env_steps:012d}.zip"


def snapshots(run_path: Path) -> dict[int, Path]:
    """``{agent steps: path}`` of every snapshot a run kept, in order of agent steps."""
    root = run_path / SNAPSHOTS
    found = sorted(p for p in root.glob("*.zip") if p.stem.isdigit()) if root.is_dir() else []
    return {int(p.stem): p for p in found}


def drop_snapshots_after(run_path: Path, env_steps: int) -> None:
    """Delete the snapshots past ``env_steps`` agent steps: a run resumed from its checkpoint there trains that
    stretch again and keeps it at its own ``--snapshot-steps``, so every snapshot is of the training its logs hold."""
    for steps, path in snapshots(run_path).items():
        if steps > env_steps:
            path.unlink()


def check_own_directories(run_path: Path) -> None:
    """Refuse a run directory whose ``checkpoints/`` or ``snapshots/`` is a link or not a directory, or where a file
    the run writes (``progress.csv``, ``model.zip``, ...) is a link or not a regular file: the run would write, and
    prune, through it into another directory, or fail at its first write.

    :raises RunFileError: naming the path.
    """
    for name in (CHECKPOINTS, SNAPSHOTS):
        path = run_path / name
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            what = "a link" if path.is_symlink() else "not a directory"
            raise RunFileError(f"{path} is {what}: a run writes only inside its own directory; remove it first")
    for name in RUN_FILES:
        path = run_path / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            what = "a link" if path.is_symlink() else "not a regular file"
            raise RunFileError(f"{path} is {what}: a run writes its own files there; remove it first")


def cell_value(cell: str, path: Path, line: int) -> float:
    """One CSV cell as a number; NaN for an empty cell (a key not recorded in that row).

    :param cell: the cell's text.
    :param path: the file (named in the error).
    :param line: the cell's line in the file, 1-based (named in the error).
    :raises RunFileError: if the cell is not a number.
    """
    try:
        return float(cell) if cell else math.nan
    except ValueError:
        raise RunFileError(f"{path}: line {line}: {cell!r} is not a number") from None


def row_values(path: Path, header: list[str], rows: list[list[str]]) -> list[list[float]]:
    """The cells of a CSV file's rows as numbers, each row padded with NaN to the header's length (blank rows left out).

    :param path: the file (named in errors).
    :param header: its header.
    :param rows: its rows after the header, the first on line 2.
    :raises RunFileError: naming the file and line, for a row longer than the header or a cell that is not a number.
    """
    numbers = []
    for line, row in enumerate(rows, start=2):
        if len(row) > len(header):
            raise RunFileError(f"{path}: line {line} has {len(row)} cells, the header {len(header)}")
        if row:
            numbers.append([cell_value(cell, path, line) for cell in row] + [math.nan] * (len(header) - len(row)))
    return numbers


def read_csv(path: str | Path, columns: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Columns of a CSV of numbers with a header (SB3's ``progress.csv``, ``episodes.csv``, or their compact forms, read
    decompressed: a name ending in ``.xz``) as float arrays.

    Empty cells (a key not recorded in that row) become NaN. A last line that a kill cut short (no newline at
    its end) is left out (:func:`rl_gns.records.logs.read_rows`), as are blank lines.

    :param path: the CSV file.
    :param columns: the columns a file with rows must have.
    :return: ``{key: (R,) array}`` for the ``R`` rows; ``{}`` for a file with no rows (empty, header only, or
        not written yet).
    :raises RunFileError: naming the file, for a file that is not text or CSV (or not whole xz data), a header
        (with rows or without) that lacks one of ``columns``, a row longer than the header, or a cell that is not a
        number.
    """
    path = Path(path)
    check_regular(path, "a CSV file")
    try:
        header, rows = read_rows(path)
    except (UnicodeDecodeError, csv.Error) as error:
        raise RunFileError(f"{path}: not a CSV file ({error})") from error
    missing = [c for c in columns if c not in header]
    if header and missing:
        raise RunFileError(f"{path}: no column {', '.join(missing)} (its header: {', '.join(header)})")
    numbers = row_values(path, header, rows)
    if not numbers:
        return {}
    return dict(zip(header, np.array(numbers).T, strict=True))


def in_step_order(steps: np.ndarray, strictly: bool) -> bool:
    """Whether a log's agent steps ``(R,)`` are finite, non-negative and rising: strictly for one row per PPO
    iteration (``progress.csv``), or never falling for games, several of which may end at one step (``episodes.csv``)."""
    rises = np.diff(steps) > 0 if strictly else np.diff(steps) >= 0
    return bool(np.all(np.isfinite(steps)) and np.all(steps >= 0) and np.all(rises))


def check_estimates(column: np.ndarray, where: str) -> None:
    """Refuse raw noise-scale estimates (``g2``, ``trace_sigma``, one per measured row, NaN elsewhere) that no
    measurement writes: an infinity, or values so large that their pooled sums or squares leave the float range.

    :param column: ``(T,)`` the column's values.
    :param where: the file and column, for the message.
    :raises RunFileError: naming them and the first such value.
    """
    measured = column[~np.isnan(column)]
    with np.errstate(over="ignore"):
        fits = np.isfinite(np.sum(np.square(measured)))
    if not fits:
        worst = measured[np.argmax(np.abs(measured))]
        raise RunFileError(f"{where} holds {worst:g}, beyond what a measurement writes (an edited or foreign file)")


def runs_under(directory: Path) -> list[Path]:
    """The run directories of a sweep, benchmark or probe: the directories in ``<directory>/runs``, by name (a
    stray file there is left out).

    :raises FileNotFoundError: naming the directory, if it has no ``runs``.
    :raises RunFileError: if its ``runs`` is a file.
    """
    runs = directory / "runs"
    if not runs.exists():
        raise FileNotFoundError(f"{directory} holds no runs/ directory")
    if not runs.is_dir():
        raise RunFileError(f"{runs} is a file, not the directory of the runs")
    return sorted(path for path in runs.iterdir() if path.is_dir())


#: Settings that both ``sweep.json`` and a run's ``config.json`` hold, and in which the runs of one sweep differ (or
#: which say how they executed): every other setting the two share is the same in both.
SWEEP_RUN_SETTINGS = frozenset({"out", "n_envs", "n_steps", "device", "checkpoint_minutes", "max_wall_minutes"})


def settings_differing(
    config: RunConfig, settings: dict[str, Any], where: tuple[Path, Path] | None = None
) -> dict[str, tuple[str, Any, Any]]:
    """Where a run trained otherwise than its sweep's ``sweep.json`` says: the setting as the run's ``config.json``
    names it -> (as ``sweep.json`` names it, ``sweep.json``'s value, the run's); empty where the sweep made the run.

    :param config: the run's ``config.json``.
    :param settings: the sweep's ``sweep.json``.
    :param where: the sweep's and the run's directories now: each record's paths are compared where they lie now
        (:func:`~rl_gns.records.schema.relocated`), for a sweep moved or cloned whole, then resumed.
    """
    held = config.settings

    def now(record: dict[str, Any], key: str, directory: Path) -> Any:
        value, out = record[key], record.get("out")
        if key in PATH_SETTINGS and isinstance(value, str) and isinstance(out, str):
            return relocated(value, out, str(directory))
        return value

    differ = {
        k: (k, settings[k], held[k])
        for k in sorted(settings.keys() & held.keys() - SWEEP_RUN_SETTINGS)
        if not same_setting(k, settings[k], held[k])
        and (where is None or not same_setting(k, now(settings, k, where[0]), now(held, k, where[1])))
    }
    if config.n_envs not in settings["n_envs"]:
        differ["n_envs"] = ("n_envs", settings["n_envs"], config.n_envs)
    sizes = "n_steps_grid" if settings.get("n_steps_grid") else "n_steps"
    if config.n_steps not in (settings.get("n_steps_grid") or [settings["n_steps"]]):
        differ["n_steps"] = (sizes, settings[sizes], config.n_steps)
    if config.total_steps != settings["budget_steps"]:
        differ["total_steps (the sweep's budget_steps)"] = ("budget_steps", settings["budget_steps"], config.total_steps)
    schemes = settings["gns_scheme"]
    if config.gns_schemes and set(config.gns_schemes) != set(schemes):
        differ["gns_scheme"] = ("gns_scheme", schemes, list(config.gns_schemes))
    return differ


def sweep_runs(sweep_dir: Path, settings: dict[str, Any]) -> list[RunDir]:
    """The started runs of a sweep (or a probe's branches), each checked to be one the sweep made: a run copied in
    from elsewhere, or one whose settings were edited, would be counted as the sweep's. Where every started run
    trained otherwise than ``sweep.json`` says in a setting, it is ``sweep.json`` that was edited (or belongs to
    other runs), and the error names it.

    :param sweep_dir: the sweep directory.
    :param settings: its ``sweep.json``, read with :data:`~rl_gns.records.schema.SWEEP_FIELDS`.
    :raises RecordError: naming the run and what the sweep did not make of it, or ``sweep.json`` and its setting.
    """
    runs: list[RunDir] = []
    differing: list[tuple[RunDir, dict[str, tuple[str, Any, Any]]]] = []
    for path in runs_under(sweep_dir):
        run = RunDir(path)
        if not run.is_started():
            continue
        if run.name not in settings["runs"]:
            raise RecordError(f"{path}: not a run of the sweep ({sweep_dir / SWEEP} names {len(settings['runs'])} others)")
        differ = settings_differing(run.config(), settings, (sweep_dir, path))
        if differ:
            differing.append((run, differ))
        runs.append(run)
    if not differing:
        return runs
    if len(differing) == len(runs):  # every run trained otherwise in a setting: the sweep's record says another
        shared = set.intersection(*(set(differ) for _, differ in differing))
        if shared:
            run, differ = differing[0]
            field, recorded, trained = differ[sorted(shared)[0]]
            which = f"{run.file(CONFIG)}" if len(runs) == 1 else f"the config.json of every one of its {len(runs)} runs"
            raise RecordError(
                f"{sweep_dir / SWEEP}: its {field} {recorded!r} is not what its runs trained ({trained!r} in {which}): "
                f"{SWEEP} was edited, or the runs are another sweep's"
            )
    run, differ = differing[0]
    raise RecordError(f"{run.file(CONFIG)}: not a run of the sweep {sweep_dir}: its {', '.join(differ)} differ")


def write_json(path: Path, data: Any) -> None:
    """Write JSON so that a kill at any instant leaves the old file or the new one, never a torn one."""
    write_atomically(path, json.dumps(data, indent=2, default=str) + "\n")


def read_json(path: Path) -> Any:
    """Read a JSON file.

    :param path: the file.
    :raises FileNotFoundError: naming the file, if it is missing.
    :raises RunFileError: naming the file, if it is not valid JSON (cut short, edited, or not text), or nests deeper
        than the parser goes (no record of rl-gns nests more than a few levels).
    """
    check_exists(path)
    try:
        return json.loads(read_text(path, "a JSON file"))
    except RunFileError:
        raise
    except ValueError as error:  # json.JSONDecodeError, UnicodeDecodeError
        raise RunFileError(f"{path}: not valid JSON ({error})") from error
    except RecursionError as error:
        raise RunFileError(f"{path}: nested too deeply to be a record of rl-gns") from error


def read_record(path: Path, kinds: Mapping[str, Any]) -> dict[str, Any]:
    """Read a JSON object whose fields named in ``kinds`` must be of their kinds (:func:`~rl_gns.records.schema.require`).

    :raises FileNotFoundError: naming the file, if it is missing.
    :raises RunFileError: naming the file, if it is not valid JSON.
    :raises RecordError: naming the file and field, if a field is missing or of the wrong kind, or for a record of an
        rl-gns before 2026-11-22 (:func:`~rl_gns.records.schema.check_current`).
    """
    record = read_json(path)
    check_current(record, path)
    return require(record, path, kinds)


def read_sweep_results(path: Path) -> dict[str, Any]:
    """Read a sweep's ``results.json`` (``rl-gns analyze``): its settings are ``sweep.json``'s, and every entry of its
    ``targets`` names its target and fit.

    :raises RecordError: naming the file and field, if a field is missing or of the wrong kind.
    """
    results = read_record(path, RESULTS_FIELDS)
    check_current(results["settings"], path)
    results["settings"] = require(results["settings"], f"{path}: settings", SWEEP_FIELDS)
    results["targets"] = [read_target_result(entry, f"{path}: targets[{i}]") for i, entry in enumerate(results["targets"])]
    return results


def read_target_result(entry: Any, where: str) -> dict[str, Any]:
    """One entry of ``results.json``'s ``targets``, checked: its fields (one that may be null reads as null where it is
    left out), its fit with its ``b_crit``, its candidates, and one value per rollout size in every per-size list.

    :param entry: the entry as parsed.
    :param where: the file and entry, named in errors.
    :raises RecordError: naming the file, entry and field.
    """
    entry = require(entry, where, TARGET_RESULT_FIELDS)
    entry = {key: None for key, kind in TARGET_RESULT_FIELDS.items() if conforms(None, kind)} | entry  # left out: null
    if entry["fit"] is not None:
        entry["fit"] = require(entry["fit"], f"{where}: fit", TRADEOFF_FIT_FIELDS)
        if entry["b_crit"] is None:
            raise RecordError(f"{where}: a fit without its 'b_crit'")
    entry["candidates"] = {
        name: require(candidate, f"{where}: candidates: {name}", CANDIDATE_FIELDS)
        for name, candidate in entry["candidates"].items()
    }
    sizes = len(entry["rollout_size_K"])
    per_size = {
        name: len(values)
        for name, values in (
            *((key, entry[key]) for key in TARGET_RESULT_FIELDS if key.endswith("_K")),
            *(
                (f"candidates: {name}: {key}", c[key])
                for name, c in entry["candidates"].items()
                for key in CANDIDATE_FIELDS
                if key.endswith("_K")
            ),
        )
    }
    if any(length != sizes for length in per_size.values()):
        raise RecordError(f"{where}: its per-size lists differ in length ({per_size})")
    return entry


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

    def config(self) -> RunConfig:
        """``config.json``, typed (:class:`~rl_gns.records.schema.RunConfig`)."""
        return RunConfig.from_json(read_json(self.file(CONFIG)), self.file(CONFIG))

    def summary(self) -> RunSummary:
        """``summary.json``, typed (:class:`~rl_gns.records.schema.RunSummary`)."""
        return RunSummary.from_json(read_json(self.file(SUMMARY)), self.file(SUMMARY))

    def write_config(self, config: dict) -> None:
        """Write ``config.json`` (every setting, the resolved sizes, versions and machine; read as a :class:`RunConfig`)
        for a new run; the compact logs of an earlier, finished run in the directory (``--overwrite``) go first."""
        for name in LOGS:
            self.file(compact_name(name)).unlink(missing_ok=True)
        write_json(self.file(CONFIG), config)

    def write_summary(self, summary: RunSummary) -> None:
        """Write ``summary.json``; call it last: it marks the run finished."""
        write_json(self.file(SUMMARY), summary.to_json())

    def write_error(self, text: str) -> None:
        """Write ``error.txt`` whole or not at all (:func:`~rl_gns.records.logs.write_atomically`): a disk that fills
        while it is written leaves no empty or torn one.

        :raises OSError: if it cannot be written (a full disk); nothing is left of it.
        """
        write_atomically(self.file(ERROR), text)

    def log(self, name: str) -> Path:
        """The file that holds the log ``name`` (:data:`PROGRESS` or :data:`EPISODES`): the CSV the run appends to,
        or, once the run is finished (``summary.json``) and its logs compacted, their compact form
        (:func:`compact_name`). The CSV wins where both are there (a compaction cut short by a kill), and a compact
        form is never read for an unfinished run (it is an earlier run's, which a new one in the directory replaces).

        :raises RunFileError: naming the file, for a finished run whose log only an earlier rl-gns compacted
            (:func:`earlier_compact_name`): ``rl-gns compact`` brings it to today's form.
        """
        plain, packed = self.file(name), self.file(compact_name(name))
        earlier = self.file(earlier_compact_name(name))
        finished = self.file(SUMMARY).exists()
        if finished and earlier.exists() and not (plain.exists() or plain.is_symlink() or packed.exists()):
            raise RunFileError(
                f"{earlier}: written by an rl-gns before 2026-12-05; `rl-gns compact {self.path}` brings it up to date"
            )
        if plain.exists() or plain.is_symlink() or not packed.exists() or not finished:
            return plain
        return packed

    def check_finished_rows(self, path: Path, rows: int, field: str) -> None:
        """Refuse a finished run's log that holds fewer rows than its ``summary.json`` counted: a log cut short or
        edited after the run ended (a kill while the run trained leaves no ``summary.json``). Nothing to check for an
        unfinished run, or where ``summary.json`` does not hold the count (its own readers refuse a damaged one).

        :param path: the log read (:data:`PROGRESS` or :data:`EPISODES`, of either form), named in the error.
        :param rows: the rows read from it.
        :param field: what ``summary.json`` counted: ``iterations`` (PPO iterations, one row of ``progress.csv`` each,
            the same for a resumed run, whose rows after its checkpoint are logged again, a population's member, and
            a data-parallel run, whose rank 0 alone writes), or ``n_scored_episodes`` (the games of SB3's score
            window, at most its last 100, each one row of ``episodes.csv``: the log holds at least as many).
        :raises RunFileError: naming the log, its rows and the count ``summary.json`` holds.
        """
        if not self.file(SUMMARY).exists():
            return
        try:
            summary = read_json(self.file(SUMMARY))
        except (RunFileError, FileNotFoundError):  # a summary that does not read: its own readers say why
            return
        recorded = summary.get(field) if isinstance(summary, dict) else None
        if not isinstance(recorded, int) or isinstance(recorded, bool):
            return  # written before the field was, or damaged: the summary's readers check its fields
        if rows < recorded or (field == "iterations" and rows != recorded):
            what = {"iterations": "PPO iterations, one row each", "n_scored_episodes": "games scored, one row each"}[field]
            raise RunFileError(
                f"{path}: {rows:,} rows, but {self.file(SUMMARY)} records {recorded:,} {what} ({field}): the log was "
                "cut or edited after the run finished"
            )

    def progress(self) -> dict[str, np.ndarray]:
        """``progress.csv`` columns (:func:`read_csv`, of either form: :meth:`log`); ``{}`` before the first row.

        :raises RunFileError: if the rows' agent steps are not finite, non-negative and increasing (one row per PPO
            iteration: an edited or foreign file), or, for a finished run, are not as many as the iterations its
            ``summary.json`` records (:meth:`check_finished_rows`).
        """
        path = self.log(PROGRESS)
        progress = read_csv(path, (STEP_KEY,))
        if not in_step_order(progress.get(STEP_KEY, np.array([])), strictly=True):
            raise RunFileError(f"{path}: its rows' agent steps are not non-negative numbers in increasing order")
        self.check_finished_rows(path, len(progress.get(STEP_KEY, ())), "iterations")
        for key, column in progress.items():
            if key.startswith("gns/") and key.endswith("_raw"):
                check_estimates(column, f"{path}: column {key}")
        return progress

    def logged_progress(self) -> dict[str, np.ndarray]:
        """``progress.csv`` columns of a run that has logged a row; a run without one has nothing to plot or judge.

        :raises RunFileError: naming the directory without ``progress.csv``, or the file without a complete row.
        """
        path = self.log(PROGRESS)
        if not path.exists():
            raise RunFileError(f"{self.path} holds no {PROGRESS}")
        progress = self.progress()
        if not progress:
            raise RunFileError(f"{path}: no logged rows yet")
        return progress

    def episodes(self) -> dict[str, np.ndarray]:
        """``episodes.csv`` columns (of either form: :meth:`log`), each ``(N,)`` for the ``N`` finished games (empty
        arrays before the first; NaN in a column the file does not have).

        :raises RunFileError: if the games' agent steps are not finite, non-negative and in the order the games
            finished, or pass the run's budget, or a score is not a finite number, or a game's length not one above 0
            (an edited or foreign file), or, for a finished run, are fewer than the games its ``summary.json`` scored
            (:meth:`check_finished_rows`).
        """
        path = self.log(EPISODES)
        games = read_csv(path, EPISODE_FIELDS[:2])
        steps = games.get("env_steps", np.array([]))
        if not in_step_order(steps, strictly=False):
            raise RunFileError(f"{path}: its games' agent steps are not non-negative numbers in the order they finished")
        self.check_finished_rows(path, len(steps), "n_scored_episodes")
        if len(steps) and self.is_started():
            config = self.config()
            # the last PPO iteration may pass the budget by less than one rollout (of the largest size, adaptive)
            last = config.total_steps + config.n_steps * max(config.n_envs, config.settings.get("max_n_envs") or 0)
            if config.total_steps and steps[-1] > last:
                raise RunFileError(
                    f"{path}: its last game ends at agent step {int(steps[-1]):,}, past the run's budget "
                    f"of {config.total_steps:,} (an edited or foreign file)"
                )
        scores = games.get("score", np.array([]))
        if not np.all(np.isfinite(scores)):
            row = int(np.flatnonzero(~np.isfinite(scores))[0]) + 1
            raise RunFileError(f"{path}: game {row}'s score is {scores[row - 1]}, not a finite number")
        lengths = games.get("length_frames", np.array([]))
        unplayable = np.flatnonzero(~(np.isfinite(lengths) & (lengths > 0)))
        if len(unplayable):
            row = int(unplayable[0]) + 1
            raise RunFileError(f"{path}: game {row} lasted {lengths[row - 1]} frames, not a number above 0")
        return {key: games.get(key, np.full(len(steps), np.nan)) for key in EPISODE_FIELDS}  # NaN: not recorded

    def env_steps(self, progress: dict[str, np.ndarray] | None = None) -> int:
        """Agent steps trained so far (the last logged row); 0 before the first."""
        progress = self.progress() if progress is None else progress
        return int(progress[STEP_KEY][-1]) if progress else 0


def noise_columns(progress: dict[str, np.ndarray], scheme: str, loss: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(env_steps_T, g2_T, trace_sigma_T)``: the raw estimates of one scheme and loss per logged row
    (NaN where that row has no measurement); ``None`` if the run never measured them.

    :param progress: the run's ``progress.csv`` columns.
    :param scheme: ``minibatch``, ``envs``, or a data-parallel run's ``ranks``.
    :param loss: ``policy``, ``value`` or ``total``.
    """
    g2_key, trace_key = gns_key(scheme, "g2", loss, "raw"), gns_key(scheme, "trace_sigma", loss, "raw")
    if g2_key not in progress:
        return None
    return progress[STEP_KEY], progress[g2_key], progress[trace_key]


def noise_sums(progress: dict[str, np.ndarray], scheme: str, loss: str, until_env_steps: float = math.inf) -> NoiseSums:
    """Pooled raw estimates of one scheme and loss over the rows at or before ``until_env_steps`` (agent steps)."""
    columns = noise_columns(progress, scheme, loss)
    if columns is None:
        return NoiseSums()
    steps_T, g2_T, trace_sigma_T = columns
    rows = steps_T <= until_env_steps
    return NoiseSums.of(g2_T[rows], trace_sigma_T[rows])


def first_measured(progress: dict[str, np.ndarray], scheme: str, loss: str) -> float:
    """Agent steps of a run's first measurement of one scheme and loss (``inf`` if it never measured them)."""
    columns = noise_columns(progress, scheme, loss)
    if columns is None:
        return math.inf
    steps_T, g2_T, trace_sigma_T = columns
    measured = np.flatnonzero(np.isfinite(g2_T) & np.isfinite(trace_sigma_T))
    return float(steps_T[measured[0]]) if len(measured) else math.inf
