"""Cheaper probe designs, replayed on the branches of the committed fixed-design probes. No training.

Every fixed-design probe of v6 and v7 trained 3 seeds x 3 learning rates at each of its sizes, each branch to the
probe's highest target or its budget. Any design that trains a subset of those branches, in any order, can be
replayed exactly from their games: which branches it would train, what they cost, and what its fit would say. Each
design is replayed once per order of the probe's 3 seeds (6 orders) and compared with the fixed design's own fit at the
same target (the probe's steps measure, the fastest rate per seed):

- ``fixed``: every branch (the probe as run); ``fixed, low target``: the same, run to the probe's lowest target (below);
- ``sequential``: ``rl-gns probe --design sequential``'s rule (:func:`rl_gns.core.maths.sequential.next_round`, stop
  ratio 8): a first round of one seed per size at the 3 rates, then one seed more at the sizes the rule names, at the
  rate the size's first seed kept (at every rate where it kept none);
- ``sequential, raced``: the same, with the first round's rates raced (``--race``: a rate stops once another rate of
  its size and seed has reached the highest target, ``benchmarks/probe_racing.py``);
- ``one rate``: the sequential rule with only the grid's middle rate (the probe's rate rule) at every size;
- ``one rate, low target``: the same, run and fitted to the probe's lowest target: a branch stops at the end of the
  iteration in which its running score first passed it;
- ``one rate, low target, no dead sizes``: the same, with no later seed at a size whose first seed did not reach it;
- ``..., censored``: the same designs fitted with the branches that did not reach the target taken as censored at the
  steps they trained (:func:`rl_gns.core.maths.tradeoff.fit_censored_tradeoff`, bounds by
  :func:`rl_gns.core.maths.targets.censored_by`), both in the design's rule and in its last fit;
- ``..., 2 held back``: the same, with the grid's 2 largest sizes out of the first round (``--held-back 2``).

A branch's cost is the agent steps it trains; a probe's adds its anchor (and pilot). Its multiple is of the branch
point's agent steps. "Agrees" compares with the fixed design's fit on the same branches: both identified, and the
fixed design's ``B_crit`` inside the replay's 95 % interval. The fixed design's fit is no ground truth (the simulations
of ``benchmarks/probe_sequential.py`` have one); this is the same rule on real games.

    python benchmarks/probe_replay.py results/probes_v6 results/probes_v7 --out results/validation/probe_replay
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import tyro
from probe_costs import probe_cost
from probe_racing import Branch, kept, read_branch, steps_to, stopping_point

from rl_gns.core.maths.sequential import next_round
from rl_gns.core.maths.targets import StepsMeasure, censored_by, window_midpoint
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.experiments.probe import fit_or_none
from rl_gns.records.rundir import PROBE, RunDir, read_json, runs_under
from rl_gns.reports.probe_report import RESULTS

STOP_RATIO, MOST_SEEDS = 8.0, 3


@dataclass
class Args:
    """Replay cheaper probe designs on the committed fixed-design probes' branches."""

    roots: tyro.conf.Positional[tuple[Path, ...]]
    """Directories holding probe directories; reported fixed-design probes with their branches are read."""
    out: Path | None = None
    """Directory for replay.md (default: print only)."""


@dataclass(frozen=True)
class Design:
    """A design to replay.

    :param name: as the table names it.
    :param one_rate: train only the grid's middle rate at every size (else the 3 rates in the first round).
    :param raced: race the first round's rates to the target.
    :param low_target: run and fit to the probe's lowest target (else its highest).
    :param skip_dead: no later seed at a size whose first seed reached the target at no rate.
    :param sequential: the sequential rule (else every branch: the fixed design).
    :param censored: fit with the branches that did not reach the target as censored (else without them).
    :param held_back: the grid's largest sizes kept out of the first round (the sequential rule's ``held_back``).
    """

    name: str
    one_rate: bool = False
    raced: bool = False
    low_target: bool = False
    skip_dead: bool = False
    sequential: bool = True
    censored: bool = False
    held_back: int = 0


DESIGNS = (
    Design("fixed", sequential=False),
    Design("fixed, low target", sequential=False, low_target=True),
    Design("sequential"),
    Design("sequential, raced", raced=True),
    Design("one rate", one_rate=True),
    Design("one rate, low target", one_rate=True, low_target=True),
    Design("one rate, low target, no dead sizes", one_rate=True, low_target=True, skip_dead=True),
    Design("fixed, low target, censored", sequential=False, low_target=True, censored=True),
    Design("one rate, low target, censored", one_rate=True, low_target=True, censored=True),
    Design("one rate, low target, no dead sizes, censored", one_rate=True, low_target=True, skip_dead=True, censored=True),
    Design("one rate, low target, censored, 2 held back", one_rate=True, low_target=True, censored=True, held_back=2),
)


