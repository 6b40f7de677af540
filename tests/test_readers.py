"""Readers of run, sweep and benchmark directories on bad or partial files, through the real CLI.

Every case starts from committed results copied into ``tmp_path`` and damaged there: a row cut short by a kill,
a torn JSON file, a cell that is not a number, files with a header only, a sweep that reached no target. A
reader either uses what is whole or refuses with one line naming the file (exit status 2), never a traceback.
"""

import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import ONE_RATE, lock_held_elsewhere, rl_gns

from rl_gns.core.shipped import shipped_path
from rl_gns.experiments.config import TrainConfig, to_json
from rl_gns.records.checkpoint import FILES, FORMAT, MANIFEST, CheckpointError, sha256, verify
from rl_gns.records.rundir import RunDir, RunFileError, read_csv, read_json, read_sweep_results
from rl_gns.records.scaling_log import append_measurement, read_measurements
from rl_gns.records.tables import SUITES_FILE
from rl_gns.reports import (
    adaptive_report,
    bench_report,
    predictor_validation,
    probe_report,
    probe_validation,
    scaling_report,
    sweep_report,
)
from rl_gns.reports.adaptive_report import g2_resolution
from rl_gns.reports.figures import FigureError, save_plot

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: One finished training run (100k agent steps of Beam Rider, 99 logged rows, 69 games).
RUN = RESULTS / "runs" / "beamrider_100k"
#: A finished 4-size sweep (one seed, one learning rate per size) whose runs never reach its target 1000.
SWEEP = RESULTS / "resume" / "beamrider_ram_sweep"
#: Its run of rollout size 64, the only one whose score (20-game mean) passes 700.
SMALLEST = "n0002_lr2.50e-04_s0"
#: Adaptive runs of the same game (compare-adaptive).
ADAPTIVE = RESULTS / "sweeps" / "adaptive_beamrider_ram"
SCALING = RESULTS / "scaling" / "beamrider"


#: The commands that read a directory given as --out, with --report-only (the others take it as their first argument).
REPORT_ONLY = ("bench", "scaling")


def reading(command: str, directory: object) -> list:
    """The command line of ``command`` reading ``directory``: ``command DIR``, or ``command --report-only --out DIR``."""
    return [command, "--report-only", "--out", directory] if command in REPORT_ONLY else [command, directory]


def copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / source.name))


def assert_refused(status: int, stderr: str, *fragments: str) -> None:
    """Exit status 2 with one line on stderr that holds every fragment."""
    assert status == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("rl-gns "), stderr
    for fragment in fragments:
        assert fragment in stderr, stderr


def cut_last_line(path: Path, keep: int = 10) -> None:
    """Leave the first ``keep`` characters of the last line of ``path``: a row a kill cut short."""
    text = path.read_text()
    start = text.rstrip("\n").rfind("\n") + 1
    path.write_text(text[: start + keep])


def with_targets(sweep_dir: Path, targets: list[float]) -> Path:
    settings = json.loads((sweep_dir / "sweep.json").read_text())
    (sweep_dir / "sweep.json").write_text(json.dumps({**settings, "targets": targets}))
    return sweep_dir


def header_only(path: Path) -> None:
    path.write_text(path.read_text().split("\n", 1)[0] + "\n")


# 1. a row cut short by a kill


def test_read_csv_leaves_out_a_last_row_cut_short(tmp_path):
    whole = read_csv(RUN / "progress.csv")
    torn = tmp_path / "progress.csv"
    shutil.copy(RUN / "progress.csv", torn)
    cut_last_line(torn)
    rows = read_csv(torn)
    assert list(rows) == list(whole) and len(rows["time/total_timesteps"]) == len(whole["time/total_timesteps"]) - 1
    for key, column in rows.items():
        np.testing.assert_array_equal(column, whole[key][:-1])


def test_analyze_names_the_runs_that_resumed_from_checkpoints(tmp_path, capsys):
    """A run that went on from checkpoints without its games dropped its games in progress and started its envs anew
    together: the report says so. A run whose checkpoints held its games played on as if uninterrupted: the Runs
    table counts its resume, the note does not name it. results.json counts both."""
    sweep = copy(SWEEP, tmp_path)
    kept = next(run.name for run in sorted((sweep / "runs").iterdir()) if run.name != SMALLEST)
    for name, resumes, dropped in ((SMALLEST, 2, 4), (kept, 1, 0)):
        summary = json.loads((sweep / "runs" / name / "summary.json").read_text())
        (sweep / "runs" / name / "summary.json").write_text(
            json.dumps({**summary, "resumes": resumes, "games_dropped": dropped})
        )
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")
    assert status == 0, stderr
    finished = sum(RunDir(run).status() == "done" for run in (sweep / "runs").iterdir())
    report = (sweep / "report.md").read_text()
    assert f"Note: 1 of {finished} finished runs resumed from checkpoints that held no games (rollout sizes 64;" in report
    assert f"| {SMALLEST} | done | " in report and " | 2 | " in report.split(f"| {SMALLEST} |")[1].splitlines()[0]
    runs = {r["name"]: r["resumes"] for r in json.loads((sweep / "results.json").read_text())["runs"]}
    assert runs[SMALLEST] == 2 and runs[kept] == 1 and sum(runs.values()) == 3


def test_analyze_and_advise_use_the_whole_rows_of_torn_files(tmp_path, capsys):
    """A run killed in training (no summary.json) while it appended a row: the rows before it count."""
    sweep = copy(SWEEP, tmp_path)
    run = sweep / "runs" / SMALLEST
    steps = read_csv(run / "progress.csv")["time/total_timesteps"]
    (run / "summary.json").unlink()
    cut_last_line(run / "progress.csv")
    cut_last_line(run / "episodes.csv", keep=3)
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")
    assert status == 0, stderr
    record = next(r for r in json.loads((sweep / "results.json").read_text())["runs"] if r["name"] == SMALLEST)
    assert record["env_steps"] == steps[-2]

    status, stderr = rl_gns(capsys, "advise", run)
    assert status == 0, stderr


@pytest.mark.parametrize(
    ("log", "counted"),
    [("progress.csv", "1,563 PPO iterations, one row each (iterations)"), ("episodes.csv", "43 games scored")],
)
def test_a_finished_runs_log_cut_short_is_refused(tmp_path, capsys, log, counted):
    """A finished run wrote every row before its summary.json: fewer rows than it counted is a damaged log, whose
    numbers would be wrong, not a row a kill cut off."""
    sweep = copy(SWEEP, tmp_path)
    run = sweep / "runs" / SMALLEST
    path = run / log
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:9]))  # the header and 8 rows
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{path}: 8 rows, but {run / 'summary.json'} records {counted}")
    assert (
        not (sweep / "results.json").exists() or (sweep / "results.json").read_bytes() == (SWEEP / "results.json").read_bytes()
    )


