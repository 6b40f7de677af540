"""The run's logs, crash-safe and resumable: ``progress.csv`` and ``episodes.csv`` survive a kill at any instant,
and a resumed run continues them, and its TensorBoard events, where the checkpoint left off.

A row is appended with one ``write`` system call on a file opened with ``O_APPEND``, so a killed process
leaves whole rows behind it, never half of one. A header that grows (SB3 adds a column the first time a key
is recorded) is rewritten through a temporary file and ``os.replace``: the old file or the new one, never a
torn one. On resume, :func:`truncate_after` drops the rows logged after the checkpoint, which the resumed
run logs again.
"""

from __future__ import annotations

import csv
import errno
import io
import lzma
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.logger import (
    FormatUnsupportedError,
    KVWriter,
    Logger,
    TensorBoardOutputFormat,
    filter_excluded_keys,
)
from tensorboard.compat.proto.summary_pb2 import Summary
from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.summary import scalar

from rl_gns.records.lock import check_unlocked


def format_row(values: Sequence[Any]) -> str:
    """One CSV line (with its newline): numbers as ``str``, text quoted where it needs to be, ``None`` empty."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buffer.getvalue()


def append_line(path: Path, line: str) -> None:
    """Append ``line`` (ending in a newline) to ``path`` in one ``write`` call."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def user_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class OutputError(ValueError):
    """A file cannot be written where its path points: something other than a file is there, its directory is not
    writable, or no file can have that name."""


def check_output(path: Path) -> None:
    """Refuse to write a file over something that is not a file (a directory, a FIFO, a device), or into a directory
    this process may not write (permissions, a read-only file system).

    :raises OutputError: naming the path.
    """
    if path.exists() and not path.is_file():
        raise OutputError(f"cannot write {path}: {'a directory' if path.is_dir() else 'something other than a file'} is there")
    if path.parent.is_dir() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: its directory is not writable (permissions, or a read-only file system)")


def printable(path: Path | str) -> str:
    """A path as a message shows it: a byte that is not UTF-8 (a surrogate escape) written as ``\\udcff``."""
    return str(path).encode("utf-8", "backslashreplace").decode()


def check_path_name(path: Path, inside: str = "") -> None:
    """Refuse a path that no file can have here: a name that is not UTF-8 text, or whose full path is not (the
    records name their paths in JSON, and a sweep's specs name its runs by their full paths), a part longer than the
    file system allows, or a full path that, with the longest path written inside it, is longer than the system
    allows (``PATH_MAX``).

    :param path: the directory (or file) to write.
    :param inside: the longest path, relative to ``path``, that the command writes inside it ("" for none).
    :raises OutputError: naming the path.
    """
    full = os.path.abspath(path)
    for name in (str(path), full):
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            where = printable(path) if name == str(path) else f"{printable(path)}: its full path {printable(full)}"
            raise OutputError(f"{where}: not a UTF-8 name") from None
    longest = os.pathconf(".", "PC_NAME_MAX")  # the working directory's file system: a stat of a longer name fails
    too_long = [len(os.fsencode(part)) for part in path.parts if len(os.fsencode(part)) > longest]
    if too_long:
        raise OutputError(f"{path}: a name of {too_long[0]:,} bytes, longer than this file system's {longest}")
    most = os.pathconf(".", "PC_PATH_MAX") - 1  # PATH_MAX counts the closing NUL
    written = len(os.fsencode(os.path.join(full, inside) if inside else full))
    if written > most:
        what = f"with the files written inside it (up to {inside}) its paths reach" if inside else "its full path is"
        raise OutputError(f"{path}: {what} {written:,} bytes, longer than the {most:,} this system allows")


def check_symlinks(out: Path) -> None:
    """Refuse an output directory that a link on its path makes unreachable: a loop of links, or a link to nothing
    (making the directory would fail there, or the path be looked up for ever).

    :raises OutputError: naming the link.
    """
    for path in (out, *out.parents):
        if not path.is_symlink():
            continue
        try:
            path.stat()
        except FileNotFoundError:
            raise OutputError(f"--out {out}: {path} is a link to {os.readlink(path)}, which does not exist") from None
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            raise OutputError(f"--out {out}: {path} is a loop of symbolic links (it leads back to itself)") from None


def check_writable(out: Path, inside: str = "") -> None:
    """Refuse an output directory that cannot be made or written: a name that is not text or is longer than the file
    system allows, a loop of links or a link to nothing on its path, a file at ``out`` or on its path, or a directory
    without write permission.

    :param inside: the longest path, relative to ``out``, that the command writes inside it (:func:`check_path_name`).
    """
    check_path_name(out, inside)
    check_symlinks(out)
    existing = next(parent for parent in (out, *out.parents) if parent.exists() or parent == Path("."))
    if not existing.is_dir():
        where = f"--out {out}" if existing == out else f"--out {out}: {existing}"
        raise ValueError(f"{where} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: {existing} is not writable")