@dataclass(frozen=True)
class Probe:
    """One committed probe's branches.

    :param path: its directory.
    :param point: agent steps of the run at the branch point.
    :param before: agent steps of its anchor and pilot.
    :param targets: its targets, ascending.
    :param window: games per running score.
    :param measure: its steps measure.
    :param cells: ``(rollout_size, seed) -> branches``, one per learning rate.
    """

    path: Path
    point: int
    before: int
    targets: tuple[float, ...]
    window: int
    measure: StepsMeasure
    cells: dict[tuple[int, int], list[Branch]]

    @property
    def sizes(self) -> list[int]:
        return sorted({size for size, _ in self.cells})

    @property
    def seeds(self) -> list[int]:
        return sorted({seed for _, seed in self.cells})


def read_probe(path: Path) -> Probe:
    record = read_json(path / PROBE)
    point, spent, _ = probe_cost(path)
    cells: dict[tuple[int, int], list[Branch]] = defaultdict(list)
    for run in runs_under(path):
        branch = read_branch(RunDir(run))
        cells[branch.group].append(branch)
    before = spent - sum(branch.end for branches in cells.values() for branch in branches)
    targets = tuple(sorted(record.get("targets") or [record["target"]]))
    measure = cast(StepsMeasure, record.get("steps") or "passage")
    return Probe(path, point, before, targets, int(record["window"]), measure, dict(cells))


