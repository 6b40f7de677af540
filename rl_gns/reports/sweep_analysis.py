"""``rl-gns analyze`` (numbers): steps and experience to each target, the tradeoff fit, and the noise-scale candidates.

Reads only files on disk (``sweep.json`` and each run directory, :mod:`rl_gns.records.rundir`), so it can
be rerun at any time, also on a partial sweep. :mod:`rl_gns.reports.sweep_report` writes the report.

Definitions:

- Score measure: mean raw score of the last ``window`` finished games (:mod:`rl_gns.core.maths.targets`).
- ``S``: PPO iterations to the target; ``E = S · rollout_size`` agent steps (frames = 4·E);
  gradient steps = ``S · n_epochs · M``; wall time = seconds since the run started.
- Per target and rollout size, per seed the fastest learning rate is kept (as the paper kept the
  best run per batch size); the size's point is the geometric mean over the seeds that reached it.
- Fit: ``log S`` against ``log(S_min + E_min/B)`` with ``B`` the rollout size; 95 % intervals from
  a bootstrap over seeds (resampled with replacement within each size).
- Noise-scale candidates for the critical rollout size (``docs/prediction-criterion.md``): per scheme
  ``s`` and loss ``L``, per size the pooled ``B_k = Σ raw tr(Σ) / Σ raw |G|²`` over the measurements up to
  the target of every run of that size that reached it (+∞ where ``Σ |G|² ≤ 0``), then the median over
  sizes, times a units factor: ``M`` (``mb_xM_L``, ``env_xM_L``) or 1 (``mb_L``, ``env_L``). 95 % interval:
  percentile bootstrap of runs within each size.
- Criterion v8's candidates (``path_candidates``): per scheme and loss, pooled over every measurement of every kept
  run (the fastest rate per size and seed) from its start to the target: ``path_<tag>_<loss>``, the path average of
  App. D; over the measurements in the first 10 % of each kept run's agent steps to the target (at least its first):
  ``start_<tag>_<loss>``; for the minibatch scheme also times ``M`` (``_xM_``) and ``n_epochs · M`` (``_xEM_``).
  95 % interval: percentile bootstrap of the kept runs.

Shape glossary: ``K`` rollout sizes, ``R`` runs of one size.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.envs.atari import FRAME_SKIP
from rl_gns.core.maths.advice import DEFAULT_PREDICTOR, PREDICTOR_FACTORS
from rl_gns.core.maths.criterion import at_edge, fastest
from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.noise_scale import NoiseSums, pool
from rl_gns.core.maths.schemes import FACTORS, Candidate
from rl_gns.core.maths.targets import (
    StepsMeasure,
    censored_by,
    reach_steps,
    running_score,
    steps_by,
    window_midpoint,
)
from rl_gns.core.maths.tradeoff import MIN_FIT_SIZES, TradeoffFit, fit_tradeoff
from rl_gns.records.rundir import (
    PROBE,
    SWEEP,
    RunDir,
    first_measured,
    noise_sums,
    read_record,
    runs_under,
    sweep_runs,
    write_json,
)
from rl_gns.records.schema import SWEEP_FIELDS

#: The start of a run's path to a target: this fraction of its agent steps to the target (criterion v8).
START_FRACTION = 0.1


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
    """When one run reached one target, and its noise measurements up to then."""

    iterations: int
    """S, PPO iterations."""
    env_steps: int
    """E = S · rollout_size, agent steps."""
    wall_s: float
    """Seconds since the run started, at the game that reached the target."""
    noise: dict[str, NoiseSums] = field(default_factory=dict)
    """``"<scheme>/<loss>"`` -> pooled raw estimates measured at or before ``env_steps``."""
    midpoint_iterations: float = math.nan
    """The PPO iteration the reaching running score stands for: its games' mean midpoint
    (:func:`~rl_gns.core.maths.targets.window_midpoint`) over the rollout size."""
    trend_iterations: float = math.inf
    """The PPO iteration at which the least-squares line through the scores of every game up to the reaching one
    against their midpoints meets the target (:func:`~rl_gns.core.maths.targets.trend_crossing`), at the earliest the first
    game's midpoint (a line met before the run's first game cannot time it earlier); ``inf`` where it does not
    rise."""
    first_window: bool = False
    """The run's first full running score (its first ``window`` games) was already at the target: the run got there
    at or before then, so ``iterations`` is an upper bound, and the score measure cannot time it more finely."""
    start_noise: dict[str, NoiseSums] = field(default_factory=dict)
    """``"<scheme>/<loss>"`` -> pooled raw estimates of the first :data:`START_FRACTION` of ``env_steps`` (at least
    the first measurement)."""


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
    best_running_score: float = math.nan
    """The highest running score (mean of ``window`` games) the run reached; NaN before ``window`` games."""
    first_window_midpoint: float = math.nan
    """The agent step the run's first full running score (its first ``window`` games) stands for
    (:func:`~rl_gns.core.maths.targets.window_midpoint`): no reach can be timed earlier; NaN before ``window`` games."""
    last_window_midpoint: float = math.nan
    """The agent step the run's last running score (its last ``window`` games) stands for: a target it did not reach
    would have been reached after it (:func:`censored_iterations`); NaN before ``window`` games."""
    resumes: int = 0
    """Times a finished run went on from a checkpoint (0 for an unfinished run)."""
    games_dropped: int = 0
    """Games in progress a finished run lost at those resumes (0 where its checkpoints held the games)."""


def load_run(run: RunDir, targets: list[float], window: int) -> RunRecord:
    """Read one run directory that has written its configuration."""
    config, progress, episodes = run.config(), run.progress(), run.episodes()
    # a run counted as finished has a summary that reads: refuse a torn or edited one
    summary = run.summary() if run.status() == "done" else None
    record = RunRecord(
        name=run.name,
        n_envs=config.n_envs,
        rollout_size=config.rollout_size,
        minibatch_size=config.minibatch_size,
        n_epochs=config.n_epochs,
        learning_rate=config.learning_rate,
        seed=config.seed,
        status=run.status(),
        env_steps=run.env_steps(progress),
        resumes=0 if summary is None else summary.resumes,
        games_dropped=0 if summary is None else summary.games_dropped,
    )
    running = running_score(episodes["score"], window)
    lengths = episodes["length_frames"] / config.settings.get("frame_skip", FRAME_SKIP)
    if np.isfinite(running).any():
        record.best_running_score = float(np.nanmax(running))
        record.first_window_midpoint = window_midpoint(episodes["env_steps"][:window], lengths[:window], config.n_envs)
        record.last_window_midpoint = window_midpoint(episodes["env_steps"][-window:], lengths[-window:], config.n_envs)
    schemes = config.measured_schemes
    for target in targets:
        reach = reach_steps(
            episodes["env_steps"], episodes["score"], lengths, config.n_envs, record.rollout_size, target, window
        )
        if reach is not None:
            env_steps = reach.env_steps
            noise = {
                f"{scheme}/{loss}": noise_sums(progress, scheme, loss, env_steps) for scheme in schemes for loss in LOSSES
            }
            start_noise = {
                f"{scheme}/{loss}": noise_sums(
                    progress,
                    scheme,
                    loss,
                    max(START_FRACTION * env_steps, first_measured(progress, scheme, loss)),
                )
                for scheme in schemes
                for loss in LOSSES
            }
            record.reached[target] = Reach(
                reach.iterations,
                env_steps,
                float(episodes["wall_s"][reach.game]),
                noise,
                reach.midpoint_iterations,
                reach.trend_iterations,
                first_window=reach.game == window - 1,
                start_noise=start_noise,
            )
    return record


@dataclass
class Prediction:
    """One noise-scale prediction of the critical rollout size at one target (agent steps)."""

    value: float
    """``factor × median over sizes`` of the pooled ``B_k``; +∞ where not resolved."""
    ci: tuple[float, float] | None
    """95 % percentile bootstrap interval (runs resampled within sizes); ``None`` without resamples."""
    b_simple_K: list[float]
    """Pooled ``B_k`` per reached rollout size (samples), +∞ where not resolved."""
    n_measurements_K: list[int]
    """Measurements pooled per size."""


@dataclass
class TargetResult:
    """The tradeoff at one target score."""

    target: float
    rollout_size_K: list[int] = field(default_factory=list)
    """Rollout sizes where at least one seed reached the target."""
    steps_K: list[float] = field(default_factory=list)
    """Geometric mean over seeds of the fastest learning rate's S (PPO iterations)."""
    experience_K: list[float] = field(default_factory=list)
    """``rollout_size · steps``, agent steps."""
    wall_s_K: list[float] = field(default_factory=list)
    """Geometric mean over seeds of the wall time of the same runs, seconds."""
    best_lr_K: list[list[float]] = field(default_factory=list)
    """The fastest learning rate per reached seed."""
    seeds_reached_K: list[int] = field(default_factory=list)
    """Seeds (of those run) that reached the target at each size."""
    censored_sizes: list[int] = field(default_factory=list)
    """Rollout sizes run where no seed reached the target."""
    fit: TradeoffFit | None = None
    ci_s_min: tuple[float, float] | None = None
    ci_e_min: tuple[float, float] | None = None
    ci_b_crit: tuple[float, float] | None = None
    candidates: dict[str, Prediction] = field(default_factory=dict)
    """Noise-scale predictions of the critical rollout size, by name (``mb_xM_policy``, ``env_total``, ...)."""
    path_candidates: dict[str, Prediction] = field(default_factory=dict)
    """Criterion v8's path averages and start values over the kept runs, by name (``path_env_value``, ...)."""
    flags: list[str] = field(default_factory=list)
    """Why the fit may be unreliable."""
    not_identified: str | None = None
    """Why the sizes that reached the target do not identify B_crit (then ``fit`` is ``None``); ``None`` if they do."""

    @property
    def predicted_b_crit(self) -> float:
        """The default candidate's prediction (:data:`DEFAULT_PREDICTOR`), NaN if it was not measured."""
        candidate = self.candidates.get(DEFAULT_PREDICTOR)
        return candidate.value if candidate else math.nan


