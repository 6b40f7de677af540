"""``rl-gns analyze``: steps and experience to target, the tradeoff fit, and the noise-scale prediction.

Stage two and three (aggregate -> report) of a sweep. Reads only files on disk (``sweep.json`` and
each run directory's ``config.json``, ``episodes.csv``, ``progress.csv``, ``summary.json``), so it
can be rerun at any time, also on a partial sweep. Writes ``report.md``, ``results.json`` and
figures into the sweep directory.

Definitions (see README):

- Score measure: mean raw score of the last ``window`` finished games (:mod:`rl_gns.targets`).
- ``S``: PPO iterations to the target; ``E = S · rollout_size`` agent steps (frames = 4·E);
  gradient steps = ``S · n_epochs · M``; wall time = seconds since the run started.
- Per target and rollout size, per seed the fastest learning rate is kept (as the paper kept the
  best run per batch size); the size's point is the geometric mean over the seeds that reached it.
- Fit: ``log S`` against ``log(S_min + E_min/B)`` with ``B`` the rollout size; 95 % intervals from
  a bootstrap over seeds (resampled with replacement within each size).
- Noise-scale prediction: ``B_simple`` of the policy loss averaged over training up to the target,
  ``Σ raw trace_sigma / Σ raw g2`` pooled over every run of a size that reached the target (single
  ``g2`` estimates are mostly noise where ``B_simple >> b_big``, so all measurements are pooled);
  the prediction of the critical rollout size is ``M × median over sizes``.

Shape glossary: ``K`` rollout sizes, ``R`` seeds.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.noise_scale import b_simple
from rl_gns.progress import read_progress
from rl_gns.targets import first_reached, steps_and_experience
from rl_gns.tradeoff import TradeoffFit, fit_tradeoff

STEP_KEY = "time/total_timesteps"


@dataclass
class AnalyzeConfig:
    """Aggregate a sweep directory into report.md, results.json and figures (reads only files on disk)."""

    sweep_dir: tyro.conf.Positional[Path]
    """The sweep's --out directory."""
    bootstrap: int = 2000
    """Bootstrap resamples for the confidence intervals."""
    seed: int = 0
    """Seed of the bootstrap."""
    max_rms_log_residual: float = 0.25
    """Flag a fit whose RMS log residual exceeds this (0.25 ≈ 25 % scatter around the curve)."""


@dataclass
class Reach:
    """When one run reached one target."""

    iterations: int
    """S, PPO iterations."""
    env_steps: int
    """E = S · rollout_size, agent steps."""
    wall_s: float
    """Seconds since the run started, at the game that reached the target."""
    g2_policy_sum: float
    """Sum of the raw ``g2`` estimates of the policy loss up to here."""
    trace_sigma_policy_sum: float
    """Sum of the raw ``trace_sigma`` estimates of the policy loss up to here."""
    n_measurements: int
    """Noise-scale measurements up to here."""


@dataclass
class RunRecord:
    """One run of a sweep, as read back from its directory."""

    name: str
    n_envs: int
    rollout_size: int
    minibatch_size: int
    n_epochs: int
    learning_rate: float
    seed: int
    status: str
    """done, failed, or unfinished (still running or killed)."""
    env_steps: int
    """Agent steps trained so far (last logged row)."""
    reached: dict[float, Reach] = field(default_factory=dict)
    """Target -> when it was reached; absent targets are censored (not reached within the run)."""


def noise_sums(progress: dict[str, np.ndarray], until_env_steps: float, loss: str = "policy") -> tuple[float, float, int]:
    """``(Σ g2, Σ trace_sigma, count)`` of the raw estimates of ``loss`` measured at or before ``until_env_steps``."""
    g2_key, trace_key = f"gns/g2_{loss}_raw", f"gns/trace_sigma_{loss}_raw"
    if g2_key not in progress:
        return 0.0, 0.0, 0
    rows = (progress[STEP_KEY] <= until_env_steps) & np.isfinite(progress[g2_key])
    return float(progress[g2_key][rows].sum()), float(progress[trace_key][rows].sum()), int(rows.sum())


