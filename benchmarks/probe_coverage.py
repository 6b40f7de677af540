"""Does a probe's 95 % interval of B_crit cover the truth once the systematic effects are in? Simulated probes.

``benchmarks/probe_design.py`` checks Fieller's interval (:func:`rl_gns.core.maths.tradeoff.fit_local_tradeoff`) against
log-normal scatter of the steps alone. A real probe adds three effects that scatter does not model; each simulated
probe here has a known ``B_crit`` and adds them one at a time:

1. ``scatter``: every branch at its best learning rate, ``S = S_true(B) · exp(σ_seed · z)``; no games.
2. ``+ rates``: three learning rates a factor 2 apart around a rule whose optimum ``r*`` sits off the grid's centre
   by a random log-offset (per probe and per size); a rate ``r`` needs ``exp(a · ln²(r / r*))`` times the steps
   (``a`` = 0.46: a factor 2 off costs 25 %); the fastest rate per seed is kept, as a probe keeps it.
3. ``+ games, 3 SE``: the steps are read off games, as a probe reads them. The mean game score rises linearly from
   the start score ``m0`` and passes the target at the branch's true steps; each env plays games of random length
   back to back, each scoring ``N(mean at its midpoint, σ)``; ``S`` is the first window of ``--window`` games whose
   mean reaches the target, timed by the window's midpoint (``rl-gns probe``'s default ``--steps midpoint``). The
   target is the start score plus 3 standard errors of the running score (v7's rule).
4. ``+ games, null floor``: the same, the target raised to the null floor of criterion v8 (1 % for the best of 3
   rates that learn nothing, over every game a branch of the largest size plays within the budget).
5. ``+ games, null floor, trend``: the same games and target, ``S`` read as ``rl-gns probe --steps trend`` reads it:
   where the least-squares line through the scores of every game up to the reaching window's last meets the target
   (:func:`rl_gns.core.maths.targets.trend_crossing`).

``--slow-below B0 --slow-power p`` slows the sizes below ``B0`` beyond what ``S(B)`` allows, as the real probes' small
sizes are: there ``S_true(B)`` is multiplied by ``(B0 / B)^p``, so the experience to the target grows as ``B`` shrinks.
Each probe is then also fitted from the size of least experience up (``rl-gns probe-report``'s second fit,
:func:`rl_gns.reports.probe_report.from_least_experience`: where :func:`rl_gns.core.maths.tradeoff.experience_falls`
names smaller sizes, every branch at ``B_k*`` or above), and its identification and coverage are given beside the
first fit's; the truth is the same ``B_crit``, which the sizes from ``B0`` up follow.

``--curve`` bends the mean score's rise (``linear``; ``concave``, fast then slow; ``convex``, slow then fast), each
passing the target at the branch's true steps, to see what a line through a curve does.

The truth is ``B_crit = E_min / S_min`` of ``S_true(B) = S_min (1 + B_crit / B)`` at the best rate. The fit uses every
kept branch (sizes × seeds that reached the target within the budget); with ``--censored``, also each size and seed
whose every rate ran out its budget first, as censored at the least of their lower bounds
(:func:`rl_gns.core.maths.tradeoff.fit_censored_tradeoff`; a bound is the budget's iterations without games, and the
last window's midpoint with them, :func:`rl_gns.core.maths.targets.censored_by`).

    python benchmarks/probe_coverage.py --out results/validation/probe_coverage
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import tyro

from rl_gns.core.maths.targets import (
    censored_by,
    null_floor,
    null_max_running_scores,
    resolvable_improvement,
    trend_crossing,
)
from rl_gns.core.maths.tradeoff import LocalTradeoffFit
from rl_gns.reports.probe_report import Rung, fit_branches, from_least_experience

SCENARIOS = ("scatter", "+ rates", "+ games, 3 SE", "+ games, null floor", "+ games, null floor, trend")
#: How a bent mean score rises to the target at ``x = t / S_true = 1``, as a fraction of the target (``k = 2``).
CURVES = {
    "concave": lambda x: (1 - np.exp(-2 * x)) / (1 - math.exp(-2)),
    "convex": lambda x: (np.exp(2 * x) - 1) / (math.exp(2) - 1),
}


@dataclass
class Args:
    """Coverage of a probe's B_crit interval with the target's noise, the learning-rate choice and the window in."""

    b_crits: list[float] = field(default_factory=lambda: [256.0, 1024.0, 4096.0])
    """True critical rollout sizes, agent steps."""
    e_min: float = 200_000.0
    """True E_min, agent steps (S_min = E_min / B_crit)."""
    n_envs: int = 4
    """Envs of every branch; the sizes vary n_steps, as a probe's default grid does."""
    n_steps_grid: list[int] = field(default_factory=lambda: [32, 64, 128, 256, 512, 1024])
    """Steps per env per rollout, one per size (rollouts of 128-4,096 agent steps at 4 envs)."""
    seeds: int = 3
    """Seeds per size and rate."""
    budget_steps: int = 2_000_000
    """Agent steps per branch; a branch that has not reached the target by then is left out."""
    game_length: float = 500.0
    """Mean agent steps of one game on one env (coefficient of variation 0.3)."""
    window: int = 20
    """Games in the running score."""
    seed_sds: list[float] = field(default_factory=lambda: [0.15, 0.4])
    """σ of ln S between seeds at one size and rate (learning's own scatter, before the games add theirs)."""
    lr_offset_sd: float = 0.5
    """σ of ln(r* / rule) per probe; each size adds half of it again."""
    curve: Literal["linear", "concave", "convex"] = "linear"
    """How the mean score rises from the start score to the target (see the docstring)."""
    scenarios: list[str] = field(default_factory=lambda: list(SCENARIOS[:4]))
    """Scenarios to simulate, of SCENARIOS (the trend measure's is given by name)."""
    draws: int = 300
    """Simulated probes per B_crit and scenario."""
    censored: bool = False
    """Fit with the sizes and seeds that did not reach the target as censored (else without them)."""
    slow_below: float | None = None
    """Rollout size (agent steps) below which the branches are slower than S(B) allows (see the docstring)."""
    slow_power: float = 1.0
    """How much slower: S_true times (slow_below / B)^slow_power below it."""
    seed: int = 0
    """Seed of the simulation."""
    out: Path = Path("probe_coverage")
    """Directory for coverage.json and coverage.md."""


