"""Re-read committed probes with the trend measure of a branch's steps, without training.

A probe times each branch by when its running score of ``window`` games first reaches the target (``passage``, or
``midpoint``: the mean midpoint of that window's games). Noise draws that first passage early, and the more so the
more slowly a branch's score rises per game, as a branch at a large rollout size does: in simulated probes this
biases ``B_crit`` upwards and its interval misses the truth (``benchmarks/probe_coverage.py``). The ``trend``
measure (:func:`rl_gns.core.maths.targets.trend_crossing`) reads the crossing off the least-squares line through the
scores of all of a branch's games up to the reaching one.

For every probe directory under the given paths that still holds its branches, and each of its committed targets,
this fits ``S(B)`` to the kept branches by each measure (the probe report's own fit, :func:`rl_gns.reports.
probe_report.rung`) and writes the fits side by side. A target's safety is the null rule's verdict from
``--reread`` (``benchmarks/reread_probes.py``'s ``reread.json``); only a safe target's fit is one a probe may report.

    python benchmarks/reread_trend.py results/probes_v6 results/probes_v7 --out results/probes_reread
"""

from __future__ import annotations

import datetime
import json
import math
import platform
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import tyro

from rl_gns.core.maths.targets import StepsMeasure
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.reports.probe_report import rung
from rl_gns.reports.sweep_analysis import load_sweep

MEASURES: tuple[StepsMeasure, ...] = ("passage", "midpoint", "trend")


@dataclass
class Args:
    """Fit committed probes' targets by every steps measure."""

    paths: tyro.conf.Positional[list[Path]]
    """Directories holding probe directories (each with probe.json and its branches' runs/)."""
    reread: Path = Path("results/probes_reread/reread.json")
    """The null rule's re-read of the same probes (benchmarks/reread_probes.py): which targets are safe."""
    out: Path = Path("probes_reread")
    """Directory for trend.md and trend.json."""


def fit_record(fit: LocalTradeoffFit | None) -> dict | None:
    """A fit as JSON: ``B_crit``, its interval and whether it is identified; ``None`` without a fit."""
    if fit is None:
        return None
    return {"b_crit": fit.b_crit, "low": fit.b_crit_low, "high": fit.b_crit_high, "identified": bool(fit.identified)}


def shown(fit: dict | None) -> str:
    if fit is None:
        return "no fit"
    value = "∞" if not math.isfinite(fit["b_crit"]) else f"{fit['b_crit']:,.0f}"
    high = "∞" if not math.isfinite(fit["high"]) else f"{fit['high']:,.0f}"
    text = f"{value} [{fit['low']:,.0f}, {high}]"
    return f"**{text}**" if fit["identified"] else text


def main(args: Args) -> None:
    safety = {
        (row["probe"], round(target["target"], 6)): target["safe"]
        for row in json.loads(args.reread.read_text())["probes"]
        for target in row["targets"]
    }
    probes = sorted(p.parent for path in args.paths for p in path.rglob("probe.json") if (p.parent / "runs").is_dir())
    rows = []
    for probe_dir in probes:
        settings, runs = load_sweep(probe_dir)
        delta_noise = json.loads((probe_dir / "probe.json").read_text()).get("delta_noise") or [None]
        for index, target in enumerate(settings["targets"]):
            fits = {measure: fit_record(rung(runs, float(target), measure).fit) for measure in MEASURES}
            rows.append({
                "probe": str(probe_dir),
                "target": float(target),
                "se": delta_noise[index] if index < len(delta_noise) else None,
                "safe": safety.get((str(probe_dir), round(float(target), 6))),
                "fits": fits,
            })  # fmt: skip
            print(probe_dir, f"{target:.1f}", *(shown(fits[m]) for m in MEASURES), sep="  ", flush=True)
    record = {
        "command": shlex.join(["python", "benchmarks/reread_trend.py", *map(str, args.paths), "--out", str(args.out)]),
        "machine": f"CPU only ({platform.machine()}), Python {sys.version.split()[0]}",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trend.json").write_text(json.dumps(record, indent=2, allow_nan=True) + "\n")
    (args.out / "trend.md").write_text(table(record))
    print(f"wrote {args.out / 'trend.md'}")


def table(record: dict) -> str:
    safe = [row for row in record["rows"] if row["safe"]]
    counts = {m: sum(bool(row["fits"][m] and row["fits"][m]["identified"]) for row in safe) for m in MEASURES}
    lines = [
        "# Probes re-read with the trend measure of a branch's steps",
        "",
        f"Command: `{record['command']}`  ",
        f"Machine: {record['machine']}  ",
        f"Date: {record['date']} (UTC)",
        "",
        "Each committed target of each probe whose branches are in the tree, fitted by `rl-gns probe-report`'s own fit "
        "with a branch's steps S read three ways: `passage` (its running score first reaches the target), `midpoint` "
        "(the mean midpoint of that window's games) and `trend` (where the least-squares line through the scores of "
        "its games up to then meets the target). Safe: the null rule's verdict (`benchmarks/reread_probes.py`); only "
        "a safe target's fit may be reported. B_crit in agent steps with its 95 % interval; bold: identified.",
        "",
        f"- Safe targets: {len(safe)} of {len(record['rows'])}; identified there: "
        + ", ".join(f"{counts[m]} by {m}" for m in MEASURES)
        + ".",
        "",
        "| probe | target (SE) | safe | passage | midpoint | trend |",
        "|---|---:|---|---|---|---|",
    ]
    for row in record["rows"]:
        se = f" ({row['se']:g})" if row["se"] is not None else ""
        safe_text = {True: "yes", False: "no", None: "–"}[row["safe"]]
        fits = " | ".join(shown(row["fits"][m]) for m in MEASURES)
        lines.append(f"| {row['probe']} | {row['target']:.1f}{se} | {safe_text} | {fits} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main(tyro.cli(Args))
