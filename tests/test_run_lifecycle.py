"""A run's lifecycle under faults, with real processes and real signals (Beam Rider from RAM, tiny budgets): one
writer per run directory, SIGINT and SIGTERM stop with a checkpoint, a sweep takes its workers with it, resume
refuses logs that no longer reach the checkpoint, and bad settings are refused before anything is written."""

import json
import os
import pty
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import lock_held_elsewhere

from rl_gns.cli import main
from rl_gns.experiments.plan import check_out
from rl_gns.experiments.runner import check_directory, record_outcome
from rl_gns.records.checkpoint import CHECKPOINTS, latest_checkpoint
from rl_gns.records.lock import LOCK, RunLock, RunLockedError, check_unlocked
from rl_gns.records.logs import read_rows, user_umask, write_atomically
from rl_gns.records.rundir import ERROR, RunDir
from rl_gns.records.study import check_not_inside

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
RESULTS = Path(__file__).resolve().parents[1] / "results"
#: 64 agent steps per iteration, a checkpoint after every iteration.
TINY = ["--env", "BeamRider", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
        "--torch-threads", "1", "--progress-bar", "False", "--checkpoint-minutes", "0"]  # fmt: skip


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def checkpointed(run: Path) -> bool:
    return (run / CHECKPOINTS).is_dir() and any(not p.name.startswith(".") for p in (run / CHECKPOINTS).iterdir())


def logged_steps(run: Path) -> list[int]:
    """``time/total_timesteps`` of each row of a run's progress.csv."""
    header, rows = read_rows(run / "progress.csv")
    return [int(float(row[header.index("time/total_timesteps")])) for row in rows]


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


@pytest.mark.slow
def test_two_writers_are_refused_and_sigterm_stops_with_a_checkpoint(tmp_path):
    run = tmp_path / "my run"  # a space: the resume command must quote it
    live = start("train", *TINY, "--total-steps", "1000000", "--out", str(run))
    try:
        wait_for(lambda: checkpointed(run) or live.poll() is not None)
        assert live.poll() is None, live.stderr.read() if live.stderr else ""
        rows_before = len(read_rows(run / "progress.csv")[1])
        for second in (["--resume", str(run)], ["--out", str(run), "--overwrite", *TINY], ["--out", str(run), *TINY]):
            refused = run_cli("train", *second)
            assert refused.returncode == 2 and f"is being written by process {live.pid}" in one_line(refused), second
        assert (run / "config.json").exists() and (run / "episodes.csv").exists()
        assert len(read_rows(run / "progress.csv")[1]) >= rows_before  # the live run's logs untouched
        live.send_signal(signal.SIGTERM)
        _, stderr = live.communicate(timeout=120)
    finally:
        live.kill()
    assert live.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    resume = f"rl-gns train --resume {shlex.quote(str(run))}"
    assert "stopped by SIGTERM with a checkpoint" in stderr and resume in stderr
    assert latest_checkpoint(run).env_steps == logged_steps(run)[-1]  # the checkpoint at the last logged row
    assert f"with a checkpoint at {logged_steps(run)[-1]:,} agent steps" in stderr
    assert not (run / "summary.json").exists()
    # the lock went with the process: resuming is allowed now (and stopped again at once by its deadline)
    again = run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9")
    assert again.returncode == 0 and "resuming" in again.stdout, again.stderr[-2000:]


def test_sigint_stops_with_a_checkpoint_and_status_130(tmp_path):
    run = tmp_path / "run"
    live = start("train", *TINY, "--total-steps", "1000000", "--out", str(run))
    try:
        wait_for(lambda: checkpointed(run) or live.poll() is not None)
        live.send_signal(signal.SIGINT)
        _, stderr = live.communicate(timeout=120)
    finally:
        live.kill()
    assert live.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and f"rl-gns train --resume {run}" in stderr
    assert latest_checkpoint(run).env_steps == logged_steps(run)[-1]