#: How much slower a learning rate off the optimum is: ``exp(a · ln²(r / r*))`` steps.
LR_CURVATURE = 0.46
#: The three rates of a size, as multiples of its rule.
GRID = np.array([0.5, 1.0, 2.0])


class Branch(NamedTuple):
    """One simulated branch: its steps to the target as the probe reads them, and how long it trained."""

    steps: float | None
    """Iterations to the target (the window's midpoint, or the trend line's crossing); ``None`` if not reached."""
    trained: float
    """Agent steps it trained: to the end of the game that took its running score to the target, else its budget."""
    bound: float = 0.0
    """Where not reached: a lower bound on its steps (:func:`~rl_gns.core.maths.targets.censored_by`, iterations)."""


def games_to_target(
    rng: np.random.Generator,
    args: Args,
    n_steps: int,
    s_true: float,
    target: float,
    drift: bool = True,
    trend: bool = False,
) -> Branch:
    """Iterations (PPO updates of ``n_envs · n_steps`` agent steps) until a window of games reaches ``target``, timed
    by the window's midpoint, or with ``trend`` by the least-squares line through the games up to it (``steps`` None
    if no window reaches it within the budget), and the agent steps the branch trained. Scores are ``N(m(t), 1)`` with
    ``m`` rising along ``--curve`` from 0 at iteration 0 to ``target`` at ``s_true`` (flat at 0 with ``drift=False``:
    a null branch)."""
    rollout = args.n_envs * n_steps
    per_env = args.budget_steps / args.n_envs  # agent steps each env plays within the budget
    most = int(per_env / (0.5 * args.game_length)) + 2  # games an env can finish at half the mean length
    lengths = args.game_length * rng.gamma(1 / 0.3**2, 0.3**2, size=(args.n_envs, most))
    ends = np.cumsum(lengths, axis=1) - rng.uniform(0, args.game_length, size=(args.n_envs, 1))  # envs out of step
    keep = (ends > lengths) & (ends <= per_env)  # whole games inside the budget
    end_e, length_e = ends[keep], lengths[keep]
    order = np.argsort(end_e)
    end_e, length_e = end_e[order], length_e[order]
    mid_iter = (end_e - length_e / 2) / n_steps  # a game's midpoint, in iterations (each iteration: n_steps per env)
    if not drift:
        mean = np.zeros_like(mid_iter)
    elif args.curve == "linear":
        mean = target * mid_iter / s_true
    else:
        mean = target * CURVES[args.curve](mid_iter / s_true)
    scores = mean + rng.normal(size=len(mean))
    if len(scores) < args.window:
        return Branch(None, float(args.budget_steps))
    cumulative = np.concatenate([[0.0], np.cumsum(scores)])
    running = (cumulative[args.window :] - cumulative[: -args.window]) / args.window
    hit = np.flatnonzero(running >= target)
    if not len(hit):
        last = float(np.mean(mid_iter[-args.window :]))  # the midpoint and trend measures' bound
        return Branch(None, float(args.budget_steps), censored_by("trend" if trend else "midpoint", math.nan, last))
    first = hit[0]  # the window of games first .. first + window - 1
    trained = float(end_e[first + args.window - 1]) * args.n_envs  # the reaching game's end, in agent steps of all envs
    if trend:
        crossing = trend_crossing(mid_iter[: first + args.window], scores[: first + args.window], target)
        return Branch(max(crossing, 1.0 / rollout), trained)
    return Branch(max(float(np.mean(mid_iter[first : first + args.window])), 1.0 / rollout), trained)


