"""The compact form of a finished run's logs: exact cells, the same answers from every reader, ``rl-gns compact``, a run
that ends compact, and committed compact results that still give their committed reports."""

import csv
import gzip
import io
import json
import lzma
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import lock_held_elsewhere, rl_gns

from rl_gns.cli import main
from rl_gns.core.maths.names import LOSSES
from rl_gns.records.compact import KEPT_COLUMNS, compact_run, is_kept, prefixed_header
from rl_gns.records.logs import read_rows
from rl_gns.records.rundir import EPISODES, PROGRESS, RunDir, compact_name, noise_sums

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: A finished run whose logs are CSV (100k agent steps of Beam Rider, 99 logged rows, 69 games).
RUN = RESULTS / "runs" / "beamrider_100k"
#: A finished sweep of 4 runs, logs as CSV.
SWEEP = RESULTS / "resume" / "beamrider_ram_sweep"
#: A committed probe whose logs are compact; rl-gns probe-report wrote its report.md and probe_results.json.
COMPACT_PROBE = RESULTS / "probes_v7" / "Pong" / "at500k"


def copy(source: Path, tmp_path: Path, name: str | None = None) -> Path:
    return Path(shutil.copytree(source, tmp_path / (name or source.name), ignore=shutil.ignore_patterns(".lock")))


def said(capsys: pytest.CaptureFixture, *args: object) -> tuple[int, str, str]:
    """Run ``rl-gns ARGS`` in this process: ``(exit status, stdout, stderr)``."""
    status = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return status, out, err


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (its run locks left out) and its bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_the_compact_form_holds_the_kept_columns_cell_for_cell_and_every_game_byte_for_byte(tmp_path):
    run = copy(RUN, tmp_path)
    progress_text, episodes_bytes = (run / PROGRESS).read_text(), (run / EPISODES).read_bytes()
    done = compact_run(run)
    assert done is not None and done.plain_bytes == len(progress_text.encode()) + len(episodes_bytes)
    assert sorted(p.name for p in run.iterdir() if "csv" in p.name) == ["episodes.csv.xz", "progress.csv.xz"]
    assert done.compact_bytes == sum((run / compact_name(name)).stat().st_size for name in (PROGRESS, EPISODES))

    assert lzma.decompress((run / "episodes.csv.xz").read_bytes()) == episodes_bytes
    header, *rows = cells(progress_text)
    kept = [i for i, column in enumerate(header) if is_kept(column)]
    raw = [f"gns/envs/{quantity}_{loss}_raw" for quantity in ("g2", "trace_sigma") for loss in ("policy", "total", "value")]
    steps = ["time/iterations", "time/total_timesteps", "rollout/ep_rew_mean"]
    assert [header[i] for i in kept] == ["gns/envs/b_big", "gns/envs/b_small", *raw, *steps]  # in the CSV's order
    compact = cells(lzma.decompress((run / "progress.csv.xz").read_bytes()).decode())
    assert compact == [[row[i] for i in kept] for row in [header, *rows]]  # the text of every kept cell, as it was

    again = copy(RUN, tmp_path, "again")
    compact_run(again)
    for name in ("progress.csv.xz", "episodes.csv.xz"):  # no time stamp: the same logs give the same bytes
        assert (again / name).read_bytes() == (run / name).read_bytes()
    assert compact_run(run) is None  # compact already


def test_every_reader_gives_the_same_for_both_forms(tmp_path, capsys):
    plain, compact = RunDir(copy(RUN, tmp_path, "plain")), RunDir(copy(RUN, tmp_path, "compact"))
    compact_run(compact.path)
    assert compact.log(PROGRESS).name == "progress.csv.xz" and plain.log(PROGRESS).name == "progress.csv"
    before, after = plain.progress(), compact.progress()
    assert list(after) == [key for key in before if is_kept(key)]
    for key, column in after.items():
        np.testing.assert_array_equal(column, before[key])
    for key, column in compact.episodes().items():
        np.testing.assert_array_equal(column, plain.episodes()[key])
    for loss in LOSSES:
        assert noise_sums(after, "envs", loss) == noise_sums(before, "envs", loss)
    assert compact.env_steps() == plain.env_steps() == 100_352
    status, advised, _ = said(capsys, "advise", plain.path)
    assert status == 0 and "critical rollout size" in advised
    assert said(capsys, "advise", compact.path) == (0, advised, "")

    sweeps = [copy(SWEEP, tmp_path, name) for name in ("plain_sweep", "compact_sweep")]
    status, out, err = said(capsys, "compact", sweeps[1])
    assert status == 0 and "4 runs compacted" in out, err
    for sweep in sweeps:
        assert rl_gns(capsys, "analyze", sweep, "--bootstrap", "20")[0] == 0
    for name in ("results.json", "report.md"):
        assert (sweeps[0] / name).read_text().replace("plain_sweep", "") == (sweeps[1] / name).read_text().replace(
            "compact_sweep", ""
        )