def check_outputs(directory: Path, names: Iterable[str]) -> None:
    """Refuse, before a report writes any of its files, a directory where one of them cannot be written
    (:func:`check_output` for each), so that a refusal leaves the directory as it was.

    A directory that another live process writes (a sweep, probe or benchmark in progress) is refused too: it has
    one writer, which writes its own reports when it ends.

    :param directory: where the report writes.
    :param names: the file names it writes there.
    :raises OutputError: naming the first path that cannot be written.
    :raises ~rl_gns.records.lock.RunLockedError: naming the process that writes the directory.
    """
    check_unlocked(directory)
    for name in names:
        check_output(directory / name)


#: The temporary file :func:`write_atomically` writes beside ``<name>`` (``.<name>.<8 characters>``, as
#: :func:`tempfile.mkstemp` names it), which a kill that Python cannot catch (SIGKILL, or SIGTERM before a command's
#: handler is installed) leaves behind.
TORN_WRITE = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}")


def torn_write_of(name: str) -> str | None:
    """The name of the file whose :func:`write_atomically` a kill interrupted, if ``name`` is the temporary file it
    left (``.config.json.k3x9_a2b`` -> ``config.json``); else ``None``."""
    match = TORN_WRITE.fullmatch(name)
    return None if match is None else match["name"]


