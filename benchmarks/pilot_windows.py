"""Would a longer running score have given v8's probes a target? An exploratory re-read of their anchors and pilots.

Criterion v8 sets a probe's targets between the null floor (the highest running score a branch that learns nothing
reaches with probability 1 %, every look and every learning rate counted) and the pilot's best running score; where the
pilot does not pass the floor the probe has no target. Both depend on the games a running score averages (``window``,
20 in every v8 probe): a longer one lowers the floor (less noise) and the pilot's best (less luck). This script redoes
the rule at several windows from each probe's committed files, with no training:

- the floor from the anchor's games (its agent at learning rate 0) resampled as :func:`rl_gns.experiments.probe`'s
  ``null_floor_of`` does, at the probe's own number of looks (``probe.json``'s ``null_looks``, at least the window) and
  its 3 learning rates, drawn with its own seed (at window 20 it gives the probe's recorded floor);
- the pilot's best running score over its games at the same window.

Exploratory, chosen after seeing that three of four games had no target at window 20; a longer window also times a
branch more coarsely (its first running score stands for later agent steps).

    python benchmarks/pilot_windows.py results/probes_v8 --out results/probes_v8/pilot_windows.md
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.targets import null_floor, null_max_running_scores, running_score
from rl_gns.records.rundir import ANCHOR, PILOT, PROBE, RunDir, read_json


@dataclass
class Args:
    """The null floor and the pilot's best running score of each v8 probe at several windows."""

    roots: tyro.conf.Positional[tuple[Path, ...]]
    """Directories holding probe directories with an anchor and a pilot."""
    windows: list[int] = field(default_factory=lambda: [20, 50, 100])
    """Games averaged by the running score."""
    rates: int = 3
    """Learning rates a size tries (v8's probes: 3)."""
    level: float = 0.01
    """Largest false-crossing probability of a target."""
    draws: int = 20_000
    """Null branches resampled from the anchor's games."""
    out: Path | None = None
    """Markdown table (default: print only)."""


def row(probe_dir: Path, window: int, args: Args) -> str:
    """One probe at one window: the floor, the pilot's best, and whether it passes."""
    record = read_json(probe_dir / PROBE)
    looks = max(window, int(record["null_looks"]))
    null = RunDir(probe_dir / ANCHOR).episodes()["score"]
    rng = np.random.default_rng(int(record["first_seed"]))  # as the probe drew its null branches
    maxima = null_max_running_scores(null, looks, window, args.draws, rng)
    floor = null_floor(maxima, args.rates, args.level)
    pilot = RunDir(probe_dir / PILOT).episodes()["score"]
    best = float(np.nanmax(running_score(pilot, window), initial=-np.inf))
    sd = float(np.std(null, ddof=1))
    return (
        f"| {probe_dir} | {len(null)} | {len(pilot)} | {window} | {floor:.4g} | {best:.4g} | "
        f"{(best - floor) / sd:+.2f} | {'yes' if best > floor else 'no'} |"
    )


def main(args: Args) -> None:
    probes = sorted(
        {p.parent for root in args.roots for p in root.rglob(PROBE) if (p.parent / PILOT / "summary.json").exists()}
    )
    lines = [
        "| probe | anchor games | pilot games | window | null floor | pilot's best | (best − floor) / sd of a game | target |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        *(row(probe_dir, window, args) for probe_dir in probes for window in args.windows),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        command = "python benchmarks/pilot_windows.py " + " ".join(map(str, args.roots)) + f" --out {args.out}"
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        args.out.write_text(f"Command: `{command}` ({stamp}). Exploratory (see the script's docstring).\n\n{text}\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