def test_a_finished_runs_compact_log_cut_short_is_refused(tmp_path, capsys):
    probe = copy(PROBE, tmp_path)
    run = sorted((probe / "runs").iterdir())[0]
    packed = run / "progress.csv.xz"
    lines = lzma.decompress(packed.read_bytes()).decode().splitlines(keepends=True)
    packed.write_bytes(lzma.compress("".join(lines[:-1]).encode()))  # the last row left out
    recorded = json.loads((run / "summary.json").read_text())["iterations"]
    status, stderr = rl_gns(capsys, "probe-report", probe)
    assert_refused(status, stderr, f"{packed}: {recorded - 1:,} rows, but {run / 'summary.json'} records {recorded:,}")


# 2. a torn JSON file


def test_read_json_names_a_torn_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text((RUN / "config.json").read_text()[:40])
    with pytest.raises(RunFileError, match=f"^{re.escape(str(path))}: not valid JSON \\("):
        read_json(path)


@pytest.mark.parametrize("torn", ["sweep.json", f"runs/{SMALLEST}/config.json"])
def test_analyze_refuses_a_torn_json_file_in_one_line(tmp_path, capsys, torn):
    sweep = copy(SWEEP, tmp_path)
    path = sweep / torn
    path.write_text(path.read_text()[:40])
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{path}: not valid JSON")
    assert not (sweep / "report.md").exists()


def test_analyze_leaves_a_probe_directory_and_its_report_alone(tmp_path, capsys):
    probe = Path(shutil.copytree(RESULTS / "probes_v4" / "Seaquest" / "at100k", tmp_path / "probe"))
    report = (probe / "report.md").read_text()
    assert_refused(*rl_gns(capsys, "analyze", probe), f"{probe} is a probe directory: rl-gns probe-report {probe} reports it")
    assert (probe / "report.md").read_text() == report and not (probe / "results.json").exists()


@pytest.mark.parametrize("command", ["advise", "plot"])
def test_run_commands_refuse_a_torn_config_in_one_line(tmp_path, capsys, command):
    run = copy(RUN, tmp_path)
    (run / "config.json").write_text((RUN / "config.json").read_text()[:40])
    assert_refused(*rl_gns(capsys, *reading(command, run)), f"{run / 'config.json'}: not valid JSON")


def test_compare_adaptive_refuses_a_torn_summary_in_one_line(tmp_path, capsys):
    fixed = copy(SWEEP, tmp_path)
    assert rl_gns(capsys, "analyze", fixed, "--bootstrap", "10")[0] == 0
    adaptive = copy(ADAPTIVE, tmp_path)
    summary = sorted((adaptive / "runs").iterdir())[0] / "summary.json"
    summary.write_bytes(summary.read_bytes()[:40])
    assert_refused(*rl_gns(capsys, "compare-adaptive", adaptive, "--fixed", fixed), f"{summary}: not valid JSON")


def test_the_installed_command_prints_no_traceback(tmp_path):
    sweep = copy(SWEEP, tmp_path)
    config = sweep / "runs" / SMALLEST / "config.json"
    config.write_text(config.read_text()[:40])
    result = subprocess.run([sys.executable, "-m", "rl_gns", "analyze", str(sweep)], capture_output=True, text=True)
    assert_refused(result.returncode, result.stderr, f"rl-gns analyze: error: {config}: not valid JSON (")


# 2b. whole JSON of the wrong shape: a field missing, of the wrong kind, or a file that is not an object

PROBE = RESULTS / "probes_v4" / "Seaquest" / "at100k"
BENCH = RESULTS / "bench" / "cpu"


def edit_json(path: Path, change) -> Path:
    """Rewrite the JSON object in ``path`` after ``change`` edited it in place; a list ``change`` returns replaces it."""
    data = json.loads(path.read_text())
    changed = change(data)
    path.write_text(json.dumps(changed if isinstance(changed, list) else data))
    return path


@pytest.mark.parametrize(
    ("command", "source", "file", "change", "message"),
    [
        ("analyze", SWEEP, "sweep.json", lambda d: d.update(targets=["high"]), "'targets' is ['high'], not non-empty list"),
        ("analyze", SWEEP, "sweep.json", lambda d: d.pop("window"), "no 'window'"),
        ("analyze", SWEEP, f"runs/{SMALLEST}/config.json", lambda d: d.update(game=3), "'game' is 3, not str"),
        ("advise", RUN, "config.json", lambda d: [d], "not a run's config"),
        ("plot", RUN, "config.json", lambda d: d.pop("n_envs"), "no 'n_envs'"),
        ("probe-report", PROBE, "probe.json", lambda d: [d], "not a JSON object"),
        ("probe-report", PROBE, "probe.json", lambda d: d.update(start_score_sd=None), "'start_score_sd' is None"),
        ("probe-report", PROBE, "probe.json", lambda d: d.update(start_score_sd=-5.0), "'start_score_sd' is -5.0"),
        ("probe-report", PROBE, "probe.json", lambda d: d.update(window="20"), "'window' is '20', not int"),
        ("validate-probes", PROBE, "probe_results.json", lambda d: d.pop("noise_at_branch_point"), "no 'noise_at"),
        ("validate-probes", PROBE, "probe_results.json", lambda d: d["fit"].pop("e_min"), "fit: no 'e_min'"),
        ("bench", BENCH, "bench.json", lambda d: d.update(tier={}), "tier: no 'description'"),
        ("bench", BENCH, "bench.json", lambda d: d["games_table"]["pong"].pop("target_score"), "pong: no 'target"),
        ("bench", BENCH, "bench.json", lambda d: d["games_table"]["pong"].update(random_score="x"), "random_score"),
        ("bench", BENCH, "bench.json", lambda d: d["games_table"]["pong"].update(human_score=-20.7),
         "games_table: pong: human_score -20.7 must lie above random_score -20.7"),
        ("bench", BENCH, "bench.json", lambda d: d["games_table"]["pong"].update(human_score=-30.0),
         "games_table: pong: human_score -30.0 must lie above random_score -20.7"),
        ("bench", BENCH, "bench.json", lambda d: d.update(paper_ranges_frames={"b_crit_start": [1000, 100]}),
         "paper_ranges_frames: 'b_crit_start' is [1000, 100], not [low, high] with 0 < low <= high"),
        ("advise", RUN, "config.json", lambda d: d.update(gns_scheme=3), "'gns_scheme' is 3, not a list of"),
        ("plot", RUN, "config.json", lambda d: d.update(game="x" * 5000), "'game' is not the id of an Atari game"),
        ("validate-probes", PROBE, "probe_results.json", lambda d: d["fit"].update(b_crit=-5), "'b_crit' is -5"),
        ("bench", BENCH, "bench.json",
         lambda d: d["games_table"]["pong"].update(ppo_references=[{"source": "x", "score": "y"}]),
         "pong: ppo_references[0]: 'score' is 'y'"),
        ("advise", RUN, "config.json", lambda d: d.update(gns="no"), "'gns' is 'no', not bool"),
        ("advise", RUN, "config.json", lambda d: d.update(nproc=0), "nproc 0 must be at least 1"),
        ("advise", RUN, "config.json", lambda d: d.update(n_steps=1e30, rollout_size=8e30), "'n_steps' is 1e+30, more"),
        ("probe-report", PROBE, "probe.json", lambda d: d.update(env_steps=-5), "'env_steps' is -5, not int in 0..2147483647"),
        ("probe-report", PROBE, "anchor/config.json", lambda d: d.update(init_from="x.zip"), "starts from x.zip, not"),
        ("analyze", SWEEP, f"runs/{SMALLEST}/config.json", lambda d: d.update(frame_skip=0), "'frame_skip' is 0, not"),
        ("probe-report", PROBE, "probe.json", lambda d: d.update(start_score=d["start_score"] - 1), "but its anchor's"),
        ("advise", RUN, "config.json", lambda d: d.update(learning_rate=-1), "'learning_rate' is -1, not finite"),
        ("probe-report", PROBE, "sweep.json", lambda d: d.update(init_from="x.zip"), "starts from x.zip, not"),
        ("analyze", SWEEP, "sweep.json", lambda d: d.pop("lr_rule"), "no 'lr_rule'"),
        ("analyze", SWEEP, "sweep.json", lambda d: d.update(budget_steps=0), "'budget_steps' is 0, not int in 1.."),
        ("analyze", SWEEP, f"runs/{SMALLEST}/config.json", lambda d: d.pop("gns_scheme") and None, "no 'gns_scheme'"),
    ],
    ids=[
        "sweep targets", "sweep window", "run config", "config a list", "config n_envs", "probe a list",
        "probe sd", "probe sd negative", "probe window", "probe results", "probe fit", "bench tier", "bench game",
        "bench random score", "bench human as random", "bench human below random", "bench ranges",
        "config scheme", "config game", "probe fit negative", "bench reference", "config gns", "config nproc",
        "config count too large", "probe step negative", "probe's anchor from elsewhere", "probe's branches from elsewhere",
        "config frame skip", "config learning rate", "probe start score", "sweep lr rule", "sweep budget",
        "run scheme left out",
    ],
)  # fmt: skip
def test_json_of_the_wrong_shape_is_one_line_naming_the_file_and_field(
    tmp_path, capsys, command, source, file, change, message
):
    directory = copy(source, tmp_path)
    path = edit_json(directory / file, change)
    out = ("--out", tmp_path / "validation") if command == "validate-probes" else ()
    assert_refused(*rl_gns(capsys, *reading(command, directory), *out), f"{path}", message)