def iterations_to(reach: Reach, measure: StepsMeasure = "passage") -> float:
    """``S`` of one reached target, by ``measure`` (:func:`~rl_gns.core.maths.targets.steps_by`)."""
    return steps_by(measure, reach.iterations, reach.midpoint_iterations, reach.trend_iterations)


def censored_iterations(run: RunRecord, measure: StepsMeasure = "passage") -> float:
    """A lower bound on the PPO iterations by ``measure`` of a run that ended without reaching a target
    (:func:`~rl_gns.core.maths.targets.censored_by`); 0 where there is none."""
    return censored_by(measure, run.env_steps // run.rollout_size, run.last_window_midpoint / run.rollout_size)


def best_per_seed(
    runs: list[RunRecord], target: float, rollout_size: int, measure: StepsMeasure = "passage"
) -> dict[int, RunRecord]:
    """For each seed at one rollout size, in the order the seeds first appear in ``runs``, the run (over learning
    rates) that reached ``target`` in fewest steps (:func:`~rl_gns.core.maths.criterion.fastest`); a run whose steps
    ``measure`` cannot time (``trend`` without a rise) counts as not reaching it."""
    reached = [
        run
        for run in runs
        if run.rollout_size == rollout_size
        and target in run.reached
        and math.isfinite(iterations_to(run.reached[target], measure))
    ]
    by_name = {run.name: run for run in reached}
    best: dict[int, RunRecord] = {}
    for seed in dict.fromkeys(run.seed for run in reached):
        steps = {run.name: iterations_to(run.reached[target], measure) for run in reached if run.seed == seed}
        best[seed] = by_name[fastest(steps)]
    return best


@dataclass(frozen=True)
class KeptRates:
    """The learning rates at one rollout size: the grid tried and the fastest rate of each seed that reached a
    target, and how many of those fastest runs reached it with their first full running score.

    :param rollout_size: agent steps per PPO iteration.
    :param grid: every learning rate tried at this size, ascending.
    :param kept: per seed that reached the target (ascending seed), its fastest learning rate.
    """

    rollout_size: int
    grid: list[float]
    kept: list[float]
    first_window: int = 0
    """Kept runs that reached the target with their first full running score (:attr:`Reach.first_window`)."""

    @property
    def at_edge(self) -> int:
        """Seeds whose fastest rate is the lowest or highest of a grid of at least 3: the best rate may lie outside
        the grid, so the size's ``S`` may be too high."""
        return sum(at_edge(lr, self.grid) for lr in self.kept)

    @property
    def one_edge(self) -> str | None:
        """``lowest`` or ``highest`` where every kept rate (at least 2) is that end of a grid of at least 3: the best
        rate likely lies beyond it (by chance alone, with rates that do not matter, 2 in 27 at 3 seeds)."""
        if len(self.grid) < 3 or len(self.kept) < 2:
            return None
        for end, rate in (("lowest", self.grid[0]), ("highest", self.grid[-1])):
            if all(lr == rate for lr in self.kept):
                return end
        return None


def kept_rates(runs: list[RunRecord], target: float, rollout_size: int, measure: StepsMeasure = "passage") -> KeptRates:
    """The grid of learning rates at ``rollout_size`` and each reached seed's fastest (:func:`best_per_seed`)."""
    best = best_per_seed(runs, target, rollout_size, measure)
    grid = sorted({run.learning_rate for run in runs if run.rollout_size == rollout_size})
    kept = [best[seed] for seed in sorted(best)]
    first = sum(run.reached[target].first_window for run in kept)
    return KeptRates(rollout_size, grid, [run.learning_rate for run in kept], first)


def geometric_mean(values: list[float] | np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(values))))


