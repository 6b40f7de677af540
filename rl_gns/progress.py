"""Reading logs back from disk (analysis never needs the live objects)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def read_progress(path: str | Path) -> dict[str, np.ndarray]:
    """Columns of an SB3 ``progress.csv`` (or any CSV of numbers with a header, such as ``episodes.csv``)
    as float arrays, one entry per row.

    Empty cells (a key not recorded in that row) become NaN.

    :param path: the CSV written by SB3's ``CSVOutputFormat``.
    :return: ``{key: (R,) array}`` for the ``R`` rows; ``{}`` for a file with no rows.
    """
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    keys = list(rows[0].keys())
    return {key: np.array([float(row[key]) if row.get(key) not in (None, "") else np.nan for row in rows]) for key in keys}
