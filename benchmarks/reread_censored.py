"""Re-read committed probes with the branches that did not reach a target in the fit, as censored. No training.

A probe's fit of ``S(B)`` keeps, per size and seed, the fastest learning rate that reached the target, and leaves out a
size and seed at which none did. ``rl-gns probe --censored`` keeps those as censored: their steps exceed a lower bound
(:func:`rl_gns.core.maths.targets.censored_by`), and the fit is
:func:`rl_gns.core.maths.tradeoff.fit_censored_tradeoff`. For every probe directory under the given paths that holds
its branches, and each of its targets, this fits both ways with the report's own code
(:func:`rl_gns.reports.probe_report.rung`, by the probe's steps measure) and writes them side by side. Exploratory: the
censored fit was written after these probes were seen.

    python benchmarks/reread_censored.py results/probes_v6 results/probes_v7 results/probes_v8 \
        --out results/validation/reread_censored
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import tyro

from rl_gns.core.maths.targets import StepsMeasure
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.records.rundir import PROBE, read_json
from rl_gns.reports.probe_report import rung
from rl_gns.reports.sweep_analysis import load_sweep


@dataclass
class Args:
    """Fit committed probes' targets with and without the branches that did not reach them."""

    paths: tyro.conf.Positional[list[Path]]
    """Directories holding probe directories (each with probe.json and its branches' runs/)."""
    out: Path | None = None
    """Directory for censored.md and censored.json (default: print only)."""


def shown(fit: LocalTradeoffFit | None) -> str:
    """``B_crit [low, high]``, bold where identified; ``≥ low`` where bounded below only; ``–`` without a fit."""
    if fit is None:
        return "–"
    high = "∞" if math.isinf(fit.b_crit_high) else f"{fit.b_crit_high:,.0f}"
    if not fit.identified:
        return f"≥ {fit.b_crit_low:,.0f}" if fit.b_crit_low > 0 else "unbounded"
    return f"**{fit.b_crit:,.0f}** [{fit.b_crit_low:,.0f}, {high}]"


def main(args: Args) -> None:
    probes = sorted(p.parent for path in args.paths for p in path.rglob(PROBE) if (p.parent / "runs").is_dir())
    rows: list[dict[str, Any]] = []
    for probe_dir in probes:
        settings, runs = load_sweep(probe_dir)
        measure = cast(StepsMeasure, read_json(probe_dir / PROBE).get("steps") or "passage")
        for target in settings["targets"]:
            plain, censored = (rung(runs, float(target), measure, censored=c) for c in (False, True))
            rows.append({
                "probe": str(probe_dir),
                "target": float(target),
                "measure": measure,
                "kept": len(plain.batch_N),
                "censored": len(censored.censored),
                "reached_only": shown(plain.fit),
                "with_censored": shown(censored.fit),
                "identified": [bool(f is not None and f.identified) for f in (plain.fit, censored.fit)],
            })  # fmt: skip
    lines = [
        "| probe | target | steps | kept | censored | reaching branches only | with the others censored |",
        "|---|---:|---|---:|---:|---|---|",
        *(
            f"| {r['probe']} | {r['target']:.4g} | {r['measure']} | {r['kept']} | {r['censored']} | {r['reached_only']} | "
            f"{r['with_censored']} |"
            for r in rows
        ),
        "",
        f"Identified: {sum(r['identified'][0] for r in rows)} of {len(rows)} targets with the reaching branches only, "
        f"{sum(r['identified'][1] for r in rows)} with the others censored.",
    ]
    write_reread(args.out, "censored", "\n".join(lines), rows)


def write_reread(out: Path | None, name: str, text: str, rows: list[dict]) -> None:
    """Print a re-read's ``text``; with ``out``, write it as ``<name>.md`` under the command that ran (this process's
    script and arguments) and the date, and its ``rows`` as ``<name>.json``: the output of every exploratory re-read
    of committed probes."""
    print(text)
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    command = " ".join([f"python benchmarks/{Path(sys.argv[0]).name}", *map(shlex.quote, sys.argv[1:])])
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    (out / f"{name}.md").write_text(f"Command: `{command}` ({stamp}, CPU; exploratory)\n\n{text}\n")
    (out / f"{name}.json").write_text(json.dumps({"command": command, "date": stamp, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(tyro.cli(Args))