def simulate(args: Args, b_crit: float, seed_sd: float, scenario: str, target: float, rng: np.random.Generator) -> dict:
    """One simulated probe: its fit of the kept branches, and whether its interval covers ``b_crit``."""
    s_min = args.e_min / b_crit
    offset = rng.normal(0, args.lr_offset_sd)
    batch, steps, censored = [], [], []
    for n_steps in args.n_steps_grid:
        rollout = args.n_envs * n_steps
        s_true = s_min * (1 + b_crit / rollout)
        if args.slow_below is not None and rollout < args.slow_below:
            s_true *= (args.slow_below / rollout) ** args.slow_power
        best_over_grid = GRID / math.exp(offset + rng.normal(0, args.lr_offset_sd / 2))  # r / r*
        slower = np.exp(LR_CURVATURE * np.log(best_over_grid) ** 2)
        budget = censored_by("passage", args.budget_steps // rollout, math.nan)  # without games: the iterations trained
        for _ in range(args.seeds):
            if scenario == "scatter":
                branches = [Branch(s_true * math.exp(seed_sd * rng.normal()), 0.0, budget)]
            else:
                runs = s_true * slower * np.exp(seed_sd * rng.normal(size=len(GRID)))
                if scenario == "+ rates":
                    branches = [Branch(s, 0.0, budget) for s in runs]
                else:
                    trend = scenario.endswith("trend")
                    branches = [games_to_target(rng, args, n_steps, s, target, trend=trend) for s in runs]
            reached = [b.steps for b in branches if b.steps is not None and b.steps * rollout <= args.budget_steps]
            if reached:
                batch.append(rollout)
                steps.append(min(reached))
            elif min(b.bound for b in branches) > 0:
                censored.append((rollout, min(b.bound for b in branches)))
    batch_N, steps_N = np.array(batch, dtype=float), np.array(steps, dtype=float)
    bounds = censored if args.censored else []  # the probe's report leaves them out of the fit and of the experience
    kept = Rung(target, batch_N, steps_N, fit_branches(batch_N, steps_N, bounds, args.censored), [], bounds)
    first, second = (judge(r.fit, b_crit) for r in (kept, from_least_experience(kept, args.censored)))
    return first | {f"{key}_second": value for key, value in second.items()}


def judge(fit: LocalTradeoffFit | None, b_crit: float) -> dict:
    """Whether ``fit`` identifies ``B_crit``, whether its interval covers the true ``b_crit``, and its ratio to it."""
    if fit is None:
        return {"identified": False, "covered": False, "ratio": math.nan}
    covered = bool(fit.b_crit_low <= b_crit <= fit.b_crit_high)  # NaN ends compare False: not covered
    return {"identified": fit.identified, "covered": covered, "ratio": fit.b_crit / b_crit if fit.identified else math.nan}


def null_target(args: Args, rng: np.random.Generator) -> float:
    """Criterion v8's null floor in units of one game's score sd: the best of 3 branches that learn nothing reaches it
    with probability 1 %, over every game a branch of the largest size plays within the budget."""
    looks = max(args.window, math.ceil(args.budget_steps / args.game_length))
    maxima = null_max_running_scores(rng.normal(size=20_000), looks, args.window, 20_000, rng)
    return null_floor(maxima, 3, 0.01)


def main(args: Args) -> None:
    rng = np.random.default_rng(args.seed)
    three_se = resolvable_improvement(1.0, args.window, 3.0)
    floor = null_target(args, rng)
    # a null branch at the 3-SE target, with every look counted: how often noise alone reaches it
    null_hits = sum(
        games_to_target(rng, args, args.n_steps_grid[-1], 1.0, three_se, drift=False).steps is not None for _ in range(200)
    )
    rows = []
    for seed_sd in args.seed_sds:
        for b_crit in args.b_crits:
            for scenario in args.scenarios:
                target = floor if "null floor" in scenario else three_se
                results = [simulate(args, b_crit, seed_sd, scenario, target, rng) for _ in range(args.draws)]
                row = {"seed_sd": seed_sd, "b_crit": b_crit, "scenario": scenario, "target_sd": target}
                for suffix in ("", "_second"):
                    ratios = [r[f"ratio{suffix}"] for r in results if r[f"identified{suffix}"]]
                    row |= {
                        f"identified{suffix}": float(np.mean([r[f"identified{suffix}"] for r in results])),
                        f"covered{suffix}": float(np.mean([r[f"covered{suffix}"] for r in results])),
                        f"median_ratio{suffix}": float(np.median(ratios)) if ratios else math.nan,
                    }
                rows.append(row)
                print(
                    f"σ_seed {seed_sd:.2f}  B_crit {b_crit:6,.0f}  {scenario:<20}  identified {row['identified']:.2f}"
                    f"  covered {row['covered']:.2f}  median fitted/true {row['median_ratio']:.2f}  second fit: "
                    f"{row['identified_second']:.2f}, {row['covered_second']:.2f}, {row['median_ratio_second']:.2f}",
                    flush=True,
                )
    record = {
        "command": command("probe_coverage.py", args),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "args": as_json(args),
        "three_se_target": three_se,
        "null_floor_target": floor,
        "null_branch_crossing_3se": null_hits / 200,
        "rows": rows,
    }
    write_record(args.out, "coverage", record, table(record))


def command(script: str, args: Any) -> str:
    """The command line of ``benchmarks/<script>`` that wrote ``args.out``: a flag for each setting of the dataclass
    ``args`` other than its default."""
    default, flags = type(args)(), []
    for name in (f.name for f in fields(args)):
        value = getattr(args, name)
        if name != "out" and value != getattr(default, name) and isinstance(value, bool):
            flags.append(f"--{'' if value else 'no-'}{name.replace('_', '-')}")
        elif name != "out" and value != getattr(default, name):
            values = value if isinstance(value, list) else [value]
            flags.append(f"--{name.replace('_', '-')} " + " ".join(shlex.quote(str(v)) for v in values))
    return " ".join([f"python benchmarks/{script}", *flags, f"--out {args.out}"])


def as_json(settings: Any) -> dict:
    """A settings dataclass as JSON values (paths as strings)."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()}


def write_record(out: Path, name: str, record: dict, text: str) -> None:
    """``<name>.json`` (the record) and ``<name>.md`` (``text``, its table) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)
    print(f"wrote {out}/{name}.md")


