"""The compact form of a finished run's logs, and ``rl-gns compact``.

A finished run (``summary.json``) keeps its logs as

=====================  ==========================================================================================
``progress.csv.xz``    the columns of ``progress.csv`` that some reader reads (:data:`KEPT_COLUMNS`), in their order,
                       each cell the text the CSV held
``episodes.csv.xz``    the whole of ``episodes.csv``, byte for byte (every column: the scores come from it)
=====================  ==========================================================================================

xz-compressed (LZMA2 at its default preset, which holds these logs in about a fifth less than gzip at its best),
so that the same logs give the same bytes. The other columns of
``progress.csv`` (SB3's losses and timings, the moving averages and intervals of the noise scale) no reader reads;
the run's TensorBoard events hold them with every other logged value. A run compacts its logs as it finishes
(:func:`rl_gns.experiments.train.close_run`); ``rl-gns compact`` compacts the finished runs written before. An
unfinished run keeps its CSV files, which a resume appends to.

A compact file is written whole (a temporary file renamed over it) and read back before its CSV is removed, so a
kill at any instant leaves the CSV, or both; where both are there the readers read the CSV
(:meth:`~rl_gns.records.rundir.RunDir.log`), and compacting again finishes the job.

``rl-gns compact`` is also the one migration step of files written by earlier versions of rl-gns, so that no reader
keeps code for them (:func:`upgrade_directory`). Runs before 2026-12-05 kept their compact logs gzip-compressed
(``progress.csv.gz``); the step writes them xz-compressed, the text inside unchanged (:func:`recompress_log`). Runs
before 2026-11-22 measured one noise-scale scheme, which their
``config.json``, their study's specs, ``sweep.json`` and ``results.json`` named as a string (``"gns_scheme":
"envs"``) and their ``progress.csv`` logged without its ``gns/<scheme>/`` prefix (``gns/g2_value_raw``). The step
writes them as a run of today does: ``"gns_scheme": ["envs"]`` and ``gns/envs/g2_value_raw``; every other byte stays.
"""

from __future__ import annotations

import csv
import gzip
import io
import lzma
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tyro

from rl_gns.core.maths.names import LOSSES, N_ENVS_KEY
from rl_gns.records.checkpoint import CHECKPOINTS
from rl_gns.records.lock import LOCK, RunLock, RunLockedError
from rl_gns.records.logs import RunFileError, format_row, whole_lines, write_atomically
from rl_gns.records.rundir import (
    CONFIG,
    LOGS,
    PROGRESS,
    RESULTS,
    SNAPSHOTS,
    SPECS,
    STEP_KEY,
    SUMMARY,
    SWEEP,
    RunDir,
    compact_name,
    earlier_compact_name,
    read_json,
    write_json,
)

_LOSS = "|".join(LOSSES)
#: The records of a run or study that name its settings, besides the spec files (``specs/*.json``).
RECORDS = (CONFIG, SWEEP, RESULTS)

#: The columns of ``progress.csv`` that its compact form keeps, as patterns a column's name matches whole, each with
#: the readers that need it. Every other column is left out: a reader of a new column adds it here.
KEPT_COLUMNS: dict[str, str] = {
    re.escape(STEP_KEY): "every reader of progress.csv: the agent steps of its rows (RunDir.progress, env_steps)",
    re.escape("time/iterations"): "benchmarks/kill_resume.py: one row per iteration, none missing across kills",
    re.escape("rollout/ep_rew_mean"): "rl-gns plot (run_plot.plot_score): the score panel of training.png",
    re.escape(N_ENVS_KEY): "rl-gns advise and compare-adaptive: an adaptive run's env count at each row",
    rf"gns/[a-z_]+/(?:g2|trace_sigma)_(?:{_LOSS})_raw": (
        "rundir.noise_columns and noise_sums: the raw estimates that analyze, probe-report, validate-probes, "
        "bench, advise, plot, compare-adaptive and scaling pool"
    ),
    r"gns/[a-z_]+/b_(?:small|big)": (
        "benchmarks/data_parallel.py and benchmarks/fixed_parameters.py: the batch sizes of a measurement"
    ),
}
_KEPT = re.compile("|".join(f"(?:{pattern})" for pattern in KEPT_COLUMNS))


