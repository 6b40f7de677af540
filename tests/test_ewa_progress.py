"""benchmarks/ewa_progress.py's pure parts: the EWA's weights against its recursion, and the null floor of a periodic
evaluation against the closed form for games of two outcomes."""

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from ewa_progress import ewa_weights, null_max_eval_means  # noqa: E402


def test_the_ewa_weights_are_the_recursion_corrected_for_its_start():
    """Snapshots every 5,000 agent steps, h = 10,000: θ̄ ← β θ̄ + (1 − β) θ from θ̄ = 0, divided by 1 − β^n, gives
    the same weights; a snapshot after the look weighs nothing."""
    steps_K, beta = np.arange(1, 7) * 5000.0, math.exp(-0.5)
    recursion = np.zeros(4)
    for k in range(4):  # the looks at 20,000: snapshots 0..3
        recursion = beta * recursion
        recursion[k] += 1 - beta
    np.testing.assert_allclose(ewa_weights(steps_K, 20_000, 10_000)[:4], recursion / (1 - beta**4))
    assert ewa_weights(steps_K, 20_000, 10_000)[4:].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="no snapshot"):
        ewa_weights(steps_K, 4_999, 10_000)


def test_the_null_max_of_periodic_means_matches_its_closed_form():
    """Games scoring 0 or 1 with probability 1/2: the mean of 4 games reaches 1 with 1/16; the best of 5 looks with
    1 − (15/16)^5, and reaches 0.75 with 1 − (1 − P(Binomial(4, 1/2) ≥ 3))^5."""
    rng = np.random.default_rng(0)
    best_D = null_max_eval_means(np.array([0.0, 1.0]), games=4, looks=5, draws=200_000, rng=rng)
    assert np.mean(best_D >= 1.0) == pytest.approx(1 - (15 / 16) ** 5, abs=0.004)
    assert np.mean(best_D >= 0.75) == pytest.approx(1 - binom.cdf(2, 4, 0.5) ** 5, abs=0.004)


def test_docs_quote_the_committed_comparison():
    """docs/probe.md's sentence on evaluation games, from results/validation/ewa_progress/ewa_progress.json: the two
    floors, and that counting the evaluation games every evaluation measure came later than the running score or never,
    while by agent steps trained alone 4 of the 12 came earlier."""
    record = json.loads((ROOT / "results" / "validation" / "ewa_progress" / "ewa_progress.json").read_text())
    floors, rows = record["floors"], record["rows"]
    running = {(r["run"], r["target"]): r["reached"] for r in rows if r["measure"] == "running"}
    evaluated = [r for r in rows if r["measure"] == "current" or r["measure"].startswith("ewa")]
    later = [math.isnan(r["cost"]) or r["cost"] > running[r["run"], r["target"]] for r in evaluated]
    earlier_trained = sum(r["reached"] < running[r["run"], r["target"]] for r in evaluated)
    docs = re.sub(r"\s+", " ", (ROOT / "docs" / "probe.md").read_text())
    claim = f"evaluation's null floor is {floors['current']:.3g} against {floors['running']:.3g}"
    assert claim in docs and all(floors[r["measure"]] == floors["current"] for r in evaluated)
    assert all(later) and f"in all {len(later)} cases" in docs
    assert f"by agent steps trained alone it was earlier in {earlier_trained}," in docs