def test_a_run_whose_console_reader_is_gone_trains_on_and_stops_on_sigterm_with_a_checkpoint(tmp_path):
    # ``rl-gns train ... | tee log`` where the signal ends tee first: the console's pipes close, then SIGTERM arrives.
    run = tmp_path / "run"
    live = start("train", *TINY, "--total-steps", "1000000", "--out", str(run))
    try:
        wait_for(lambda: checkpointed(run) or live.poll() is not None)
        live.stdout.close()
        live.stderr.close()
        closed_at = latest_checkpoint(run).env_steps
        wait_for(lambda: latest_checkpoint(run).env_steps > closed_at + 64 or live.poll() is not None)
        assert live.poll() is None  # two iterations later, each printed into the closed pipe, it still trains
        live.send_signal(signal.SIGTERM)
        live.wait(timeout=120)
    finally:
        live.kill()
    assert live.returncode == 128 + signal.SIGTERM
    assert latest_checkpoint(run).env_steps == logged_steps(run)[-1] > closed_at + 64
    assert not (run / "summary.json").exists()


def test_a_run_whose_terminal_hangs_up_stops_with_a_checkpoint_and_status_129(tmp_path):
    # The terminal closes: writing to it fails (EIO), and SIGHUP arrives.
    run = tmp_path / "run"
    terminal, console = pty.openpty()
    # SIGHUP as a terminal's process has it, even where these tests run under nohup (which rl-gns respects)
    live = subprocess.Popen([*CLI, "train", *TINY, "--total-steps", "1000000", "--out", str(run)], stdout=console,
                            stderr=console, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))  # fmt: skip
    os.close(console)
    try:
        wait_for(lambda: checkpointed(run) or live.poll() is not None)
        os.close(terminal)
        live.send_signal(signal.SIGHUP)
        live.wait(timeout=120)
    finally:
        live.kill()
    assert live.returncode == 128 + signal.SIGHUP
    assert latest_checkpoint(run).env_steps == logged_steps(run)[-1]
    assert not (run / "summary.json").exists()