def test_json_nested_deeper_than_the_parser_goes_is_one_line(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    (run / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_refused(*rl_gns(capsys, "advise", run), f"{run / 'config.json'}: nested too deeply")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["fit"].pop("e_min"), "targets[0]: fit: no 'e_min'"),
        (lambda t: t["fit"].update(s_min="a"), "targets[0]: fit: 's_min' is 'a'"),
        (lambda t: t["fit"].update(s_min=0), "targets[0]: fit: 's_min' is 0, not finite float > 0"),
        (lambda t: t.update(candidates="zzz"), "targets[0]: 'candidates' is 'zzz'"),
        (lambda t: t["candidates"]["env_value"].update(value="x"), "candidates: env_value: 'value' is 'x'"),
        (lambda t: t.update(rollout_size_K=t["rollout_size_K"][:-1]), "per-size lists differ in length"),
        (lambda t: t.update(ci_b_crit=3), "'ci_b_crit' is 3"),
        (lambda t: t.update(b_crit=0), "'b_crit' is 0, not finite float > 0"),
        (lambda t: t.pop("b_crit"), "targets[0]: a fit without its 'b_crit'"),
    ],
    ids=[
        "fit without e_min",
        "fit of text",
        "fit of zero",
        "candidates of text",
        "candidate of text",
        "lists differ",
        "interval",
        "b_crit of zero",
        "fit without b_crit",
    ],
)
def test_every_reader_of_a_sweeps_results_checks_each_target_entry(tmp_path, capsys, change, message):
    sweep = copy(RESULTS / "sweeps" / "beamrider_ram", tmp_path)
    edit_json(sweep / "results.json", lambda d: change(d["targets"][0]))
    out = tmp_path / "validation"
    assert_refused(*rl_gns(capsys, "validate-predictors", sweep, "--out", out), message)
    assert not out.exists()


@pytest.mark.parametrize(
    ("command", "source", "file", "message"),
    [
        ("advise", RUN, "config.json", "is a directory, not a JSON file"),
        ("advise", RUN, "progress.csv", "is a directory, not a CSV file"),
        ("analyze", SWEEP, "sweep.json", "is a directory, not a JSON file"),
        ("probe-report", PROBE, "probe.json", "is a directory, not a JSON file"),
    ],
)
def test_a_file_that_is_a_directory_is_one_line_naming_it(tmp_path, capsys, command, source, file, message):
    directory = copy(source, tmp_path)
    (directory / file).unlink()
    (directory / file).mkdir()
    assert_refused(*rl_gns(capsys, *reading(command, directory)), f"{directory / file} {message}")


