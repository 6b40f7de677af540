"""``rl-gns probe`` interrupted at any moment (SIGINT, SIGKILL of the command, SIGKILL of the command and its runs) and
run again goes on to the report an uninterrupted probe with the same seeds gives, on real Breakout from RAM with tiny
budgets: an unfinished anchor is replayed and an unfinished branch restarted from the branch point, both from the
probe's own copy of the agent, which nothing the source does can take away."""

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import ONE_RATE

from rl_gns.experiments.probe import HELD
from rl_gns.records.checkpoint import CHECKPOINTS, checkpoint_dirs
from rl_gns.records.rundir import RunDir

pytestmark = [pytest.mark.atari, pytest.mark.slow]

CLI = [sys.executable, "-m", "rl_gns"]
TINY = ["--env", "Breakout", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--minibatch-size", "32",
        "--torch-threads", "1", "--progress-bar", "False"]  # fmt: skip
#: A probe of a few seconds per run: an anchor of about 6 games, 2 branches, a checkpoint every iteration.
PROBE = [*ONE_RATE, "--anchor-steps", "1536", "--window", "2", "--n-envs", "2,4", "--seeds", "1", "--budget-steps", "1024",
         "--workers", "2", "--checkpoint-minutes", "0", "--target-rule", "noise", "--delta-noise", "1", "--design", "fixed",
         "--max-cost", "None"]  # fmt: skip
#: What two probes of one agent with the same seeds differ in: where each lies, the path of its copy of the agent, and
#: how often it started its runs again.
PER_DIRECTORY = ("out", "model", "restarts")
#: Ways to interrupt a probe: its command stopped cleanly, killed alone (its runs get SIGTERM and stop with
#: checkpoints), or killed with every run it started (a machine that goes down).
INTERRUPTIONS = ("SIGINT", "SIGKILL", "SIGKILL all")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    run = tmp_path_factory.mktemp("probe_resume") / "source"
    result = subprocess.run([*CLI, "train", *TINY, "--total-steps", "4096", "--snapshot-steps", "1500", "--out", str(run)],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return run


def command(source: Path, out: Path, *more: str) -> list[str]:
    return [*CLI, "probe", str(source), *PROBE, *more, "--out", str(out)]


def finish(args: list[str]) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result


class Reference(NamedTuple):
    """A probe run once without interruption."""

    out: Path
    """Its directory."""
    anchor_s: float
    """Seconds from its command's start until its anchor was done."""
    branches_s: float
    """Seconds from then until its command ended."""


@pytest.fixture(scope="module")
def uninterrupted(source, tmp_path_factory) -> Reference:
    """The probe at 3,008 agent steps run once without interruption, and how long its anchor and branches took."""
    out = tmp_path_factory.mktemp("uninterrupted") / "probe"
    args, began = command(source, out, "--at", "3000"), time.perf_counter()
    probe = start(args, out.parent / "log.txt")
    wait_for(lambda: RunDir(out / "anchor").status() == "done" or probe.poll() is not None, timeout=900)
    anchor_s = time.perf_counter() - began
    assert probe.wait(timeout=900) == 0, (out.parent / "log.txt").read_text()[-2000:]
    return Reference(out, anchor_s, time.perf_counter() - began - anchor_s)


def numbers(probe: Path) -> dict:
    """``probe_results.json`` but for what differs between directories."""
    results = json.loads((probe / "probe_results.json").read_text())
    return {key: value for key, value in results.items() if key not in PER_DIRECTORY}


def games(run: Path) -> list[tuple[float, float, float]]:
    """A run's games (agent step, score, length): everything of ``episodes.csv`` but the wall time."""
    logged = RunDir(run).episodes()
    return list(zip(logged["env_steps"], logged["score"], logged["length_frames"], strict=True))


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(child) for child in (task / "children").read_text().split()]
        except OSError:  # ended meanwhile
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def wait_for(condition: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def interrupt(process: subprocess.Popen, how: str) -> None:
    """Stop a probe's command as ``how`` says (:data:`INTERRUPTIONS`) and wait until every process it started ended."""
    started = descendants(process.pid)
    if how == "SIGINT":
        process.send_signal(signal.SIGINT)
    else:
        process.kill()
        for pid in started if how == "SIGKILL all" else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    process.wait(timeout=300)
    wait_for(lambda: not any(alive(pid) for pid in started))


def start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "a") as f:
        return subprocess.Popen(args, stdout=f, stderr=f)


