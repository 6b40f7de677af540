"""What a directory holds: one run, sweep, benchmark, probe or scaling measurement, each marked by the record its
command writes first. A command refuses to write into a directory that holds another kind (a run written over a
sweep's record, a sweep's runs inside a run)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rl_gns.records.rundir import BENCH, CONFIG, PROBE, SWEEP
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
