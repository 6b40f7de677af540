"""The example agent script, run as a user would (tiny budget, real ALE)."""

import re
import subprocess
import sys
from pathlib import Path

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


def test_the_readmes_python_example_runs(tmp_path):
    """The README's Python example, as written but for its budget (one PPO iteration of its 8 envs x 128 steps)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert "model.learn(200_000)" in example
    script = tmp_path / "example.py"
    script.write_text(example.replace("model.learn(200_000)", "model.learn(1024)"))
    result = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("RatioInterval(point=")