def middle(branches: list[Branch]) -> list[Branch]:
    """The grid's middle rate (the probe's rate rule), as a list of one."""
    return [sorted(branches, key=lambda b: b.rate)[len(branches) // 2]]


def kept_steps(branches: list[Branch], target: float, probe: Probe) -> tuple[float, float]:
    """``(learning rate, PPO iterations)`` of the fastest of ``branches`` to ``target`` (``probe_racing.kept``);
    ``(nan, inf)`` where none got there."""
    name, steps = kept(branches, target, probe.window, probe.measure, math.inf)
    return next((b.rate for b in branches if b.name == name), math.nan), steps


def bound(branches: list[Branch], probe: Probe) -> float:
    """A lower bound on the PPO iterations of the fastest of ``branches``, none of which reached the target: the least
    of their :func:`~rl_gns.core.maths.targets.censored_by`."""
    bounds = []
    for b in branches:
        ends, lengths = b.games["env_steps"][-probe.window :], b.games["length_frames"][-probe.window :] / b.frame_skip
        last = window_midpoint(ends, lengths, b.n_envs) / b.group[0] if len(ends) == probe.window else math.nan
        bounds.append(censored_by(probe.measure, b.end // b.group[0], last))
    return min(bounds)


def cost(branches: list[Branch], design: Design, probe: Probe) -> int:
    """Agent steps the design's ``branches`` (one size and seed) train: to the highest target as run, cut at the
    lowest target's passage, or at the racing point."""
    if design.low_target:
        ends = []
        for b in branches:
            passage = steps_to(b, probe.targets[0], probe.window, "passage", math.inf)
            ends.append(b.end if math.isinf(passage) else min(b.end, int(passage * b.group[0])))
        return sum(ends)
    if design.raced and len(branches) > 1:
        stop = stopping_point(branches, probe.targets[-1], probe.window)
        return sum(int(min(b.end, stop)) for b in branches)
    return sum(b.end for b in branches)


def fit_of(points: dict[tuple[int, int], float], bounds: dict[tuple[int, int], float] | None) -> LocalTradeoffFit | None:
    """The fit of the cells' steps (``inf``: not reached); with ``bounds``, the cells not reached as censored at theirs
    (a bound of 0 carries nothing and is left out)."""
    reached = {key: s for key, s in points.items() if math.isfinite(s)}
    censored = None
    if bounds is not None:
        censored = [(key[0], bounds[key]) for key, s in points.items() if math.isinf(s) and bounds[key] > 0]
    return fit_or_none([size for size, _ in reached], list(reached.values()), censored)


def replay(probe: Probe, design: Design, order: tuple[int, ...]) -> tuple[int, LocalTradeoffFit | None]:
    """Agent steps the design spends on ``probe`` with its seeds taken in ``order``, and its last fit."""
    target = probe.targets[0] if design.low_target else probe.targets[-1]
    pick: Callable[[list[Branch]], list[Branch]] = middle if design.one_rate else list
    if not design.sequential:
        chosen = {cell: pick(branches) for cell, branches in probe.cells.items()}
        points = {cell: kept_steps(b, target, probe)[1] for cell, b in chosen.items()}
        bounds = {cell: bound(b, probe) for cell, b in chosen.items()} if design.censored else None
        return probe.before + sum(cost(b, design, probe) for b in chosen.values()), fit_of(points, bounds)
    sizes = probe.sizes
    spent = probe.before
    points: dict[tuple[int, int], float] = {}
    bounds: dict[tuple[int, int], float] | None = {} if design.censored else None
    kept_rate: dict[int, float] = {}
    seeds_k = [0] * len(sizes)
    units = list(range(len(sizes) - design.held_back))
    while units:
        for k in units:
            size, seed = sizes[k], order[seeds_k[k]]
            branches = pick(probe.cells[(size, seed)])
            if seeds_k[k] > 0 and math.isfinite(kept_rate[size]):
                branches = [b for b in branches if b.rate == kept_rate[size]]
            spent += cost(branches, design, probe)
            rate, steps = kept_steps(branches, target, probe)
            if seeds_k[k] == 0:
                kept_rate[size] = rate
            points[(size, seed)] = steps
            if bounds is not None:
                bounds[(size, seed)] = bound(branches, probe) if math.isinf(steps) else 0.0
            seeds_k[k] += 1
        fit = fit_of(points, bounds)
        units = next_round(sizes, seeds_k, fit, STOP_RATIO, MOST_SEEDS, design.held_back)
        if design.skip_dead:
            units = [k for k in units if math.isfinite(kept_rate[sizes[k]])]
    return spent, fit_of(points, bounds)


def agrees(fit: LocalTradeoffFit | None, reference: LocalTradeoffFit | None) -> bool:
    return (
        fit is not None
        and reference is not None
        and fit.identified
        and reference.identified
        and fit.b_crit_low <= reference.b_crit <= fit.b_crit_high
    )


def describe(fit: LocalTradeoffFit | None) -> str:
    if fit is None:
        return "–"
    high = "∞" if math.isinf(fit.b_crit_high) else f"{fit.b_crit_high:,.0f}"
    return f"{fit.b_crit:,.0f} [{fit.b_crit_low:,.0f}, {high}]" if fit.identified else f"≥ {fit.b_crit_low:,.0f}"


def main(args: Args) -> None:
    paths = sorted({p.parent for root in args.roots for p in root.rglob(RESULTS) if (p.parent / "runs").is_dir()})
    probes = [p for p in map(read_probe, paths) if len(p.seeds) == MOST_SEEDS and all(len(b) == 3 for b in p.cells.values())]
    rows: list[dict[str, object]] = []
    for probe in probes:
        reference = {low: replay(probe, Design("fixed", sequential=False, low_target=low), (0,))[1] for low in (False, True)}
        for design in DESIGNS:
            for order in itertools.permutations(probe.seeds) if design.sequential else [tuple(probe.seeds)]:
                spent, fit = replay(probe, design, order)
                ref = reference[design.low_target]
                rows.append(
                    {
                        "probe": str(probe.path),
                        "design": design.name,
                        "order": list(order),
                        "multiple": spent / probe.point,
                        "identified": bool(fit is not None and fit.identified),
                        "b_crit": describe(fit),
                        "reference": describe(ref),
                        "agrees": agrees(fit, ref),
                        "reference_identified": bool(ref is not None and ref.identified),
                        "ratio": fit.b_crit / ref.b_crit if fit and ref and fit.identified and ref.identified else None,
                    }
                )
    lines = [
        f"{len(probes)} fixed-design probes, each design replayed once per order of their seeds (sequential designs: 6).",
        "",
        "| design | cost, median (range) | at most 5x | identifies B_crit | agrees, where the fixed design identifies it "
        "| within 2x of it, where both do |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for design in DESIGNS:
        these = [r for r in rows if r["design"] == design.name]
        multiples = np.array([float(cast(float, r["multiple"])) for r in these])
        per_probe = [np.median([cast(float, r["multiple"]) for r in these if r["probe"] == str(p.path)]) for p in probes]
        both = [r for r in these if r["ratio"] is not None]
        within = sum(abs(math.log2(cast(float, r["ratio"]))) <= 1 for r in both)
        lines.append(
            f"| {design.name} | {np.median(per_probe):.1f}x ({multiples.min():.1f}–{multiples.max():.1f}x) | "
            f"{np.mean(multiples <= 5):.0%} | {np.mean([r['identified'] for r in these]):.0%} | "
            f"{sum(bool(r['agrees']) for r in these)} of {sum(r['reference_identified'] for r in these)} | "
            f"{within} of {len(both)} |"
        )
    lines += [
        "",
        "Per probe (the median over seed orders; the fixed design's fit at the highest and lowest target):",
        "",
        "| probe | fixed, high | fixed, low | " + " | ".join(d.name for d in DESIGNS[2:]) + " |",
        "|---|---|---|" + "---:|" * (len(DESIGNS) - 2),
    ]
    for probe in probes:
        these = [r for r in rows if r["probe"] == str(probe.path)]
        high = next(r["reference"] for r in these if r["design"] == "sequential")
        low = next(r["reference"] for r in these if r["design"] == "one rate, low target")
        cells = []
        for design in DESIGNS[2:]:
            mine = [r for r in these if r["design"] == design.name]
            cells.append(
                f"{np.median([cast(float, r['multiple']) for r in mine]):.1f}x, "
                f"{sum(bool(r['identified']) for r in mine)}/{len(mine)} id, {sum(bool(r['agrees']) for r in mine)} agree"
            )
        lines.append(f"| {probe.path} | {high} | {low} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "python benchmarks/probe_replay.py " + " ".join(map(str, args.roots)) + f" --out {args.out}"
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        (args.out / "replay.md").write_text(f"Command: `{command}` ({stamp})\n\n{text}\n")


if __name__ == "__main__":
    main(tyro.cli(Args))
