"""Does a probe's target lie within reach of its pilot's own settings? The pilot's replicas re-read. No training.

Criterion v8's pilot trains on from the branch point at the run's env count, n_steps and learning rate; its best
running score ``P`` sets the target ``F + (P − F) / 3`` above the null floor ``F``. A branch of the probe at the same
env count, n_steps and learning rate differs from the pilot in its seed alone: a **replica**. For every probe under the
given paths whose pilot set a target, this re-reads each replica's best running score within its budget (a branch
stops at the target, so a replica that reached it is read at the target) and counts the replicas that reached it: where
few do, the target rides on the pilot's seed. Exploratory: asked after the fresh Pong probe at 500k, whose one replica
did not reach a target set by a pilot that climbed from −18 to −10.

The branches of some of criterion v8's probes lie in the history (results/README.md); bring those of the n_steps design
back first:

    git restore --source=53867d90 -- results/probes_v8/Pong/at1950k_censored_steps/{runs,specs}
    git restore --source=c05b42f5 -- results/probes_v8/Qbert/at1500k_censored_steps/{runs,specs}
    git restore --source=b8cd41d4 -- results/probes_v8/{Breakout/at1000k,Alien/at1950k}_censored_steps/{runs,specs}
    git restore --source=32d53f01 -- results/probes_v8/Qbert/at1950k_censored_steps{,_retest}/{runs,specs}
    git restore --source=b908d64e -- results/probes_v8/Pong/at1000k_censored_steps/{runs,specs}
    python benchmarks/pilot_replicas.py results/probes_v8 --out results/validation/pilot_replicas
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import tyro

from rl_gns.records.rundir import PROBE, RunDir, read_json
from rl_gns.reports.sweep_analysis import load_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reread_censored import write_reread


@dataclass
class Args:
    """Re-read the replicas of committed probes' pilots: the branches at the pilot's own settings."""

    paths: tyro.conf.Positional[list[Path]]
    """Directories holding probe directories (each with probe.json, pilot/ and runs/)."""
    out: Path | None = None
    """Directory for replicas.md and replicas.json (default: print only)."""


def row(probe_dir: Path) -> dict | None:
    """One probe's pilot, target and replicas (its finished branches at the pilot's env count, rollout size and
    learning rate, read as a sweep's runs are); ``None`` where the pilot set no target or no replica finished."""
    probe = read_json(probe_dir / PROBE)
    if not probe.get("targets") or probe.get("pilot_best") is None:
        return None
    pilot = RunDir(probe_dir / "pilot").config()
    target, window = float(probe["targets"][0]), int(probe["window"])
    settings = (pilot.n_envs, pilot.rollout_size, pilot.learning_rate)
    branches = (RunDir(run) for run in sorted((probe_dir / "runs").glob("*")))
    runs = (load_run(run, [], window) for run in branches if run.status() == "done")
    replicas = [r for r in runs if (r.n_envs, r.rollout_size, r.learning_rate) == settings]
    if not replicas:
        return None
    return {
        "probe": str(probe_dir),
        "null_floor": float(probe["null_floor"]),
        "pilot_best": float(probe["pilot_best"]),
        "target": target,
        "settings": {"n_envs": pilot.n_envs, "n_steps": pilot.n_steps, "learning_rate": pilot.learning_rate},
        "replicas": [
            {"run": r.name, "best": r.best_running_score, "reached": r.best_running_score >= target} for r in replicas
        ],
    }


def main(args: Args) -> None:
    probes = sorted({p.parent for path in args.paths for p in path.rglob(PROBE)})
    rows = [r for r in map(row, probes) if r is not None]
    if not rows:
        print(f"pilot_replicas.py: error: no probe with a target and a finished replica under {args.paths}", file=sys.stderr)
        raise SystemExit(2)
    reached = [sum(rep["reached"] for rep in r["replicas"]) for r in rows]
    total = [len(r["replicas"]) for r in rows]
    lines = [
        "| probe | null floor | pilot's best | target | replicas' best running scores (* reached) | reached |",
        "|---|---:|---:|---:|---|---:|",
        *(
            f"| {r['probe']} | {r['null_floor']:.4g} | {r['pilot_best']:.4g} | {r['target']:.4g} | "
            + ", ".join(f"{rep['best']:.4g}{'*' if rep['reached'] else ''}" for rep in r["replicas"])
            + f" | {k} of {n} |"
            for r, k, n in zip(rows, reached, total, strict=True)
        ),
        "",
        f"- {sum(reached)} of {sum(total)} replicas reached their probe's target; in {sum(k == 0 for k in reached)} of "
        f"{len(rows)} probes none did, in {sum(k == n for k, n in zip(reached, total, strict=True))} every one did.",
    ]
    write_reread(args.out, "replicas", "\n".join(lines), rows)


if __name__ == "__main__":
    main(tyro.cli(Args))