def test_nohup_keeps_sighup_ignored(tmp_path):
    run = tmp_path / "run"
    live = subprocess.Popen(["nohup", *CLI, "train", *TINY, "--total-steps", "1000000", "--out", str(run)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(lambda: checkpointed(run) or live.poll() is not None)
        live.send_signal(signal.SIGHUP)
        time.sleep(2)
        assert live.poll() is None  # it trains on
        live.send_signal(signal.SIGTERM)
        live.wait(timeout=120)
    finally:
        live.kill()
    assert live.returncode == 128 + signal.SIGTERM


def test_resume_refuses_logs_that_no_longer_reach_the_checkpoint(tmp_path):
    run = tmp_path / "run"
    first = run_cli("train", *TINY, "--total-steps", "512", "--max-wall-minutes", "1e-9", "--out", str(run))
    assert first.returncode == 0, first.stderr[-2000:]
    assert run_cli("train", "--resume", str(run), "--max-wall-minutes", "1e-9").returncode == 0  # two iterations
    progress = run / "progress.csv"
    header, rows = read_rows(progress)
    progress.write_text(",".join(header) + "\n" + "".join(",".join(row) + "\n" for row in rows[:-1]))  # one row cut
    cut = run_cli("train", "--resume", str(run))
    assert cut.returncode == 2 and "progress.csv holds 1 rows up to the checkpoint" in one_line(cut)
    progress.unlink()  # deleted
    deleted = run_cli("train", "--resume", str(run))
    assert deleted.returncode == 2 and "progress.csv holds 0 rows" in one_line(deleted)


@pytest.mark.slow
def test_a_second_sweep_is_refused_and_sigterm_to_a_sweep_stops_its_workers_with_checkpoints_and_leaves_no_orphan(
    tmp_path,
):
    out = tmp_path / "sweep"
    args = ["sweep", "--env", "BeamRider", "--backend", "ram", "--n-envs", "2,4", "--n-steps", "32", "--seeds", "1",
            "--lr-points", "1", "--targets", "100000", "--budget-steps", "1000000", "--workers", "2",
            "--checkpoint-minutes", "0", "--out", str(out)]  # fmt: skip
    sweep = start(*args)
    runs = [out / "runs" / f"n{n:04d}_lr{lr}_s0" for n, lr in ((2, "1.25e-04"), (4, "1.77e-04"))]
    try:
        wait_for(lambda: all(checkpointed(run) for run in runs) or sweep.poll() is not None)
        specs = {path: path.read_bytes() for path in (out / "specs").iterdir()}
        second = run_cli(*args)  # a second writer of the sweep, while its runs train
        assert second.returncode == 2 and f"{out} is being written by process {sweep.pid}" in one_line(second)
        assert {path: path.read_bytes() for path in (out / "specs").iterdir()} == specs
        sweep.send_signal(signal.SIGTERM)
        stdout, stderr = sweep.communicate(timeout=120)
    finally:
        sweep.kill()
    assert sweep.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "stopped by SIGTERM" in stderr and "rerun to go on" in stderr
    assert "2 paused by SIGTERM, 0 not started" in stdout  # not by a deadline the user never set
    workers = subprocess.run(["ps", "-eo", "args", "-ww"], capture_output=True, text=True).stdout
    assert str(out / "specs") not in workers  # no worker outlived the sweep
    for run in runs:
        assert latest_checkpoint(run) is not None and not (run / "error.txt").exists()
    rerun = run_cli(*args, "--max-wall-minutes", "0.01")
    assert "2 to resume from checkpoints" in rerun.stdout, rerun.stdout + rerun.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--learning-rate", "inf"], "--learning-rate must be a finite number"),
        (["--learning-rate", "1e999"], "--learning-rate must be a finite number"),
        (["--gamma", "nan"], "--gamma must be a finite number"),
        (["--checkpoint-minutes", "nan"], "--checkpoint-minutes must be a finite number"),
        (["--device", "banana"], "is not a torch device"),
        (["--device", "mps"], "no Apple GPU"),
        (["--torch-threads", "0"], "--torch-threads must be >= 1"),
        (["--seed", "-1"], "--seed must be in [0,"),
        (["--total-steps", str(2**63 - 1)], "--total-steps must be at most 2,147,483,"),
        (["--clip-range", "-1"], "--clip-range must be > 0"),
        (["--sticky-actions", "2.0"], "--sticky-actions is a probability below 1"),
        (["--gae-lambda", "1.5"], "--gae-lambda must be in [0, 1]"),
        (["--ent-coef", "-0.1"], "--ent-coef must be >= 0"),
        (["--n-envs", "100000"], "GiB free"),
        (["--minibatch-size", "300"], "--minibatch-size 300 must divide the rollout size 1024"),
        (["--minibatch-size", "0"], "--minibatch-size must be >= 1, got 0"),
        (["--regime", "one-step", "--n-envs", "0"], "--n-envs must be >= 1, got 0"),  # not the minibatch it derives
        (["--n-envs", "2", "--n-steps", "1", "--minibatch-size", "1"], "leaves fewer than 2 per rank"),
        (["--device", "cpu:5"], "torch has one CPU device"),
        (["--gns-scheme"], "noise scale schemes must be distinct names"),
        (["--gns-losses", "value", "value"], "noise scale losses must be distinct names"),
    ],
)
def test_bad_settings_are_refused_in_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    status = main(["train", *args, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_out_must_name_a_directory_and_a_sweep_refuses_nan_targets(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--out", ""]) == 2 and "not the current one" in capsys.readouterr().err
    assert main(["sweep", "--targets", "nan", "--out", "sweep"]) == 2
    assert "--targets must be a finite number, got nan" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--first-seed", "-1"], "--first-seed and --seeds: the seeds -1..1 must lie in [0,"),
        (["--first-seed", str(2**31 - 2)], "--first-seed and --seeds: the seeds 2147483646..2147483648"),
        (["--budget-steps", str(2**63 - 1)], "--budget-steps must be at most 2,147,483,"),
    ],
)
def test_a_sweep_names_its_own_flags_for_seeds_out_of_range(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--targets", "100", "--seeds", "3", *args, "--out", "sweep"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--env", "BeamRider", "--backend", "ram"],
        ["sweep", "--env", "BeamRider", "--backend", "ram", "--targets", "100", "--n-envs", "2,4"],
        ["scaling", "--env", "BeamRider", "--n-envs", "2"],
        ["bench"],
    ],
    ids=["train", "sweep", "scaling", "bench"],
)
def test_an_out_that_is_a_file_or_under_one_is_one_line(tmp_path, capsys, args):
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    for out, message in ((afile, f"--out {afile} is a file"), (afile / "sub", f"--out {afile / 'sub'}: {afile} is a file")):
        assert main([*args, "--out", str(out)]) == 2
        stderr = capsys.readouterr().err
        assert stderr.count("\n") == 1 and message in stderr, stderr
    assert afile.read_text() == "x\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--targets", "300", "300"], "--targets repeats a value: [300.0, 300.0]"),
        (["--targets", "300", "--n-envs", "4", "4"], "--n-envs repeats a value: [4, 4]"),
        (["--targets", "300", "--n-envs", "4", "--n-steps-grid", "32", "32"], "--n-steps-grid repeats a value"),
        (["--targets", "300", "--lr-points", "3", "--lr-factor", "1"], "the learning rates of a size coincide"),
        (["--targets", "300", "--lr-points", "3", "--lr-factor", "1.0001"], "the learning rates of a size coincide"),
    ],
)
def test_a_sweep_whose_runs_would_coincide_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    status = main(["sweep", "--backend", "ram", *args, "--out", "sweep"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def never_enumerated(*args, **kwargs):
    raise AssertionError("the runs were enumerated before their count was checked")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "100000000"], "2 sizes x 3 --lr-points x 100,000,000 --seeds make 600,000,000 runs; a sweep holds"),
        (["--lr-points", "100000000"], "2 sizes x 100,000,000 --lr-points x 2 --seeds make 400,000,000 runs"),
        (["--lr-points", "2201", "--lr-factor", "2"], "--lr-points 2201 spaced by --lr-factor 2 span more than"),
        (["--lr-points", "3", "--lr-factor", "1e-30"], "--lr-points 3 spaced by --lr-factor 1e-30 span more than"),
    ],
)
def test_a_sweep_of_more_runs_or_learning_rates_than_can_be_is_refused_before_they_are_enumerated(
    tmp_path, monkeypatch, capsys, args, message
):
    """``--seeds 100000000`` enumerated its runs for minutes and 13 GB; ``--lr-points 100000000`` ended in an
    OverflowError of the grid's far end: both are refused from their counts, at once."""
    monkeypatch.chdir(tmp_path)
    if "--lr-factor" not in args:
        monkeypatch.setattr("rl_gns.experiments.sweep.SweepConfig.runs", never_enumerated)
    status = main(["sweep", "--backend", "ram", "--targets", "300", "--n-envs", "2", "4", *args, "--out", "sweep"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_benchmark_of_more_runs_than_can_be_is_refused_before_they_are_enumerated(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("rl_gns.experiments.bench.runs", never_enumerated)
    assert main(["bench", "--suite", "smoke", "--seeds", "100000000", "--out", "bench"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 games x 100,000,000 seeds make 200,000,000 runs; a benchmark holds" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_a_read_only_out_is_refused(tmp_path, capsys):
    tmp_path.chmod(0o500)
    try:
        assert main(["train", "--out", str(tmp_path / "run")]) == 2 and "is not writable" in capsys.readouterr().err
    finally:
        tmp_path.chmod(0o700)


def test_config_json_is_written_only_once_the_run_can_start(tmp_path):
    """The summary agrees with config.json: an overwritten run keeps no file of the earlier one."""
    run = tmp_path / "run"
    assert run_cli("train", *TINY, "--total-steps", "128", "--out", str(run)).returncode == 0
    assert run_cli("train", *TINY, "--total-steps", "192", "--overwrite", "--out", str(run)).returncode == 0
    config, summary = (json.loads((run / name).read_text()) for name in ("config.json", "summary.json"))
    assert config["total_steps"] == 192 and summary["env_steps"] == 192 and RunDir(run).env_steps() == 192
    assert read_rows(run / "episodes.csv.xz")[0] == ["env_steps", "score", "length_frames", "wall_s"]  # compact: finished
    assert not (run / "progress.csv").exists() and not (run / "episodes.csv").exists()
    for name in ("config.json", "progress.csv.xz", "episodes.csv.xz", "summary.json"):  # the user's umask, not 0600
        assert (run / name).stat().st_mode & 0o777 == 0o666 & ~user_umask(), name


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_a_lock_that_is_not_a_file_is_refused_and_left_alone(tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    run = tmp_path / "run"
    run.mkdir()
    {
        "symlink": lambda: (run / LOCK).symlink_to(victim),
        "directory": (run / LOCK).mkdir,
        "fifo": lambda: os.mkfifo(run / LOCK),
    }[kind]()
    for take in (check_unlocked, lambda path: RunLock(path).acquire()):
        with pytest.raises(RunLockedError, match="is not a lock file"):
            take(run)
    assert victim.read_text() == "keep me\n"


def test_train_refuses_a_directory_of_other_files(tmp_path, capsys):
    out = tmp_path / "specs"
    out.mkdir()
    (out / "a.json").write_text("{}\n")
    assert main(["train", "--env", "Pong", "--backend", "ram", "--out", str(out)]) == 2
    assert "holds files and no run (config.json): a.json" in capsys.readouterr().err
    assert [path.name for path in out.iterdir()] == ["a.json"]
    (out / "a.json").unlink()
    for name in ("error.txt", "log.txt"):  # what a sweep leaves in a run that failed before it started
        (out / name).write_text("killed\n")
    check_out(out, overwrite=True)


def killed_while_writing(path: Path) -> None:
    """Kill (SIGKILL) a process in :func:`write_atomically` of ``path``, after its temporary file is written."""
    code = (
        "import os, signal, sys; from pathlib import Path; from rl_gns.records.logs import write_atomically; "
        "os.replace = lambda *_: os.kill(os.getpid(), signal.SIGKILL); write_atomically(Path(sys.argv[1]), '{}')"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr


@pytest.mark.parametrize("kind", ["run", "sweep"])
def test_a_record_killed_while_written_leaves_a_directory_its_command_takes_again(tmp_path, kind, capsys):
    """A kill that Python cannot catch, while a command writes its record, leaves the record's temporary file: the
    same command takes the directory again (a probe resumed after its branch was killed as it started); a file of
    another name is still refused."""
    out, record = tmp_path / kind, {"run": "config.json", "sweep": "sweep.json"}[kind]
    out.mkdir()
    killed_while_writing(out / record)
    (torn,) = out.iterdir()
    assert torn.name.startswith(f".{record}.") and not (out / record).exists()
    take = {"run": lambda: check_out(out, overwrite=False), "sweep": lambda: check_directory(out, "sweep", {})}[kind]
    take()
    for stranger in (f".{record}.notes", ".notes.k3x9_a2b"):  # not a temporary file, or not one of the command's
        (out / stranger).write_text("mine\n")
        with pytest.raises(FileExistsError, match=rf"holds files and no {kind} \({record}\): \{stranger}; choose"):
            take()
        (out / stranger).unlink()


def test_a_directory_lock_is_shared_within_a_process_and_refused_to_another(tmp_path):
    """A probe holds its directory and the sweep of its branches takes it again; another process is refused until
    the last holder lets go."""
    take = f"from pathlib import Path; from rl_gns.records.lock import RunLock; RunLock(Path({str(tmp_path)!r})).acquire()"
    other = [sys.executable, "-c", take]
    with RunLock(tmp_path).acquire():
        with RunLock(tmp_path).acquire():
            pass
        refused = subprocess.run(other, capture_output=True, text=True)
        assert refused.returncode == 1 and f"is being written by process {os.getpid()}" in refused.stderr
    assert subprocess.run(other, capture_output=True, text=True).returncode == 0


def test_a_sweep_refuses_a_finished_run_that_trained_other_settings(tmp_path, capsys):
    """A finished run is not trained again, so it counts for the sweep only if it trained the sweep's settings."""
    out = Path(shutil.copytree(RESULTS / "resume" / "beamrider_ram_sweep", tmp_path / "sweep"))
    args = ["sweep", "--env", "BeamRider", "--backend", "ram", "--n-steps", "32", "--targets", "1000",
            "--n-envs", "2,4,8,16", "--seeds", "1", "--budget-steps", "100000", "--lr-ref", "0.0005",
            "--lr-points", "1", "--window", "20", "--out", str(out)]  # fmt: skip
    assert main(args) == 0 and "4 finished before, 0 to resume" in capsys.readouterr().out
    run = out / "runs" / "n0004_lr3.54e-04_s0"
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "learning_rate": 1e-3, "clip_range": 0.2}))
    specs = {path: path.read_bytes() for path in (out / "specs").iterdir()}
    assert main(args) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and f"{run} finished with other settings (clip_range, learning_rate)" in stderr
    assert {path: path.read_bytes() for path in (out / "specs").iterdir()} == specs


@pytest.mark.parametrize(
    ("args", "holds", "message"),
    [
        (["train", "--env", "BeamRider", "--backend", "ram"], "sweep", "holds a sweep (sweep.json), not a run"),
        (
            ["sweep", "--env", "BeamRider", "--targets", "100", "--n-envs", "2,4"],
            "run",
            "holds a run (config.json), not a sweep",
        ),
        (["bench"], "sweep", "holds a sweep (sweep.json), not a benchmark"),
        (["scaling", "--env", "BeamRider", "--n-envs", "2"], "run", "holds a run (config.json), not a scaling measurement"),
    ],
    ids=["train into a sweep", "sweep into a run", "bench into a sweep", "scaling into a run"],
)
def test_a_directory_that_holds_another_kind_of_study_is_refused(tmp_path, capsys, args, holds, message):
    source = RESULTS / "resume" / "beamrider_ram_sweep" if holds == "sweep" else RESULTS / "runs" / "beamrider_100k"
    out = Path(shutil.copytree(source, tmp_path / "out"))
    before = sorted(path.relative_to(out) for path in out.rglob("*"))
    assert main([*args, "--out", str(out)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and f"--out {out} {message}: use another --out" in stderr, stderr
    assert sorted(path.relative_to(out) for path in out.rglob("*")) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--clip-range", "1e300"], "--clip-range must lie within float32's range"),
        (["train", "--torch-threads", "100000"], "--torch-threads must be at most this machine's"),
        (["analyze", ".", "--max-rms-log-residual", "-1"], "--max-rms-log-residual must be > 0"),
    ],
    ids=["float32 overflow", "threads", "threshold"],
)
def test_settings_beyond_what_can_run_are_refused_in_one_line(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main([*args, *(["--out", "run"] if args[0] == "train" else [])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_worker_whose_sweep_ended_while_it_started_ends_at_once():
    # The worker is told the sweep's pid; a parent that is another process means the sweep is gone already.
    code = "from rl_gns.experiments.launch import die_with_parent; import time; die_with_parent(1); time.sleep(60)"
    worker = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert worker.returncode == -signal.SIGTERM


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--env", "BeamRider", "--backend", "ram"],
        ["sweep", "--env", "BeamRider", "--targets", "100", "--n-envs", "2,4"],
        ["bench"],
        ["scaling", "--env", "BeamRider", "--n-envs", "2"],
    ],
    ids=["train", "sweep", "bench", "scaling"],
)
@pytest.mark.parametrize("inside", ["run", "sweep"])
def test_nothing_is_written_inside_another_run_or_study(tmp_path, capsys, args, inside):
    """A run's directory is its own, and a study writes only its own runs (``<study>/runs/<name>``), also when the
    path reaches it through a link."""
    source = RESULTS / "runs" / "beamrider_100k" if inside == "run" else RESULTS / "resume" / "beamrider_ram_sweep"
    holder = Path(shutil.copytree(source, tmp_path / inside))
    (tmp_path / "link").symlink_to(holder, target_is_directory=True)
    before = sorted(path.relative_to(holder) for path in holder.rglob("*"))
    for out in (holder / "sub" / "out", tmp_path / "link" / "out"):
        assert main([*args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"lies inside the {inside} {holder.resolve()}" in err, err
    assert sorted(path.relative_to(holder) for path in holder.rglob("*")) == before


def test_a_study_refuses_a_directory_of_other_files_but_not_its_own_empty_runs(tmp_path, capsys):
    out = tmp_path / "sweep"
    (out / "data").mkdir(parents=True)
    (out / "notes.txt").write_text("mine\n")
    args = ["sweep", "--env", "BeamRider", "--targets", "100", "--n-envs", "2,4", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds files and no sweep (sweep.json): data, notes.txt" in err, err
    shutil.rmtree(out)
    (out / "runs").mkdir(parents=True)  # what a sweep stopped before its record leaves
    (out / LOCK).write_text("")
    check_directory(out, "sweep", {})


def test_a_probe_holding_its_sweep_still_writes_its_anchor_and_branches(tmp_path):
    """A probe's directory holds probe.json and, once its branches started, sweep.json: its anchor and its runs are
    its own, anything else inside it is not."""
    probe = tmp_path / "probe"
    probe.mkdir()
    for record in ("probe.json", "sweep.json"):
        (probe / record).write_text("{}\n")
    check_not_inside(probe / "anchor", "run")
    check_not_inside(probe / "runs" / "n0004_t0032_lr2.50e-04_s0", "run")
    with pytest.raises(ValueError, match=r"lies inside the sweep and probe .*probe \(sweep.json, probe.json\)"):
        check_not_inside(probe / "mine", "run")
    with pytest.raises(ValueError, match="lies inside the sweep and probe"):
        check_not_inside(probe / "runs", "sweep")


def test_a_run_that_another_process_took_is_not_written_by_the_sweep(tmp_path):
    """A run taken by another process after the sweep checked it fails in the sweep's count, and its directory
    stays the other process's: no error.txt."""
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    log = tmp_path / "log.txt"
    log.write_text(f"rl-gns run: {run.path} is being written by process 1\n")
    with lock_held_elsewhere(run.path):
        assert record_outcome(run, 2, log) == "failed"
    assert not run.file(ERROR).exists()
    assert record_outcome(run, 2, log) == "failed"
    assert "is being written" in run.file(ERROR).read_text()


def test_a_run_that_failed_says_to_resume_only_once_it_has_a_checkpoint(tmp_path):
    from rl_gns.experiments.train import how_to_go_on

    assert "stopped before its first checkpoint: start it again (--overwrite)" in how_to_go_on(tmp_path)
    (tmp_path / CHECKPOINTS / f"{64:012d}").mkdir(parents=True)
    assert how_to_go_on(tmp_path) == f"go on from the last checkpoint with: rl-gns train --resume {tmp_path}"


def test_train_refuses_a_run_directory_its_study_does_not_make(tmp_path, capsys):
    """A run trained into a sweep's runs/ by hand would be read as one of the sweep's; the sweep's own runs are
    written by its workers, which rl-gns run starts."""
    sweep = tmp_path / "sweep"
    (sweep / "runs").mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps({"runs": ["a"]}))
    assert main(["train", "--env", "Pong", "--backend", "ram", "--out", str(sweep / "runs" / "x")]) == 2
    assert f"--out {sweep / 'runs' / 'x'} lies inside the sweep" in capsys.readouterr().err
    assert sorted(path.name for path in (sweep / "runs").iterdir()) == []
    check_out(sweep / "runs" / "a", overwrite=True)  # the sweep's own run


def test_a_finished_run_keeps_no_lock_file_and_its_next_writer_still_holds_one(tmp_path):
    run = tmp_path / "run"
    result = run_cli("train", *TINY, "--total-steps", "64", "--out", str(run))
    assert result.returncode == 0, result.stderr[-2000:]
    assert (run / "summary.json").exists() and not (run / LOCK).exists()
    with RunLock(run).acquire():  # the next writer of the directory (an --overwrite) takes the lock anew
        probe = [sys.executable, "-c", "import sys; from pathlib import Path; from rl_gns.records.lock import "
                 "check_unlocked; check_unlocked(Path(sys.argv[1]))", str(run)]  # fmt: skip
        assert subprocess.run(probe, capture_output=True, text=True).returncode != 0


def test_a_file_written_whole_is_utf8_and_names_a_directory_that_is_not_utf8_escaped(tmp_path):
    """A report naming a run under a name that is not UTF-8 (a surrogate escape) is still written, as UTF-8."""
    write_atomically(tmp_path / "report.md", "# a run at bad\udcffdir/run — 5 games\n")
    assert (tmp_path / "report.md").read_bytes() == "# a run at bad\\udcffdir/run — 5 games\n".encode()
