"""benchmarks/anchor_games.py on committed probes: the games an anchor is predicted to finish, from its source's games
before the branch point, come close to the games it played."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBES = [ROOT / "results" / "probes_v6" / game / "at1950k" for game in ("Pong", "Qbert", "Alien")]


def test_the_predicted_anchor_games_come_within_a_fifth_of_the_games_played():
    result = subprocess.run([sys.executable, "benchmarks/anchor_games.py", *map(str, PROBES)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines()[2:]]
    assert len(rows) == len(PROBES)
    for row in rows:
        predicted, played = float(row[-2]), int(row[-1])
        assert predicted == pytest.approx(played, rel=0.2), row