def test_compact_finishes_the_runs_under_a_directory_once_and_refuses_a_bad_path(tmp_path, capsys):
    study = tmp_path / "study"
    finished, unfinished = copy(RUN, study, "finished"), copy(RUN, study / "deeper", "unfinished")
    (unfinished / "summary.json").unlink()  # still training: a resume appends to its CSV files
    left = files(unfinished)
    status, out, err = said(capsys, "compact", study)
    assert status == 0 and err == "" and out.startswith(f"{study}: 1 runs compacted (0 compact already)"), out
    assert not (finished / PROGRESS).exists() and (finished / "progress.csv.xz").is_file()
    assert not list(study.rglob(".lock"))  # the runs' locks, taken while compacting, leave no file behind
    assert files(unfinished) == left
    compacted = files(study)
    status, out, _ = said(capsys, "compact", study, finished)
    assert status == 0 and "0 runs compacted (1 compact already)" in out and files(study) == compacted

    for bad, message in ((tmp_path / "nowhere", "no such directory"), (finished / "config.json", "is not a directory")):
        status, err = rl_gns(capsys, "compact", bad)
        assert status == 2 and err == f"rl-gns compact: error: {bad}{':' if 'no such' in message else ''} {message}\n"
    assert files(study) == compacted


def test_compact_leaves_a_run_another_process_holds(tmp_path, capsys):
    run = copy(RUN, tmp_path)
    before = files(run)
    with lock_held_elsewhere(run):
        status, out, _ = said(capsys, "compact", run)
    assert status == 0 and "0 runs compacted (0 compact already, 1 held by another process" in out
    assert files(run) == before


def test_a_compaction_cut_short_leaves_the_csv_read_and_compacting_again_finishes_it(tmp_path):
    run = RunDir(copy(RUN, tmp_path))
    kept = (run.path / PROGRESS).read_bytes()
    compact_run(run.path)
    (run.path / PROGRESS).write_bytes(kept)  # killed after the compact file was written, before the CSV was removed
    assert run.log(PROGRESS) == run.path / PROGRESS and run.log(EPISODES) == run.path / "episodes.csv.xz"
    assert "gns/envs/g2_policy" in run.progress()  # the CSV is read, every column of it
    assert compact_run(run.path) is not None and not (run.path / PROGRESS).exists()
    assert "gns/envs/g2_policy" not in run.progress()


def test_a_compact_log_is_never_read_for_an_unfinished_run(tmp_path):
    run = RunDir(copy(RUN, tmp_path))
    compact_run(run.path)
    (run.path / "summary.json").unlink()  # an earlier run's logs in a directory a new run is starting in
    assert run.log(PROGRESS) == run.path / PROGRESS and run.progress() == {} and len(run.episodes()["score"]) == 0


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[: len(data) // 2], "not whole xz data"),
        (lambda data: b"not xz at all\n", "not whole xz data"),
        (lambda data: lzma.compress(b"\xff\xfe not text"), "not a CSV file"),
    ],
    ids=["cut", "not-xz", "not-text"],
)
def test_a_damaged_compact_log_is_refused_in_one_line(tmp_path, capsys, damage, message):
    run = copy(RUN, tmp_path)
    compact_run(run)
    for name, read in (("episodes.csv.xz", RunDir(run).episodes), ("progress.csv.xz", RunDir(run).progress)):
        path = run / name
        path.write_bytes(damage(path.read_bytes()))
        with pytest.raises(ValueError, match=message):
            read()
    status, err = rl_gns(capsys, "advise", run)
    assert status == 2 and err.count("\n") == 1 and f"{run / 'progress.csv.xz'}: " in err and message in err, err


