"""benchmarks/probe_racing.py: racing stops the rates of a (size, seed) where the first reaches the top target, and
never changes what passage keeps (hand-made games in real files); docs/probe.md quotes its committed table."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from probe_racing import Branch, kept, stopping_point  # noqa: E402


def branch(name: str, scores: list[float], rate: float, every: int = 64) -> Branch:
    """A branch at rollout size 64 (one env), seed 0, one game of 16 agent steps ending every ``every`` agent steps."""
    n = len(scores)
    games = {
        "env_steps": np.arange(1, n + 1, dtype=float) * every,
        "score": np.asarray(scores, dtype=float),
        "length_frames": np.full(n, 64.0),
    }
    return Branch(name, (64, 0), rate, n * every, games, 1, 4)


def test_racing_stops_at_the_first_passage_of_the_top_target_and_keeps_the_winner():
    """Window 2: ``fast`` reaches 10 with its 3rd game (agent step 192, iteration 3), ``slow`` with its 5th; the
    stopping point is the end of iteration 3, ``slow`` keeps no reach of 10 before it, and the kept branch at both
    targets is ``fast`` either way. With no rate at the top, nothing stops."""
    fast = branch("fast", [0, 6, 14, 20, 20], 1e-3)
    slow = branch("slow", [0, 0, 6, 8, 14, 14], 5e-4)
    assert stopping_point([fast, slow], 10.0, 2) == 3 * 64
    for target in (5.0, 10.0):
        full = kept([fast, slow], target, 2, "passage", math.inf)
        assert full == kept([fast, slow], target, 2, "passage", 192.0) and full[0] == "fast"
    assert kept([slow], 10.0, 2, "passage", 192.0) == ("", math.inf)
    assert math.isinf(stopping_point([fast, slow], 100.0, 2))


def test_docs_quote_the_committed_racing_table():
    """docs/probe.md's numbers are those of results/validation/probe_racing/racing.json, and its command reproduces the
    table's first row from the committed probe it names."""
    record = json.loads((ROOT / "results" / "validation" / "probe_racing" / "racing.json").read_text())
    rows = record["probes"]
    as_run = [r["as_run"] / r["branch_point"] for r in rows]
    raced = [r["raced"] / r["branch_point"] for r in rows]
    saved = [1 - r["raced"] / r["as_run"] for r in rows]
    changed, compared = sum(r["kept_changed"] for r in rows), sum(r["kept_compared"] for r in rows)
    probe_md = re.sub(r"\s+", " ", (ROOT / "docs" / "probe.md").read_text())
    assert f"the {len(rows)} committed v6 and v7 probes" in probe_md
    assert f"saved {100 * min(saved):.0f}–{100 * max(saved):.0f} %" in probe_md
    assert f"from {np.median(as_run):.1f}× the run to {np.median(raced):.1f}×" in probe_md
    assert f"in {changed} of {compared} (size, seed, target)" in probe_md
    first = rows[0]
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "probe_racing.py"), first["probe"]],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    assert (
        f"| {first['probe']} | {first['branches']} |" in out
        and f"{first['kept_changed']} of {first['kept_compared']} |" in out
    )
    assert f"{first['raced'] / first['branch_point']:.1f}x" in out
