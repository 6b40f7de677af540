"""How often does the 95 % interval of a pooled B_simple cover the truth? Synthetic measurements, known ratio.

Draws ``T`` measurement pairs ``(g2, trace_sigma)`` around a true ``(|G|², tr Σ) = (1, 100)`` (B_simple = 100)
with AR(1) noise of correlation ``φ`` between consecutive measurements, as consecutive PPO iterations are
correlated, for a resolved ``|G|²`` (noise 2 per measurement) and a mostly unresolved one (noise 20), and
counts how often :func:`rl_gns.core.maths.noise_scale.b_simple_interval` (batch means + Fieller) covers 100. Next to
it, the interval that treats the measurements as independent (batches of one), which correlation breaks.

    python benchmarks/interval_coverage.py --out results/validation/interval_coverage
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tyro
from scipy.stats import t as student_t

from rl_gns.core.maths.noise_scale import b_simple_interval

TRUE_G2, TRUE_TRACE = 1.0, 100.0


@dataclass
class Args:
    """Coverage of the B_simple interval on synthetic correlated measurements."""

    draws: int = 1000
    """Independent series per setting."""
    measurements: int = 100
    """T, measurements per series."""
    seed: int = 0
    """Seed."""
    out: Path = Path("interval_coverage")
    """Directory for coverage.json and coverage.png."""


def series(rng: np.random.Generator, t: int, phi: float, noise_g2: float, noise_trace: float) -> tuple[np.ndarray, np.ndarray]:
    """``T`` pairs around the truth with AR(1) noise (unit stationary variance, coefficient ``phi``)."""
    noise = np.empty((t, 2))
    noise[0] = rng.normal(size=2)
    eps = rng.normal(size=(t, 2)) * np.sqrt(1 - phi**2)
    for i in range(1, t):
        noise[i] = phi * noise[i - 1] + eps[i]
    return TRUE_G2 + noise_g2 * noise[:, 0], TRUE_TRACE + noise_trace * noise[:, 1]


def independent_covers(g2: np.ndarray, trace: np.ndarray) -> bool:
    """The delta-method interval of the ratio of means that treats the measurements as independent."""
    if g2.mean() <= 0:
        return True  # unbounded: covers
    ratio = trace.mean() / g2.mean()
    se = np.std(trace - ratio * g2, ddof=1) / np.sqrt(len(g2)) / g2.mean()
    return bool(abs(ratio - TRUE_TRACE / TRUE_G2) <= student_t.ppf(0.975, len(g2) - 1) * se)


def main(args: Args) -> Path:
    rng = np.random.default_rng(args.seed)
    phis = [0.0, 0.3, 0.6, 0.8, 0.9]
    results = []
    for noise_g2, label in ((2.0, "|G|² resolved"), (20.0, "|G|² mostly unresolved")):
        for phi in phis:
            fieller, independent, bounded = 0, 0, 0
            for _ in range(args.draws):
                g2, trace = series(rng, args.measurements, phi, noise_g2, 30.0)
                interval = b_simple_interval(g2, trace)
                fieller += interval.low <= TRUE_TRACE / TRUE_G2 <= interval.high
                bounded += interval.resolved
                independent += independent_covers(g2, trace)
            results.append(
                {
                    "case": label,
                    "noise_g2": noise_g2,
                    "phi": phi,
                    "coverage_batch_means_fieller": float(fieller) / args.draws,
                    "coverage_independent": independent / args.draws,
                    "bounded_fraction": bounded / args.draws,
                }
            )
            print(results[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coverage.json").write_text(
        json.dumps({"args": {**vars(args), "out": str(args.out)}, "results": results}, indent=2)
    )
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, label in zip(axes, ("|G|² resolved", "|G|² mostly unresolved"), strict=True):
        rows = [r for r in results if r["case"] == label]
        ax.plot(phis, [r["coverage_batch_means_fieller"] for r in rows], "o-", label="batch means + Fieller (rl-gns)")
        ax.plot(phis, [r["coverage_independent"] for r in rows], "s--", label="measurements taken as independent")
        ax.axhline(0.95, color="black", lw=1, ls=":", label="nominal 95 %")
        se = np.sqrt(0.95 * 0.05 / args.draws)
        ax.axhspan(0.95 - 2 * se, 0.95 + 2 * se, color="gray", alpha=0.15)
        ax.set(xlabel="correlation φ of consecutive measurements", title=f"{label} ({args.measurements} measurements)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"coverage of the true B_simple ({args.draws} draws)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "coverage.png", dpi=120)
    plt.close(fig)
    return args.out / "coverage.png"


if __name__ == "__main__":
    print(f"wrote {main(tyro.cli(Args))}")
