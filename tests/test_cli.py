"""The real ``rl-gns`` CLI in a subprocess, on real ALE with a tiny budget."""

import dataclasses
import json
import re
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import docstring_parser
import numpy as np
import pytest
import torch
from conftest import logged_scalars

from rl_gns import commands
from rl_gns.cli import main
from rl_gns.records.compact import is_kept
from rl_gns.records.rundir import RunDir

pytestmark = pytest.mark.atari

CLI = [sys.executable, "-m", "rl_gns"]
#: A saved agent of Space Invaders from RAM (6 actions), for --init-from.
SPACE_INVADERS = Path(__file__).resolve().parents[1] / "results/probes/trunks/SpaceInvaders/snapshots/000000050176.zip"


def run_cli(*args, **kwargs):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, **kwargs)


def refuse_non_json(constant: str) -> None:
    """``json.loads``'s ``parse_constant``: Python writes ``NaN``/``Infinity``, which JSON (and other languages) refuse."""
    raise AssertionError(f"{constant} is not JSON")


def test_train_end_to_end(tmp_path):
    out = tmp_path / "beam"
    tiny = ["--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32", "--gns-every", "1"]
    result = run_cli("train", "--env", "ALE/BeamRider-v5", "--total-steps", "128", "--out", str(out), *tiny)
    assert result.returncode == 0, result.stderr
    files = {p.name for p in out.iterdir()}
    assert {"config.json", "progress.csv.xz", "episodes.csv.xz", "model.zip", "summary.json", "training.png"} <= files
    assert not {"progress.csv", "episodes.csv"} & files  # a finished run keeps its logs compact
    assert any(name.startswith("events.out.tfevents") for name in files)

    config = json.loads((out / "config.json").read_text())
    assert config["game"] == "beam_rider" and config["rollout_size"] == 64
    assert config["gns_sizes"] == {"envs": {"b_small": 32, "b_big": 64}}  # default: two groups of one trajectory

    progress = RunDir(out).progress()
    np.testing.assert_array_equal(progress["time/total_timesteps"], [64, 128])
    logged = logged_scalars(out)  # every logged value: the compact progress.csv.xz keeps those some reader reads
    off_tensorboard = {"time/iterations", "time/total_timesteps"}  # SB3 leaves these out of TensorBoard
    assert set(progress) - off_tensorboard == {key for key in logged if is_kept(key)} and off_tensorboard <= set(progress)
    for key in set(progress) - off_tensorboard:
        np.testing.assert_allclose(progress[key], logged[key], rtol=1e-6)
    progress = logged
    for loss in ("policy", "value", "total"):
        # B_simple itself is NaN while the averaged |G|² is not yet positive (b_big = 64 here)
        assert f"gns/envs/b_simple_{loss}" in progress
        for key in (f"gns/envs/{q}_{loss}{raw}" for q in ("g2", "trace_sigma") for raw in ("_raw", "")):
            assert np.all(np.isfinite(progress[key])), key
    assert np.all(progress["gns/envs/trace_sigma_policy"] > 0)
    assert np.all(np.isfinite(progress["gns/grad_norm_preclip"])) and np.all(np.isfinite(progress["train/loss"]))

    summary = json.loads((out / "summary.json").read_text(), parse_constant=refuse_non_json)  # JSON has no NaN
    assert summary["env_steps"] == 128 and summary["frames"] == 512
    assert summary["advice"]["predictor"] == "env_value" and summary["advice"]["text"]
    assert "\n".join(summary["advice"]["text"]) in result.stdout  # printed at the end of training
    low, high = summary["b_simple_total_envs_run_average_ci95"]  # 2 measurements: no interval yet
    assert low == 0.0 and high is None
    advice = run_cli("advise", str(out), "--predictor", "env_xM_total")
    assert advice.returncode == 0 and re.match(r"(critical rollout size|noise scale) \(env_xM_total\)", advice.stdout)
    not_measured = run_cli("advise", str(out), "--predictor", "mb_total")
    assert not_measured.returncode == 2 and "did not measure the total loss with scheme minibatch" in not_measured.stderr

    (out / "training.png").unlink()
    assert run_cli("plot", str(out)).returncode == 0  # redrawn from the files on disk
    assert (out / "training.png").stat().st_size > 8_000


