"""The scaling directory of ``rl-gns scaling``: its settings and one JSON line per measured ``n_envs``."""

from __future__ import annotations

import json
from pathlib import Path

from rl_gns.records.rundir import read_json

SETTINGS = "settings.json"
MEASUREMENTS = "measurements.jsonl"


def read_measurements(path: Path) -> list[dict]:
    """The measured lines of ``measurements.jsonl``, smallest ``n_envs`` first (empty if none)."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda row: row["n_envs"])


def read_settings(scaling_dir: Path) -> dict:
    """What was measured (``settings.json``): env, n_steps, n_minibatches or minibatch_size, n_epochs, ..."""
    return read_json(scaling_dir / SETTINGS)