def table(record: dict) -> str:
    a = record["args"]
    lines = [
        "# A probe's B_crit interval with the systematic effects in (simulated probes)",
        "",
        f"Command: `{record['command']}` ({record['date']}, CPU). "
        f"{a['draws']} simulated probes per row: {a['n_envs']} envs at n_steps {a['n_steps_grid']}, {a['seeds']} seeds, "
        f"3 learning rates, budget {a['budget_steps']:,} agent steps, E_min {a['e_min']:,.0f}, games of "
        f"{a['game_length']:.0f} agent steps, a {a['window']}-game running score, "
        f"σ of the rate optimum's offset {a['lr_offset_sd']}, the mean score rising along a {a['curve']} curve. "
        + (
            f"Sizes below {a['slow_below']:,.0f} slowed by (that size / B)^{a['slow_power']:g}. "
            if a.get("slow_below")
            else ""
        )
        + "Scenarios: see the script's docstring. The second fit: from the size of least experience up. The fit: "
        + (
            "with the sizes and seeds that did not reach the target censored."
            if a.get("censored")
            else "the reaching branches."
        ),
        "",
        f"Targets in one game's score sd above the start: 3 SE = {record['three_se_target']:.2f}; null floor = "
        f"{record['null_floor_target']:.2f}. A branch that learns nothing at the largest size reached the 3-SE target "
        f"within its budget in {record['null_branch_crossing_3se']:.0%} of 200 tries.",
        "",
        "| σ_seed | true B_crit | scenario | identified | 95 % interval covers the truth | median fitted/true (identified) "
        "| second fit: identified | covers | median fitted/true |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in record["rows"]:
        lines.append(
            f"| {row['seed_sd']:.2f} | {row['b_crit']:,.0f} | {row['scenario']} | {row['identified']:.2f} | "
            f"{row['covered']:.2f} | {row['median_ratio']:.2f} | {row.get('identified_second', math.nan):.2f} | "
            f"{row.get('covered_second', math.nan):.2f} | {row.get('median_ratio_second', math.nan):.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main(tyro.cli(Args))