def test_train_without_the_noise_scale_says_so(tmp_path):
    out = tmp_path / "beam"
    tiny = ["--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32", "--no-gns"]
    result = run_cli("train", "--env", "BeamRider", "--total-steps", "64", "--out", str(out), *tiny)
    assert result.returncode == 0, result.stderr
    assert "critical rollout size: no noise scale measured (--no-gns); `rl-gns probe` measures it directly" in result.stdout
    assert not any(key.startswith("gns/") for key in [*RunDir(out).progress(), *logged_scalars(out)])

    again = run_cli("train", "--total-steps", "128", "--out", str(out), *tiny)
    assert again.returncode == 2 and "already holds a run" in again.stderr


def test_unknown_game_exits_with_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "nothing"
    result = run_cli("train", "--env", "BeamRyder", "--out", str(out))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "did you mean BeamRider?" in result.stderr and "Breakout, " in result.stderr
    assert not out.exists()


def test_invalid_noise_scale_settings_exit_before_writing(tmp_path):
    out = tmp_path / "nothing"
    result = run_cli("train", "--gns-scheme", "minibatch", "--gns-b-big", "1", "--out", str(out))
    assert result.returncode == 2 and "b_small < b_big" in result.stderr
    assert not out.exists()


def test_help_documents_units():
    result = run_cli("train", "--help")
    assert result.returncode == 0
    for phrase in ("--total-steps", "agent steps", "--n-envs", "--gns-b-big", "samples", "--device"):
        assert phrase in result.stdout


def config_dataclasses(cls: type) -> set[type]:
    """``cls`` and every dataclass it inherits from or holds as a field (in ``X | None``, ``tuple[X, ...]`` too)."""
    found: set[type] = set()
    todo = [cls]
    while todo:
        current = todo.pop()
        for base in current.__mro__:
            if base in found or not dataclasses.is_dataclass(base):
                continue
            found.add(base)
            for hint in typing.get_type_hints(base, include_extras=True).values():
                stack = [hint]
                while stack:
                    tp = stack.pop()
                    stack.extend(typing.get_args(tp))
                    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
                        todo.append(tp)
    return found