def resolved_or_inf(sums: NoiseSums) -> float:
    """``B_simple`` of pooled sums, +∞ where ``Σ |G|² <= 0`` (the noise swamps the signal: larger than measurable)."""
    return sums.b_simple if sums.g2 > 0 else math.inf


def median_candidate(sums_KR: list[list[NoiseSums]], factor: float, reps: int, rng: np.random.Generator) -> Prediction:
    """``factor × median_k B_k`` with ``B_k`` pooled over the ``R`` runs of size ``k``, and its bootstrap interval.

    :param sums_KR: per rollout size, the pooled sums of each run of that size (``R >= 1`` each).
    :param factor: units factor (``M`` minibatches per epoch, or 1).
    :param reps: bootstrap resamples (runs with replacement within each size).
    :param rng: the bootstrap's generator.
    """
    b_K = [resolved_or_inf(pool(sums_R)) for sums_R in sums_KR]
    value = factor * float(np.median(b_K))
    ci = None
    if reps > 0 and any(len(sums_R) > 1 for sums_R in sums_KR):
        g2_KR = [np.array([s.g2 for s in sums_R]) for sums_R in sums_KR]
        trace_KR = [np.array([s.trace_sigma for s in sums_R]) for sums_R in sums_KR]
        medians = np.empty(reps)
        for i in range(reps):
            b = []
            for g2_R, trace_R in zip(g2_KR, trace_KR, strict=True):
                pick = rng.integers(0, len(g2_R), len(g2_R))
                g2, trace = g2_R[pick].sum(), trace_R[pick].sum()
                b.append(trace / g2 if g2 > 0 else math.inf)
            medians[i] = np.median(b)
        low, high = np.quantile(factor * medians, [0.025, 0.975], method="nearest")
        ci = (float(low), float(high))
    return Prediction(value, ci, b_K, [pool(sums_R).count for sums_R in sums_KR])


