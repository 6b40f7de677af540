"""Re-read committed probes at criterion v8's null rule ("Targets that noise cannot reach"), without training.

For every probe directory under the given paths (a directory holding ``probe.json``):

1. The anchor's games (the branch point's agent at learning rate 0: a policy that learns nothing) are the null score
   distribution.
2. ``G``, the games a branch looks at: the most games any branch of the probe finished (read from the branches'
   ``episodes.csv`` / ``episodes.csv.xz``). ``L``, the runs tried for one kept run: the learning rates per size
   (``sweep.json``'s ``lr_points``, or the realised grid of ``probe_results.json`` where that is longer).
3. ``draws`` null runs of ``G`` games resampled from the anchor's games give the highest running score ``M`` of a run
   that learns nothing (:func:`rl_gns.core.maths.targets.null_max_running_scores`, ``window`` from ``probe.json``); each
   committed target gets ``p_null = 1 - (1 - P(M >= T))^L`` (:func:`~rl_gns.core.maths.targets.null_crossing`) and is safe
   where ``p_null <= level``; the null floor ``F`` (:func:`~rl_gns.core.maths.targets.null_floor`) is the lowest safe target.
4. The probe's reported ``B_crit`` (``probe_results.json``: ``target``, ``fit``, ``verdict``, as
   ``rl-gns probe-report`` wrote them) stands only where its target is safe. Where it is not, the lowest committed
   safe target's fit is the one ``probe-report`` already wrote in its ladder (``probe_results.json``'s ``ladder``);
   none is refitted. ``rl-gns probe-report`` takes no target (its only argument is the directory), so no fit at
   ``F`` itself is made here.

Writes ``reread.md`` (summary, then one table row per committed target) and ``reread.json`` under ``--out``, and
prints the table::

    python benchmarks/reread_probes.py results/probes_v6 results/probes_v7 --out results/probes_reread
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.targets import null_crossing, null_floor, null_max_running_scores
from rl_gns.records.rundir import ANCHOR, PROBE, SWEEP, RunDir, runs_under

#: What ``rl-gns probe-report`` writes: the reported target, its fit and the ladder of every target's fit.
RESULTS = "probe_results.json"


@dataclass
class Args:
    """Re-read probes' committed targets and reported B_crit at the null rule of criterion v8."""

    paths: tyro.conf.Positional[list[Path]]
    """Probe directories, or directories to search for them (every ``probe.json`` below)."""
    out: Path | None = None
    """Directory for reread.md and reread.json (default: print only)."""
    draws: int = 20_000
    """Resampled null runs per probe."""
    seed: int = 0
    """Seed of each probe's resampling (the same for every probe)."""
    level: float = 0.01
    """Largest false-crossing probability of a safe target."""


def probe_dirs(paths: list[Path]) -> list[Path]:
    """Every probe directory at or below ``paths``, each once, in path order."""
    found = set()
    for path in paths:
        if (path / PROBE).is_file():
            found.add(path)
        elif path.is_dir():
            found.update(p.parent for p in path.rglob(PROBE))
        else:
            raise FileNotFoundError(f"{path}: neither a probe directory nor a directory to search")
    return sorted(found)


def read_json(path: Path) -> dict | None:
    """A JSON file's object, ``None`` where the file is absent. ``Infinity`` reads as ``inf``."""
    return json.loads(path.read_text()) if path.is_file() else None


def runs_tried(sweep: dict | None, results: dict | None) -> int:
    """``L``: learning rates per size: the settings' ``lr_points``, or the longest realised grid where longer (an
    extended grid counts in full); 1 where neither says."""
    planned = int((sweep or {}).get("lr_points") or 1)
    grids = [len(r.get("grid", ())) for r in (results or {}).get("learning_rates", [])]
    return max([planned, *grids])


def ladder_rung(results: dict | None, target: float) -> dict:
    """The ladder entry ``probe-report`` wrote for one committed target: ``{"fit": ..., "resolved": ...}`` (both
    ``None`` where the report has no such entry)."""
    for rung in (results or {}).get("ladder", []):
        if math.isclose(float(rung["target"]), target, rel_tol=1e-9, abs_tol=1e-9):
            return {"fit": rung.get("fit"), "resolved": rung.get("resolved")}
    return {"fit": None, "resolved": None}


def num(x: float | None, digits: int = 3) -> str:
    """A number in ``digits`` significant figures; ``–`` for ``None``, ``∞`` for infinity."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def fit_text(fit: dict | None, resolved: bool | None = None) -> str:
    """``B_crit [low, high]`` of a fit, with ``(not identified)`` where it is not, ``(identified, not resolved)``
    where ``probe-report`` found its ``E_min`` too close to the first window's step; ``no fit`` for ``None``."""
    if fit is None:
        return "no fit"
    text = f"{num(fit['b_crit'])} [{num(fit['b_crit_low'])}, {num(fit['b_crit_high'])}]"
    if not fit.get("identified"):
        return f"{text} (not identified)"
    return f"{text} (identified, not resolved)" if resolved is False else text