def checkpointed(run: Path, since: float) -> bool:
    """Whether an unfinished run wrote a checkpoint after ``since`` (``time.time()``)."""
    written = [path.stat().st_mtime for path in checkpoint_dirs(run / CHECKPOINTS) if path.exists()]
    return RunDir(run).status() != "done" and max(written, default=0.0) > since


def test_an_anchor_interrupted_again_and_again_is_replayed_to_the_same_games(source, uninterrupted, tmp_path):
    """Resumed from a checkpoint, a fixed-parameter anchor would drop its games in progress at every interruption (four
    kills could leave it none); replayed from its start, it plays the games an uninterrupted anchor plays."""
    reference = uninterrupted.out
    out, args = tmp_path / "probe", command(source, tmp_path / "probe", "--at", "3000")
    for how in ("SIGKILL all", "SIGKILL", "SIGKILL all", "SIGKILL", "SIGINT"):
        began, probe = time.time(), start(args, tmp_path / "log.txt")
        wait_for(partial(checkpointed, out / "anchor", began))
        interrupt(probe, how)
        assert RunDir(out / "anchor").status() != "done"
    finish(args)
    assert games(out / "anchor") == games(reference / "anchor")
    assert numbers(out) == numbers(reference)
    record = json.loads((out / "probe.json").read_text())
    assert record["restarts"]["anchor"] == 5 and RunDir(out / "anchor").summary().values["resumes"] == 0


def test_a_branch_killed_with_checkpoints_restarts_from_the_branch_point(source, uninterrupted, tmp_path):
    """A branch resumed from a checkpoint would drop its games in progress and take more iterations to its target;
    restarted from the branch point, it takes the iterations an uninterrupted branch takes."""
    reference = uninterrupted.out
    out, args = tmp_path / "probe", command(source, tmp_path / "probe", "--at", "3000")
    began, probe = time.time(), start(args, tmp_path / "log.txt")
    wait_for(lambda: any(checkpointed(run, began) for run in (out / "runs").glob("*")))
    interrupt(probe, "SIGKILL all")
    finish(args)
    for branch in sorted((reference / "runs").iterdir()):
        again = out / "runs" / branch.name
        assert games(again) == games(branch), branch.name
        assert RunDir(again).summary().iterations == RunDir(branch).summary().iterations, branch.name
    assert numbers(out) == numbers(reference)
    assert json.loads((out / "probe.json").read_text())["restarts"]["branches"] >= 1