@pytest.mark.atari
def test_a_run_ends_with_compact_logs_and_a_new_run_in_its_directory_drops_them(tmp_path, capsys):
    run = tmp_path / "run"
    tiny = ["train", "--env", "Breakout", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
            "--gns-every", "1", "--torch-threads", "1", "--progress-bar", "False", "--out", run]  # fmt: skip
    status, _, err = said(capsys, *tiny, "--total-steps", "128")
    assert status == 0, err
    names = {p.name for p in run.iterdir()}
    assert {"progress.csv.xz", "episodes.csv.xz", "training.png"} <= names and not {PROGRESS, EPISODES} & names
    progress = RunDir(run).progress()
    np.testing.assert_array_equal(progress["time/total_timesteps"], [64, 128])
    assert all(is_kept(key) for key in progress) and "gns/envs/g2_value_raw" in progress
    header, rows = read_rows(run / "episodes.csv.xz")
    assert header == ["env_steps", "score", "length_frames", "wall_s"] and len(rows) == len(RunDir(run).episodes()["score"])

    status, _, err = said(capsys, *tiny, "--total-steps", "512", "--overwrite", "--max-wall-minutes", "1e-9")
    assert status == 0, err
    names = {p.name for p in run.iterdir()}
    assert PROGRESS in names and not {"progress.csv.xz", "episodes.csv.xz", "summary.json"} & names
    assert "gns/envs/g2_policy" in RunDir(run).progress()  # unfinished: every column, appended to on resume


def as_before_2026_12_05(run: Path) -> None:
    """Write a compact run of today as an rl-gns before 2026-12-05 kept it: each compact log gzip-compressed
    (``progress.csv.gz``), the text inside the same."""
    for name in (PROGRESS, EPISODES):
        xz = run / compact_name(name)
        (run / f"{name}.gz").write_bytes(gzip.compress(lzma.decompress(xz.read_bytes()), mtime=0))
        xz.unlink()


def test_compact_rewrites_the_gzip_logs_of_an_earlier_rl_gns_and_the_readers_refuse_them_until_then(tmp_path, capsys):
    """A run compacted before 2026-12-05 (gzip) is refused in one line that names `rl-gns compact`; the step rewrites
    both logs xz-compressed, byte for byte what today's compaction writes, and every reader reads what it did."""
    today, old = copy(RUN, tmp_path, "today"), copy(RUN, tmp_path, "old")
    compact_run(today)
    compact_run(old)
    as_before_2026_12_05(old)
    status, _, err = said(capsys, "advise", old)
    hint = f"{old / 'progress.csv.gz'}: written by an rl-gns before 2026-12-05; `rl-gns compact {old}` brings it up to date"
    assert status == 2 and err.count("\n") == 1 and err.strip().endswith(hint), err
    status, out, err = said(capsys, "compact", old)
    assert status == 0 and f"{old}: 2 files of an earlier rl-gns brought to today's form" in out, err
    assert sorted(p.name for p in old.iterdir() if ".csv" in p.name) == ["episodes.csv.xz", "progress.csv.xz"]
    for name in (PROGRESS, EPISODES):
        assert (old / compact_name(name)).read_bytes() == (today / compact_name(name)).read_bytes()
    assert said(capsys, "advise", old)[:2] == said(capsys, "advise", today)[:2]
    status, out, _ = said(capsys, "compact", old)
    assert status == 0 and "brought to today's form" not in out

    (old / compact_name(PROGRESS)).unlink()
    (old / f"{PROGRESS}.gz").write_bytes(b"not gzip at all\n")  # a damaged earlier log: left as it is, in one line
    status, err = rl_gns(capsys, "compact", old)
    assert status == 2 and err.count("\n") == 1 and f"{old / 'progress.csv.gz'}: not whole compressed data" in err, err
    assert (old / f"{PROGRESS}.gz").read_bytes() == b"not gzip at all\n" and not (old / compact_name(PROGRESS)).exists()


def test_the_kept_columns_name_their_readers():
    assert all(reader.strip() for reader in KEPT_COLUMNS.values())
    assert is_kept("gns/ranks_all/g2_total_raw") and is_kept("gns/envs/g2_value_raw") and is_kept("gns/minibatch/b_small")
    unread = ("gns/envs/g2_value", "gns/envs/b_simple_value_avg", "gns/g2_value_raw", "train/loss", "time/fps")
    assert not any(map(is_kept, unread))


