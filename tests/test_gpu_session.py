"""The GPU session script (benchmarks/gpu/session.sh), dry-run on the CPU with tiny budgets so that it cannot rot
between the sessions that are lent a GPU. Opt-in (CI runs it): ``pytest -m gpu_dry_run``."""

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu_dry_run
ROOT = Path(__file__).resolve().parents[1]


def session_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "DEVICE": "cpu", "TINY": "1", "OUT": str(tmp_path / "out"), "SWEEP_DIR": str(tmp_path / "sweep"),
            "TRUNK_DIR": str(tmp_path / "trunk"), "PROBES_DIR": str(tmp_path / "probes"), **settings,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip


def session(stage: str, tmp_path: Path, **settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "benchmarks/gpu/session.sh", stage], cwd=ROOT, env=session_env(tmp_path, **settings),
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def trunk_state_names(out: Path) -> list[str]:
    """The files in the trunk stage's state, split into trunk_state.tar.part* under ``out``."""
    parts = sorted(out.glob("trunk_state.tar.part*"))
    with tarfile.open(fileobj=io.BytesIO(b"".join(part.read_bytes() for part in parts))) as tar:
        return tar.getnames()


def test_check_stage_compares_the_device_path_with_the_cpu_reference(tmp_path):
    result = session("check", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads((tmp_path / "out" / "check.json").read_text())
    # on a CPU the candidate is the channels-last layout: equal to SB3's NCHW to float rounding, not bit for bit
    assert record["passed"] and 0 < record["max_relative_difference"] < 1e-4
    assert {f"grad_{loss}" for loss in ("policy", "value", "total")} <= record.keys()


def test_speed_stage_times_every_configuration(tmp_path):
    result = session("speed", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = (tmp_path / "out" / "speed.md").read_text()
    for config in ("a_sb3", "b_off", "c_default", "d_all_every_iteration"):
        assert f"| 2 | {config} |" in table


def test_ceiling_stage_steps_the_envs_alone(tmp_path):
    result = session("ceiling", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "ceiling.json").read_text())["rows"]
    assert {row["backend"] for row in rows} == {"ale_vector", "sb3"} and all(row["agent_steps_per_s"] > 0 for row in rows)


def test_concurrent_stage_times_processes_of_plain_sb3_and_rl_gns_at_once(tmp_path):
    result = session("concurrent", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "concurrent_runs.json").read_text())["rows"]
    assert [(row["configuration"], row["processes"]) for row in rows] == [("a_sb3", 2), ("c_default", 2)]
    assert all(len(row["per_process_agent_steps_per_s"]) == 2 and row["aggregate_agent_steps_per_s"] > 0 for row in rows)


