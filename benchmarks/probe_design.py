"""What would a probe need to identify B_crit? The scatter of the committed probes, then simulated probes.

A probe fits ``S(B) = S_min (1 + B_crit / B)`` to the steps its kept branches took to the target
(:func:`rl_gns.core.maths.tradeoff.fit_local_tradeoff`) and identifies ``B_crit`` when the 95 % interval has an upper end.
How often that can happen depends on how much the branches of one rollout size scatter. This reads each given probe's
``probe_results.json`` (its kept branches at the reported target), estimates that scatter as the pooled
within-size standard deviation of ``ln S``, then draws probes with a known ``B_crit`` and log-normal scatter of that
size and counts how often the fit identifies ``B_crit`` and how often its interval covers the truth, for the
committed grid (6 sizes from 128 to 4,096, 3 seeds) and for more seeds or a wider grid.

    python benchmarks/probe_design.py results/probes_v5/*/at*k results/probes_v6/*/at*k* --out results/probes_v6/design
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tyro

from rl_gns.core.maths.tradeoff import fit_local_tradeoff


@dataclass
class Args:
    """The scatter of committed probes, and how often simulated probes of that scatter identify B_crit."""

    probe_dirs: tyro.conf.Positional[list[Path]]
    """Probe directories; those not reported yet (no probe_results.json) are left out."""
    b_crits: list[float] = field(default_factory=lambda: [1e3, 3e3, 1e4, 3e4])
    """True critical rollout sizes to simulate, agent steps."""
    designs: list[str] = field(default_factory=lambda: ["128:4096:3", "128:4096:6", "128:4096:12", "128:4096:24",
                                                        "128:32768:3", "128:32768:6", "128:32768:12"])  # fmt: skip
    """Probe designs ``smallest:largest:seeds``: rollout sizes doubling from smallest to largest, seeds kept per size."""
    draws: int = 2000
    """Simulated probes per (design, B_crit, scatter)."""
    seed: int = 0
    """Seed of the simulation."""
    out: Path = Path("probe_design")
    """Directory for design.json, design.md and design.png."""


def within_size_log_sd(sizes_N: np.ndarray, steps_N: np.ndarray) -> tuple[float, int]:
    """Pooled within-size standard deviation of ``ln S``: ``sqrt(Σ_sizes Σ (ln S − mean_size)² / Σ_sizes (n − 1))``.

    :param sizes_N: ``(N,)`` rollout size of each kept branch, agent steps.
    :param steps_N: ``(N,)`` PPO iterations each took to the target.
    :return: the standard deviation (NaN without a size of 2 branches) and its degrees of freedom.
    """
    log_N = np.log(steps_N)
    squares, dof = 0.0, 0
    for size in np.unique(sizes_N):
        group = log_N[sizes_N == size]
        squares += float(np.sum((group - group.mean()) ** 2))
        dof += len(group) - 1
    return (math.sqrt(squares / dof) if dof else math.nan), dof


def probe_scatter(probe_dir: Path) -> dict:
    """The kept branches of one reported probe at its reported target, and their within-size scatter."""
    results = json.loads((probe_dir / "probe_results.json").read_text())
    reached = results["reached"]
    sizes_N = np.array([branch["rollout_size"] for branch in reached], dtype=float)
    steps_N = np.array([branch["iterations"] for branch in reached], dtype=float)
    sd, dof = within_size_log_sd(sizes_N, steps_N)
    fit = results["fit"]
    return {"probe": str(probe_dir), "target": results["target"], "branches": len(reached), "log_sd": sd,
            "dof": dof, "identified": bool(fit and fit["identified"])}  # fmt: skip


def design_sizes(design: str) -> tuple[np.ndarray, int]:
    """``smallest:largest:seeds`` -> the rollout sizes (doubling) and the seeds per size."""
    smallest, largest, seeds = (int(part) for part in design.split(":"))
    count = round(math.log2(largest / smallest)) + 1
    return smallest * 2.0 ** np.arange(count), seeds


def simulate(sizes_K: np.ndarray, seeds: int, b_crit: float, log_sd: float, draws: int, rng: np.random.Generator) -> dict:
    """Simulated probes: ``S = S_min (1 + B_crit / B) · exp(σ z)`` for each size and seed, fitted as a probe fits.

    :param sizes_K: ``(K,)`` rollout sizes, agent steps.
    :param seeds: branches kept per size.
    :param b_crit: the true critical rollout size, agent steps.
    :param log_sd: σ, the scatter of ``ln S`` within a size.
    :param draws: simulated probes.
    :return: the fraction that identified ``B_crit``, the fraction whose interval covers it, and the median ratio of
        the upper to the lower end among those identified.
    """
    batch_N = np.repeat(sizes_K, seeds)
    s_min = 1e5 / b_crit  # E_min = 1e5 agent steps: only B_crit and the scatter decide identification
    mean_N = s_min * (1 + b_crit / batch_N)
    identified, covered, widths = 0, 0, []
    for _ in range(draws):
        fit = fit_local_tradeoff(batch_N, mean_N * np.exp(log_sd * rng.normal(size=len(batch_N))))
        identified += fit.identified
        covered += bool(fit.b_crit_low <= b_crit <= fit.b_crit_high)  # NaN ends (every B_crit rejected) do not
        if fit.identified:
            widths.append(fit.b_crit_high / fit.b_crit_low if fit.b_crit_low > 0 else math.inf)
    return {"identified": identified / draws, "covered": covered / draws,
            "median_width": float(np.median(widths)) if widths else None}  # fmt: skip


def main(args: Args) -> None:
    reported = [d for d in args.probe_dirs if (d / "probe_results.json").exists()]
    for left_out in sorted(set(args.probe_dirs) - set(reported)):
        print(f"{left_out}: not reported yet (no probe_results.json), left out", flush=True)
    probes = [probe_scatter(d) for d in reported]
    dof = sum(p["dof"] for p in probes if p["dof"])
    pooled = math.sqrt(sum(p["log_sd"] ** 2 * p["dof"] for p in probes if p["dof"]) / dof)
    quartiles = [float(q) for q in np.percentile([p["log_sd"] for p in probes if p["dof"]], [25, 75])]
    rng = np.random.default_rng(args.seed)
    rows = []
    for log_sd, which in ((pooled, "pooled"), (quartiles[0], "lower quartile")):
        for design in args.designs:
            sizes_K, seeds = design_sizes(design)
            for b_crit in args.b_crits:
                row = simulate(sizes_K, seeds, b_crit, log_sd, args.draws, rng)
                rows.append({"scatter": which, "log_sd": log_sd, "design": design, "sizes": len(sizes_K),
                             "seeds": seeds, "branches": len(sizes_K) * seeds, "b_crit": b_crit, **row})  # fmt: skip
                print(f"{which:>14} σ {log_sd:.2f}  {design:>12}  B_crit {b_crit:8,.0f}: identified "
                      f"{row['identified']:.2f}, covered {row['covered']:.2f}", flush=True)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"command": "python benchmarks/probe_design.py " + " ".join(map(str, reported)) + f" --out {args.out}",
              "date": datetime.now(UTC).isoformat(timespec="seconds"), "draws": args.draws, "seed": args.seed,
              "probes": probes, "pooled_log_sd": pooled, "pooled_dof": dof, "log_sd_quartiles": quartiles,
              "rows": rows}  # fmt: skip
    (args.out / "design.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "design.md").write_text(table(record))
    figure(record, args.out / "design.png")


def table(record: dict) -> str:
    """The markdown report: each probe's scatter, then the identification probability per design and B_crit."""
    lines = ["# What would a probe need to identify B_crit?", "", f"`{record['command']}` ({record['date']}, "
             f"{record['draws']} simulated probes per cell)", "", "## The scatter of the committed probes", "",
             "| probe | target | kept branches | σ of ln S within a size (dof) | identified |",
             "|---|---:|---:|---|---|"]  # fmt: skip
    for p in record["probes"]:
        sd = "–" if math.isnan(p["log_sd"]) else f"{p['log_sd']:.2f} ({p['dof']})"
        lines.append(f"| {p['probe']} | {p['target']:.1f} | {p['branches']} | {sd} | {'yes' if p['identified'] else 'no'} |")
    q = record["log_sd_quartiles"]
    lines += ["", f"Pooled σ = {record['pooled_log_sd']:.2f} ({record['pooled_dof']} dof): one branch's steps lie within a "
              f"factor {math.exp(1.96 * record['pooled_log_sd']):.1f} of its size's typical value, 95 % of the time. "
              f"Quartiles over probes: {q[0]:.2f}, {q[1]:.2f}.", "",
              "## Simulated probes: the fraction that identifies B_crit (its interval covering the truth)", ""]  # fmt: skip
    b_crits = sorted({r["b_crit"] for r in record["rows"]})
    for scatter in dict.fromkeys(r["scatter"] for r in record["rows"]):
        rows = [r for r in record["rows"] if r["scatter"] == scatter]
        lines += [f"σ = {rows[0]['log_sd']:.2f} ({scatter}):", "",
                  "| rollout sizes | seeds | branches | " + " | ".join(f"B_crit {b:,.0f}" for b in b_crits) + " |",
                  "|---|---:|---:|" + "---|" * len(b_crits)]  # fmt: skip
        for design in dict.fromkeys(r["design"] for r in rows):
            cells = [r for r in rows if r["design"] == design]
            smallest, largest = (int(end) for end in design.split(":")[:2])
            lines.append(f"| {cells[0]['sizes']}, {smallest:,}–{largest:,} | {cells[0]['seeds']} | {cells[0]['branches']} | "
                         + " | ".join(f"{c['identified']:.2f} ({c['covered']:.2f})" for c in cells) + " |")  # fmt: skip
        lines.append("")
    return "\n".join(lines)


def figure(record: dict, path: Path) -> None:
    """Identification probability against the true B_crit, one line per design, at the pooled scatter."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    rows = [r for r in record["rows"] if r["scatter"] == "pooled"]
    for design in dict.fromkeys(r["design"] for r in rows):
        cells = [r for r in rows if r["design"] == design]
        smallest, largest, seeds = design.split(":")
        ax.plot([c["b_crit"] for c in cells], [c["identified"] for c in cells], marker="o",
                linestyle="-" if largest == "4096" else "--", label=f"{smallest}–{int(largest):,}, {seeds} seeds")  # fmt: skip
    ax.set(xscale="log", xlabel="true B_crit (agent steps)", ylabel="probes that identify B_crit", ylim=(0, 1),
           title=f"Simulated probes, scatter σ = {record['pooled_log_sd']:.2f} of ln S (the committed probes')")  # fmt: skip
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="rollout sizes, seeds per size", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


if __name__ == "__main__":
    main(tyro.cli(Args))