def as_before_2026_11_22(run: Path, scheme: str) -> None:
    """Write a run of today as an rl-gns before 2026-11-22 wrote it: its one scheme named as a string in config.json,
    and its noise-scale columns without their ``gns/<scheme>/`` prefix."""
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "gns_scheme": scheme}, indent=2) + "\n")
    text = (run / PROGRESS).read_text()
    header, rest = text.split("\n", 1)
    (run / PROGRESS).write_text(header.replace(f"gns/{scheme}/", "gns/") + "\n" + rest)


def test_compact_brings_the_files_of_an_earlier_rl_gns_to_todays_form(tmp_path, capsys):
    """The one migration step: a run of before 2026-11-22 is refused in one line that names `rl-gns compact`; after it,
    config.json names the scheme in a list, the columns carry its prefix, and every reader reads what today's run
    gives. A second pass changes nothing."""
    today, old = copy(RUN, tmp_path, "today"), copy(RUN, tmp_path, "old")
    as_before_2026_11_22(old, "envs")
    status, _, err = said(capsys, "advise", old)
    hint = f"written by an rl-gns before 2026-11-22; `rl-gns compact {old}` brings it up to date"
    assert status == 2 and err.strip().endswith(hint)
    status, out, err = said(capsys, "compact", old)
    assert status == 0 and "2 files of an earlier rl-gns brought to today's form" in out, err
    assert json.loads((old / "config.json").read_text()) == json.loads((today / "config.json").read_text())
    compact_run(today)
    assert (old / compact_name(PROGRESS)).read_bytes() == (today / compact_name(PROGRESS)).read_bytes()
    assert said(capsys, "advise", old)[:2] == said(capsys, "advise", today)[:2]
    status, out, _ = said(capsys, "compact", old)
    assert status == 0 and "brought to today's form" not in out
    # only the noise-scale columns of the one scheme move; the env count of an adaptive run has no scheme
    header = "time/total_timesteps,gns/n_envs,gns/g2_value_raw,gns/b_simple_total_avg_low,gns/b_big,rollout/ep_rew_mean"
    assert prefixed_header(header, "envs") == (
        "time/total_timesteps,gns/n_envs,gns/envs/g2_value_raw,gns/envs/b_simple_total_avg_low,gns/envs/b_big,"
        "rollout/ep_rew_mean"
    )


def test_a_committed_compact_probe_gives_its_committed_report(tmp_path, capsys):
    """probes_v7's logs are compact: probe-report reads them and writes, byte for byte, the report and results it
    wrote from the CSV files (B_crit 3.61e+03 [2.05e+03, 6.27e+03] on Pong at 500k, in docs and the v7 table)."""
    assert not list(COMPACT_PROBE.rglob("*.csv")) and len(list(COMPACT_PROBE.rglob("progress.csv.xz"))) > 60
    probe = copy(COMPACT_PROBE, tmp_path)
    status, err = rl_gns(capsys, "probe-report", probe)
    assert status == 0, err
    for name in ("report.md", "probe_results.json"):
        assert (probe / name).read_bytes() == (COMPACT_PROBE / name).read_bytes(), name
    fit = json.loads((probe / "probe_results.json").read_text())["fit"]
    assert f"{fit['b_crit']:.3g} [{fit['b_crit_low']:.3g}, {fit['b_crit_high']:.3g}]" == "3.61e+03 [2.05e+03, 6.27e+03]"
    assert (
        "| pong | 500,224 | 3.61e+03 [2.05e+03, 6.27e+03] |"
        in (RESULTS / "probes_v7" / "validation" / "probes.md").read_text()
    )


def test_the_committed_compact_probes_give_their_committed_criterion_table(tmp_path, capsys):
    """rl-gns validate-probes over every compact probe of v7 (their branches' noise sums read from progress.csv.xz)
    writes the committed table, byte for byte."""
    committed = RESULTS / "probes_v7"
    probes = sorted(p for p in committed.iterdir() if p.is_dir())  # as results/probes_v4/run.sh names them
    status, err = rl_gns(capsys, "validate-probes", *probes, "--out", tmp_path / "validation")
    assert status == 0, err
    for name in ("probes.md", "probes.json", "b_crit_by_stage.png"):
        assert (tmp_path / "validation" / name).read_bytes() == (committed / "validation" / name).read_bytes(), name