def test_trunk_stage_trains_then_goes_on_and_brings_back_its_state(tmp_path):
    result = session("trunk", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    names = trunk_state_names(tmp_path / "out")
    assert any(name.endswith("state.json") for name in names) and any(name.startswith("snapshots/") for name in names)
    with tarfile.open(tmp_path / "out" / "trunk_files.tar.gz") as tar:
        assert {"./config.json", "./progress.csv"} <= set(tar.getnames())
    again = session("trunk", tmp_path)  # the same trunk again: it goes on from its checkpoint
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "resuming" in (tmp_path / "out" / "trunk.log").read_text()


def test_a_stage_stopped_by_a_timeout_still_brings_back_its_files(tmp_path):
    # `timeout` signals the whole process group: the training command stops with a checkpoint, then the script packs
    script = subprocess.Popen(["bash", "benchmarks/gpu/session.sh", "trunk"], cwd=ROOT, env=session_env(tmp_path),
                              start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not (tmp_path / "trunk" / "progress.csv").is_file() and script.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert script.poll() is None, "the trunk finished before it could be stopped"
    os.killpg(script.pid, signal.SIGTERM)
    assert script.wait(timeout=120) == 143
    with tarfile.open(tmp_path / "out" / "trunk_files.tar.gz") as tar:
        assert {"./config.json", "./progress.csv"} <= set(tar.getnames())
    names = trunk_state_names(tmp_path / "out")
    assert any(name.startswith("checkpoints/") and name.endswith("state.json") for name in names), names


def test_trunk_probe_stage_probes_the_trunk_at_its_latest_snapshot_and_brings_back_its_small_files(tmp_path):
    assert session("trunk_probe", tmp_path).returncode == 2  # no trunk yet: refused in one line
    trunk = session("trunk", tmp_path)
    assert trunk.returncode == 0, trunk.stdout[-3000:] + trunk.stderr[-3000:]
    latest = int(max((tmp_path / "trunk" / "snapshots").glob("*.zip")).stem)
    result = session("trunk_probe", tmp_path, TRUNK_PROBES_DIR=str(tmp_path / "trunk_probes"), FIRST_SEED="3")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    probe = json.loads((tmp_path / "trunk_probes" / f"at{latest // 1000}k" / "probe.json").read_text())
    assert probe["env_steps"] == latest and (tmp_path / "trunk_probes" / f"at{latest // 1000}k" / "report.md").is_file()
    assert probe["first_seed"] == 3  # a retest of the same snapshot starts past the seeds of the probe before
    with tarfile.open(tmp_path / "out" / "trunk_probe_files.tar.gz") as tar:
        names = tar.getnames()
    assert {f"at{latest // 1000}k/probe.json", f"at{latest // 1000}k/probe_results.json"} <= set(names)
    assert not any(name.endswith(("model.zip", ".lock")) or "tfevents" in name or "checkpoints" in name for name in names)
    shutil.rmtree(tmp_path / "trunk" / "snapshots")  # a trunk that kept only its checkpoint: probed there
    checkpoint = int(max((tmp_path / "trunk" / "checkpoints").iterdir()).name)
    assert session("trunk_probe", tmp_path, TRUNK_PROBES_DIR=str(tmp_path / "p"), STAGE=str(latest)).returncode == 2
    # planned and stopped at once (a deadline already passed): where it branches is what this checks
    result = session("trunk_probe", tmp_path, TRUNK_PROBES_DIR=str(tmp_path / "p"), MINUTES="0.01")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert json.loads((tmp_path / "p" / f"at{checkpoint // 1000}k" / "probe.json").read_text())["env_steps"] == checkpoint


def test_probes_stage_runs_the_v5_protocol_outside_the_tree_and_brings_back_its_small_files(tmp_path):
    result = session("probes", tmp_path, GAME="SpaceInvaders", STAGE="50000")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "probes" / "SpaceInvaders" / "at50k" / "report.md").is_file()
    with tarfile.open(tmp_path / "out" / "probe_files.tar.gz") as tar:
        names = tar.getnames()
    assert {"at50k/probe.json", "at50k/probe_results.json", "at50k/anchor/episodes.csv.xz"} <= set(names)  # compact
    assert not any(name.endswith(("model.zip", ".lock")) or "tfevents" in name for name in names)


def test_sweep_stage_runs_a_slice_and_brings_back_its_small_files(tmp_path):
    result = session("sweep", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2/2 finished" in (tmp_path / "out" / "sweep.log").read_text()
    with tarfile.open(tmp_path / "out" / "sweep_files.tar.gz") as tar:
        names = tar.getnames()
    assert sum(name.endswith("summary.json") for name in names) == 2 and "./sweep.json" in names
    assert not any(name.endswith(".zip") for name in names)
    again = session("sweep", tmp_path)  # the same slice again: everything is finished, nothing reruns
    assert again.returncode == 0 and "2 finished before" in (tmp_path / "out" / "sweep.log").read_text()


def test_ranks_stage_measures_data_parallel_ranks(tmp_path):
    result = session("ranks", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = (tmp_path / "out" / "scaling_nproc" / "report.md").read_text()
    assert "| 2 | 2 |" in report  # 2 envs on 2 ranks, against 1 process


def test_population_stage_times_pixel_agents_alone_and_together(tmp_path):
    result = session("population", tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (row,) = json.loads((tmp_path / "out" / "population.json").read_text())["rows"]
    assert row["agents"] == 2 and row["lone_steps_per_s"] > 0 and row["population_steps_per_s"] > 0
