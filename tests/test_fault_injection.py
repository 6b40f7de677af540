"""Every reader against every damage one file of its input can take, through the real CLI.

A reader is handed committed results (copied into ``tmp_path``) with one file damaged in one way: emptied, cut in
half, overwritten with bytes that are not text, replaced by a folder, removed; one top-level JSON field removed or
given a value of the wrong kind (null, and in turn a string, a negative, non-finite, huge, zero or fractional
number, a boolean, a list, an object); one CSV cell that is not a finite number, a header without rows, a row too
long or too short. A compressed log (``.csv.xz``) takes the same damage inside, written back compressed, and a
stream cut short. Whatever the damage, the reader either uses what is whole (exit status 0) or refuses in one line
that names the command and the file it refuses (exit status 2); it never raises. ``test_readers.py`` pins what the
answer is for the damage users meet most; this module sweeps the whole class.
"""

from __future__ import annotations

import json
import lzma
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import rl_gns

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: What a damaged file becomes: its new text or bytes, a folder in its place (``DIRECTORY``) or nothing
#: (``MISSING``).
DIRECTORY = object()
MISSING = object()

#: Wrong values every JSON field is given, by name (``null`` is the commonest damage: a value that was not there).
WRONG_ALWAYS: dict[str, object] = {"null": None}

#: Wrong values of which each field is given one, in turn (field i the i-th, cycling), to bound the number of cases:
#: each kind is tried on every tenth field.
WRONG_IN_TURN: dict[str, object] = {
    "string": "x",
    "negative": -5,
    "nan": float("nan"),
    "inf": float("inf"),
    "huge": 10**30,
    "zero": 0,
    "fraction": 2.5,
    "true": True,
    "list": [1],
    "object": {"a": 1},
}


#: Wrong text for one CSV cell, by name: every column is given a string and, in turn, one of the others.
WRONG_CELLS = {"nan": "nan", "inf": "inf", "negative": "-1", "blank": ""}