def write_atomically(path: Path, text: str | bytes) -> None:
    """Replace ``path`` by ``text`` (or bytes): written to a temporary file beside it, flushed to disk, given the mode
    ``open`` would give a new file (the user's umask), then renamed over it, so a kill at any instant leaves the old
    file or the new one, never a torn one. Text is written as UTF-8; a name that is not UTF-8 in it (a path's
    surrogate escape) is written as :func:`printable` shows it.

    :raises OutputError: if something other than a file is at ``path``.
    """
    check_output(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode("utf-8", "backslashreplace"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~user_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rewrite(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Replace ``path`` by ``header`` and ``rows`` (padded with empty cells to the header's width) atomically."""
    lines = [format_row(header), *(format_row([*row, *[""] * (len(header) - len(row))]) for row in rows)]
    write_atomically(path, "".join(lines))


class RunFileError(ValueError):
    """A file of a run, sweep or benchmark directory that cannot be read; the message names the file and the fault."""


def check_exists(path: Path) -> None:
    """Refuse a path that names no file, saying why: nothing there, or a link that leads nowhere.

    :param path: the file to read.
    :raises FileNotFoundError: naming the path, if nothing is there.
    :raises RunFileError: naming the path, for a link to nothing or a loop of links, or a path that cannot be looked at.
    """
    try:
        path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise RunFileError(f"{path} is a link to {os.readlink(path)}, which does not exist") from None
        raise FileNotFoundError(f"{path} not found") from None
    except OSError as error:  # ELOOP: a loop of links; ENOTDIR: a file where a directory should be
        raise RunFileError(f"{path} cannot be read: {error.strerror or error}") from None


def check_regular(path: Path, kind: str) -> None:
    """Refuse a path that exists but is not a regular file (a directory, a FIFO that would block a reader, a device).

    :param path: the file to read.
    :param kind: what it should be, for the message ("a JSON file").
    :raises RunFileError: naming the path.
    """
    if path.exists() and not path.is_file():
        raise RunFileError(f"{path} is {'a directory' if path.is_dir() else 'a FIFO or device'}, not {kind}")


#: The ending of a file stored xz-compressed (a finished run's compact logs, :mod:`rl_gns.records.compact`).
XZ_SUFFIX = ".xz"


def read_text(path: Path, kind: str) -> str:
    """The text of a file that a command reads as its input; one whose name ends in ``.xz`` is read decompressed,
    with the same newline handling as a plain one.

    :param path: the file.
    :param kind: what it should be, for the message ("a JSON file").
    :raises RunFileError: naming the path, if it is not a regular file (a FIFO would block the read for ever) or
        cannot be read (no permission), or, for a ``.xz`` file, is not xz data or is cut short.
    :raises UnicodeDecodeError: if it is not text.
    """
    check_regular(path, kind)
    try:
        if path.name.endswith(XZ_SUFFIX):
            with lzma.open(path, "rt") as f:
                return f.read()
        return path.read_text()
    except (FileNotFoundError, IsADirectoryError):
        raise
    except (EOFError, lzma.LZMAError) as error:
        raise RunFileError(f"{path}: not whole xz data ({error or 'cut short'})") from error
    except OSError as error:
        raise RunFileError(f"{path} cannot be read: {error.strerror or error}") from error


def whole_lines(path: Path) -> str:
    """The text of ``path`` without a last line that a kill cut short (no newline at its end); ``""`` if missing.

    :raises RunFileError: as :func:`read_text`.
    """
    if not path.exists():
        return ""
    text = read_text(path, "a text file")
    return text[: text.rfind("\n") + 1]


def read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)`` of a CSV file, without a last line that a kill cut short (no newline at its end)."""
    lines = list(csv.reader(io.StringIO(whole_lines(path))))
    return (lines[0], lines[1:]) if lines else ([], [])


def split_at(path: Path, step_column: str, last_step: int) -> tuple[list[str], list[list[str]], int]:
    """``(header, rows, n_after)``: the rows of ``path`` whose ``step_column`` is at most ``last_step`` (agent steps)
    and how many come after it. A file without that column keeps no row."""
    header, rows = read_rows(path)
    column = header.index(step_column) if step_column in header else None
    kept = [row for row in rows if column is not None and len(row) > column and float(row[column]) <= last_step]
    return header, kept, len(rows) - len(kept)


def truncate_after(path: Path, step_column: str, last_step: int) -> int:
    """Drop the rows of ``path`` logged after ``last_step`` (:func:`split_at`), atomically; return how many."""
    header, kept, n_after = split_at(path, step_column, last_step)
    if header:
        rewrite(path, header, kept)
    return n_after


class AppendingCSVOutputFormat(KVWriter):
    """SB3 logger output to a CSV file whose rows survive a kill (the crash-safe twin of SB3's ``CSVOutputFormat``).

    Continues an existing file (a resumed run): its header and rows are kept. New keys add columns, as with
    SB3's writer.

    :param path: the CSV file (``progress.csv``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.keys, _ = read_rows(self.path)

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        key_values = filter_excluded_keys(key_values, key_excluded, "csv")
        for value in key_values.values():
            if not isinstance(value, str | int | float | type(None)) and not hasattr(value, "dtype"):
                raise FormatUnsupportedError(["csv"], type(value).__name__)
        extra = sorted(key_values.keys() - set(self.keys))
        if extra or not self.path.exists():
            _, rows = read_rows(self.path)
            self.keys = [*self.keys, *extra]
            rewrite(self.path, self.keys, rows)
        append_line(self.path, format_row([key_values.get(key) for key in self.keys]))

    def close(self) -> None:
        """Nothing to close: every row is written and closed when logged."""


class RunTensorBoardOutputFormat(TensorBoardOutputFormat):
    """SB3's TensorBoard output for a run: a row's scalars written as one event and, when the run is resumed, the
    events the killed run logged after ``purge_step`` hidden.

    SB3's output adds a row's scalars one by one (``SummaryWriter.add_scalar``: one event each, handed to the writer's
    thread), then flushes, so the training thread waits on that thread at every row; a row of 70 scalars cost ~2.5 ms
    (benchmarks/tensorboard_queue.py). Here the row's scalars are one event of the same step, each value converted as
    ``add_scalar`` converts it (:func:`torch.utils.tensorboard.summary.scalar`), which TensorBoard reads as the same
    scalars at the same step. Values of other kinds (text, histograms, images, ...) go through SB3's output unchanged.

    :param folder: the run directory.
    :param purge_step: resuming: the first env step the resumed run logs anew (the checkpoint's step + 1): TensorBoard
        drops earlier files' events at or after it (``SummaryWriter(purge_step=...)``); ``None`` for a new run.
    """

    def __init__(self, folder: str, purge_step: int | None = None) -> None:
        self.writer = SummaryWriter(log_dir=folder, purge_step=purge_step)
        self._is_closed = False

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        scalars = {
            key: value
            for key, value in filter_excluded_keys(key_values, key_excluded, "tensorboard").items()
            if isinstance(value, np.ScalarType) and not isinstance(value, str)
        }
        if scalars:
            row = Summary(value=[value for key in sorted(scalars) for value in scalar(key, scalars[key]).value])
            file_writer = self.writer.file_writer
            assert file_writer is not None
            file_writer.add_summary(row, step)
        others = {key: value for key, value in key_values.items() if key not in scalars}
        super().write(others, {key: key_excluded[key] for key in others}, step)  # flushes, as SB3's output does


def run_logger(folder: Path, progress_csv: Path, console: KVWriter | None, resume_step: int | None = None) -> Logger:
    """The SB3 logger of a run: the console, ``progress_csv`` (:class:`AppendingCSVOutputFormat`) and TensorBoard.

    :param folder: the run directory (TensorBoard event files go there).
    :param progress_csv: the CSV file of the rows.
    :param console: what is printed per iteration (SB3's ``HumanOutputFormat``, or a shorter line); ``None``: nothing.
    :param resume_step: the checkpoint's env step when resuming (rows after it must already be truncated).
    """
    tensorboard = RunTensorBoardOutputFormat(str(folder), None if resume_step is None else resume_step + 1)
    files: list[KVWriter] = [AppendingCSVOutputFormat(progress_csv), tensorboard]
    return Logger(str(folder), files if console is None else [console, *files])