def test_a_fifo_in_place_of_a_file_is_one_line_not_a_wait(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    (sweep / "sweep.json").unlink()
    os.mkfifo(sweep / "sweep.json")  # opened for reading, a FIFO waits for a writer that never comes
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{sweep / 'sweep.json'} is a FIFO or device, not a JSON file")


@pytest.mark.parametrize(("command", "source", "file"), [("scaling", SCALING, "measurements.jsonl")])
def test_a_fifo_in_place_of_a_log_is_one_line_not_a_wait(tmp_path, capsys, command, source, file):
    directory = copy(source, tmp_path)
    (directory / file).unlink()
    os.mkfifo(directory / file)
    assert_refused(*rl_gns(capsys, *reading(command, directory)), f"{directory / file} is a FIFO or device, not a text file")


def test_a_fifo_in_place_of_a_checkpoint_file_or_snapshot_is_refused_not_read(tmp_path):
    """Hashing a checkpoint's files or a probe's snapshot would wait for ever on a FIFO: refused, and the checkpoint
    counts as corrupted."""
    os.mkfifo(tmp_path / "000000001600.zip")
    with pytest.raises(RunFileError, match=r"000000001600\.zip is a FIFO or device, not a file"):
        sha256(tmp_path / "000000001600.zip")
    checkpoint = tmp_path / "checkpoints" / "000000000064"
    checkpoint.mkdir(parents=True)
    os.mkfifo(checkpoint / "state.json")
    files = {"state.json": "0", **{name: "0" for name in FILES[FORMAT] if name != "state.json"}}  # the FIFO hashed first
    (checkpoint / MANIFEST).write_text(json.dumps({"format": FORMAT, "files": files}))
    with pytest.raises(CheckpointError, match=r"is corrupted: .*state\.json is a FIFO or device, not a file"):
        verify(checkpoint)


def test_a_file_that_cannot_be_read_is_one_line_with_status_2(tmp_path, capsys, monkeypatch):
    """No permission to read a run's config.json (root reads every file, so the refusal is the filesystem's, here
    made by hand): an input error, not a failure of the command."""
    run = copy(RUN, tmp_path)
    read_text = Path.read_text

    def denied(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "config.json":
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    for command in ("advise", "plot"):
        assert_refused(*rl_gns(capsys, *reading(command, run)), f"{run / 'config.json'} cannot be read: Permission denied")


@pytest.mark.parametrize(
    ("command", "source", "output"),
    [("plot", RUN, "training.png"), ("probe-report", PROBE, "report.md"), ("analyze", SWEEP, "results.json")],
)
def test_a_directory_where_a_report_writes_a_file_is_one_line(tmp_path, capsys, command, source, output):
    directory = copy(source, tmp_path)
    (directory / output).unlink(missing_ok=True)
    (directory / output).mkdir()
    assert_refused(*rl_gns(capsys, *reading(command, directory)), f"cannot write {directory / output}: a directory is there")
    assert (directory / output).is_dir() and not any((directory / output).iterdir())


@pytest.mark.parametrize(
    ("command", "source"),
    [
        ("validate-probes", RESULTS / "probes_v6" / "Pong" / "at500k"),
        ("validate-predictors", RESULTS / "sweeps" / "beamrider_ram"),
    ],
)
def test_a_validation_is_not_written_into_a_run_or_study(tmp_path, capsys, command, source):
    """A run has one writer and a study holds only its runs: a report's --out there, or below, is refused."""
    run = copy(RUN, tmp_path)
    for out, where in ((run, "is the run"), (run / "validation", "lies inside the run")):
        assert_refused(*rl_gns(capsys, *reading(command, source), "--out", out), f"--out {out} {where} {run}")
        assert not (out / "probes.md").exists() and not (out / "predictors.md").exists()


@pytest.mark.parametrize(
    ("command", "source", "args", "outputs"),
    [
        ("analyze", SWEEP, [], sweep_report.OUTPUTS),
        ("scaling", SCALING, [], scaling_report.OUTPUTS),
        ("probe-report", PROBE, [], probe_report.OUTPUTS),
        ("bench", BENCH, [], bench_report.OUTPUTS),
        ("compare-adaptive", ADAPTIVE, ["--fixed", RESULTS / "sweeps" / "beamrider_ram"], adaptive_report.OUTPUTS),
        ("validate-predictors", RESULTS / "sweeps" / "beamrider_ram", ["--out"], predictor_validation.OUTPUTS),
        ("validate-probes", RESULTS / "probes_v6" / "Pong" / "at500k", ["--out"], probe_validation.OUTPUTS),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_a_blocked_output_is_refused_before_any_output_is_written(tmp_path, capsys, command, source, args, outputs):
    """Each of a report's files blocked in turn (a directory where it goes): one line, and nothing written."""
    directory = copy(source, tmp_path)
    out = directory if args != ["--out"] else tmp_path / "out"
    for output in outputs:
        out.mkdir(exist_ok=True)
        (out / output).unlink(missing_ok=True)
        (out / output).mkdir()
        written = {path: path.stat().st_mtime_ns for path in out.iterdir()}
        given = [directory, *args, *([out] if args == ["--out"] else [])]
        assert_refused(
            *rl_gns(capsys, *reading(command, given[0]), *given[1:]), f"cannot write {out / output}: a directory is there"
        )
        assert {path: path.stat().st_mtime_ns for path in out.iterdir()} == written
        (out / output).rmdir()


def test_analyze_refuses_a_sweep_without_a_started_run(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    for run in (sweep / "runs").iterdir():
        shutil.rmtree(run)
    written = {path.name: path.stat().st_mtime_ns for path in sweep.iterdir()}
    assert_refused(*rl_gns(capsys, "analyze", sweep), "holds no run that has started")
    assert {path.name: path.stat().st_mtime_ns for path in sweep.iterdir()} == written


def test_a_spec_of_a_finished_run_is_refused_and_the_run_kept(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(to_json(TrainConfig(env="BeamRider", backend="ram", out=run, overwrite=True))))
    before = sorted(path.name for path in run.iterdir())
    assert_refused(*rl_gns(capsys, "run", spec), f"{run}: finished (summary.json)")
    assert sorted(path.name for path in run.iterdir()) == before


def test_games_out_of_order_are_one_line(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    episodes = sweep / "runs" / SMALLEST / "episodes.csv"
    header, first, second, *rest = episodes.read_text().splitlines(keepends=True)
    episodes.write_text("".join([header, second, first, *rest]))
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{episodes}: its games' agent steps are not non-negative")


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("score", "nan", "game 3's score is nan"),
        ("score", "inf", "game 3's score is inf"),
        ("score", "", "game 3's score is nan"),
        ("length_frames", "-5", "game 3 lasted -5.0 frames"),
        ("length_frames", "0", "game 3 lasted 0.0 frames"),
        ("length_frames", "", "game 3 lasted nan frames"),
    ],
)
def test_a_game_without_a_finite_score_or_a_length_above_0_is_one_line(tmp_path, capsys, column, value, message):
    sweep = copy(SWEEP, tmp_path)
    episodes = sweep / "runs" / SMALLEST / "episodes.csv"
    header, *rows = episodes.read_text().splitlines(keepends=True)
    cells = rows[2].rstrip("\n").split(",")
    cells[header.strip().split(",").index(column)] = value
    rows[2] = ",".join(cells) + "\n"
    episodes.write_text("".join([header, *rows]))
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{episodes}: {message}")


@pytest.mark.parametrize("command", ["analyze", "advise"])
def test_progress_rows_out_of_order_are_one_line(tmp_path, capsys, command):
    """Rows reversed by hand would read as a run that trained 64 agent steps: every reader of progress.csv refuses."""
    sweep = copy(SWEEP, tmp_path)
    progress = sweep / "runs" / SMALLEST / "progress.csv"
    header, *rows = progress.read_text().splitlines(keepends=True)
    progress.write_text("".join([header, *reversed(rows)]))
    target = sweep if command == "analyze" else progress.parent
    assert_refused(
        *rl_gns(capsys, *reading(command, target)), f"{progress}: its rows' agent steps are not non-negative numbers"
    )
    assert (
        not (sweep / "results.json").exists() or (sweep / "results.json").read_bytes() == (SWEEP / "results.json").read_bytes()
    )


def test_plot_leaves_a_run_in_training_to_its_writer(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
    with lock_held_elsewhere(run) as pid:  # the writer's .lock aside, nothing changes
        assert_refused(*rl_gns(capsys, "plot", run), f"{run} is being written by process {pid}")
    assert {path: path.stat().st_mtime_ns for path in run.rglob("*") if path.name != ".lock"} == before


@pytest.mark.parametrize(
    ("command", "source", "extra"),
    [
        ("analyze", SWEEP, []),
        ("probe-report", PROBE, []),
        ("bench", BENCH, []),
        ("scaling", SCALING, []),
        ("compare-adaptive", ADAPTIVE, ["--fixed", RESULTS / "sweeps" / "beamrider_ram"]),
    ],
    ids=["analyze", "probe-report", "bench", "scaling", "compare-adaptive"],
)
def test_a_report_leaves_a_study_in_progress_to_its_writer(tmp_path, capsys, command, source, extra):
    """A sweep, probe, benchmark or scaling measurement in progress has one writer: a report into its directory waits
    for it to end."""
    study = copy(source, tmp_path)
    before = {path: path.stat().st_mtime_ns for path in study.rglob("*")}
    with lock_held_elsewhere(study) as pid:
        assert_refused(*rl_gns(capsys, *reading(command, study), *extra), f"{study} is being written by process {pid}")
    assert {path: path.stat().st_mtime_ns for path in study.rglob("*") if path.name != ".lock"} == before


def test_analyze_refuses_a_finished_run_whose_summary_is_torn(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    summary = sweep / "runs" / SMALLEST / "summary.json"
    summary.write_text("")
    assert_refused(*rl_gns(capsys, "analyze", sweep), str(summary))


def test_compare_adaptive_refuses_runs_that_are_not_adaptive(tmp_path, capsys):
    fixed = copy(SWEEP, tmp_path)
    assert rl_gns(capsys, "analyze", fixed)[0] == 0
    assert_refused(*rl_gns(capsys, "compare-adaptive", fixed, "--fixed", fixed), "is not an adaptive run")


@pytest.mark.parametrize(("command", "source"), [("analyze", SWEEP), ("probe-report", PROBE), ("bench", BENCH)])
def test_runs_that_is_a_file_is_one_line(tmp_path, capsys, command, source):
    directory = copy(source, tmp_path)
    shutil.rmtree(directory / "runs")
    (directory / "runs").write_text("not the runs\n")
    assert_refused(
        *rl_gns(capsys, *reading(command, directory)), f"{directory / 'runs'} is a file, not the directory of the runs"
    )


def test_a_run_config_whose_sizes_disagree_is_one_line(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    edit_json(run / "config.json", lambda d: d.update(n_envs=3))
    assert_refused(*rl_gns(capsys, "advise", run), f"{run / 'config.json'}: n_envs, n_steps and rollout_size do not")


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_run_config_whose_learning_rate_is_not_a_finite_number_is_one_line(tmp_path, capsys, value):
    """analyze grouped the run under a learning rate of inf (or nan) and reported it, exit status 0."""
    sweep = copy(SWEEP, tmp_path)
    config = edit_json(sweep / "runs" / SMALLEST / "config.json", lambda d: d.update(learning_rate=value))
    before = sorted(path.name for path in sweep.iterdir())
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{config}: 'learning_rate' is {value}, not finite float >= 0")
    assert sorted(path.name for path in sweep.iterdir()) == before


def test_a_progress_file_without_the_step_column_is_one_line(tmp_path, capsys):
    probe = copy(PROBE, tmp_path)
    progress = sorted((probe / "runs").iterdir())[0] / "progress.csv"
    progress.write_text("a,b\n1,2\n")
    assert_refused(*rl_gns(capsys, "probe-report", probe), f"{progress}: no column time/total_timesteps")


def test_a_run_spec_of_the_wrong_kind_is_refused_before_anything_is_written(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"env": "Pong", "n_envs": "four", "out": str(tmp_path / "run")}))
    assert_refused(*rl_gns(capsys, "run", spec), f"{spec}: 'n_envs' is 'four', not int")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--out", "d" * 300 + "/run"], "a name of 300 bytes, longer than this file system's"),
        (["sweep", "--targets", "100", "--out", "bad\udcffname"], "bad\\udcffname: not a UTF-8 name"),
        (["analyze", "d" * 300], "File name too long"),
    ],
    ids=["name too long", "not UTF-8", "reader's path too long"],
)
def test_a_path_no_file_can_have_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert_refused(*rl_gns(capsys, *args), message)
    assert list(tmp_path.iterdir()) == []


#: The study commands, each on a budget that a refusal never spends (the settings of the runs they would start).
STUDIES = {
    "train": ["train", "--env", "Pong", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
              "--total-steps", "64"],
    "sweep": ["sweep", "--env", "Pong", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--n-minibatches", "2",
              "--targets", "100", "--seeds", "1", "--lr-points", "1", "--budget-steps", "64"],
    "probe": ["probe", str(RESULTS / "probes" / "trunks" / "SpaceInvaders"), *ONE_RATE, "--at", "50000",
              "--anchor-steps", "256",
              "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "256"],
}  # fmt: skip


@pytest.mark.parametrize("command", STUDIES)
def test_an_out_whose_full_path_is_not_utf8_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, command):
    """A relative --out in a directory whose name is not UTF-8: the specs and records name the runs by their full
    paths, which JSON cannot hold, so the runs would fail once started."""
    odd = tmp_path / os.fsdecode(b"bad\xffdir")
    odd.mkdir()
    monkeypatch.chdir(odd)
    assert_refused(*rl_gns(capsys, *STUDIES[command], "--out", "study"), "its full path", "bad\\udcffdir", "not a UTF-8")
    assert list(odd.iterdir()) == []


@pytest.mark.parametrize("command", STUDIES)
def test_an_out_too_long_for_the_files_a_run_writes_inside_is_one_line_before_anything_is_written(
    tmp_path, monkeypatch, capsys, command
):
    """An --out whose path fits, but not with the longest path a run writes inside its directory (a checkpoint
    being written, TensorBoard's events): the run would fail once started."""
    most = os.pathconf(tmp_path, "PC_PATH_MAX") - 1
    out = str(tmp_path)
    while len(out) < most - 30:  # room for the directory itself, none for what a run writes inside it
        out += "/" + "d" * min(200, most - 30 - len(out) - 1)
    monkeypatch.chdir(tmp_path)
    assert_refused(*rl_gns(capsys, *STUDIES[command], "--out", out), f"longer than the {most:,} this system allows")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", STUDIES)
@pytest.mark.parametrize("out", ["loop", "loop/run", "a/run"])
def test_an_out_in_a_loop_of_links_is_one_line_naming_the_loop(tmp_path, monkeypatch, capsys, command, out):
    monkeypatch.chdir(tmp_path)
    Path("loop").symlink_to("loop")
    Path("a").symlink_to("b")
    Path("b").symlink_to("a")
    link = out.split("/")[0]
    assert_refused(*rl_gns(capsys, *STUDIES[command], "--out", out), f"--out {out}: {link} is a loop of symbolic links")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a", "b", "loop"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda sweep: edit_json(sweep / "sweep.json", lambda d: d.update(env="Pong")),
            "sweep.json: its env 'Pong' is not what its runs trained ('BeamRider' in the config.json of every one",
        ),
        (
            lambda sweep: edit_json(sweep / "sweep.json", lambda d: d.update(budget_steps=50_000)),
            "sweep.json: its budget_steps 50000 is not what its runs trained (",
        ),
        (
            lambda sweep: edit_json(sweep / "runs" / SMALLEST / "config.json", lambda d: d.update(gamma=0.9)),
            "its gamma differ",
        ),
        (
            lambda sweep: edit_json(sweep / "runs" / SMALLEST / "config.json", lambda d: d.update(n_envs=3, rollout_size=96)),
            "its n_envs differ",
        ),
        (lambda sweep: shutil.copytree(RUN, sweep / "runs" / "foreign"), "not a run of the sweep"),
    ],
    ids=["sweep's game", "sweep's budget", "run's gamma", "run's size", "foreign run"],
)
def test_a_run_the_sweep_did_not_make_is_refused(tmp_path, capsys, edit, message):
    """A run copied in, or a record edited, would be counted as what the sweep trained."""
    sweep = copy(SWEEP, tmp_path)
    edit(sweep)
    assert_refused(*rl_gns(capsys, "analyze", sweep), message)
    assert (
        not (sweep / "results.json").exists() or (sweep / "results.json").read_bytes() == (SWEEP / "results.json").read_bytes()
    )