def test_every_flag_help_is_one_line():
    # tyro keeps a docstring's line break before a line that does not start with a letter (and its indentation):
    # a field docstring over two lines shows a hard break mid-sentence in --help
    from rl_gns.registry import COMMANDS

    classes = set().union(*(config_dataclasses(command.load()[0]) for command in COMMANDS.values()))
    assert {"TrainConfig", "EnvSettings", "MeasureSettings", "ExecutionConfig", "ProbeConfig"} <= {c.__name__ for c in classes}
    multi_line = [
        f"{cls.__module__}.{cls.__qualname__}.{param.arg_name}"
        for cls in classes
        for param in docstring_parser.parse_from_object(cls).params  # what tyro reads
        if param.description and "\n" in param.description
    ]
    assert not multi_line, f"field docstrings over more than one line: {sorted(multi_line)}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--total-steps", "-5"], "--total-steps must be >= 1"),
        (["train", "--total-steps", "0"], "--total-steps must be >= 1"),
        (["train", "--n-envs", "0", "--no-gns"], "--n-envs must be >= 1"),
        (["train", "--n-envs", "-3", "--no-gns"], "--n-envs must be >= 1, got -3"),
        (["train", "--gns-b-big", "0", "--gns-scheme", "minibatch"], "--gns-b-big must be >= 1, got 0"),
        (["train", "--gns-every", "0"], "--gns-every must be >= 1, got 0"),
        (["train", "--learning-rate", "-1"], "--learning-rate must be >= 0"),
        (["train", "--learning-rate", "3e38"], "--learning-rate must be 0 (a fixed policy) or in [1.18e-38, 1]"),
        (["train", "--learning-rate", "1e-40"], "--learning-rate must be 0 (a fixed policy) or in [1.18e-38, 1]"),
        (["sweep", "--lr-ref", "0.9", "--lr-points", "3", "--lr-factor", "2"], "--lr-points 3) holds 1.27 at rollout size"),
        (["sweep", "--lr-points", "2", "--lr-factor", "1e30"], "grid (--lr-ref 0.00025, --lr-rule sqrt, --n-envs-ref 8"),
        (["train", "--n-envs", "100000000000000000000"], "--n-envs must be below 2,147,483,647"),
        (["analyze", "no_sweep", "--bootstrap", "100000000000"], "--bootstrap must be at most 100,000 resamples"),
        (["sweep", "--lr-points", "3", "--lr-factor", "1e-300"], "span more than the learning rates a run may have"),
        (["train", "--device", "cuda"], "no CUDA device"),
        (["sweep", "--budget-steps", "-10"], "--budget-steps must be >= 1"),
        (["sweep", "--n-envs", "0,4"], "--n-envs must be >= 1"),
        (["sweep", "--n-envs=-2,4"], "--n-envs must be >= 1, got [-2, 4]"),
        (["probe", str(SPACE_INVADERS.parents[1]), "--at", "50000", "--n-envs=-2,4"], "--n-envs must be >= 1, got [-2, 4]"),
        (["train", "--checkpoint-minutes", "-1"], "--checkpoint-minutes must be >= 0"),
        (["train", "--checkpoint-steps", "0"], "--checkpoint-steps must be >= 1"),
        (["train", "--max-wall-minutes", "0"], "--max-wall-minutes must be > 0"),
        (["train", "--resume", "no_such_run"], "no run there"),
        (["train", "--adaptive-r", "64", "--no-anneal", "--adaptive-predictor", "env_advantage"], "unknown loss"),
        (["train", "--adaptive-predictor", "env_bogus"], "unknown loss in candidate 'env_bogus'"),
        (["train", "--nproc", "0"], "--nproc must be >= 1"),
        (["train", "--no-gns", "--gns-every", "8"], "--gns-every 8 has no effect with --no-gns"),
        (["train", "--no-gns", "--gns-losses", "value"], "--gns-losses value has no effect with --no-gns"),
        (["train", "--max-n-envs", "16"], "--max-n-envs 16 has no effect without --adaptive-r"),
        (["sweep", "--no-gns", "--gns-scheme", "minibatch"], "--gns-scheme minibatch has no effect with --no-gns"),
        (["train", "--n-epochs", "100000000000000000000"], "--n-epochs must be at most 1,000 passes over a rollout"),
        (["scaling", "--n-epochs", "1001"], "--n-epochs must be at most 1,000 passes over a rollout"),
        (["scaling", "--target", "20"], "--target 20 has no effect without --sweep"),
        (["scaling", "--device", "cuda"], "no CUDA device"),
        (["sweep", "--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["scaling", "--device", "nonsense"], "--device 'nonsense' is not a torch device"),
        (["train", "--snapshot-steps", "512", "--total-steps", "256"], "--snapshot-steps 512 has no effect past --total"),
        (["train", "--adaptive-r", "1", "--max-n-envs", "2", "--n-envs", "2", "--no-anneal"], "must be above --n-envs"),
        (["sweep", "--lr-points", "1", "--lr-factor", "3"], "--lr-factor 3.0 has no effect with --lr-points 1"),
        (["sweep", "--lr-points", "1", "--ray-address", "auto"], "--ray-address auto has no effect with --executor local"),
        (["sweep", "--lr-points", "1", "--executor", "ray", "--workers", "3"], "--workers 3 has no effect with --executor"),
        (["train", "--nproc", "3", "--n-envs", "8"], "--nproc 3 must divide --n-envs 8"),
        (["train", "--nproc", "2", "--adaptive-r", "64", "--no-anneal"], "cannot be used with --nproc > 1"),
        (["sweep", "--max-wall-minutes", "-1"], "--max-wall-minutes must be > 0"),
        (["sweep", "--workers", "0"], "--workers must be >= 1"),
        (["sweep", "--checkpoint-minutes", "-2"], "--checkpoint-minutes must be >= 0"),
        (["sweep", "--edge-rounds", "-1"], "--edge-rounds must be >= 0, got -1"),
        (["targets", "null", "pilot", "--given", "nan"], "--given must be a finite number, got nan"),
        (["sweep", "--edge-rounds", "2", "--lr-points", "1"], "--edge-rounds needs a grid with an inside: --lr-points 3"),
        (["analyze", "no_such_sweep"], "not a sweep directory"),
        (["advise", "no_such_run"], "holds no progress.csv"),
        (["train", "--gns-scheme", "bogus"], "invalid choice 'bogus' for argument '--gns-scheme'"),
        (["train", "--n-env", "4"], "Unrecognized options: --n-env, 4; perhaps you meant --max-n-envs, --n-envs"),
        (["sweep", "--n-envs", "four"], "Error parsing --n-envs"),
        (["probe"], "Missing from rl-gns probe: PATH The run directory to probe. (required) (see rl-gns probe --help)"),
        (["train", "--env", "Breakout", "--backend", "ram", "--init-from", str(SPACE_INVADERS)], "has 6 actions; Breakout"),
    ],
)
def test_bad_input_exits_2_with_one_line_before_writing_anything(tmp_path, args, message):
    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "out"
    extra = ["--out", str(out)] if args[0] in ("train", "sweep", "scaling") else []
    result = run_cli(*args, *extra, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["sweep", "probe"])