def noise_candidates(
    runs: list[RunRecord], target: float, sizes: list[int], n_minibatches: int, reps: int, rng: np.random.Generator
) -> dict[str, Prediction]:
    """Every candidate measured in the runs that reached ``target`` (see the module docstring); none where no size
    reached it."""
    if not sizes:
        return {}
    keys = sorted({key for run in runs for reach in run.reached.values() for key in reach.noise})
    candidates = {}
    for key in keys:
        sums_KR = [[run.reached[target].noise[key] for run in runs if run.rollout_size == size and target in run.reached]
                   for size in sizes]  # fmt: skip
        if any(all(s.count == 0 for s in sums_R) for sums_R in sums_KR):
            continue
        measured = median_candidate(sums_KR, 1.0, reps, rng)  # one bootstrap, scaled to each units factor
        for factor in PREDICTOR_FACTORS:  # the per-size medians are the predictors a run's measurements give
            candidate = Candidate.of(key, factor)
            m = candidate.times(runs[0].n_epochs, n_minibatches)
            ci = None if measured.ci is None else (m * measured.ci[0], m * measured.ci[1])
            candidates[candidate.name] = replace(measured, value=m * measured.value, ci=ci)
    return candidates


def pooled_candidate(sums_R: list[NoiseSums], factor: float, reps: int, rng: np.random.Generator) -> Prediction:
    """``factor × Σ tr(Σ) / Σ |G|²`` pooled over ``R`` runs (+∞ where not resolved), with a percentile bootstrap
    interval over the runs (``None`` with fewer than 2 runs or no resamples).

    :param sums_R: each run's pooled sums.
    :param factor: units factor (``M``, ``n_epochs · M`` or 1).
    :param reps: bootstrap resamples.
    :param rng: the bootstrap's generator.
    """
    value = factor * resolved_or_inf(pool(sums_R))
    ci = None
    if reps > 0 and len(sums_R) > 1:
        g2_R = np.array([s.g2 for s in sums_R])
        trace_R = np.array([s.trace_sigma for s in sums_R])
        pick = rng.integers(0, len(sums_R), (reps, len(sums_R)))
        g2, trace = g2_R[pick].sum(axis=1), trace_R[pick].sum(axis=1)
        draws = np.where(g2 > 0, trace / np.where(g2 > 0, g2, 1.0), math.inf)
        low, high = np.quantile(factor * draws, [0.025, 0.975], method="nearest")
        ci = (float(low), float(high))
    return Prediction(value, ci, [value / factor], [pool(sums_R).count])