def is_kept(column: str) -> bool:
    """Whether the compact form of ``progress.csv`` keeps ``column`` (:data:`KEPT_COLUMNS`)."""
    return _KEPT.fullmatch(column) is not None


def packed(data: bytes) -> bytes:
    """``data`` xz-compressed (no time stamp or name is stored: the same data give the same bytes)."""
    return lzma.compress(data, format=lzma.FORMAT_XZ)


def kept_cells(path: Path) -> list[list[str]]:
    """The header and rows of a ``progress.csv`` cut to the kept columns, each cell its text in the file (a cell a
    short row lacks is empty, as the readers pad it); blank rows and a last row a kill cut short are left out, as
    the readers leave them out.

    :raises RunFileError: naming the file, if it is not text or CSV, or a row is longer than the header (the readers
        refuse it; its compact form would not).
    """
    try:
        lines = list(csv.reader(io.StringIO(whole_lines(path))))
    except (UnicodeDecodeError, csv.Error) as error:
        raise RunFileError(f"{path}: not a CSV file ({error})") from error
    if not lines:
        return []
    header, rows = lines[0], lines[1:]
    kept = [i for i, column in enumerate(header) if is_kept(column)]
    cells = [[header[i] for i in kept]]
    for line, row in enumerate(rows, start=2):
        if len(row) > len(header):
            raise RunFileError(f"{path}: line {line} has {len(row)} cells, the header {len(header)}")
        if row:
            cells.append([row[i] if i < len(row) else "" for i in kept])
    return cells


def compact_text(path: Path) -> bytes:
    """What the compact form of the log at ``path`` holds, uncompressed: the kept cells of ``progress.csv``
    (:func:`kept_cells`), or the whole of ``episodes.csv``.

    :raises RunFileError: naming the file, if it cannot be compacted without a change the readers would see.
    """
    if path.name != PROGRESS:
        return path.read_bytes()
    cells = kept_cells(path)
    text = "".join(format_row(row) for row in cells)
    if list(csv.reader(io.StringIO(text))) != cells:  # every cell is a number's text, which CSV writes as it is
        raise RunFileError(f"{path}: a cell does not read back as it was written; left as it is")
    return text.encode()


def write_compact(target: Path, data: bytes, source: Path) -> None:
    """Write ``data`` xz-compressed at ``target``, whole (:func:`~rl_gns.records.logs.write_atomically`), and read it
    back, before ``source``, the file it replaces, may be removed.

    :raises RunFileError: naming both, if it does not read back as written.
    """
    write_atomically(target, packed(data))
    if lzma.decompress(target.read_bytes()) != data:
        raise RunFileError(f"{target} does not read back as written; {source} is kept")


def compact_log(run: RunDir, name: str) -> tuple[int, int] | None:
    """Replace one log of a finished run by its compact form: written whole, read back, then the CSV removed.

    :param name: :data:`~rl_gns.records.rundir.PROGRESS` or :data:`~rl_gns.records.rundir.EPISODES`.
    :return: ``(bytes of the CSV, bytes of its compact form)``; ``None`` where the run has no CSV of it (compact
        already, or never written).
    :raises RunFileError: naming the file, for a log that is a link or not a regular file, or that cannot be compacted
        (:func:`compact_text`); the run is left as it was.
    """
    plain, target = run.file(name), run.file(compact_name(name))
    if not (plain.exists() or plain.is_symlink()):
        return None
    if plain.is_symlink() or not plain.is_file():
        raise RunFileError(f"{plain} is {'a link' if plain.is_symlink() else 'not a regular file'}: left as it is")
    write_compact(target, compact_text(plain), plain)
    size = plain.stat().st_size
    plain.unlink()
    return size, target.stat().st_size


@dataclass(frozen=True)
class Compacted:
    """What compacting one run did."""

    run: Path
    """The run directory."""
    plain_bytes: int
    """Bytes of the CSV files it replaced."""
    compact_bytes: int
    """Bytes of their compact forms."""


def compact_run(run_path: Path) -> Compacted | None:
    """Keep a finished run's logs in their compact form (the module's docstring); nothing for an unfinished run.
    Called by the run itself as it finishes, and by ``rl-gns compact`` (under the run's lock).

    :return: what it replaced; ``None`` for a run that is not finished or whose logs are compact already.
    :raises RunFileError: naming the log that cannot be compacted (:func:`compact_log`).
    """
    run = RunDir(run_path)
    if run.status() != "done":
        return None
    done = [sizes for name in LOGS if (sizes := compact_log(run, name)) is not None]
    if not done:
        return None
    return Compacted(run_path, sum(plain for plain, _ in done), sum(small for _, small in done))