def test_benchmark_runs_swapped_between_games_are_refused(tmp_path, capsys):
    bench = copy(BENCH, tmp_path)
    alien, breakout = bench / "runs" / "alien_s0", bench / "runs" / "breakout_s0"
    alien.rename(tmp_path / "swap")
    breakout.rename(alien)
    (tmp_path / "swap").rename(breakout)
    status, stderr = rl_gns(capsys, *reading("bench", bench))
    assert_refused(status, stderr, f"{alien / 'config.json'}: not the run alien_s0", "played breakout, seed 0")


@pytest.mark.parametrize("key", ["games", "seeds"])
def test_a_benchmark_whose_selection_is_left_out_reports_every_game_of_its_tier(tmp_path, capsys, key):
    """``games`` and ``seeds`` null or left out: the tier's; the report plans as many runs either way."""
    bench = copy(BENCH, tmp_path)
    settings = json.loads((bench / "bench.json").read_text())
    settings.pop(key)
    (bench / "bench.json").write_text(json.dumps(settings))
    assert rl_gns(capsys, *reading("bench", bench))[0] == 0
    left_out = json.loads((bench / "results.json").read_text())
    settings[key] = None
    (bench / "bench.json").write_text(json.dumps(settings))
    assert rl_gns(capsys, *reading("bench", bench))[0] == 0
    assert json.loads((bench / "results.json").read_text())["status"] == left_out["status"]