def run_status(run_dir: Path) -> str:
    """``done`` (``summary.json`` written), ``failed`` (``error.txt``), or ``unfinished`` (running or killed)."""
    return "done" if (run_dir / "summary.json").exists() else "failed" if (run_dir / "error.txt").exists() else "unfinished"


def load_run(run_dir: Path, targets: list[float], window: int) -> RunRecord | None:
    """Read one run directory; ``None`` if it has not even written its configuration."""
    if not (run_dir / "config.json").exists():
        return None
    config = json.loads((run_dir / "config.json").read_text())
    status = run_status(run_dir)
    progress = read_progress(run_dir / "progress.csv") if (run_dir / "progress.csv").exists() else {}
    episodes = read_progress(run_dir / "episodes.csv") if (run_dir / "episodes.csv").exists() else {}
    episodes = {key: episodes.get(key, np.array([])) for key in ("env_steps", "score", "wall_s")}
    record = RunRecord(
        name=run_dir.name,
        n_envs=config["n_envs"],
        rollout_size=config["rollout_size"],
        minibatch_size=config["minibatch_size"],
        n_epochs=config["n_epochs"],
        learning_rate=config["learning_rate"],
        seed=config["seed"],
        status=status,
        env_steps=int(progress[STEP_KEY][-1]) if progress else 0,
    )
    for target in targets:
        game = first_reached(episodes["env_steps"], episodes["score"], target, window)
        if game is not None:
            iterations, env_steps = steps_and_experience(int(episodes["env_steps"][game]), record.rollout_size)
            sums = noise_sums(progress, env_steps)
            record.reached[target] = Reach(iterations, env_steps, float(episodes["wall_s"][game]), *sums)
    return record


@dataclass
class TargetResult:
    """The tradeoff at one target score."""

    target: float
    rollout_size_K: list[int]
    """Rollout sizes where at least one seed reached the target."""
    steps_K: list[float]
    """Geometric mean over seeds of the fastest learning rate's S (PPO iterations)."""
    experience_K: list[float]
    """``rollout_size · steps``, agent steps."""
    wall_s_K: list[float]
    """Geometric mean over seeds of the wall time of the same runs, seconds."""
    best_lr_K: list[list[float]]
    """The fastest learning rate per reached seed."""
    seeds_reached_K: list[int]
    """Seeds (of those run) that reached the target at each size."""
    b_simple_policy_K: list[float]
    """B_simple of the policy loss averaged over training up to the target, pooled over every run of the size
    that reached it (all learning rates and seeds): Σ raw trace_sigma / Σ raw g2, samples per gradient step."""
    n_measurements_K: list[int]
    """Measurements pooled into ``b_simple_policy_K``."""
    censored_sizes: list[int]
    """Rollout sizes run where no seed reached the target."""
    fit: TradeoffFit | None = None
    ci_s_min: tuple[float, float] | None = None
    ci_e_min: tuple[float, float] | None = None
    ci_b_crit: tuple[float, float] | None = None
    predicted_b_crit: float = math.nan
    """M × median over sizes of ``b_simple_policy_K``: the rollout size the noise scale predicts as critical."""
    flags: list[str] = field(default_factory=list)
    """Why the fit may be unreliable."""


def best_per_seed(runs: list[RunRecord], target: float, rollout_size: int) -> dict[int, RunRecord]:
    """For each seed at one rollout size, the run (over learning rates) that reached ``target`` in fewest steps."""
    best: dict[int, RunRecord] = {}
    for run in runs:
        if run.rollout_size == rollout_size and target in run.reached:
            current = best.get(run.seed)
            if current is None or run.reached[target].iterations < current.reached[target].iterations:
                best[run.seed] = run
    return best


def geometric_mean(values: list[float] | np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(values))))