def upgraded(record: Any) -> Any | None:
    """A settings record of before 2026-11-22 (``config.json``, a spec, ``sweep.json``, or ``results.json`` with its
    ``settings``) as today's, its one scheme named in a list; ``None`` where it is today's already."""
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("gns_scheme"), str):
        return {**record, "gns_scheme": [record["gns_scheme"]]}  # the key keeps its place
    settings = upgraded(record.get("settings"))
    return None if settings is None else {**record, "settings": settings}


#: A noise-scale column of one scheme as runs before 2026-11-22 logged it, without the scheme: ``gns/g2_value_raw``,
#: ``gns/b_simple_policy_avg_low``, ``gns/b_big`` (``gns/n_envs``, of the whole measurement, has no scheme then or now).
_UNSCHEMED = re.compile(rf"gns/((?:g2|trace_sigma|b_simple)_(?:{_LOSS})(?:_[a-z_]+)?|b_small|b_big)")


def prefixed_header(header: str, scheme: str) -> str:
    """A ``progress.csv`` header of before 2026-11-22 with each noise-scale column of its one scheme under that
    scheme's prefix: ``gns/g2_value_raw`` -> ``gns/<scheme>/g2_value_raw``; other columns stay."""
    columns = header.split(",")
    return ",".join(f"gns/{scheme}/{m[1]}" if (m := _UNSCHEMED.fullmatch(c)) else c for c in columns)


def decompressed(path: Path, reader: Callable[[bytes], bytes]) -> bytes:
    """The bytes inside a compressed log, read with ``reader`` (``lzma.decompress`` or ``gzip.decompress``).

    :raises RunFileError: naming the file, if it is not whole data of that format.
    """
    try:
        return reader(path.read_bytes())
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
        raise RunFileError(f"{path}: not whole compressed data ({error or 'cut short'}); left as it is") from error


def upgrade_log(path: Path, scheme: str) -> bool:
    """Rewrite the header of a run's ``progress.csv`` or its compact form as :func:`prefixed_header` (the rows stay,
    byte for byte); whether it changed.

    :raises RunFileError: naming the file, for a compact form that is not xz.
    """
    compressed = path.name == compact_name(PROGRESS)
    data = decompressed(path, lzma.decompress) if compressed else path.read_bytes()
    header, newline, rows = data.partition(b"\n")
    new = prefixed_header(header.decode(), scheme).encode()
    if new == header:
        return False
    data = new + newline + rows
    write_atomically(path, packed(data) if compressed else data)
    return True


def recompress_log(path: Path) -> None:
    """Rewrite a log that an rl-gns before 2026-12-05 compacted (``progress.csv.gz``, gzip) in today's compact form
    (``progress.csv.xz``), the text inside byte for byte; written whole and read back before the gzip file is
    removed, so that a kill leaves the one or both.

    :param path: the gzip file (:func:`~rl_gns.records.rundir.earlier_compact_name` of a log).
    :raises RunFileError: naming the file, if it is not whole gzip data; it is left as it is.
    """
    write_compact(path.with_name(compact_name(path.name.removesuffix(".gz"))), decompressed(path, gzip.decompress), path)
    path.unlink()


def study_folders(directory: Path) -> Iterator[tuple[Path, list[str]]]:
    """Every folder at or under ``directory`` with the names of its files, in the order of their paths; links to
    directories are not followed, nor checkpoints and snapshots entered."""
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in (CHECKPOINTS, SNAPSHOTS))
        yield Path(root), files