def p_null_se(one_run: float, draws: int, n_runs: int) -> float:
    """Monte Carlo standard error of ``p_null`` (delta method on ``P(M >= T)`` estimated from ``draws``)."""
    return n_runs * (1 - one_run) ** (n_runs - 1) * math.sqrt(one_run * (1 - one_run) / draws)


def p_text(row: dict, draws: int, n_runs: int) -> str:
    """``p_null`` with its Monte Carlo error; a zero one as an upper bound (no draw reached the target)."""
    if row["p_null"] == 0:
        return f"0 (<{num(1 - (1 - 1 / draws) ** n_runs, 2)})"
    return f"{row['p_null']:.3g} ± {row['p_null_se']:.1g}"


def reread(probe: Path, draws: int, seed: int, level: float) -> dict:
    """One probe, re-read at the null rule: its null floor, each committed target's ``p_null``, and whether its
    reported ``B_crit`` stands."""
    record = read_json(probe / PROBE)
    sweep, results = read_json(probe / SWEEP), read_json(probe / RESULTS)
    window = int(record.get("window") or 20)
    targets = [float(t) for t in record.get("targets") or [record["target"]]]
    levels = record.get("delta_noise")
    levels = list(levels) if isinstance(levels, list) else [levels] * len(targets)
    null = RunDir(probe / ANCHOR).episodes()["score"]
    if len(null) < window:
        raise ValueError(f"its anchor finished {len(null)} games, fewer than the window ({window})")
    branch_games = {run.name: len(RunDir(run).episodes()["score"]) for run in runs_under(probe)}
    if not branch_games:
        raise ValueError("no branch under runs/")
    n_games = max(branch_games.values())
    if n_games < window:
        raise ValueError(f"no branch finished a window of {window} games (most: {n_games})")
    n_runs = runs_tried(sweep, results)
    maxima = null_max_running_scores(null, n_games, window, draws, np.random.default_rng(seed))
    floor = null_floor(maxima, n_runs, level)
    reported = None if results is None else float(results["target"])
    rows = []
    for target, noise in zip(targets, levels, strict=True):
        p_null, one_run = null_crossing(maxima, target, n_runs), float(np.mean(maxima >= target))
        rows.append({
            "target": target,
            "delta_noise": noise,
            "p_null": p_null,
            "p_null_se": p_null_se(one_run, draws, n_runs),
            "p_one_run": one_run,
            "safe": p_null <= level,
            "reported": reported is not None and math.isclose(target, reported, rel_tol=1e-9, abs_tol=1e-9),
            **ladder_rung(results, target),
        })  # fmt: skip
    at_reported = next((r for r in rows if r["reported"]), None)
    safe = [r for r in rows if r["safe"]]
    fit = None if results is None else results.get("fit")
    if results is None:
        standing = f"no report ({RESULTS} absent): safety only"
    elif at_reported is None:
        standing = f"the reported target {reported:g} is not one of probe.json's targets"
    elif at_reported["safe"]:
        if not (fit and fit.get("identified")):
            standing = "target safe, but B_crit was not identified"
        else:
            standing = "stands" if at_reported["resolved"] is not False else "stands (identified, not resolved)"
    elif safe:
        lowest = min(safe, key=lambda r: r["target"])
        standing = (
            f"not supported at the reported target; the committed target {lowest['target']:.1f} "
            f"({num(lowest['delta_noise'])} SE) is safe: its committed fit {fit_text(lowest['fit'], lowest['resolved'])}"
        )
    else:
        standing = "not supported at the null rule (no committed target is safe)"
    return {
        "probe": str(probe),
        "anchor_games": len(null),
        "null_mean": float(np.mean(null)),
        "null_sd": float(np.std(null, ddof=1)),
        "window": window,
        "branches": len(branch_games),
        "games_per_branch": n_games,
        "looks_per_branch": n_games - window + 1,
        "n_runs": n_runs,
        "draws": draws,
        "seed": seed,
        "null_floor": floor,
        "null_max_median": float(np.median(maxima)),
        "targets": rows,
        "reported_target": reported,
        "reported_fit": fit,
        "reported_verdict": None if results is None else results.get("verdict"),
        "reported_safe": None if at_reported is None else at_reported["safe"],
        "b_crit_stands": at_reported is not None and at_reported["safe"] and bool(fit and fit.get("identified")),
        "standing": standing,
    }


def summary(probes: list[dict]) -> dict:
    """The counts the report opens with."""
    rows = [r for p in probes for r in p["targets"]]

    def p_range(noise: float) -> list[float] | None:
        ps = [r["p_null"] for r in rows if r["delta_noise"] is not None and math.isclose(float(r["delta_noise"]), noise)]
        return [min(ps), max(ps)] if ps else None

    reported = [p for p in probes if p["reported_safe"] is not None]
    return {
        "probes": len(probes),
        "targets": len(rows),
        "safe_targets": sum(r["safe"] for r in rows),
        "p_null_range_3se": p_range(3.0),
        "p_null_range_6se": p_range(6.0),
        "reported": len(reported),
        "reported_at_safe_target": sum(bool(p["reported_safe"]) for p in reported),
        "reported_identified": sum(bool(p["reported_fit"] and p["reported_fit"].get("identified")) for p in reported),
        "b_crit_stands": sum(p["b_crit_stands"] for p in probes),
        "probes_with_a_safe_target": sum(any(r["safe"] for r in p["targets"]) for p in probes),
    }