def path_candidates(
    runs: list[RunRecord],
    target: float,
    sizes: list[int],
    n_minibatches: int,
    reps: int,
    rng: np.random.Generator,
    measure: StepsMeasure = "passage",
) -> dict[str, Prediction]:
    """Criterion v8's candidates at ``target`` (see the module docstring), over the kept runs of every reached size,
    each seed's fastest by ``measure`` (a probe keeps its branches by its own)."""
    kept = [run for size in sizes for run in best_per_seed(runs, target, size, measure).values()]
    n_epochs = kept[0].n_epochs if kept else 1
    keys = sorted({key for run in kept for key in run.reached[target].noise})
    candidates = {}
    for key in keys:
        for where in ("path", "start"):
            sums_R = [getattr(run.reached[target], "start_noise" if where == "start" else "noise")[key] for run in kept]
            if all(s.count == 0 for s in sums_R):
                continue
            for factor in PATH_FACTORS[Candidate.of(key).scheme]:
                candidate = Candidate.of(key, factor, where)
                candidates[candidate.name] = pooled_candidate(sums_R, candidate.times(n_epochs, n_minibatches), reps, rng)
    return candidates


#: The units factors of criterion v8's path and start candidates (:func:`path_candidates`), per scheme: the
#: minibatch scheme's B_simple counts samples per gradient step, so it takes every factor of the registry (a new
#: entry of :data:`~rl_gns.core.maths.schemes.FACTORS` is a new candidate here); the envs scheme's counts a rollout's.
PATH_FACTORS = {"minibatch": tuple(FACTORS), "envs": ("",)}


#: A fitted B_crit more than this factor beyond the rollout sizes that reached the target is not identified by them.
IDENTIFIED_FACTOR = 10.0