def whole_file_damage(text: str) -> Iterator[tuple[str, object]]:
    """Damage that does not depend on the format: empty, cut in half, not text, a folder, missing."""
    yield "empty", ""
    yield "cut", text[: len(text) // 2]
    yield "binary", b"\x00\xff\xfe not UTF-8"
    yield "directory", DIRECTORY
    yield "missing", MISSING


def json_damage(text: str) -> Iterator[tuple[str, object]]:
    """Damage to a JSON object: the whole a list or null; each top-level field removed, null, and one other wrong
    value (taken in turn from :data:`WRONG_IN_TURN`, so that every kind is tried on some fields)."""
    record = json.loads(text)
    yield "a list", "[]"
    yield "null", "null"
    in_turn = list(WRONG_IN_TURN.items())
    for i, key in enumerate(record):
        for name, value in [*WRONG_ALWAYS.items(), in_turn[i % len(in_turn)]]:
            yield f"{key}={name}", json.dumps({**record, key: value})
        yield f"{key} removed", json.dumps({k: v for k, v in record.items() if k != key})


def json_lines_damage(text: str) -> Iterator[tuple[str, object]]:
    """Damage to JSON lines: a line that is not JSON, and the first record damaged as :func:`json_damage` does."""
    first, *rest = text.splitlines()
    yield "a line not JSON", text + "not json\n"
    for name, line in json_damage(first):
        yield f"first line: {name}", "\n".join([str(line), *rest]) + "\n"


def csv_damage(text: str) -> Iterator[tuple[str, object]]:
    """Damage to a CSV table: a header only, each cell of the first row a string and then another wrong value (taken
    in turn from :data:`WRONG_CELLS`), a row too long, a row too short."""
    header, *rows = text.splitlines()
    yield "header only", header + "\n"
    if rows:
        first = rows[0].split(",")
        cells = list(WRONG_CELLS.items())
        for i, column in enumerate(header.split(",")):
            for name, cell in [("string", "abc"), cells[i % len(cells)]]:
                row = ",".join([*first[:i], cell, *first[i + 1 :]])
                yield f"{column}={name}", "\n".join([header, row, *rows[1:]]) + "\n"
    yield "a row too long", "\n".join(line + ",9" for line in [header, *rows]) + "\n"
    yield "a row too short", "\n".join([header, *rows, "1"]) + "\n"


def content_damage(suffix: str, text: str) -> Iterator[tuple[str, object]]:
    """Damage to the content of a file in the format its ``suffix`` names."""
    if suffix == ".json":
        yield from json_damage(text)
    elif suffix == ".jsonl":
        yield from json_lines_damage(text)
    elif suffix == ".csv":
        yield from csv_damage(text)


def damage(path: Path) -> Iterator[tuple[str, object]]:
    """Every damage of the file at ``path``, by its format. An xz file (``.csv.xz``, as ``rl-gns compact`` writes
    logs) takes the whole-file damage to its bytes (so a stream cut short or not xz at all) and the damage of the
    format inside, written back compressed."""
    if path.suffix != ".xz":
        text = path.read_text()
        yield from whole_file_damage(text)
        yield from content_damage(path.suffix, text)
        return
    raw = path.read_bytes()
    for name, new in whole_file_damage(""):
        yield name, raw[: len(raw) // 2] if name == "cut" else new
    inner = lzma.decompress(raw).decode()
    yield "empty inside", lzma.compress(b"")
    for name, new in content_damage(Path(path.stem).suffix, inner):
        yield name, lzma.compress(str(new).encode())


@dataclass(frozen=True)
class Reader:
    """A command that reads results, and the committed results it reads."""

    command: str
    """The ``rl-gns`` command."""
    sources: tuple[str, ...]
    """Folders under ``results/``, copied side by side into the work folder under their last name."""
    args: tuple[str, ...]
    """The command's arguments; ``{w}`` stands for the work folder."""
    files: tuple[str, ...]
    """The files to damage, one at a time, relative to the work folder."""
    not_read: tuple[str, ...] = ()
    """Names under the sources that the command does not read, left out of the copies."""


DEMO_BRANCH = "probe/runs/n0008_lr2.50e-04_s0"
BENCH_RUN = "cpu/runs/pong_s0"
ADAPTIVE_RUN = "adaptive_beamrider_ram/runs/r0064_s0"
SWEEP_RUN = "beamrider_ram_sweep/runs/n0004_lr3.54e-04_s0"

READERS = (
    Reader(
        "analyze",
        ("resume/beamrider_ram_sweep",),
        ("{w}/beamrider_ram_sweep", "--bootstrap", "20"),
        # sweep.json and a run's config.json and summary.json are read as probe-report reads them (below); these
        # are the files of analyze's own reading: the noise sums of a run's log and its games' running score
        (f"{SWEEP_RUN}/progress.csv", f"{SWEEP_RUN}/episodes.csv"),
    ),
    Reader(
        "probe-report",
        ("demo_probe/probe",),
        ("{w}/probe",),
        (
            "probe/probe.json",
            "probe/sweep.json",
            "probe/anchor/summary.json",
            "probe/anchor/config.json",
            "probe/anchor/episodes.csv.xz",
            f"{DEMO_BRANCH}/config.json",
            f"{DEMO_BRANCH}/summary.json",
            f"{DEMO_BRANCH}/episodes.csv.xz",
            f"{DEMO_BRANCH}/progress.csv.xz",
        ),
    ),
    Reader(
        "validate-probes",
        ("demo_probe/probe",),
        ("{w}/probe", "--out", "{w}/validation"),
        ("probe/probe.json", "probe/probe_results.json", "probe/sweep.json"),
    ),
    Reader(
        "advise",
        ("demo_probe/run",),
        ("{w}/run",),
        ("run/config.json", "run/summary.json", "run/progress.csv.xz"),
    ),
    Reader(
        "plot",
        ("demo_probe/run",),
        ("{w}/run",),
        ("run/config.json", "run/summary.json", "run/progress.csv.xz", "run/episodes.csv.xz"),
    ),
    Reader(
        "bench",
        ("bench/cpu",),
        ("--report-only", "--out", "{w}/cpu", "--bootstrap", "200"),
        ("cpu/bench.json", f"{BENCH_RUN}/config.json", f"{BENCH_RUN}/summary.json", f"{BENCH_RUN}/progress.csv.xz"),
    ),
    Reader(
        "scaling",
        ("scaling/beamrider",),
        ("--report-only", "--out", "{w}/beamrider"),
        ("beamrider/settings.json", "beamrider/measurements.jsonl"),
    ),
    Reader(
        "validate-predictors",
        ("validation/beamrider",),
        ("{w}/beamrider", "--out", "{w}/validation"),
        ("beamrider/results.json", "beamrider/sweep.json"),
        not_read=("runs", "specs"),
    ),
    Reader(
        "compare-adaptive",
        ("sweeps/adaptive_beamrider_ram", "sweeps/beamrider_ram"),
        ("{w}/adaptive_beamrider_ram", "--fixed", "{w}/beamrider_ram"),
        (
            f"{ADAPTIVE_RUN}/config.json",
            f"{ADAPTIVE_RUN}/summary.json",
            f"{ADAPTIVE_RUN}/progress.csv.xz",
            "beamrider_ram/results.json",
        ),
    ),
)

#: Large files no reader here opens: left out of the copies.
NOT_READ = ("*.zip", "events.out.tfevents.*", "*.png", "snapshots", "checkpoints")


def cases() -> list[object]:
    """One test per reader and file it reads."""
    return [pytest.param(reader, file, id=f"{reader.command}:{file}") for reader in READERS for file in reader.files]


@pytest.mark.slow
@pytest.mark.parametrize(("reader", "file"), cases())
def test_damaged_file(reader: Reader, file: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pristine = tmp_path / "pristine"
    for source in reader.sources:
        ignore = shutil.ignore_patterns(*NOT_READ, *reader.not_read)
        shutil.copytree(RESULTS / source, pristine / Path(source).name, ignore=ignore)
    work = tmp_path / "work"
    args = [arg.format(w=work) for arg in reader.args]
    failures = []
    for name, new in damage(pristine / file):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(pristine, work)
        target = work / file
        if new is MISSING or new is DIRECTORY:
            target.unlink()
            if new is DIRECTORY:
                target.mkdir()
        elif isinstance(new, bytes):
            target.write_bytes(new)
        else:
            target.write_text(str(new))
        try:
            status, err = rl_gns(capsys, reader.command, *args)
        except Exception as error:  # a reader that raises is what this test is for
            failures.append(f"{name}: raised {type(error).__name__}: {error}")
            continue
        lines = err.strip().splitlines()
        if status not in (0, 2):
            failures.append(f"{name}: exit status {status}: {lines[-1] if lines else ''}")
        elif status == 2 and not (lines and lines[-1].startswith(f"rl-gns {reader.command}: error: ")):
            failures.append(f"{name}: exit status 2 without a one-line error: {err.strip()[-300:]}")
        elif status == 2 and str(work) not in lines[-1]:
            failures.append(f"{name}: the error names no file it read: {lines[-1]}")
    assert not failures, f"{len(failures)} damaged inputs broke rl-gns {reader.command}:\n" + "\n".join(failures)