def test_noise_estimates_beyond_the_float_range_are_refused(tmp_path, capsys):
    """Pooled, such values would overflow to inf and print numpy's warnings instead of an answer."""
    run = copy(RUN, tmp_path)
    progress = run / "progress.csv"
    header, *rows = progress.read_text().splitlines(keepends=True)
    column = header.strip().split(",").index("gns/envs/trace_sigma_value_raw")
    for i, row in enumerate(rows):
        cells = row.rstrip("\n").split(",")
        cells[column] = "-1e308" if cells[column] else ""
        rows[i] = ",".join(cells) + "\n"
    progress.write_text("".join([header, *rows]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status, stderr = rl_gns(capsys, "advise", run)
    assert_refused(status, stderr, f"{progress}: column gns/envs/trace_sigma_value_raw holds -1e+308, beyond what")


def test_a_log_whose_header_is_not_rl_gns_is_refused_before_its_first_row(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    episodes = sweep / "runs" / SMALLEST / "episodes.csv"
    episodes.write_text("\x00\x00\n")
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{episodes}: no column env_steps, score")


def test_games_past_the_runs_budget_are_refused(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    episodes = sweep / "runs" / SMALLEST / "episodes.csv"
    header, *rows = episodes.read_text().splitlines(keepends=True)
    cells = rows[-1].rstrip("\n").split(",")
    cells[header.strip().split(",").index("env_steps")] = "10000000"
    episodes.write_text("".join([header, *rows[:-1], ",".join(cells) + "\n"]))
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{episodes}: its last game ends at agent step 10,000,000, past")


def test_a_spec_with_a_bad_setting_names_the_spec_and_its_field(tmp_path, capsys):
    spec = tmp_path / "specs" / "a.json"
    spec.parent.mkdir()
    settings = to_json(TrainConfig(env="Pong", backend="ram", out=tmp_path / "runs" / "a", gns_ema_beta=1.5))
    spec.write_text(json.dumps(settings))
    assert_refused(*rl_gns(capsys, "run", spec), f"{spec}: gns_ema_beta must be in [0, 1), got 1.5")
    assert not (tmp_path / "runs").exists()


def test_a_spec_that_is_a_link_to_nothing_says_so(tmp_path, capsys):
    loop, dangling = tmp_path / "loop.json", tmp_path / "dangling.json"
    loop.symlink_to(loop)
    dangling.symlink_to(tmp_path / "gone.json")
    assert_refused(*rl_gns(capsys, "run", loop), f"{loop} cannot be read: Too many levels of symbolic links")
    assert_refused(*rl_gns(capsys, "run", dangling), f"{dangling} is a link to {tmp_path / 'gone.json'}, which does not")
    assert_refused(*rl_gns(capsys, "run", tmp_path / "none.json"), f"{tmp_path / 'none.json'} not found")


def test_a_run_spec_whose_run_lies_outside_its_study_is_refused(tmp_path, monkeypatch, capsys):
    """A relative run directory read from another working directory, or a study moved after its specs were written,
    would train somewhere else: refused before anything is written."""
    study = tmp_path / "study"
    (study / "specs").mkdir(parents=True)
    spec = study / "specs" / "a.json"
    spec.write_text(json.dumps(to_json(TrainConfig(env="Pong", backend="ram", out=Path("study/runs/a")))))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert_refused(*rl_gns(capsys, "run", spec), f"{spec}: its run (study/runs/a) is not in {study}")
    assert list(elsewhere.iterdir()) == []


def test_a_run_spec_with_a_setting_rl_gns_does_not_know_is_refused(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    settings = to_json(TrainConfig(env="Pong", backend="ram", out=tmp_path / "run"))
    spec.write_text(json.dumps({**settings, "n_env": 4}))
    assert_refused(*rl_gns(capsys, "run", spec), f"{spec}: not a spec file of this rl-gns (unknown: n_env; missing: none)")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda text: text.replace("[tiers.smoke]", "[tiers.smoke]\nbackend = 'ram'"),
            "tiers.smoke: unknown field(s) backend",
        ),
        (lambda text: text.replace("n_envs = 4\n", "", 1), "tiers.smoke: no 'n_envs'"),
        (lambda text: text.replace("total_steps = 512", "total_steps = '512'"), "tiers.smoke: 'total_steps' is '512'"),
        (lambda text: text.replace("[tiers.", "[tier."), "no 'tiers'"),
        (lambda text: text + "\n[[", "not valid TOML"),
        (lambda text: "a = " + "[" * 5000 + "]" * 5000, "not valid TOML"),
        (lambda text: text.replace("b_crit_start = [100, 1_000]", "b_crit_start = [1_000, 100]"), "'b_crit_start' is"),
    ],
    ids=["unknown field", "missing field", "string count", "no tiers", "torn", "nested too deeply", "range inverted"],
)
def test_a_bad_suites_table_is_one_line_before_anything_is_written(tmp_path, capsys, damage, message):
    suites = tmp_path / "suites.toml"
    suites.write_text(damage(shipped_path(SUITES_FILE).read_text()))
    out = tmp_path / "bench"
    assert_refused(*rl_gns(capsys, "bench", "--suite", "smoke", "--suite-file", suites, "--out", out), str(suites), message)
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: [*lines, lines[0]], "line 10 measures n_envs 1 on 1 process(es) again"),
        (
            lambda lines: [lines[0].replace('"rollout_size": 128', '"rollout_size": 512'), *lines[1:]],
            "line 1: rollout_size 512",
        ),
    ],
    ids=["measured twice", "wrong rollout size"],
)
def test_scaling_measurements_that_rl_gns_did_not_write_are_refused(tmp_path, capsys, edit, message):
    scaling = copy(SCALING, tmp_path)
    log = scaling / "measurements.jsonl"
    log.write_text("\n".join(edit(log.read_text().splitlines())) + "\n")
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{log}: {message}")