def test_the_ray_executor_without_ray_says_how_to_install_it_before_anything_is_written(
    tmp_path, monkeypatch, capsys, command
):
    monkeypatch.setitem(sys.modules, "ray", None)  # what importing Ray does where the ray extra is not installed
    monkeypatch.chdir(tmp_path)
    what = ["--env", "Pong", "--targets", "1"] if command == "sweep" else [str(SPACE_INVADERS.parents[1]), "--at", "50000"]
    assert main([command, *what, "--lr-points", "1", "--executor", "ray", "--out", "study"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rl-gns {command}: error: --executor ray needs Ray"), err
    assert "pip install 'rl-gns[ray]'" in err and list(tmp_path.iterdir()) == []


def test_out_naming_a_file_is_refused(tmp_path):
    target = tmp_path / "a_file"
    target.write_text("not a directory")
    result = run_cli("train", "--out", str(target))
    assert result.returncode == 2 and "is a file" in result.stderr and target.read_text() == "not a directory"


def test_an_unknown_flag_points_to_the_commands_own_help():
    result = subprocess.run([*CLI, "train", "--bogus", "3"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "--bogus" in result.stderr + result.stdout and "rl-gns train --help" in result.stderr + result.stdout


def test_train_help_comes_from_its_settings_without_torch():
    """``rl-gns train --help`` is read from TrainConfig alone (no torch, SB3 or gymnasium), and it is the help the
    command itself parses with."""
    code = (
        "import sys; from rl_gns.commands import main; status = main(['train', '--help'])\n"
        "print(status, sorted(m for m in ('torch', 'stable_baselines3', 'gymnasium') if m in sys.modules), file=sys.stderr)"
    )
    fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert fast.stderr.strip() == "0 []", fast.stderr[-2000:]
    full = subprocess.run(
        [sys.executable, "-c", "from rl_gns.cli import main; main(['train', '--help'])"], capture_output=True, text=True
    )
    assert "--n-envs" in full.stdout and fast.stdout == full.stdout


def test_the_command_list_answers_without_importing_the_library():
    from rl_gns.registry import COMMANDS

    code = "import sys; from rl_gns.commands import main; main(['--help']); print('torch' in sys.modules)"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert listed.stdout.splitlines()[-1] == "False" and all(f"  {name} " in listed.stdout for name in COMMANDS)
    unknown = subprocess.run([*CLI, "nope"], capture_output=True, text=True)
    assert unknown.returncode == 2 and unknown.stderr.startswith("rl-gns: error: unknown command 'nope'; one of: train")


def test_help_into_a_reader_that_closes_early_ends_without_a_traceback():
    # ``rl-gns probe --help | head -1``: the reader is gone before the help is written.
    cli = subprocess.Popen([*CLI, "probe", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cli.stdout.close()
    assert cli.wait(timeout=60) == 1 and cli.stderr.read() == b""


def test_an_error_naming_a_path_with_a_line_break_stays_one_line(tmp_path, capsys):
    path = tmp_path / "bad\nname"
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad\\nname is not a sweep directory" in err


def test_ctrl_c_while_a_command_starts_is_one_line_with_status_130(monkeypatch, capsys):
    # Ctrl-C before the command's own handlers are in place (while the library is imported, or a second Ctrl-C).
    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "answer", interrupted)
    assert commands.main(["train", "--out", "run"]) == 130
    err = capsys.readouterr().err
    assert err == "rl-gns train: stopped by SIGINT before it could stop at a checkpoint; what it wrote is kept\n"
    assert commands.main(["analyze", "sweep"]) == 130  # a report has no checkpoint to stop at
    assert capsys.readouterr().err == "rl-gns analyze: stopped by SIGINT; what it wrote is kept\n"


def test_training_that_diverges_ends_in_one_line_naming_the_settings(tmp_path):
    """An entropy weight near float32's largest number makes the loss infinite while clipping keeps the parameters
    finite: the run stops there, in one line, rather than ending "done" having learned nothing."""
    tiny = ("--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32", "--total-steps", "256")
    result = run_cli("train", *tiny, "--ent-coef", "3e38", "--out", str(tmp_path / "run"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    last = result.stderr.splitlines()[-1]
    assert last.startswith("rl-gns train: error: training diverged: the loss of the update at 64 agent steps is -inf"), last


def test_a_warning_is_one_line_as_the_errors_are(monkeypatch, capsys):
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    assert main(["plot", "no-such-run"]) == 2
    capsys.readouterr()
    said = warnings.formatwarning(UserWarning("checkpoint a\nis torn"), UserWarning, "checkpoint.py", 204, "source")
    assert said == "UserWarning: checkpoint a\\nis torn\n"  # Python's own adds the file, the line and its source


def test_number_lists_split_at_commas_and_nothing_else():
    """``--n-envs=2,4`` is two counts as ``--n-envs 2,4`` is; a path or a scalar with a comma stays whole."""
    from rl_gns.cli import UsageError, split_number_lists
    from rl_gns.experiments.sweep import SweepConfig

    args = ["--n-envs=2,4", "--targets", "1,2.5", "--out", "1.5,2", "--lr-ref", "1_000.5", "--budget-steps", "1_000_000"]
    assert split_number_lists(args, SweepConfig) == [
        "--n-envs", "2", "4", "--targets", "1", "2.5", "--out", "1.5,2", "--lr-ref", "1_000.5", "--budget-steps",
        "1_000_000",
    ]  # fmt: skip
    for typo in (["--n-envs", "2_0"], ["--n-envs=4,2_0"], ["--budget-steps", "10_00"]):
        with pytest.raises(UsageError, match="an _ goes only between groups of three digits"):
            split_number_lists(typo, SweepConfig)


def test_a_flag_given_twice_takes_its_last_value():
    """What the committed probe protocols rely on: a later criterion's flags, appended, override an earlier one's
    (``results/probes_v7/protocol.sh`` after ``results/probes_v4/protocol.sh``)."""
    from rl_gns.cli import parse, split_number_lists
    from rl_gns.experiments.probe import ProbeConfig

    args = ["src", "--n-steps-grid", "32", "64", "--budget-steps", "400000", "--first-seed", "6"]
    args += ["--n-steps-grid=128,256,512", "--budget-steps", "1_000_000", "--first-seed", "9"]
    config = parse(ProbeConfig, split_number_lists(args, ProbeConfig), "rl-gns probe")
    assert isinstance(config, ProbeConfig)
    assert (config.n_steps_grid, config.budget_steps, config.first_seed) == ((128, 256, 512), 1_000_000, 9)


def test_a_number_with_a_stray_underscore_is_one_line_before_anything_is_written(tmp_path, capsys):
    assert main(["train", "--env", "Pong", "--n-envs", "2_0", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2_0: not a number for --n-envs" in err, err
    assert not (tmp_path / "run").exists()


def test_a_path_that_cannot_be_looked_at_names_the_flag_it_lies_in():
    """As root every directory can be searched, so the error a user without permission gets is built here."""
    from rl_gns.cli import path_error
    from rl_gns.experiments.sweep import SweepConfig

    config = SweepConfig(out=Path("locked/sweep"))
    denied = PermissionError(13, "Permission denied", "locked/sweep")
    assert path_error(denied, config) == "--out locked/sweep: Permission denied"
    inside = PermissionError(13, "Permission denied", str(Path("locked/sweep/sweep.json").absolute()))
    assert path_error(inside, config) == f"--out locked/sweep: {inside.filename}: Permission denied"
    elsewhere = PermissionError(13, "Permission denied", "other/run/config.json")
    assert path_error(elsewhere, config) == "other/run/config.json: Permission denied"
    assert path_error(denied, None) == "locked/sweep: Permission denied"
