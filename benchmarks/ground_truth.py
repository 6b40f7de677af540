"""The estimator against exact ground truth on RL data (:mod:`rl_gns.testing.exact`), per scheme and loss.

For one-step episodes (i.i.d. steps, ``H = 1``) and a 3-step MDP (correlated steps, ``H = 3``), draws many
rollouts into SB3's ``RolloutBuffer``, measures each exactly as ``NoiseScalePPO`` does
(:func:`rl_gns.core.agents.measure.measure_rollout`), and pools the raw ``g2`` and ``trace_sigma`` estimates (mean
over independent rollouts, 95 % interval from their standard error). Exact targets: for the ``envs``
scheme ``(|G|², tr Σ_env)``; for the ``minibatch`` scheme what it estimates in expectation,
``(|G|² + (tr Σ_env − tr Σ_marginal)/(N − 1), (N tr Σ_marginal − tr Σ_env)/(N − 1))``, next to ``|G|²``.
With advantage normalisation (what PPO does, per measured batch) the exact values are those of the
population-normalised loss, the large-batch limit, so the distance shows the bias of normalising over a
finite batch.

    python benchmarks/ground_truth.py --rollouts 3000 --out results/validation/ground_truth.md
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch as th
import tyro

from rl_gns.core.agents.measure import measure_rollout
from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.noise_scale import g2_and_trace
from rl_gns.core.maths.schemes import SCHEMES
from rl_gns.testing.exact import ChainMDP, exact, minibatch_expectation, sample_rollout


@dataclass
class Args:
    """Pool the two-batch estimates over many sampled rollouts and compare them with the exact values."""

    rollouts: int = 3000
    """Independent rollouts per case (each measured once per scheme)."""
    n_envs: int = 8
    """Envs per rollout."""
    episodes_per_env: int = 2
    """Whole episodes per env and rollout (n_steps = episodes × horizon)."""
    seed: int = 0
    """Seed of the rollouts and the measurement sampler."""
    out: Path | None = None
    """Markdown file for the table (default: print only)."""


def pooled(problem: ChainMDP, args: Args, horizon: int, normalize: bool) -> dict[tuple[str, str], np.ndarray]:
    """``{(scheme, loss): (R, 2)}`` raw ``(g2, trace_sigma)`` of every rollout."""
    policy = problem.make_policy(seed=args.seed)
    n_steps = args.episodes_per_env * horizon
    rollout_size = args.n_envs * n_steps
    sizes = {"minibatch": (rollout_size // 8, rollout_size // 2), "envs": (rollout_size // 4, rollout_size)}
    rng = np.random.default_rng(args.seed)
    out: dict[tuple[str, str], list[tuple[float, float]]] = {(s, loss): [] for s in sizes for loss in LOSSES}
    for _ in range(args.rollouts):
        buffer = sample_rollout(problem, policy, args.n_envs, n_steps, rng)
        for scheme, (b_small, b_big) in sizes.items():
            norms = measure_rollout(policy, buffer, SCHEMES[scheme].indices(args.n_envs, n_steps, b_big, rng),
                                    b_big // b_small, LOSSES, normalize, problem.clip_range, None, problem.ent_coef,
                                    problem.vf_coef)  # fmt: skip
            for loss, n in norms.items():
                out[scheme, loss].append(g2_and_trace(n.g2_small, n.g2_big, b_small, b_big))
    return {key: np.array(values) for key, values in out.items()}


def cell(values: np.ndarray, target: float) -> str:
    """``mean ± 1.96·SE`` of independent estimates, and how many standard errors it lies from ``target``."""
    mean, se = values.mean(), values.std(ddof=1) / math.sqrt(len(values))
    return f"{mean:.4g} ± {1.96 * se:.2g} ({(mean - target) / se:+.1f} SE)"


def main(args: Args) -> str:
    th.set_num_threads(1)
    lines = [
        "| case | advantages | scheme | loss | exact \\|G\\|² | expected g2 | pooled g2 (distance from expected) "
        "| expected tr(Σ) | pooled tr(Σ) (distance from expected) | exact B_simple (env) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    start = time.perf_counter()
    for horizon, case in ((1, "i.i.d. steps (H = 1)"), (3, "3-step episodes (H = 3)")):
        problem = ChainMDP(horizon=horizon)
        rollout_size = args.n_envs * args.episodes_per_env * horizon
        for normalize in (False, True):
            truth = exact(problem, problem.make_policy(seed=args.seed), normalize_advantage=normalize)
            estimates = pooled(problem, args, horizon, normalize)
            for (scheme, loss), values in estimates.items():
                t = truth[loss]
                g2, trace = (t.g2, t.trace_env) if scheme == "envs" else minibatch_expectation(t, rollout_size)
                lines.append(
                    f"| {case}, N = {rollout_size} | {'normalised' if normalize else 'raw'} | {scheme} | {loss} "
                    f"| {t.g2:.4g} | {g2:.4g} | {cell(values[:, 0], g2)} | {trace:.4g} | {cell(values[:, 1], trace)} "
                    f"| {t.b_simple_env:.4g} |"
                )
    table = "\n".join(lines) + "\n"
    header = (f"`python benchmarks/ground_truth.py --rollouts {args.rollouts} --n-envs {args.n_envs} --episodes-per-env "
              f"{args.episodes_per_env} --seed {args.seed}` ({time.perf_counter() - start:.0f} s)\n\n")  # fmt: skip
    if args.out is not None:
        args.out.write_text(header + table)
        print(f"wrote {args.out}")
    return header + table


if __name__ == "__main__":
    print(main(tyro.cli(Args)))