@pytest.mark.parametrize(
    ("file", "edit", "message"),
    [
        (
            "measurements.jsonl",
            ('"rollout_s_per_iteration": ', '"rollout_s_per_iteration": 0, "was": '),
            "line 1: 'rollout_s_per_iteration' is 0, not finite float > 0",
        ),
        ("settings.json", ('"n_minibatches": 4', '"n_minibatches": null'), "sets neither n_minibatches nor minibatch_size"),
        ("settings.json", ('"n_minibatches": 4', '"n_minibatches": 0'), "'n_minibatches' is 0, not int in 1..2147483647"),
    ],
    ids=["no time", "no minibatch", "zero minibatches"],
)
def test_scaling_settings_or_times_the_model_cannot_fit_are_refused(tmp_path, capsys, file, edit, message):
    scaling = copy(SCALING, tmp_path)
    path = scaling / file
    assert edit[0] in path.read_text()
    path.write_text(path.read_text().replace(*edit, 1))
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{path}: {message}")


def test_scaling_report_on_another_kind_of_directory_says_so(tmp_path, capsys):
    assert_refused(*rl_gns(capsys, *reading("scaling", SWEEP)), f"{SWEEP} is not a scaling directory (no settings.json")


def test_a_scaling_measurement_cut_short_is_left_out_and_a_bad_one_is_one_line(tmp_path, capsys):
    scaling = copy(SCALING, tmp_path)
    log = scaling / "measurements.jsonl"
    whole = log.read_text()
    log.write_text(whole + whole.splitlines()[0][:30])  # a kill while the next line was written
    assert [row["n_envs"] for row in read_measurements(scaling)] == [row["n_envs"] for row in read_measurements(SCALING)]
    first, *rest = whole.splitlines(keepends=True)
    log.write_text("".join(rest) + first[:30])
    append_measurement(log, json.loads(first))  # the writer drops the cut line before appending
    assert sorted(log.read_text().splitlines()) == sorted(whole.splitlines())
    assert rl_gns(capsys, *reading("scaling", scaling))[0] == 0
    log.write_text(whole.replace('"agent_steps_per_s": ', '"agent_steps_per_s": "fast", "was": ', 1))
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{log}: line 1: 'agent_steps_per_s' is 'fast'")
    log.write_text(whole.replace('"n_envs": ', '"n_envs": 0, "was": ', 1))
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{log}: line 1: 'n_envs' is 0, not int in 1..2147483647")
    log.write_text("{not json\n" + whole)
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{log}: line 1 is not valid JSON")


def test_validate_probes_refuses_probes_none_of_which_is_reported(tmp_path, capsys):
    probe = copy(PROBE, tmp_path)
    (probe / "probe_results.json").unlink()
    assert_refused(*rl_gns(capsys, "validate-probes", probe, "--out", tmp_path / "v"), "is reported yet")


def test_validate_probes_refuses_a_probe_named_twice(tmp_path, capsys):
    """It was counted once and listed as a retest of itself, exit status 0."""
    probe = copy(PROBE, tmp_path)
    (tmp_path / "link").symlink_to(probe, target_is_directory=True)
    for again in (probe, tmp_path / "link", tmp_path):  # the same path, a link to it, the directory that holds it
        status, err = rl_gns(capsys, "validate-probes", probe, again, "--out", tmp_path / "v")
        assert_refused(status, err, f"the probe {again if again != tmp_path else probe} is named twice (as {probe} too)")
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize("command", ["validate-predictors", "bench"])
def test_a_sweep_named_twice_is_refused(tmp_path, capsys, command):
    """It would count as two games' sweeps, or twice in a benchmark's B_crit."""
    sweep = RESULTS / "sweeps" / "beamrider_ram"
    again = Path(os.path.relpath(sweep)) if sweep.is_absolute() else sweep.absolute()
    args = [sweep, again, "--out", tmp_path / "v"] if command == "validate-predictors" else [BENCH, "--sweeps", sweep, again]
    assert_refused(
        *rl_gns(capsys, *reading(command, args[0]), *args[1:]), f"the sweep {again} is named twice (as {sweep} too)"
    )
    assert not (tmp_path / "v").exists()


# 3. cells that are not numbers, files with a header only


@pytest.mark.parametrize(
    ("damage", "message"),
    [("word", "line 3: 'word"), ("1,", "line 3 has")],
    ids=["cell", "long row"],
)
def test_a_bad_csv_row_is_one_line_naming_the_file_and_line(tmp_path, capsys, damage, message):
    sweep = copy(SWEEP, tmp_path)
    progress = sweep / "runs" / SMALLEST / "progress.csv"
    lines = progress.read_text().split("\n")
    lines[2] = damage + lines[2]  # the second row: a word in its first cell, or one cell more
    progress.write_text("\n".join(lines))
    assert_refused(*rl_gns(capsys, "analyze", sweep), f"{progress}: {message}")


def test_a_binary_csv_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "episodes.csv"
    path.write_bytes(b"env_steps,score\n\xff\xfe\x00\n")
    with pytest.raises(RunFileError, match=f"^{re.escape(str(path))}: not a CSV file"):
        read_csv(path)


def test_a_binary_scaling_log_is_one_line_naming_the_file(tmp_path, capsys):
    scaling = copy(SCALING, tmp_path)
    log = scaling / "measurements.jsonl"
    log.write_bytes(b'{"n_envs": 1}\n\xff\xfe\x00\n')
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling)), f"{log}: not a text file")


@pytest.mark.parametrize("content", ["", "time/total_timesteps,train/loss\n"], ids=["empty", "header only"])
def test_a_file_without_rows_reads_as_no_rows(tmp_path, content):
    path = tmp_path / "progress.csv"
    path.write_text(content)
    assert read_csv(path) == {} and read_csv(tmp_path / "not_written_yet.csv") == {}


