"""Is the estimator consistent on real Atari data? Measure at fixed parameters for many iterations at several sizes.

A trained policy is loaded into :class:`rl_gns.NoiseScalePPO` with learning rate 0 (Adam then leaves every
parameter exactly where it is), and trained for ``--iterations`` PPO iterations at each ``--n-envs`` with
both measurement schemes and all three losses measured every iteration. All measurements of a size are
taken at the same parameters, so pooling them gives ``Σ g2 / T`` and ``Σ trace_sigma / T``: estimates of
``|G|²`` and ``tr(Σ)`` of one fixed gradient distribution, each with a batch-means 95 % interval over the
iterations. An unbiased estimator gives the same value at every rollout size, within those intervals; a
value that moves with the rollout size ``N`` shows a bias that depends on it.

    python benchmarks/fixed_parameters.py --model results/validation/pilots/BeamRider/model.zip \\
        --env BeamRider --n-envs 2 8 32 --iterations 300 --out results/validation/fixed_parameters
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch as th
import tyro
from scipy.stats import t as student_t
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.maths.names import LOSSES, gns_key, size_key
from rl_gns.core.maths.noise_scale import b_simple_interval
from rl_gns.records.compact import packed
from rl_gns.records.rundir import PROGRESS, compact_name, read_csv


@dataclass
class Args:
    """Pool noise-scale measurements at fixed parameters across rollout sizes (RAM backend, MLP policy)."""

    model: Path
    """A trained RAM-backend PPO (model.zip), e.g. a validation pilot's."""
    env: str = "BeamRider"
    """Atari game of the model."""
    n_envs: list[int] = field(default_factory=lambda: [2, 8, 32])
    """Env counts to measure at (rollout size n_envs * n_steps)."""
    n_steps: int = 32
    """Agent steps per env per rollout."""
    n_minibatches: int = 4
    """M: the minibatch scheme's big batch is rollout / M samples."""
    iterations: int = 300
    """PPO iterations (one measurement per scheme each) per env count."""
    seed: int = 0
    """Seed of the environments and the measurement's sampler."""
    out: Path = Path("fixed_parameters")
    """Directory for fixed_parameters.json, one progress.csv.xz per size, and table.md."""
    report_only: bool = False
    """Skip measuring: pool the progress.csv.xz files already in --out again."""


def mean_interval(x_T: np.ndarray) -> tuple[float, float, float]:
    """Mean of ``T`` correlated values with a batch-means 95 % interval: ``k = round(T^(1/3))`` batches of the last
    ``k·floor(T/k)`` values, centred on the mean of all ``T``."""
    k = max(2, round(len(x_T) ** (1 / 3)))
    size = len(x_T) // k
    batches = x_T[len(x_T) - k * size :].reshape(k, size).mean(axis=1)
    half = float(student_t.ppf(0.975, k - 1)) * batches.std(ddof=1) / math.sqrt(k)
    return float(x_T.mean()), float(x_T.mean() - half), float(x_T.mean() + half)


def measure(args: Args, n_envs: int, policy_state: dict) -> dict:
    """Run ``args.iterations`` iterations at learning rate 0 and pool every scheme's and loss's estimates."""
    out = args.out / f"n{n_envs:04d}"
    env = make_atari_vec_env(args.env, n_envs, seed=args.seed, backend="ram")
    rollout_size = n_envs * args.n_steps
    model = NoiseScalePPO(
        "MlpPolicy",
        env,
        noise_scale=NoiseScaleConfig(schemes=("minibatch", "envs"), losses=LOSSES, every=1),
        n_steps=args.n_steps,
        batch_size=rollout_size // args.n_minibatches,
        n_epochs=1,
        learning_rate=0.0,
        seed=args.seed,
        device="cpu",
    )
    model.policy.load_state_dict(policy_state)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.set_logger(configure(str(out), ["csv"]))
    start = time.perf_counter()
    model.learn(args.iterations * rollout_size)
    log = out / PROGRESS
    (out / compact_name(PROGRESS)).write_bytes(packed(log.read_bytes()))  # kept compact, as a finished run's log
    log.unlink()
    moved = max(float((p.detach() - q).abs().max()) for p, q in zip(model.policy.parameters(), before, strict=True))
    assert moved == 0.0, f"parameters moved by {moved} at learning rate 0"
    env.close()
    return {**pool(out, n_envs, rollout_size), "wall_s": time.perf_counter() - start}


def pool(out: Path, n_envs: int, rollout_size: int) -> dict:
    """Pool the raw estimates of ``out/progress.csv.xz``: means of g2 and trace_sigma and the ratio, with intervals."""
    progress = read_csv(out / compact_name(PROGRESS))
    row: dict = {"n_envs": n_envs, "rollout_size": rollout_size, "pooled": {}}
    for scheme in ("minibatch", "envs"):
        b_small, b_big = int(progress[size_key(scheme, "b_small")][0]), int(progress[size_key(scheme, "b_big")][0])
        for loss in LOSSES:
            g2 = progress[gns_key(scheme, "g2", loss, "raw")]
            trace = progress[gns_key(scheme, "trace_sigma", loss, "raw")]
            ratio = b_simple_interval(g2, trace)
            row["pooled"][f"{scheme}/{loss}"] = {
                "b_small": b_small,
                "b_big": b_big,
                "measurements": int(np.isfinite(g2).sum()),
                "g2": mean_interval(g2[np.isfinite(g2)]),
                "trace_sigma": mean_interval(trace[np.isfinite(trace)]),
                "b_simple": [ratio.point, ratio.low, ratio.high],
            }
    return row


def table(rows: list[dict]) -> str:
    """Markdown: per scheme and loss, the pooled |G|², tr(Σ) and B_simple at each rollout size, with intervals."""

    def cell(values: list[float]) -> str:
        point, low, high = values
        return f"{point:.3g} [{low:.3g}, {high:.3g}]" if math.isfinite(high) else f"{point:.3g} [> {low:.3g}]"

    lines = [
        "| scheme / loss | rollout size | b_small / b_big | measurements | |G|² [95 %] | tr(Σ) [95 %] | B_simple [95 %] |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in rows[0]["pooled"]:
        for row in rows:
            p = row["pooled"][key]
            lines.append(
                f"| {key} | {row['rollout_size']} | {p['b_small']} / {p['b_big']} | {p['measurements']} "
                f"| {cell(p['g2'])} | {cell(p['trace_sigma'])} | {cell(p['b_simple'])} |"
            )
    return "\n".join(lines) + "\n"


def main(args: Args) -> Path:
    args.out.mkdir(parents=True, exist_ok=True)
    th.set_num_threads(1)
    policy_state = PPO.load(args.model, device="cpu").policy.state_dict()
    rows = []
    for n_envs in args.n_envs:
        if args.report_only:
            rows.append(pool(args.out / f"n{n_envs:04d}", n_envs, n_envs * args.n_steps))
        else:
            rows.append(measure(args, n_envs, policy_state))
            print(f"fixed parameters: n_envs {n_envs} done in {rows[-1]['wall_s']:.0f} s", flush=True)
        record = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(args).items()}, "rows": rows}
        (args.out / "fixed_parameters.json").write_text(json.dumps(record, indent=2) + "\n")
        (args.out / "table.md").write_text(table(rows))
    return args.out / "table.md"


if __name__ == "__main__":
    print(f"wrote {main(tyro.cli(Args))}")
