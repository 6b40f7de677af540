"""The example agent script, run as a user would (tiny budget, real ALE)."""

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.atari


def test_example_agent_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "agents/ppo_atari_gns.py", "--env", "Pong", "--n-envs", "2", "--total-steps", "512",
         "--eval-every", "512", "--eval-games", "1", "--log-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"^(critical rollout size|noise scale) \(env_value\)", result.stdout, flags=re.M)
    assert (tmp_path / "progress.csv").exists()