def upgrade_directory(directory: Path) -> int:
    """Bring every file of an earlier rl-gns under ``directory`` to today's form (the module's docstring): its gzip
    logs (:func:`recompress_log`), its records (:func:`upgraded`) and the logs of each run whose ``config.json`` was
    one of them (:func:`upgrade_log`), in the folders :func:`study_folders` walks.

    :return: the files rewritten.
    :raises RunFileError: naming a file that cannot be read as what it is.
    """
    rewritten = 0
    for folder, files in study_folders(directory):
        for log in (earlier_compact_name(name) for name in LOGS):
            if log in files:
                recompress_log(folder / log)
                rewritten += 1
        names = [n for n in files if n.endswith(".json")] if folder.name == SPECS else [n for n in RECORDS if n in files]
        for name in sorted(names):
            record = read_json(folder / name)
            new = upgraded(record)
            if new is None:
                continue
            write_json(folder / name, new)
            rewritten += 1
            if name == CONFIG:
                scheme = record["gns_scheme"]
                logs = [folder / log for log in (PROGRESS, compact_name(PROGRESS)) if (folder / log).is_file()]
                rewritten += sum(upgrade_log(log, scheme) for log in logs)
    return rewritten


def finished_runs(directory: Path) -> Iterator[Path]:
    """Every finished run directory (``config.json`` and ``summary.json``) at or under ``directory``, in the order
    of their paths (:func:`study_folders`)."""
    for folder, files in study_folders(directory):
        if CONFIG in files and SUMMARY in files:
            yield folder


def has_plain_logs(run_path: Path) -> bool:
    """Whether a run directory holds a log as CSV (one to compact)."""
    return any((run_path / name).exists() or (run_path / name).is_symlink() for name in LOGS)


@dataclass
class CompactConfig:
    """Keep the logs of every finished run under the given directories compact: progress.csv becomes progress.csv.xz
    with the columns some reader reads, episodes.csv becomes episodes.csv.xz, whole. Every reader reads either form;
    unfinished runs keep their CSV files, and runs compact already are left as they are. Files of an earlier rl-gns
    (gzip logs before 2026-12-05, one-scheme records before 2026-11-22) are first brought to today's form, which is
    all the readers read."""

    directories: tyro.conf.Positional[tuple[Path, ...]]
    """Directories searched at every depth for finished runs (summary.json): a run, sweep, probe, benchmark, results/."""


def check(config: CompactConfig) -> None:
    """Refuse a path that is not a directory, before anything is written.

    :raises ValueError: naming the path.
    """
    if not config.directories:
        raise ValueError("name at least one directory to compact")
    for directory in config.directories:
        if not directory.exists():
            raise ValueError(f"{directory}: no such directory")
        if not directory.is_dir():
            raise ValueError(f"{directory} is not a directory")


def compact_held(run_path: Path) -> Compacted | None:
    """:func:`compact_run` under the run's lock, leaving no lock file where there was none: it is removed while still
    held, and a process that opened it meanwhile fails to take it (every lock is taken without waiting).

    :raises RunLockedError: if another process holds the run.
    """
    had_lock_file = (run_path / LOCK).exists() or (run_path / LOCK).is_symlink()
    lock = RunLock(run_path).acquire()
    try:
        return compact_run(run_path)
    finally:
        lock.release(unlink=not had_lock_file)


def megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:,.1f} MB"


def compact(config: CompactConfig) -> None:
    """Compact every finished run under ``config.directories``, each under its lock (a run another process holds is
    left as it is), and print, per directory, the runs compacted and the bytes saved.

    :raises RunFileError: after every other run is done, naming the first of the runs that could not be compacted.
    """
    failed: list[str] = []
    for directory in config.directories:
        upgraded_files = upgrade_directory(directory)
        if upgraded_files:
            print(f"{directory}: {upgraded_files} files of an earlier rl-gns brought to today's form", flush=True)
        compacted: list[Compacted] = []
        already = held = 0
        for run_path in finished_runs(directory):
            if not has_plain_logs(run_path):
                already += 1
                continue
            try:
                result = compact_held(run_path)
            except RunLockedError:
                held += 1
                continue
            except (RunFileError, OSError) as error:
                failed.append(str(error))
                continue
            if result is not None:
                compacted.append(result)
        before = sum(c.plain_bytes for c in compacted)
        after = sum(c.compact_bytes for c in compacted)
        busy = f", {held} held by another process and left as they are" if held else ""
        print(
            f"{directory}: {len(compacted)} runs compacted ({already} compact already{busy}): {megabytes(before)} of CSV "
            f"in {megabytes(after)}, {megabytes(before - after)} saved",
            flush=True,
        )
    if failed:
        raise RunFileError(f"{len(failed)} runs could not be compacted and are left as they are; the first: {failed[0]}")