def analyze_target(
    runs: list[RunRecord], target: float, n_minibatches: int, bootstrap: int, rng: np.random.Generator, max_rms: float
) -> TargetResult:
    """Best run per size and seed, the tradeoff fit with bootstrap intervals, and the noise-scale prediction."""
    sizes = sorted({run.rollout_size for run in runs})
    result = TargetResult(target, [], [], [], [], [], [], [], [], [])
    steps_by_size: list[np.ndarray] = []
    for size in sizes:
        best = best_per_seed(runs, target, size)
        if not best:
            result.censored_sizes.append(size)
            continue
        reaches = [run.reached[target] for run in best.values()]
        steps = np.array([r.iterations for r in reaches], dtype=float)
        steps_by_size.append(steps)
        result.rollout_size_K.append(size)
        result.steps_K.append(geometric_mean(steps))
        result.experience_K.append(size * result.steps_K[-1])
        result.wall_s_K.append(geometric_mean([max(r.wall_s, 1e-9) for r in reaches]))
        result.best_lr_K.append([best[seed].learning_rate for seed in sorted(best)])
        result.seeds_reached_K.append(len(best))
        pooled = [run.reached[target] for run in runs if run.rollout_size == size and target in run.reached]
        g2_sum = sum(r.g2_policy_sum for r in pooled)
        result.b_simple_policy_K.append(b_simple(g2_sum, sum(r.trace_sigma_policy_sum for r in pooled)))
        result.n_measurements_K.append(sum(r.n_measurements for r in pooled))
    finite = [b for b in result.b_simple_policy_K if math.isfinite(b) and b > 0]
    result.predicted_b_crit = n_minibatches * float(np.median(finite)) if finite else math.nan

    if result.censored_sizes:
        result.flags.append(f"not reached at rollout sizes {result.censored_sizes}")
    if len(result.rollout_size_K) < 2:
        result.flags.append("fewer than 2 rollout sizes reached the target: no fit")
        return result
    if len(result.rollout_size_K) < 3:
        result.flags.append("only 2 rollout sizes: the fit passes through them exactly")
    batch = np.array(result.rollout_size_K, dtype=float)
    result.fit = fit_tradeoff(batch, np.array(result.steps_K))
    if result.fit.rms_log_residual > max_rms:
        result.flags.append(f"large residuals (RMS log residual {result.fit.rms_log_residual:.2f})")
    samples = []
    for _ in range(bootstrap):
        resampled = [geometric_mean(rng.choice(steps, size=len(steps), replace=True)) for steps in steps_by_size]
        fit = fit_tradeoff(batch, np.array(resampled))
        samples.append((fit.s_min, fit.e_min, fit.b_crit))
    low, high = np.percentile(np.array(samples), [2.5, 97.5], axis=0)
    result.ci_s_min, result.ci_e_min, result.ci_b_crit = (
        (float(low[0]), float(high[0])),
        (float(low[1]), float(high[1])),
        (float(low[2]), float(high[2])),
    )
    if min(result.seeds_reached_K) < 2:
        result.flags.append("some sizes have a single seed: intervals understate the uncertainty")
    return result


def load_sweep(sweep_dir: Path) -> tuple[dict, list[RunRecord]]:
    """The sweep's settings and every run that has started."""
    settings = json.loads((sweep_dir / "sweep.json").read_text())
    targets = [float(t) for t in settings["targets"]]
    runs = []
    for run_dir in sorted((sweep_dir / "runs").iterdir()):
        record = load_run(run_dir, targets, settings["window"])
        if record is not None:
            runs.append(record)
    return settings, runs


def analyze(config: AnalyzeConfig) -> Path:
    """Write ``report.md``, ``results.json`` and figures into the sweep directory; return the report's path."""
    from rl_gns.report import write_report

    settings, runs = load_sweep(config.sweep_dir)
    rng = np.random.default_rng(config.seed)
    results = [
        analyze_target(runs, float(t), settings["n_minibatches"], config.bootstrap, rng, config.max_rms_log_residual)
        for t in settings["targets"]
    ]
    payload = {
        "settings": settings,
        "runs": [asdict(run) for run in runs],
        "targets": [{**asdict(r), "b_crit": r.fit.b_crit if r.fit else None} for r in results],
    }
    (config.sweep_dir / "results.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return write_report(config.sweep_dir, settings, runs, results)


def check(config: AnalyzeConfig) -> None:
    """Fail early (``ValueError``) if the directory is not a sweep."""
    if not (config.sweep_dir / "sweep.json").exists():
        raise ValueError(f"{config.sweep_dir} is not a sweep directory (no sweep.json)")