def unidentified(result: TargetResult) -> str | None:
    """Why a target's B_crit is not identified: fewer than :data:`~rl_gns.core.maths.tradeoff.MIN_FIT_SIZES` rollout sizes
    reached it (a curve through 2 points fits them exactly), or the fit put it more than :data:`IDENTIFIED_FACTOR`
    times beyond them; ``None`` if identified."""
    sizes = result.rollout_size_K
    if not sizes:
        return f"no run reached target {result.target:g}: B_crit not identified"
    if len(sizes) < MIN_FIT_SIZES:
        which = f"rollout sizes {sizes[0]} and {sizes[1]}" if len(sizes) == 2 else f"rollout size {sizes[0]}"
        return f"only {which} reached target {result.target:g} ({MIN_FIT_SIZES} needed): B_crit not identified"
    return result.not_identified


def identified_reach(batch_K: np.ndarray | list[int]) -> tuple[float, float]:
    """The critical rollout sizes that rollout sizes ``batch_K`` can identify: from :data:`IDENTIFIED_FACTOR` times
    below the smallest to as many times above the largest, agent steps."""
    return float(np.min(batch_K)) / IDENTIFIED_FACTOR, float(np.max(batch_K)) * IDENTIFIED_FACTOR


def degenerate(fit: TradeoffFit, batch_K: np.ndarray, target: float) -> str | None:
    """Why a fit does not identify B_crit: it lies more than :data:`IDENTIFIED_FACTOR` times beyond the sizes fitted
    (``S_min`` collapsing to 0 puts it at infinity); ``None`` if it lies within that reach (:func:`identified_reach`)."""
    low, high = identified_reach(batch_K)
    if low <= fit.b_crit <= high:
        return None
    side = "above" if fit.b_crit > high else "below"
    return (
        f"target {target:g}: the fit puts B_crit at {fit.b_crit:.3g}, more than {IDENTIFIED_FACTOR:g}x {side} the rollout "
        f"sizes that reached it ({int(batch_K.min())}-{int(batch_K.max())}): B_crit not identified"
    )


def analyze_target(
    runs: list[RunRecord],
    target: float,
    n_minibatches: int,
    bootstrap: int,
    rng: np.random.Generator,
    noise_rng: np.random.Generator,
    max_rms: float,
    path_rng: np.random.Generator,
) -> TargetResult:
    """Best run per size and seed, the tradeoff fit with bootstrap intervals (``rng``), and the noise-scale
    candidates (their bootstrap draws from ``noise_rng`` and, criterion v8's, ``path_rng``, so the fit's intervals
    and the older candidates do not depend on them)."""
    result = TargetResult(target)
    steps_by_size: list[np.ndarray] = []
    for size in sorted({run.rollout_size for run in runs}):
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
    result.candidates = noise_candidates(runs, target, result.rollout_size_K, n_minibatches, bootstrap, noise_rng)
    result.path_candidates = path_candidates(runs, target, result.rollout_size_K, n_minibatches, bootstrap, path_rng)

    if result.censored_sizes:
        result.flags.append(f"not reached at rollout sizes {result.censored_sizes}")
    reason = unidentified(result)
    if reason is not None:
        result.flags.append(reason)
        return result
    batch = np.array(result.rollout_size_K, dtype=float)
    fit = fit_tradeoff(batch, np.array(result.steps_K))
    result.not_identified = degenerate(fit, batch, target)
    if result.not_identified is not None:
        result.flags.append(result.not_identified)
        return result
    result.fit = fit
    if result.fit.rms_log_residual > max_rms:
        result.flags.append(f"large residuals (RMS log residual {result.fit.rms_log_residual:.2f})")
    intervals = fit_intervals(batch, steps_by_size, bootstrap, rng)
    if intervals is not None:
        result.ci_s_min, result.ci_e_min, result.ci_b_crit = intervals
    if min(result.seeds_reached_K) < 2:
        result.flags.append("some sizes have a single seed: intervals understate the uncertainty")
    return result


