"""The scaling directory of ``rl-gns scaling``: its settings and one JSON line per measured ``n_envs``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rl_gns.records.logs import append_line, whole_lines, write_atomically
from rl_gns.records.rundir import RunFileError, read_record
from rl_gns.records.schema import Count, Positive, RecordError, require

SETTINGS = "settings.json"
MEASUREMENTS = "measurements.jsonl"

#: ``settings.json``: what was measured.
SETTINGS_FIELDS: dict[str, Any] = {
    "env": str,
    "n_steps": Count,
    "n_epochs": Count,
    "n_minibatches": Count | None,
    "minibatch_size": Count | None,
}
#: A line of ``measurements.jsonl``: one ``(n_envs, nproc)``, times in seconds, rates in agent steps per second.
MEASUREMENT_FIELDS: dict[str, Any] = {
    "n_envs": Count,
    "nproc": Count | None,
    "rollout_size": Count,
    "env_only_agent_steps_per_s": Positive,
    "agent_steps_per_s": Positive,
    "seconds_per_iteration": Positive,
    "rollout_s_per_iteration": Positive,
    "update_s_per_iteration": Positive,
    "peak_rss_mib": Positive,
}


def read_measurements(scaling_dir: Path) -> list[dict]:
    """The measured lines of ``measurements.jsonl``, smallest ``n_envs`` first (empty if none), without a last line
    that a kill cut short (it is measured again).

    :param scaling_dir: the scaling directory; its ``settings.json`` says the ``n_steps`` every line was measured at.
    :raises RunFileError: naming the file, for a file that is not text, and its line, for a whole line that is not
        JSON.
    :raises RecordError: naming the file and line, for a line without a field or with one of the wrong kind, a
        rollout size other than ``n_envs * n_steps``, or an ``(n_envs, nproc)`` measured twice (an edited file).
    """
    path, n_steps = scaling_dir / MEASUREMENTS, read_settings(scaling_dir)["n_steps"]
    try:
        text = whole_lines(path)
    except UnicodeDecodeError as error:
        raise RunFileError(f"{path}: not a text file ({error})") from error
    rows: dict[tuple[int, int], dict] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as error:  # a line nested deeper than the parser goes, too
            raise RunFileError(f"{path}: line {number} is not valid JSON ({error})") from error
        row = require(row, f"{path}: line {number}", MEASUREMENT_FIELDS)
        if row["rollout_size"] != row["n_envs"] * n_steps:
            raise RecordError(
                f"{path}: line {number}: rollout_size {row['rollout_size']} is not n_envs {row['n_envs']} x n_steps "
                f"{n_steps} ({scaling_dir / SETTINGS})"
            )
        key = (row["n_envs"], row.get("nproc") or 1)
        if key in rows:
            raise RecordError(f"{path}: line {number} measures n_envs {key[0]} on {key[1]} process(es) again")
        rows[key] = row
    return sorted(rows.values(), key=lambda row: row["n_envs"])


def append_measurement(path: Path, row: dict[str, Any]) -> None:
    """Append one measurement to ``measurements.jsonl``, after dropping a last line that a kill cut short."""
    whole = whole_lines(path)
    if path.exists() and len(whole.encode()) != path.stat().st_size:
        write_atomically(path, whole)
    append_line(path, json.dumps(row) + "\n")


def read_settings(scaling_dir: Path) -> dict:
    """What was measured (``settings.json``): env, n_steps, n_minibatches or minibatch_size, n_epochs, ...

    :raises RecordError: for a field missing or of the wrong kind, or neither ``n_minibatches`` nor
        ``minibatch_size`` set (one of them sizes the minibatch; ``minibatch_size`` wins where both are).
    """
    settings = read_record(scaling_dir / SETTINGS, SETTINGS_FIELDS)
    if settings.get("minibatch_size") is None and settings.get("n_minibatches") is None:
        raise RecordError(f"{scaling_dir / SETTINGS}: sets neither n_minibatches nor minibatch_size")
    return {"n_minibatches": None, "minibatch_size": None} | settings