TABLE_HEAD = [
    "| probe | anchor games | games per branch G (looks) | L | null floor F | target (SE) | p_null | safe "
    "| committed fit at this target: B_crit [95 %] | reported | reported B_crit stands? |",
    "|---|---:|---:|---:|---:|---:|---:|---|---|---|---|",
]


def table(probes: list[dict]) -> list[str]:
    """One row per committed target of every probe."""
    lines = list(TABLE_HEAD)
    for p in probes:
        for r in p["targets"]:
            reported = "reported" if r["reported"] else ""
            lines.append(
                f"| {p['probe']} | {p['anchor_games']} | {p['games_per_branch']} ({p['looks_per_branch']}) | "
                f"{p['n_runs']} | {p['null_floor']:.1f} | {r['target']:.1f} ({num(r['delta_noise'])}) | "
                f"{p_text(r, p['draws'], p['n_runs'])} | {'yes' if r['safe'] else 'no'} | "
                f"{fit_text(r['fit'], r['resolved'])} | "
                f"{reported} | {p['standing'] if r['reported'] else ''} |"
            )
    return lines


def summary_lines(s: dict, level: float) -> list[str]:
    """The summary, one bullet each."""

    def rng(pair: list[float] | None) -> str:
        return "–" if pair is None else f"{pair[0]:.3g} to {pair[1]:.3g}"

    return [
        f"- Committed targets safe (p_null <= {level:g}): **{s['safe_targets']} of {s['targets']}** "
        f"({s['probes_with_a_safe_target']} of {s['probes']} probes have at least one).",
        f"- p_null at the 3 SE targets: {rng(s['p_null_range_3se'])}; at the 6 SE targets: {rng(s['p_null_range_6se'])}.",
        f"- Reported B_crit at a safe target: **{s['reported_at_safe_target']} of {s['reported']}** "
        f"({s['reported_identified']} of the {s['reported']} reported were identified at all; "
        f"{s['b_crit_stands']} identified and at a safe target).",
    ]


def main(args: Args) -> None:
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    probes, unread = [], []
    for probe in probe_dirs(args.paths):
        try:
            probes.append(reread(probe, args.draws, args.seed, args.level))
        except (OSError, ValueError, KeyError, TypeError) as error:  # one unreadable probe does not stop the rest
            unread.append({"probe": str(probe), "error": f"{type(error).__name__}: {error}"})
            print(f"could not read {probe}: {error}", file=sys.stderr, flush=True)
    s = summary(probes)
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    machine = f"CPU only ({os.cpu_count()} cores, {platform.machine()}), no accelerator"
    rows = table(probes)
    print("\n".join(rows))
    print("\n".join(summary_lines(s, args.level)))
    if args.out is None:
        return
    args.out.mkdir(parents=True, exist_ok=True)
    text = [
        '# Probes re-read at the null rule (criterion v8, "Targets that noise cannot reach")',
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}  ",
        f"Date: {date} (UTC)",
        "",
        *summary_lines(s, args.level),
        "",
        "Null distribution: each probe's anchor games (the branch point's agent at learning rate 0). G: the most games "
        "any branch of the probe finished; looks: running scores a branch of G games is looked at (G - window + 1). "
        f"L: learning rates tried per size and seed. {args.draws:,} resampled null runs per probe (seed {args.seed}); "
        f"p_null = 1 - (1 - P(M >= T))^L, M a null run's highest {probes[0]['window'] if probes else 20}-game running "
        f"score; F: the lowest target with p_null <= {args.level:g}. A p_null of 0 means no draw reached the target "
        "(bound in brackets); any other p_null is given ± its Monte Carlo standard error. The committed fit is the "
        "one `rl-gns probe-report` wrote "
        f'for that target (`{RESULTS}`, `ladder`; "not resolved": identified, but its E_min is under 2x the step a '
        "branch's first running score stands for); no fit was redone: `rl-gns probe-report` takes no target "
        "(`--help`: the probe directory only), so no fit at F is given. Caveat: the null runs resample the anchor's "
        "games, so a small anchor (v6 Pong: about 50 games) bounds the null run's tail by its own best games and "
        "understates p_null there.",
        "",
        *rows,
        "",
    ]
    if unread:
        text += ["Probes that could not be read:", "", *(f"- {u['probe']}: {u['error']}" for u in unread), ""]
    (args.out / "reread.md").write_text("\n".join(text))
    payload = {
        "command": command,
        "machine": machine,
        "date": date,
        "draws": args.draws,
        "seed": args.seed,
        "level": args.level,
        "summary": s,
        "probes": probes,
        "unread": unread,
    }
    (args.out / "reread.json").write_text(json.dumps(payload, indent=1, allow_nan=True) + "\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