def test_analyze_counts_a_run_without_rows_as_started_with_no_steps(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    run = sweep / "runs" / SMALLEST
    for name in ("progress.csv", "episodes.csv"):
        header_only(run / name)
    (run / "summary.json").unlink()
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")
    assert status == 0, stderr
    assert f"| {SMALLEST} | unfinished | 0 | 0 | – |" in (sweep / "report.md").read_text()


# 4. sweeps that reached no target, or reached it at one size only


def test_analyze_reports_a_sweep_that_reached_no_target(tmp_path, capsys):
    sweep = copy(SWEEP, tmp_path)
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")
    assert status == 0, stderr
    report = (sweep / "report.md").read_text()
    assert "No run reached target 1000: B_crit not identified." in report
    for figure in ("steps_vs_experience", "wall_vs_experience", "noise_scale_by_size", "bcrit_predicted_vs_fitted"):
        assert (sweep / f"{figure}.png").stat().st_size > 8_000
    (target,) = json.loads((sweep / "results.json").read_text())["targets"]
    assert target["fit"] is None and target["candidates"] == {} and target["censored_sizes"] == [64, 128, 256, 512]


def test_analyze_reports_targets_reached_at_one_size_or_none(tmp_path, capsys):
    sweep = with_targets(copy(SWEEP, tmp_path), [500.0, 700.0, 1000.0])
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")
    assert status == 0, stderr
    report = (sweep / "report.md").read_text()
    assert "Only rollout size 64 reached target 700 (3 needed): B_crit not identified." in report
    assert "No run reached target 1000: B_crit not identified." in report
    fitted, one_size, unreached = json.loads((sweep / "results.json").read_text())["targets"]
    assert fitted["rollout_size_K"] == [64, 128, 256, 512] and fitted["b_crit"] > 0
    assert one_size["fit"] is None and one_size["rollout_size_K"] == [64] and one_size["candidates"]
    assert unreached["rollout_size_K"] == [] and unreached["candidates"] == {}


@pytest.mark.parametrize("key", ["fit", "ci_b_crit", "not_identified"])
def test_a_target_entry_that_leaves_out_a_field_that_may_be_null_reads_it_as_null(tmp_path, capsys, key):
    sweep = copy(RESULTS / "sweeps" / "beamrider_ram", tmp_path)
    edit_json(sweep / "results.json", lambda d: d["targets"][0].pop(key, None) and None)
    status, stderr = rl_gns(capsys, "validate-predictors", sweep, "--out", tmp_path / "validation")
    assert status == 0, stderr
    assert read_sweep_results(sweep / "results.json")["targets"][0][key] is None


def test_reports_without_bootstrap_intervals(tmp_path, capsys):
    sweep = with_targets(copy(SWEEP, tmp_path), [500.0, 1000.0])
    status, stderr = rl_gns(capsys, "analyze", sweep, "--bootstrap", "0")
    assert status == 0, stderr
    fitted = json.loads((sweep / "results.json").read_text())["targets"][0]
    assert fitted["b_crit"] > 0 and fitted["ci_b_crit"] is None
    status, stderr = rl_gns(capsys, "validate-predictors", sweep, "--out", tmp_path / "validation")
    assert status == 0, stderr
    assert "BeamRider target 500: no interval of B_crit" in (tmp_path / "validation" / "predictors.md").read_text()


def test_scaling_report_refuses_a_sweep_without_a_fit_in_one_line(tmp_path, capsys):
    sweep, scaling = copy(SWEEP, tmp_path), copy(SCALING, tmp_path)
    assert rl_gns(capsys, "analyze", sweep, "--bootstrap", "10")[0] == 0
    assert_refused(
        *rl_gns(capsys, *reading("scaling", scaling), "--sweep", sweep),
        f"{sweep}/results.json has no B_crit fit for any target",
    )


# 5. a figure is never redrawn blank


@pytest.mark.parametrize("keep", ["", "header", "torn row"])
def test_plot_refuses_a_run_without_rows_and_keeps_its_figure(tmp_path, capsys, keep):
    """A run in training before its first whole row (a finished run without rows is a damaged one: see
    test_a_finished_runs_log_cut_short_is_refused)."""
    run = copy(RUN, tmp_path)
    (run / "summary.json").unlink()
    figure = (run / "training.png").read_bytes()
    lines = (RUN / "progress.csv").read_text().split("\n")
    (run / "progress.csv").write_text({"": "", "header": lines[0] + "\n", "torn row": lines[0] + "\n" + lines[1][:30]}[keep])
    assert_refused(*rl_gns(capsys, "plot", run), f"{run / 'progress.csv'}: no logged rows yet")
    assert (run / "training.png").read_bytes() == figure


def test_advise_and_scaling_report_refuse_a_run_without_rows(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    (run / "summary.json").unlink()  # a run in training, before its first row
    header_only(run / "progress.csv")
    assert_refused(*rl_gns(capsys, "advise", run), "no logged rows yet")
    scaling = copy(SCALING, tmp_path)
    assert_refused(*rl_gns(capsys, *reading("scaling", scaling), "--noise-run", run), "no logged rows yet")


# 6. partial runs: too little data for a number


def test_plot_a_run_before_its_noise_scale_is_resolved(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    (run / "summary.json").unlink()  # a run in training, after its first row
    header, first = (RUN / "progress.csv").read_text().split("\n")[:2]
    cells = first.split(",")
    for i, key in enumerate(header.split(",")):
        if key.startswith("gns/envs/g2_") and key.endswith("_raw"):
            cells[i] = "-0.5"  # |G|² not yet positive for any loss: no B_simple to draw
    (run / "progress.csv").write_text(f"{header}\n{','.join(cells)}\n")
    status, stderr = rl_gns(capsys, "plot", run)
    assert status == 0, stderr


def test_plot_a_run_that_measured_no_noise_scale_draws_its_score_alone(tmp_path, capsys):
    """A run trained with ``--no-gns`` (a probe trunk) gets the score panel only, not an empty noise-scale panel."""
    trunk = RESULTS / "probes" / "trunks" / "BeamRider"
    run = tmp_path / "trunk"
    run.mkdir()
    for path in (trunk / "config.json", trunk / "summary.json", *trunk.glob("progress.csv*")):  # plain, or compact
        shutil.copy(path, run / path.name)
    status, stderr = rl_gns(capsys, "plot", run)
    assert status == 0, stderr
    png = (run / "training.png").read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert height < width  # one panel, landscape; with the noise scale the figure is taller than wide


def test_g2_resolution_needs_two_measurements(tmp_path):
    sweep = copy(SWEEP, tmp_path)
    for run in (sweep / "runs").iterdir():
        (run / "summary.json").unlink()  # runs in training
        progress = run / "progress.csv"
        progress.write_text("\n".join(progress.read_text().split("\n")[:2]) + "\n")  # one row each
    assert g2_resolution(sweep, "value") is None
    started = sweep / "runs" / "n0032_lr1.00e-03_s0"  # a run that has written its configuration only
    started.mkdir()
    shutil.copy(SWEEP / "runs" / SMALLEST / "config.json", started)
    assert RunDir(started).progress() == {} and g2_resolution(sweep, "value") is None


def test_compare_adaptive_with_a_fixed_sweep_that_has_a_started_run(tmp_path, capsys):
    fixed = copy(SWEEP, tmp_path)
    assert rl_gns(capsys, "analyze", fixed, "--bootstrap", "10")[0] == 0
    started = fixed / "runs" / "n0032_lr1.00e-03_s0"
    started.mkdir()
    shutil.copy(SWEEP / "runs" / SMALLEST / "config.json", started)
    adaptive = copy(ADAPTIVE, tmp_path)
    status, stderr = rl_gns(capsys, "compare-adaptive", adaptive, "--fixed", fixed)
    assert status == 0, stderr
    assert "| policy |" in (adaptive / "comparison.md").read_text()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # matplotlib's overflow on the way to its error
def test_data_too_large_to_plot_is_one_line_and_no_figure(tmp_path):
    path = tmp_path / "figure.png"
    with pytest.raises(FigureError, match=f"cannot draw {path}: "):
        save_plot(lambda ax: ax.plot([0, 1], [-1.7e308, 1.7e308]), path, (4, 3))
    assert not path.exists()