def test_a_probe_holds_its_branch_point_while_its_source_trains_on(source, tmp_path):
    """A probe of an unfinished run branches from its newest checkpoint, which the run prunes when it trains on: the
    probe keeps its own copy, so the source may resume while the probe is stopped, and the probe goes on from the copy
    to the report an uninterrupted probe of that checkpoint gives."""
    run = tmp_path / "source"
    stopped = subprocess.run([*CLI, "train", *TINY, "--total-steps", "8192", "--max-wall-minutes", "0.05", "--out",
                              str(run)], capture_output=True, text=True)  # fmt: skip
    assert stopped.returncode == 0 and RunDir(run).status() != "done", stopped.stderr[-2000:]
    (checkpoint,) = checkpoint_dirs(run / CHECKPOINTS)
    finish(command(run, tmp_path / "reference"))

    out, args = tmp_path / "probe", command(run, tmp_path / "probe")
    probe = start(args, tmp_path / "log.txt")
    wait_for(lambda: any(RunDir(branch).is_started() for branch in (out / "runs").glob("*")))
    interrupt(probe, "SIGINT")
    record = json.loads((out / "probe.json").read_text())
    held = out / HELD
    assert record["model"] == str(held) and record["source_model"] == str(checkpoint / "model.zip")
    assert record["model_sha256"] == hashlib.sha256(held.read_bytes()).hexdigest()
    assert json.loads((out / "anchor" / "config.json").read_text())["init_from"] == str(held)

    resumed = subprocess.run([*CLI, "train", "--resume", str(run)], capture_output=True, text=True)
    assert resumed.returncode == 0 and not checkpoint.exists(), resumed.stderr[-2000:]
    finish(args)
    assert numbers(out) == numbers(tmp_path / "reference")

    held.write_bytes(held.read_bytes()[:-1] + b"x")  # the probe's copy changed: its branches would start elsewhere
    refused = subprocess.run(args, capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.strip().endswith(
        f"{held} is not the agent this probe started from (its SHA-256 differs); use another --out"
    )


def test_a_probe_kept_without_its_copy_of_the_agent_goes_on_in_another_clone(source, uninterrupted, tmp_path):
    """A repository keeps a probe's records but not its copy of the agent, and a clone lies elsewhere: the probe,
    moved whole with its source and missing a branch, goes on from a copy made again from the source (same SHA-256)
    to the report of the uninterrupted probe, its finished runs kept."""
    reference = uninterrupted.out
    common = Path(os.path.commonpath([source, reference]))
    moved_source, moved = tmp_path / source.relative_to(common), tmp_path / reference.relative_to(common)
    shutil.copytree(source, moved_source)
    shutil.copytree(reference, moved)
    (moved / HELD).unlink()
    branches = sorted((moved / "runs").iterdir())
    shutil.rmtree(branches[0])  # a branch unfinished where the records were kept
    kept = {branch.name: (branch / "summary.json").stat().st_mtime_ns for branch in branches[1:]}
    finish(command(moved_source, moved, "--at", "3000"))
    assert (
        hashlib.sha256((moved / HELD).read_bytes()).hexdigest()
        == json.loads((moved / "probe.json").read_text())["model_sha256"]
    )
    assert {name: (moved / "runs" / name / "summary.json").stat().st_mtime_ns for name in kept} == kept
    assert games(moved / "runs" / branches[0].name) == games(reference / "runs" / branches[0].name)
    results = numbers(moved)
    assert results.pop("source") == str(moved_source)
    assert results == {key: value for key, value in numbers(reference).items() if key != "source"}


def test_a_probe_that_went_on_in_another_checkout_reports_where_it_is_kept(source, uninterrupted, tmp_path):
    """A probe whose anchor played in one checkout and whose branches went on in a second (its probe.json records the
    second, its anchor the first), then copied into a third (the repository that keeps it), reports there as the
    uninterrupted probe does: every recorded path is read where the probe lies now."""
    reference = uninterrupted.out
    second, kept = tmp_path / "second" / "probe", tmp_path / "kept" / "probe"
    shutil.copytree(reference, second)
    shutil.rmtree(sorted((second / "runs").iterdir())[0])  # a branch that goes on in the second checkout
    finish(command(source, second, "--at", "3000"))
    shutil.copytree(second, kept)
    result = subprocess.run([*CLI, "probe-report", str(kept)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert numbers(kept) == numbers(reference)


def test_a_population_probe_killed_in_its_branches_goes_on_to_the_same_report(source, tmp_path):
    """With --engine population the branches of one size draw their actions from one generator: an unfinished
    population starts again whole, its finished members too, and ends as an uninterrupted one does."""
    population = ("--at", "3000", "--engine", "population")
    finish(command(source, tmp_path / "reference", *population))
    out, args = tmp_path / "probe", command(source, tmp_path / "probe", *population)
    began, probe = time.time(), start(args, tmp_path / "log.txt")
    wait_for(lambda: any(checkpointed(run, began) for run in (out / "runs").glob("*")))
    interrupt(probe, "SIGKILL")  # the population gets SIGTERM: its members stop with checkpoints
    finish(args)
    for branch in sorted((tmp_path / "reference" / "runs").iterdir()):
        assert games(out / "runs" / branch.name) == games(branch), branch.name
    assert numbers(out) == numbers(tmp_path / "reference")


def test_the_report_says_where_runs_resumed_from_checkpoints(uninterrupted, tmp_path):
    """An anchor or branch that resumed from a checkpoint (``rl-gns train --resume`` on a run of the probe) lost its
    games in progress: the report says what that changed."""
    reference = uninterrupted.out
    probe = Path(shutil.copytree(reference, tmp_path / "probe"))
    for run, resumes in ((probe / "anchor", 2), (sorted((probe / "runs").iterdir())[0], 1)):
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "resumes": resumes, "games_dropped": 2 * resumes}))
    result = subprocess.run([*CLI, "probe-report", str(probe)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    notes = json.loads((probe / "probe_results.json").read_text())["interrupted"]
    assert notes[0].startswith("the anchor resumed 2 time(s) from checkpoints, losing 4 games in progress")
    assert notes[1].startswith("1 branches resumed from checkpoints") and len(notes) == 2
    assert f"Note: {notes[0]}." in (probe / "report.md").read_text()
    assert numbers(reference)["interrupted"] == []


#: Interruptions of the property test: seeded moments across a probe's wall time (a moment past its end is drawn again).
KILL_POINTS = 8


def test_a_probe_interrupted_at_random_moments_reports_what_an_uninterrupted_one_does(source, uninterrupted, tmp_path):
    """At :data:`KILL_POINTS` seeded moments, a fresh probe is interrupted in one of the :data:`INTERRUPTIONS` ways,
    then the same command is run to its end: every number of its report is the uninterrupted probe's. Every other
    moment is drawn within the time the uninterrupted probe took to finish its anchor, the others within the time its
    branches took, counted from when the anchor finished, so that both phases are interrupted however the machine
    divides its time between them (moments drawn across the probe's whole wall time fell in the anchor every time on
    one loaded machine, and in the branches every time on another)."""
    reference, anchor_s, branches_s = uninterrupted
    rng = random.Random(0)
    outcomes: list[tuple[str, float, str, bool]] = []
    for k in range(2 * KILL_POINTS):
        if len(outcomes) == KILL_POINTS:
            break
        out = tmp_path / f"probe{k}"
        args, how = command(source, out, "--at", "3000"), INTERRUPTIONS[k % 3]
        after_s = rng.uniform(0.02, 0.9) * (branches_s if k % 2 else anchor_s)
        probe = start(args, tmp_path / f"log{k}.txt")
        if k % 2:  # this moment is counted from when the anchor finished
            while RunDir(out / "anchor").status() != "done" and probe.poll() is None:
                time.sleep(0.1)
        try:
            probe.wait(timeout=after_s)
            continue  # it finished first: not an interruption
        except subprocess.TimeoutExpired:
            phase = "anchor" if RunDir(out / "anchor").status() != "done" else "branches"
            interrupt(probe, how)
        finish(args)
        outcomes.append((how, round(after_s, 1), phase, numbers(out) == numbers(reference)))
    print("\n".join(f"kill point {k}: {how} at {after_s} s, in the {phase}: same report {same}"
                     for k, (how, after_s, phase, same) in enumerate(outcomes)))  # fmt: skip
    assert len(outcomes) == KILL_POINTS and all(same for *_, same in outcomes), outcomes
    assert {"anchor", "branches"} <= {phase for _, _, phase, _ in outcomes}, outcomes


def test_population_members_resumed_from_different_boundaries_are_warned_of(tmp_path):
    """A SIGKILL while a population writes its members' checkpoints, one after another, leaves the first members at
    the new boundary and the others at the one before: the rerun says that the members go on from different
    boundaries, not as the population would have."""
    out = tmp_path / "sweep"
    args = [*CLI, "sweep", "--env", "Breakout", "--backend", "ram", "--n-envs", "2", "--n-steps", "32", "--n-minibatches",
            "2", "--seeds", "2", "--lr-points", "1", "--targets", "1000", "--budget-steps", "4096", "--engine",
            "population", "--workers", "1", "--checkpoint-minutes", "0", "--out", str(out)]  # fmt: skip
    sweep = start(args, tmp_path / "log.txt")
    wait_for(lambda: sum(len(checkpoint_dirs(run / CHECKPOINTS)) == 2 for run in (out / "runs").glob("*")) == 2)
    interrupt(sweep, "SIGINT")
    members = sorted((out / "runs").iterdir())
    newest = [checkpoint_dirs(run / CHECKPOINTS)[-1] for run in members]
    assert newest[0].name == newest[1].name  # one boundary, where the signal stopped them
    shutil.rmtree(newest[1])  # the kill came before the second member's checkpoint was in place
    steps = sorted(int(checkpoint_dirs(run / CHECKPOINTS)[-1].name) for run in members)
    finish(args)
    said = next((out / "specs").glob("*.population.log")).read_text()
    assert f"the members resume from checkpoints at {steps[0]:,}, {steps[1]:,} agent steps" in said


def test_a_probe_of_a_source_under_a_name_that_is_not_utf8_reports_as_one_elsewhere(source, uninterrupted, tmp_path):
    """A source whose directory's name is not UTF-8 (--out elsewhere): the report names it as a message does
    (``\\udcff``), and every number is the probe's of the same agent in a directory whose name is text."""
    reference = uninterrupted.out
    moved = Path(shutil.copytree(source, tmp_path / os.fsdecode(b"bad\xffdir") / "source"))
    out = tmp_path / "probe"
    result = subprocess.run(command(moved, out, "--at", "3000"), capture_output=True, text=True, errors="surrogateescape")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]  # the console names the source as is
    paths = {"source": None, "source_model": None}  # where each probe found the agent
    assert {**numbers(out), **paths} == {**numbers(reference), **paths}
    assert "bad\\udcffdir/source" in (out / "report.md").read_text(encoding="utf-8")
    assert (out / "steps_vs_rollout_size.png").stat().st_size > 0