def fit_intervals(
    batch_K: np.ndarray, steps_by_size: list[np.ndarray], reps: int, rng: np.random.Generator
) -> tuple[tuple[float, float], ...] | None:
    """95 % percentile intervals of ``(S_min, E_min, B_crit)`` from fits to the seeds resampled with replacement
    within each size; ``None`` without resamples (``--bootstrap 0``).

    :param batch_K: ``(K,)`` reached rollout sizes.
    :param steps_by_size: per size, the steps ``S`` of each seed's fastest learning rate.
    :param reps: bootstrap resamples.
    :param rng: the bootstrap's generator.
    """
    if reps < 1:
        return None
    samples = []
    for _ in range(reps):
        resampled = [geometric_mean(rng.choice(steps, size=len(steps), replace=True)) for steps in steps_by_size]
        fit = fit_tradeoff(batch_K, np.array(resampled))
        samples.append((fit.s_min, fit.e_min, fit.b_crit))
    low, high = np.percentile(np.array(samples), [2.5, 97.5], axis=0)
    return tuple((float(lo), float(hi)) for lo, hi in zip(low, high, strict=True))


def load_sweep(sweep_dir: Path) -> tuple[dict, list[RunRecord]]:
    """The sweep's settings and every run that has started."""
    settings = read_record(sweep_dir / SWEEP, SWEEP_FIELDS)
    targets = [float(t) for t in settings["targets"]]
    return settings, [load_run(run, targets, settings["window"]) for run in sweep_runs(sweep_dir, settings)]


def analyze(config: AnalyzeConfig) -> tuple[dict, list[RunRecord], list[TargetResult]]:
    """Analyse a sweep directory and write ``results.json`` there; return settings, runs and per-target results."""
    settings, runs = load_sweep(config.sweep_dir)
    fit_rng, noise_rng = np.random.default_rng(config.seed), np.random.default_rng(config.seed + 1)
    path_rng = np.random.default_rng(config.seed + 2)
    results = [
        analyze_target(
            runs,
            float(t),
            settings["n_minibatches"],
            config.bootstrap,
            fit_rng,
            noise_rng,
            config.max_rms_log_residual,
            path_rng,
        )
        for t in settings["targets"]
    ]
    payload = {
        "settings": settings,
        "runs": [recorded(run) for run in runs],
        "targets": [
            {**asdict(r), "b_crit": r.fit.b_crit if r.fit else None, "predicted_b_crit": r.predicted_b_crit} for r in results
        ],
        "default_candidate": DEFAULT_PREDICTOR,
    }
    write_json(config.sweep_dir / "results.json", payload)
    return settings, runs, results


#: What a reach holds that ``results.json`` leaves out: the trend measure, read by a probe's report from the runs
#: themselves (a sweep is timed by the passage).
UNRECORDED = ("trend_iterations",)


def recorded(run: RunRecord) -> dict:
    """A run as ``results.json`` holds it: every field, its reaches without :data:`UNRECORDED`."""
    record = asdict(run)
    for reach in record["reached"].values():
        for name in UNRECORDED:
            del reach[name]
    return record


def check(config: AnalyzeConfig) -> None:
    """Fail early (``ValueError``) if the directory is not a sweep or a threshold is not one."""
    if not config.max_rms_log_residual > 0:
        raise ValueError(f"--max-rms-log-residual must be > 0, got {config.max_rms_log_residual}")
    if not (config.sweep_dir / SWEEP).exists():
        raise ValueError(f"{config.sweep_dir} is not a sweep directory (no sweep.json)")
    if (config.sweep_dir / PROBE).exists():  # its report.md is the probe report's
        raise ValueError(f"{config.sweep_dir} is a probe directory: rl-gns probe-report {config.sweep_dir} reports it")
    if not any(RunDir(path).is_started() for path in runs_under(config.sweep_dir)):
        raise ValueError(f"{config.sweep_dir} holds no run that has started (no runs/*/config.json): nothing to analyse")
