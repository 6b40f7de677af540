"""Kill a real run (or a whole sweep) with SIGKILL at random moments, resume it each time, and report what was lost.

``train``: one ``rl-gns train`` run is killed ``--kills`` times, each at a random moment between ``--min-s`` and
``--max-s`` seconds after its slice started, and resumed with ``rl-gns train --resume`` until it finishes. Per kill:
the agent steps logged when it was killed, the checkpoint resumed from, and the steps lost (logged after that
checkpoint, trained again). Then the finished run's logs are checked for gaps and duplicates.

``sweep``: one ``rl-gns sweep`` is killed once (its whole process group) after ``--min-s`` seconds; rerunning it
resumes the runs in flight. Per run in flight: steps trained at the kill, steps kept by its checkpoint (the work a
restart from scratch would have lost).

    python benchmarks/kill_resume.py train --out results/resume/beamrider_pixels -- --env BeamRider \\
        --n-envs 8 --total-steps 200000 --checkpoint-minutes 1
    python benchmarks/kill_resume.py sweep --out results/resume/beamrider_ram_sweep -- --env BeamRider \\
        --backend ram ... --checkpoint-minutes 0.5

Everything after ``--`` goes to ``rl-gns train`` or ``rl-gns sweep`` unchanged (``--out`` is set here). Writes
``kills.json`` and ``kills.md`` into ``--out``.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import tyro

from rl_gns.records.checkpoint import latest_checkpoint
from rl_gns.records.rundir import STEP_KEY, RunDir

CLI = [sys.executable, "-m", "rl_gns"]


@dataclass
class Args:
    """Kill a run or a sweep at random moments and resume it."""

    mode: tyro.conf.Positional[Literal["train", "sweep"]]
    """train: one run, killed --kills times; sweep: a sweep, killed once."""
    out: Path
    """Run directory (train) or sweep directory (sweep); kills.json and kills.md are written there."""
    kills: int = 3
    """Kills of a train run."""
    min_s: float = 60.0
    """Earliest kill, seconds after a slice starts."""
    max_s: float = 240.0
    """Latest kill, seconds after a slice starts (train)."""
    seed: int = 0
    """Seed of the kill times."""
    args: tyro.conf.Positional[list[str]] = field(default_factory=list)
    """Arguments of rl-gns train or rl-gns sweep (after --)."""


def logged_steps(run: Path) -> int:
    """Agent steps of the last row in ``progress.csv`` (what had been trained and logged)."""
    return RunDir(run).env_steps()


def kill_group(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def kill_train(args: Args) -> dict:
    rng = np.random.default_rng(args.seed)
    command = [*CLI, "train", *args.args, "--out", str(args.out)]
    kills = []
    start = time.monotonic()
    for k in range(args.kills):
        delay = float(rng.uniform(args.min_s, args.max_s))
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            process.wait(timeout=delay)
            raise SystemExit(f"the run finished before kill {k + 1}: give it a larger budget or earlier kills")
        except subprocess.TimeoutExpired:
            kill_group(process)
        at_kill = logged_steps(args.out)
        checkpoint = latest_checkpoint(args.out)
        resumed_from = 0 if checkpoint is None else checkpoint.env_steps
        kills.append({"after_s": round(delay, 1), "logged_steps": at_kill, "checkpoint_steps": resumed_from,
                      "lost_steps": at_kill - resumed_from})  # fmt: skip
        print(f"kill {k + 1} after {delay:.0f} s: {at_kill:,} agent steps logged, checkpoint at {resumed_from:,}", flush=True)
        command = [*CLI, "train", "--resume", str(args.out)]
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0:
        raise SystemExit(finished.stderr[-2000:])
    run = RunDir(args.out)
    config, summary, progress = run.config().settings, run.summary().values, run.progress()
    steps = progress[STEP_KEY]
    expected = config["rollout_size"] * np.arange(1, len(steps) + 1)
    return {
        "kills": kills,
        "env_steps": summary["env_steps"],
        "resumes": summary["resumes"],
        "games_dropped": summary["games_dropped"],
        "rows": len(steps),
        "rows_contiguous": bool(np.array_equal(steps, expected)),
        "iterations_contiguous": bool(np.array_equal(progress["time/iterations"], np.arange(1, len(steps) + 1))),
        "wall_s_total": round(time.monotonic() - start, 1),
        "run_wall_s": summary["wall_s"],
        "checkpoint_minutes": config["checkpoint_minutes"],
    }


def kill_sweep(args: Args) -> dict:
    command = [*CLI, "sweep", *args.args, "--out", str(args.out)]
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        process.wait(timeout=args.min_s)
        raise SystemExit("the sweep finished before the kill: kill it earlier")
    except subprocess.TimeoutExpired:
        kill_group(process)
    in_flight = {}
    for path in sorted((args.out / "runs").iterdir()):
        run = RunDir(path)
        if run.status() == "done" or not run.is_started():
            continue
        checkpoint = latest_checkpoint(path)
        kept = 0 if checkpoint is None else checkpoint.env_steps
        in_flight[path.name] = {"logged_steps": run.env_steps(), "checkpoint_steps": kept}
    done_before = sum(RunDir(p).status() == "done" for p in (args.out / "runs").iterdir())
    resumed = subprocess.run(command, capture_output=True, text=True)
    if resumed.returncode != 0:
        raise SystemExit(resumed.stderr[-2000:])
    for name, record in in_flight.items():
        summary = RunDir(args.out / "runs" / name).summary().values
        record.update(final_steps=summary["env_steps"], resumes=summary["resumes"])
    return {
        "killed_after_s": args.min_s,
        "runs_done_before_kill": done_before,
        "in_flight": in_flight,
        "steps_saved": sum(r["checkpoint_steps"] for r in in_flight.values()),
        "steps_lost": sum(r["logged_steps"] - r["checkpoint_steps"] for r in in_flight.values()),
        "resume_stdout": [line for line in resumed.stdout.splitlines() if "to resume" in line or "finished" in line],
        "wall_s_total": round(time.monotonic() - start, 1),
    }


def markdown(args: Args, record: dict) -> str:
    lines = [f"# Kill and resume: `{args.mode}`", "", f"`{record['command']}`", "", f"{record['machine']}, {record['date']}"]
    lines.append("")
    if args.mode == "train":
        lines += ["| kill | after (s) | agent steps logged | checkpoint resumed from | steps lost |", "|---|---|---|---|---|"]
        for i, k in enumerate(record["kills"], 1):
            lines.append(f"| {i} | {k['after_s']} | {k['logged_steps']:,} | {k['checkpoint_steps']:,} | {k['lost_steps']:,} |")
        lines += ["", f"Finished at {record['env_steps']:,} agent steps after {record['resumes']} resumes; "
                  f"{record['rows']} progress rows, contiguous: {record['rows_contiguous']}, iterations contiguous: "
                  f"{record['iterations_contiguous']}; {record['games_dropped']} games in progress dropped; "
                  f"checkpoint every {record['checkpoint_minutes']} min; run wall time {record['run_wall_s']:.0f} s "
                  f"(all slices), {record['wall_s_total']:.0f} s with restarts and lost work."]  # fmt: skip
    else:
        lines += ["| run in flight | steps trained at the kill | kept by its checkpoint | final steps | resumes |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for name, r in record["in_flight"].items():
            steps = f"{r['logged_steps']:,} | {r['checkpoint_steps']:,} | {r['final_steps']:,}"
            lines.append(f"| {name} | {steps} | {r['resumes']} |")
        lines += ["", f"Killed after {record['killed_after_s']:.0f} s ({record['runs_done_before_kill']} runs done). "
                  f"Resuming kept {record['steps_saved']:,} agent steps of the runs in flight that a restart from "
                  f"scratch would have trained again, and lost {record['steps_lost']:,} (trained after their last "
                  "checkpoint).", "", *[f"    {line}" for line in record["resume_stdout"]]]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(args: Args) -> None:
    record = kill_train(args) if args.mode == "train" else kill_sweep(args)
    record.update(
        command="python benchmarks/kill_resume.py " + " ".join(sys.argv[1:]),
        machine=f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    (args.out / "kills.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "kills.md").write_text(markdown(args, record))
    print(markdown(args, record))


if __name__ == "__main__":
    main(tyro.cli(Args))
