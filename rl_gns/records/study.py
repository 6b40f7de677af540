"""What a directory holds: one run, sweep, benchmark, probe or scaling measurement, each marked by the record its
command writes first. A command refuses to write into a directory that holds another kind (a run written over a
sweep's record), that holds files of no kind, or that lies inside another run or study: a directory has one writer,
and a study's runs are its own (``<study>/runs/<name>``, a probe's ``anchor``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from rl_gns.records.lock import LOCK
from rl_gns.records.logs import torn_write_of
from rl_gns.records.rundir import ANCHOR, BENCH, CONFIG, ERROR, LOG, PILOT, PROBE, SWEEP, read_json
from rl_gns.records.scaling_log import SETTINGS

Kind = Literal["run", "sweep", "benchmark", "probe", "scaling measurement"]
#: The record that marks each kind of directory.
MARKS: dict[Kind, str] = {"run": CONFIG, "sweep": SWEEP, "benchmark": BENCH, "probe": PROBE, "scaling measurement": SETTINGS}


def check_kind(directory: Path, kind: Kind, shares: tuple[Kind, ...] = ()) -> None:
    """Refuse to write ``directory`` as a ``kind`` if it holds another kind; writes nothing.

    :param directory: the ``--out`` of the command (it need not exist).
    :param kind: what the command writes there.
    :param shares: kinds that live in the same directory (a probe's branches are a sweep in the probe's directory).
    :raises ValueError: naming the directory, what it holds and the record that says so.
    """
    for other, record in MARKS.items():
        if other != kind and other not in shares and (directory / record).is_file():
            raise ValueError(f"--out {directory} holds a {other} ({record}), not a {kind}: use another --out")


def enclosing(directory: Path) -> tuple[Path, tuple[Kind, ...]] | None:
    """The nearest directory above ``directory`` (its links resolved) that holds a run or a study, and the kinds it
    holds (a probe's directory also holds the sweep of its branches)."""
    for parent in Path(os.path.realpath(directory)).parents:
        held = tuple(kind for kind, record in MARKS.items() if (parent / record).is_file())
        if held:
            return parent, held
    return None


def check_not_inside(directory: Path, kind: Kind) -> None:
    """Refuse to write a ``kind`` inside another run or study; writes nothing. Nothing is written inside a run but
    the run's own files, and inside a study only its own runs: ``<study>/runs/<name>``, and a probe's ``anchor`` and ``pilot``.

    :param directory: the ``--out`` of the command (it need not exist).
    :param kind: what the command writes there.
    :raises ValueError: naming the directory that holds it.
    """
    found = enclosing(directory)
    if found is None:
        return
    holder, held = found
    real = Path(os.path.realpath(directory))
    own_run = (
        kind == "run"
        and "run" not in held
        and (
            (real.parent == holder / "runs" and makes_run(holder, held, real.name))
            or ("probe" in held and real in (holder / ANCHOR, holder / PILOT))
        )
    )
    if not own_run:
        what = f"the {' and '.join(held)} {holder} ({', '.join(MARKS[k] for k in held)})"
        raise ValueError(f"--out {directory} lies inside {what}: use a directory outside it")


def makes_run(holder: Path, held: tuple[Kind, ...], name: str) -> bool:
    """Whether the study in ``holder`` makes a run called ``name`` under its ``runs/``: one that its ``sweep.json``
    lists (a probe's branches before it is written), or a benchmark's ``<game>_s<seed>`` of a game of its table.

    :param held: the kinds the directory holds (:func:`enclosing`).
    """
    if "sweep" in held:
        runs = read_json(holder / SWEEP)
        return isinstance(runs, dict) and name in runs.get("runs", [name])
    if "benchmark" in held:
        games = read_json(holder / BENCH)
        game, _, seed = name.rpartition("_s")
        return isinstance(games, dict) and game in games.get("games_table", {}) and seed.isdigit()
    return "probe" in held  # its branches' sweep.json is written once they are all checked


def check_outside_records(directory: Path) -> None:
    """Refuse a report's ``--out`` that is a run or a study, or lies inside one: a run directory has one writer, and
    a study holds only its own runs, so a report that gathers several records writes outside them all.

    :raises ValueError: naming the run or study.
    """
    real = Path(os.path.realpath(directory))
    for place in (real, *real.parents):
        held = tuple(kind for kind, record in MARKS.items() if (place / record).is_file())
        if held:
            where = "is" if place == real else "lies inside"
            raise ValueError(f"--out {directory} {where} the {' and '.join(held)} {place}: write the report outside it")


def check_no_strangers(directory: Path, kind: Kind, shares: tuple[Kind, ...] = ()) -> None:
    """Refuse to start a ``kind`` in a directory that holds files of no run or study (its record and those of
    ``shares`` absent): they would be mixed with its own. What a command leaves before its record is its own: the
    lock, a run's log and error (a sweep's run that failed before it started), a study's empty ``runs/``, and the
    temporary file that a kill left while it wrote one of these or its record (:func:`~rl_gns.records.logs.torn_write_of`).

    :raises FileExistsError: naming a few of the files.
    """
    if not directory.is_dir() or any((directory / MARKS[k]).is_file() for k in (kind, *shares)):
        return
    empty_runs = directory / "runs"
    if kind == "run":
        own = {LOCK, LOG, ERROR}
    else:
        own = {LOCK, "runs"} if empty_runs.is_dir() and not any(empty_runs.iterdir()) else {LOCK}
    records = {MARKS[k] for k in (kind, *shares)}
    strangers = sorted(p.name for p in directory.iterdir() if p.name not in own and torn_write_of(p.name) not in own | records)
    if strangers:
        listed = ", ".join(strangers[:3]) + (", ..." if len(strangers) > 3 else "")
        raise FileExistsError(f"--out {directory} holds files and no {kind} ({MARKS[kind]}): {listed}; choose another --out")


def check_named_once(directories: list[Path] | tuple[Path, ...], what: str) -> None:
    """Refuse a list of studies that names one twice, however spelled (links resolved): it would count twice.

    :param directories: the studies, as given.
    :param what: what they are, for the message ("sweep", "probe").
    :raises ValueError: naming the first one named again.
    """
    seen: dict[Path, Path] = {}
    for directory in directories:
        if directory.resolve() in seen:
            first = seen[directory.resolve()]
            raise ValueError(f"the {what} {directory} is named twice (as {first} too); each counts once")
        seen[directory.resolve()] = directory
