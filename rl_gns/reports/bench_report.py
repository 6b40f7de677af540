"""The benchmark's report (``rl-gns bench --report-only``, and the last stage of ``rl-gns bench``): its Table 1,
scores against references, and the aggregate.

Stage two of ``rl-gns bench``. Reads only files on disk: ``bench.json`` and each finished run's
``progress.csv`` and ``episodes.csv`` (plus the ``results.json`` of analysed sweeps, for B_crit).
Writes ``results.json``, ``report.md`` and ``b_simple_start_vs_average.png`` into the benchmark directory.

Definitions:

- **Scheme**: the report reads one measurement scheme, the default predictor's (``envs``) where every finished run
  measured it, else the first one every run measured (:func:`report_scheme`); its wording follows that scheme.
- ``B_simple`` of a loss over a window of training is **pooled**: ``Σ raw tr(Σ) / Σ raw |G|²`` over
  every measurement in the window and every seed (:func:`rl_gns.reports.sweep_analysis.noise_sums`), never an average
  of ratios. It is "not resolved" where the pooled ``|G|²`` is not positive.
- **Start**: the measurements at or before ``START_FRACTION`` (25 %) of the run's budget in agent steps.
  **Average**: every measurement of the run (the paper's "averaged over training").
- Units: agent steps; frames = 4 × agent steps (frame skip 4), the unit of McCandlish et al.'s Table 1. The envs
  scheme's batches are groups of whole env trajectories of a rollout, so its ``B_simple`` counts agent steps of a
  rollout; the minibatch scheme's are random minibatches, so its ``B_simple`` counts samples per gradient step.
- Losses: the default predictor's (value) first, then policy (the paper's Table 1) and total (what PPO optimises).
- Intervals: 95 % percentile bootstrap over seeds (seeds resampled with replacement, pooled ratio of
  each resample; a resample whose pooled ``|G|²`` is not positive counts as ∞), only with ≥ 2 seeds.
- Final score: mean raw score of the last 20 games of a run (:func:`rl_gns.core.maths.targets.running_score`);
  none if the run finished fewer games. Human-normalised: ``(score − random) / (human − random)``.
- Off random play: the mean over seeds of the last 20 games' score minus the first 20 games' (played by the initial,
  near-uniform policy, under the same environment settings) has a 95 % interval above 0, games as the sampling unit
  (:func:`rl_gns.core.maths.targets.score_gain`); needs 40 games of every run.
- Aggregate: interquartile mean (``rliable.metrics.aggregate_iqm``) of the ``(R runs × G games)``
  human-normalised scores, with a 95 % stratified bootstrap interval (runs resampled within each game,
  as ``rliable.library.StratifiedBootstrap``; rliable 1.2's ``get_interval_estimates`` passes
  ``random_state``, which the installed ``arch`` 8 rejects, so the resampling is done here).

Shape glossary: ``R`` seeds (runs) of a game, ``G`` games.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro
from rliable import metrics

from rl_gns.core.envs.atari import FRAME_SKIP, resolve_game
from rl_gns.core.maths.advice import DEFAULT_PREDICTOR
from rl_gns.core.maths.names import LOSSES as MEASURED_LOSSES
from rl_gns.core.maths.noise_scale import NoiseSums, b_simple
from rl_gns.core.maths.schemes import SCHEMES, scheme_label
from rl_gns.core.maths.targets import DEFAULT_WINDOW, first_reached, running_score, score_gain
from rl_gns.records.logs import check_outputs, write_atomically
from rl_gns.records.rundir import (
    BENCH,
    CONFIG,
    RunDir,
    noise_sums,
    read_record,
    read_sweep_results,
    runs_under,
    write_json,
)
from rl_gns.records.schema import BENCH_FIELDS, PAPER_RANGES_FIELDS, TIER_FIELDS, RecordError, require, require_game
from rl_gns.records.study import check_named_once
from rl_gns.reports.figures import (
    DEFAULT_LOSS,
    DEFAULT_SCHEME,
    LOSS_COLORS,
    Axes,
    interval_bars,
    is_default_predictor,
    legend,
    noise_label,
    number,
    plain_log_ticks,
    plt,
    relative,
    save_figure,
)

#: The report's files in the benchmark directory.
FIGURE, RESULTS, REPORT = "b_simple_start_vs_average.png", "results.json", "report.md"
OUTPUTS = (FIGURE, RESULTS, REPORT)

#: "Start" of training: the first quarter of a run's budget (agent steps).
START_FRACTION = 0.25
#: Losses in the report: the default predictor's first, then the paper's Table 1 (policy) and what PPO optimises.
LOSSES = (DEFAULT_LOSS, *(loss for loss in MEASURED_LOSSES if loss != DEFAULT_LOSS))
#: Training windows of the pooled noise scale.
WINDOWS = ("start", "average")


@dataclass
class BenchReportOptions:
    """How the benchmark report is computed."""

    bootstrap: int = 2000
    """Bootstrap resamples for the confidence intervals."""
    seed: int = 0
    """Seed of the bootstrap."""
    sweeps: tuple[Path, ...] = ()
    """Analysed sweep directories (results.json from rl-gns analyze) whose fitted B_crit is shown next to their game."""


@dataclass
class BenchReportConfig(BenchReportOptions):
    """Aggregate a benchmark directory into results.json, report.md and a figure (reads only files on disk)."""

    bench_dir: tyro.conf.Positional[Path] = Path(".")
    """The benchmark's --out directory."""


@dataclass
class BenchRun:
    """One finished run of the benchmark, as read back from its directory."""

    name: str
    game: str
    seed: int
    env_steps: int
    """Agent steps trained."""
    score: float | None
    """Mean raw score of the last 20 games; ``None`` with fewer games."""
    first_games: np.ndarray
    """``(W,)`` raw scores of the first 20 games (near-random play), empty with fewer than 40 games."""
    last_games: np.ndarray
    """``(W,)`` raw scores of the last 20 games, empty with fewer than 40 games (they would overlap the first)."""
    n_games: int
    """Games finished."""
    reached_target_at: int | None
    """Agent steps at the game after which the running score first reached the game's target."""
    sums: dict[str, dict[str, NoiseSums]]
    """loss -> window -> pooled raw estimates of the report's scheme (:func:`report_scheme`)."""


@dataclass
class NoiseScale:
    """Pooled ``B_simple`` of one loss over one window, in agent steps (its scheme's
    :attr:`~rl_gns.core.maths.schemes.SchemeSpec.unit`: of a rollout for the envs scheme, samples per gradient step for the
    minibatch scheme)."""

    b_simple: float
    """NaN where not resolved (pooled ``|G|²`` not positive)."""
    ci: tuple[float, float] | None
    """95 % bootstrap interval over seeds (upper bound ∞ where resamples are not resolved); ``None`` with 1 seed."""
    n_measurements: int
    """Measurements pooled over seeds; 0 where the runs did not measure the loss."""

    @property
    def resolved(self) -> bool:
        return math.isfinite(self.b_simple)


@dataclass
class GameResult:
    """One game of the benchmark."""

    game: str
    name: str
    seeds: list[int]
    """Seeds of the finished runs."""
    noise: dict[str, dict[str, NoiseScale]]
    """loss -> window -> pooled noise scale."""
    scores_R: list[float | None]
    """Final score per seed."""
    random_score: float
    human_score: float
    target_score: float
    reached_target: int
    """Seeds whose running score reached ``target_score``."""
    gain: tuple[float, float, float] | None
    """Mean gain of the last 20 games' score over the first 20 games' (near-random play), with its 95 % interval
    (:func:`~rl_gns.core.maths.targets.score_gain`); ``None`` where a run has fewer than 40 games."""
    ppo_references: list[dict]
    b_crit: list[dict] = field(default_factory=list)
    """Fitted B_crit of analysed sweeps on this game: ``{sweep, backend, target, b_crit, ci}`` in agent steps."""

    @property
    def off_random(self) -> bool:
        """The gain's 95 % interval lies above 0: the runs play measurably better than their first games."""
        return self.gain is not None and self.gain[1] > 0

    @property
    def human_normalised_R(self) -> list[float | None]:
        span = self.human_score - self.random_score
        return [None if s is None else (s - self.random_score) / span for s in self.scores_R]


def report_scheme(schemes_R: list[tuple[str, ...]]) -> str:
    """The scheme the report reads: the default predictor's where every run measured it, else the first scheme (in the
    first run's order) that every run measured; the default predictor's without runs.

    :param schemes_R: the fixed-parameter schemes of each finished run (``RunConfig.gns_schemes``).
    :raises ValueError: where the runs measured no scheme in common.
    """
    common = set(SCHEMES).intersection(*schemes_R)
    if DEFAULT_SCHEME in common or not schemes_R:
        return DEFAULT_SCHEME
    if not common:
        raise ValueError(f"the finished runs measured no noise-scale scheme in common ({sorted(set(schemes_R))})")
    return next(scheme for scheme in schemes_R[0] if scheme in common)


def finished_runs(bench_dir: Path) -> list[RunDir]:
    """The finished runs of a benchmark directory, by name, each checked to have played what its name
    ``<game>_s<seed>`` says: a run renamed, or copied in from another game, would be counted for that game.

    :raises RecordError: naming the run's ``config.json`` and the game and seed it holds.
    """
    runs = [RunDir(d) for d in runs_under(bench_dir) if RunDir(d).status() == "done"]
    for run in runs:
        config = run.config()
        if run.name != f"{config.game}_s{config.seed}":
            raise RecordError(
                f"{run.file(CONFIG)}: not the run {run.name} of this benchmark (it played {config.game}, seed {config.seed})"
            )
    return runs


def load_run(run: RunDir, target: float, scheme: str) -> BenchRun:
    """Read one finished run's scores and the pooled estimates of ``scheme``.

    :param run: a finished run (:func:`finished_runs`).
    :param target: the game's target score.
    :param scheme: the scheme whose estimates are read (:func:`report_scheme`).
    """
    config, progress, episodes = run.config(), run.progress(), run.episodes()
    scores_N, env_steps_N = episodes["score"], episodes["env_steps"]
    score = float(running_score(scores_N, DEFAULT_WINDOW)[-1]) if len(scores_N) else math.nan
    reached = first_reached(env_steps_N, scores_N, target, DEFAULT_WINDOW)
    apart = len(scores_N) >= 2 * DEFAULT_WINDOW
    until = {"start": START_FRACTION * config.total_steps, "average": math.inf}
    return BenchRun(
        name=run.name,
        game=config.game,
        seed=config.seed,
        env_steps=run.env_steps(progress),
        score=score if math.isfinite(score) else None,
        first_games=scores_N[:DEFAULT_WINDOW] if apart else np.array([]),
        last_games=scores_N[-DEFAULT_WINDOW:] if apart else np.array([]),
        n_games=len(scores_N),
        reached_target_at=None if reached is None else int(env_steps_N[reached]),
        sums={loss: {w: noise_sums(progress, scheme, loss, until[w]) for w in WINDOWS} for loss in LOSSES},
    )


def pooled_noise_scale(
    g2_R: np.ndarray, trace_sigma_R: np.ndarray, n_measurements: int, reps: int, rng: np.random.Generator
) -> NoiseScale:
    """Pooled ``B_simple = Σ trace_sigma / Σ g2`` over seeds, with a bootstrap interval over seeds.

    :param g2_R: ``(R,)`` per seed, the sum of the raw ``g2`` estimates in the window.
    :param trace_sigma_R: ``(R,)`` per seed, the sum of the raw ``trace_sigma`` estimates.
    :param n_measurements: measurements pooled (reported only).
    :param reps: bootstrap resamples (0: no interval).
    :param rng: the bootstrap's generator.
    """
    g2_R, trace_sigma_R = np.asarray(g2_R, dtype=float), np.asarray(trace_sigma_R, dtype=float)
    point = b_simple(float(g2_R.sum()), float(trace_sigma_R.sum()))
    ci = None
    if len(g2_R) >= 2 and reps > 0:
        picks = rng.integers(0, len(g2_R), size=(reps, len(g2_R)))
        g2_sums, trace_sums = g2_R[picks].sum(axis=1), trace_sigma_R[picks].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(g2_sums > 0, trace_sums / g2_sums, np.inf)
        low, high = np.quantile(ratios, [0.025, 0.975], method="nearest")
        ci = (float(low), float(high))
    return NoiseScale(point, ci, n_measurements)


def iqm_with_ci(scores_RG: np.ndarray, reps: int, rng: np.random.Generator) -> tuple[float, tuple[float, float] | None]:
    """IQM over all runs and games (``rliable.metrics.aggregate_iqm``) and its 95 % stratified bootstrap interval.

    :param scores_RG: ``(R, G)`` human-normalised scores, ``R`` runs of each of ``G`` games.
    :param reps: bootstrap resamples (0: no interval).
    :param rng: the bootstrap's generator.
    :return: ``(iqm, (low, high))``; the runs of each game are resampled with replacement, games kept.
    """
    iqm = float(metrics.aggregate_iqm(scores_RG))
    if reps < 1:
        return iqm, None
    n_runs, n_games = scores_RG.shape
    picks = rng.integers(0, n_runs, size=(reps, n_runs, n_games))
    samples = [metrics.aggregate_iqm(np.take_along_axis(scores_RG, pick, axis=0)) for pick in picks]
    low, high = np.percentile(samples, [2.5, 97.5])
    return iqm, (float(low), float(high))


def sweep_b_crit(sweep_dirs: tuple[Path, ...], bench_dir: Path) -> dict[str, list[dict]]:
    """``{ROM id: [{sweep, backend, target, b_crit, ci}]}`` from analysed sweeps (``results.json`` of ``rl-gns analyze``)."""
    found: dict[str, list[dict]] = {}
    for sweep_dir in sweep_dirs:
        results = read_sweep_results(sweep_dir / "results.json")
        settings = results["settings"]
        for target in results["targets"]:
            if target.get("b_crit") is not None:
                entry = {"sweep": relative(sweep_dir, bench_dir), "backend": settings["backend"], "target": target["target"]}
                entry |= {"b_crit": target["b_crit"], "ci": target["ci_b_crit"]}
                found.setdefault(resolve_game(settings["env"]), []).append(entry)
    return found


def analyze_game(game: str, entry: dict, runs: list[BenchRun], reps: int, rng: np.random.Generator) -> GameResult:
    """Pooled noise scales with intervals, and scores, of one game's finished runs."""
    runs = sorted(runs, key=lambda run: run.seed)
    noise = {
        loss: {
            window: pooled_noise_scale(
                np.array([run.sums[loss][window].g2 for run in runs]),
                np.array([run.sums[loss][window].trace_sigma for run in runs]),
                sum(run.sums[loss][window].count for run in runs),
                reps,
                rng,
            )
            for window in WINDOWS
        }
        for loss in LOSSES
    }
    return GameResult(
        game=game,
        name=entry["name"],
        seeds=[run.seed for run in runs],
        noise=noise,
        scores_R=[run.score for run in runs],
        random_score=entry["random_score"],
        human_score=entry["human_score"],
        target_score=entry["target_score"],
        reached_target=sum(run.reached_target_at is not None for run in runs),
        gain=score_gain([run.first_games for run in runs], [run.last_games for run in runs])
        if runs and all(len(run.first_games) for run in runs)
        else None,
        ppo_references=entry.get("ppo_references", []),
    )


def human_normalised_matrix(games: list[GameResult]) -> tuple[np.ndarray, list[str]]:
    """``(R, G)`` human-normalised final scores of the games where every finished run has a score, with the
    same number of runs ``R`` (the smallest such count; the lowest seeds) of each; and those games' names."""
    scored = [g for g in games if g.seeds and all(s is not None for s in g.scores_R)]
    if not scored:
        return np.zeros((0, 0)), []
    n_runs = min(len(g.seeds) for g in scored)
    return np.array([g.human_normalised_R[:n_runs] for g in scored], dtype=float).T, [g.name for g in scored]


#: Where each loss's points sit beside their game on the figure's x axis.
LOSS_OFFSETS = {loss: 0.22 * (i - 1) for i, loss in enumerate(LOSSES)}
#: The figure's panel title of each window.
WINDOW_TITLES = {
    "start": f"start: the first {START_FRACTION:.0%} of each run",
    "average": "averaged over training: the whole run",
}


def frames_limits(games: list[GameResult], ranges: dict, rollout_size: int) -> tuple[float, float]:
    """The figure's y limits in frames: a factor 2 beyond every point, finite interval end, paper range and the
    rollout size, so that no marker or bar is clipped.

    :param games: the games drawn.
    :param ranges: the paper's Atari ranges in frames (``bench.json``'s ``paper_ranges_frames``).
    :param rollout_size: agent steps per rollout.
    """
    values = [rollout_size * FRAME_SKIP, *ranges["b_simple_start"], *ranges["b_simple_average"]]
    for game in games:
        for scale in (game.noise[loss][window] for loss in LOSSES for window in WINDOWS):
            values += [FRAME_SKIP * v for v in (scale.b_simple, *(scale.ci or ()))]
    positive = [v for v in values if math.isfinite(v) and v > 0]
    return min(positive) / 2, max(positive) * 2


def plot_window(
    games: list[GameResult], scheme: str, window: str, ranges: dict, rollout_size: int, limits: tuple[float, float], ax: Axes
) -> Axes:
    """One window's pooled B_simple per game and loss (frames, log scale) with its 95 % bootstrap interval over seeds
    (bars; fainter and open above where some resamples do not resolve ``|G|²``), the default predictor's larger and
    edged in black, over the paper's Atari range of the window (shaded) and a line at the rollout size. A loss not
    resolved (pooled ``|G|²`` not positive) has no marker.

    :param games: the games, one x position each.
    :param scheme: the scheme measured (:func:`report_scheme`).
    :param window: ``start`` or ``average``.
    :param ranges: the paper's Atari ranges in frames.
    :param rollout_size: agent steps per rollout.
    :param limits: the panel's y limits in frames (:func:`frames_limits`).
    """
    bars: list[tuple[np.ndarray, np.ndarray, np.ndarray, str]] = []
    for loss in LOSSES:
        scales = [game.noise[loss][window] for game in games]
        if not any(scale.n_measurements for scale in scales):
            continue
        x_G = np.arange(len(games)) + LOSS_OFFSETS[loss]
        default = is_default_predictor(scheme, loss)
        ax.plot(x_G, [FRAME_SKIP * scale.b_simple for scale in scales], ls="none", marker="o", ms=8 if default else 5,
                color=LOSS_COLORS[loss], mec="black" if default else LOSS_COLORS[loss], zorder=3,
                label=noise_label(scheme, loss))  # fmt: skip
        ci_G2 = FRAME_SKIP * np.array([scale.ci or (math.nan, math.nan) for scale in scales], dtype=float)
        bars.append((x_G, ci_G2[:, 0], ci_G2[:, 1], LOSS_COLORS[loss]))
    empty = np.empty(0)
    for band in (*bars, (empty, empty, empty, "gray")):  # the last, empty, gives the legend its entries in gray
        interval_bars(ax, *band, limits=limits)
    ax.axhline(rollout_size * FRAME_SKIP, color="gray", ls="--", lw=1,
               label=f"rollout size: {rollout_size:,} agent steps = {rollout_size * FRAME_SKIP:,} frames")  # fmt: skip
    low, high = ranges[f"b_simple_{window}"]
    ax.axhspan(low, high, color="gray", alpha=0.15, label="paper's Atari range of B_simple (McCandlish et al.)")
    ax.set_xticks(range(len(games)), [game.name for game in games], rotation=30, ha="right")
    ax.set_xlim(-0.5, len(games) - 0.5)
    ax.set_ylim(*limits)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_title(WINDOW_TITLES[window], fontsize=10)
    ax.grid(alpha=0.3, which="major", axis="y")
    return ax


def plot_noise_scales(games: list[GameResult], scheme: str, ranges: dict, rollout_size: int) -> plt.Figure:
    """``b_simple_start_vs_average.png``: a panel per window (:func:`plot_window`), frames on the left axis and agent
    steps on the right, one legend for both.

    :param games: the games.
    :param scheme: the scheme measured (:func:`report_scheme`).
    :param ranges: the paper's Atari ranges in frames.
    :param rollout_size: agent steps per rollout.
    """
    limits = frames_limits(games, ranges, rollout_size)
    fig, axes = plt.subplots(1, len(WINDOWS), figsize=(15, 5.5), sharey=True)
    for window, ax in zip(WINDOWS, axes, strict=True):
        plot_window(games, scheme, window, ranges, rollout_size, limits, ax)
    axes[0].set_ylabel("B_simple (frames = 4 × agent steps)")
    steps_axis = axes[-1].secondary_yaxis("right", functions=(lambda f: f / FRAME_SKIP, lambda a: a * FRAME_SKIP))
    steps_axis.set_ylabel("B_simple (agent steps)")
    plain_log_ticks(steps_axis.yaxis)
    legend(axes[-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.2, 1.0), frameon=False)
    words = noise_label(DEFAULT_SCHEME, DEFAULT_LOSS)
    default = f"large, black-edged: {words}" if scheme == DEFAULT_SCHEME else f"not measured: {words}"
    fig.suptitle(
        f"B_simple pooled over seeds, {scheme} scheme ({scheme_label(scheme)}), in {SCHEMES[scheme].unit}\n"
        f"{default}; bars: 95 % interval over seeds; no marker: not resolved",
        fontsize=10,
    )
    return fig


def interval(value: float, ci: tuple[float, float] | list[float] | None, factor: int) -> str:
    """``value [95 % CI]`` times ``factor`` (1: agent steps, 4: frames); the value alone without an interval."""
    cell = number(value * factor)
    return cell if ci is None else f"{cell} [{number(ci[0] * factor)}, {number(ci[1] * factor)}]"


def noise_cell(scale: NoiseScale, factor: int) -> str:
    """A table cell: ``B_simple [95 % CI]`` times ``factor`` (1: agent steps, 4: frames), "not resolved", or "not
    measured" where the runs did not measure the loss."""
    if not scale.n_measurements:
        return "not measured"
    if not scale.resolved:
        return f"not resolved ({scale.n_measurements} meas.)"
    return interval(scale.b_simple, scale.ci, factor)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


def gain_cell(game: GameResult) -> str:
    """``+12.3 [4.5, 20.1], off random`` for the scores table; ``–`` without a gain."""
    if game.gain is None:
        return "–"
    gain, low, high = game.gain
    return f"{gain:+,.1f} [{low:,.1f}, {high:,.1f}]" + (", **off random**" if game.off_random else "")


def noise_column(scheme: str, loss: str, window: str, unit: str) -> str:
    """A table header: ``B_simple value loss (default predictor), start (frames)``."""
    default = " (default predictor)" if is_default_predictor(scheme, loss) else ""
    return f"B_simple {loss} loss{default}, {window} ({unit})"


def noise_table(games: list[GameResult], scheme: str, factor: int, unit: str) -> list[str]:
    """Markdown rows in the shape of the paper's Table 1, every loss and window of ``scheme``.

    :param games: the games, a row each.
    :param scheme: the scheme measured (:func:`report_scheme`).
    :param factor: ``unit`` per agent step (1: agent steps, 4: frames).
    :param unit: the unit's name in the headers.
    """
    columns = [noise_column(scheme, loss, window, unit) for loss in LOSSES for window in WINDOWS]
    lines = [
        f"| game | seeds | {' | '.join(columns)} | B_crit ({unit}) |",
        "|---|---|" + "---|" * len(columns) + "---|",
    ]
    for g in games:
        b_crit = "; ".join(
            f"{interval(s['b_crit'], s['ci'], factor)} at target {s['target']:g} "
            f"({'RAM/MLP' if s['backend'] == 'ram' else s['backend']} sweep `{s['sweep']}`)"
            for s in g.b_crit
        )
        cells = [noise_cell(g.noise[loss][window], factor) for loss in LOSSES for window in WINDOWS]
        lines.append(f"| {g.name} | {len(g.seeds)} | {' | '.join(cells)} | {b_crit or '–'} |")
    return lines


def scheme_paragraph(scheme: str, tier: dict) -> str:
    """What the report's noise scales count and what they compare with, in the words of ``scheme``.

    :param scheme: the scheme measured (:func:`report_scheme`).
    :param tier: ``bench.json``'s tier (``n_envs``, ``n_steps``, ``minibatch_size``).
    """
    rollout_size = tier["n_envs"] * tier["n_steps"]
    text = (
        f"Scheme: **{scheme}** ({scheme_label(scheme)}), so B_simple counts {SCHEMES[scheme].unit}; in frames "
        "(= 4 × agent steps, frame skip 4) as in the paper, then in agent steps. "
    )
    if scheme == DEFAULT_SCHEME:
        return text + (
            f"Its {DEFAULT_LOSS} loss is the default predictor of the critical rollout size (`{DEFAULT_PREDICTOR}`, "
            f"what `rl-gns train` and `rl-gns advise` answer with): compare it with the rollout size, {rollout_size:,} "
            f"agent steps ({rollout_size * FRAME_SKIP:,} frames)."
        )
    return text + (
        f"The default predictor of the critical rollout size (`{DEFAULT_PREDICTOR}`: {DEFAULT_LOSS} loss, "
        f"{scheme_label(DEFAULT_SCHEME)}) was not measured by these runs; this scheme's B_simple compares with the "
        f"minibatch size, {tier['minibatch_size']:,} samples, not with the rollout size ({rollout_size:,} agent steps)."
    )


def write_report(bench_dir: Path, settings: dict, scheme: str, games: list[GameResult], aggregate: dict, status: dict) -> Path:
    """Write the figure and ``report.md`` into ``bench_dir``; return the report's path.

    :param scheme: the scheme measured (:func:`report_scheme`).
    """
    ranges, tier = settings["paper_ranges_frames"], settings["tier"]
    save_figure(plot_noise_scales(games, scheme, ranges, tier["n_envs"] * tier["n_steps"]),
                bench_dir / FIGURE)  # fmt: skip

    r = {key: f"{low:,}–{high:,}" for key, (low, high) in ranges.items()}
    lines = [
        f"# Benchmark `{settings['suite']}`: gradient noise scale of PPO on Atari",
        "",
        f"Directory `{bench_dir.resolve().name}`. Tier: {tier['description']}. {tier['total_steps']:,} agent steps "
        f"({tier['total_steps'] * FRAME_SKIP:,} frames) per run, {tier['n_envs']} envs × {tier['n_steps']} steps "
        f"per rollout, minibatch {tier['minibatch_size']}, {tier['n_epochs']} epochs, noise scale measured every "
        f"{tier['every']} iteration(s) ({scheme} scheme: {scheme_label(scheme)}), device `{settings['device']}`.",
        "",
        f"Runs: {status['planned']} planned; {status['done']} finished, {status['failed']} failed, "
        f"{status['unfinished']} unfinished or not started. Only finished runs are used.",
        "",
        "## Noise scale (the shape of McCandlish et al.'s Table 1)",
        "",
        "B_simple = Σ tr(Σ) / Σ |G|², pooled over every measurement of the window and every seed "
        f"(never an average of ratios). **Start**: measurements in the first {START_FRACTION:.0%} of each run's "
        "budget; **average**: the whole run. [95 % bootstrap interval over seeds] where ≥ 2 "
        "seeds; ∞ as an upper bound means some resamples did not resolve |G|². **Not resolved**: the pooled "
        "|G|² is not positive, so there is no finite estimate.",
        "",
        scheme_paragraph(scheme, tier),
        "",
        f"Paper's Atari ranges (per frame): B_crit {r['b_crit_start']} at the start and {r['b_crit_average']} "
        f"averaged over training; B_simple {r['b_simple_start']} at the start and {r['b_simple_average']} averaged.",
        "",
        *noise_table(games, scheme, FRAME_SKIP, "frames"),
        "",
        *noise_table(games, scheme, 1, "agent steps"),
        "",
        "B_crit is the fitted critical rollout size E_min/S_min of an analysed env-count sweep (`rl-gns analyze`) on "
        "the same game, where one exists; the committed one observes the game through its RAM with an MLP "
        "policy, not pixels, so it is a different agent from these runs.",
        "",
        "![B_simple at the start vs averaged over training](b_simple_start_vs_average.png)",
        "",
        "## Scores",
        "",
        f"Final score: mean raw score of the last {DEFAULT_WINDOW} games of a run (– with fewer games), mean over "
        "seeds. Random and human: Mnih et al. 2015. Target: a quarter of the way from random play to a published "
        "PPO score (envs/atari_games.toml). Published PPO scores are after 10M agent steps (40M frames). "
        f"Gain: the final score minus the mean of each run's first {DEFAULT_WINDOW} games (its initial, near-uniform "
        "policy under the same environment settings), mean over seeds, with a 95 % interval whose sampling unit is "
        f"the game (– where a run has fewer than {2 * DEFAULT_WINDOW} games); **off random play** where that interval "
        "lies above 0.",
        "",
        "| game | final score (mean) | per seed | gain over the first games [95 %] | random | human "
        "| human-normalised (mean) | target (seeds reached) | published PPO |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in games:
        scored = [s for s in g.scores_R if s is not None]
        normalised = [h for h in g.human_normalised_R if h is not None]
        refs = "; ".join(
            f"{ref['score']:,}" + (f" ± {ref['std']:,}" if "std" in ref else "") + f" ({ref['source']})"
            for ref in g.ppo_references
        )
        lines.append(
            f"| {g.name} | {_score(float(np.mean(scored)) if scored else None)} "
            f"| {', '.join(_score(s) for s in g.scores_R) or '–'} | {gain_cell(g)} "
            f"| {g.random_score:,} | {g.human_score:,} "
            f"| {f'{np.mean(normalised):.3f}' if normalised else '–'} "
            f"| {g.target_score:,} ({g.reached_target}/{len(g.seeds)}) "
            f"| {refs or '–'} |"
        )
    off = [g.name for g in games if g.off_random]
    lines += ["", f"Off random play: {len(off)} of {len(games)} games ({', '.join(off) or 'none'}).", ""]
    lines += ["## Aggregate", ""]
    if aggregate["games"]:
        ci = aggregate["ci"]
        spread = "no interval: --bootstrap 0" if ci is None else f"95 % stratified bootstrap CI {ci[0]:.3f}, {ci[1]:.3f}"
        lines.append(
            f"IQM of human-normalised final scores over {aggregate['n_runs']} run(s) × {len(aggregate['games'])} games "
            f"({', '.join(aggregate['games'])}): **{aggregate['iqm']:.3f}** [{spread}] "
            "(rliable IQM; runs resampled within each game"
            + ("; one run per game: the interval is degenerate" if aggregate["n_runs"] < 2 else "")
            + ")."
        )
    else:
        lines.append(f"No game has a final score yet (every run needs {DEFAULT_WINDOW} finished games).")
    path = bench_dir / REPORT
    write_atomically(path, "\n".join(lines) + "\n")
    return path


def report(config: BenchReportConfig) -> Path:
    """Write ``results.json``, ``report.md`` and the figure into the benchmark directory; return the report's path."""
    path = config.bench_dir / BENCH
    settings = read_record(path, BENCH_FIELDS)
    require(settings["tier"], f"{path}: tier", TIER_FIELDS)
    require(settings["paper_ranges_frames"], f"{path}: paper_ranges_frames", PAPER_RANGES_FIELDS)
    for game, entry in settings["games_table"].items():
        require_game(entry, f"{path}: games_table: {game}")
    rng = np.random.default_rng(config.seed)
    table = settings["games_table"]
    run_dirs = runs_under(config.bench_dir)
    finished = finished_runs(config.bench_dir)
    scheme = report_scheme([run.config().gns_schemes for run in finished])
    by_game: dict[str, list[BenchRun]] = {game: [] for game in table}
    for run in finished:
        game = run.name.rsplit("_s", 1)[0]
        if game in table:
            by_game[game].append(load_run(run, table[game]["target_score"], scheme))
    b_crit = sweep_b_crit(config.sweeps, config.bench_dir)
    games = []
    for game, runs in by_game.items():
        if runs or game in b_crit:
            games.append(analyze_game(game, table[game], runs, config.bootstrap, rng))
            games[-1].b_crit = b_crit.get(game, [])

    scores_RG, names = human_normalised_matrix(games)
    aggregate: dict = {"games": names, "n_runs": scores_RG.shape[0], "iqm": None, "ci": None}
    if names:
        aggregate["iqm"], aggregate["ci"] = iqm_with_ci(scores_RG, config.bootstrap, rng)
    statuses = [RunDir(d).status() for d in run_dirs]
    games_named = settings.get("games")  # null or left out: every game of the table
    selected = [resolve_game(name) for name in games_named] if games_named else list(table)
    planned = max(len(selected) * (settings.get("seeds") or settings["tier"]["seeds"]), len(run_dirs))
    status = {"planned": planned, "done": statuses.count("done"), "failed": statuses.count("failed")}
    status["unfinished"] = planned - status["done"] - status["failed"]

    payload = {
        "settings": settings,
        "definitions": {
            "scheme": scheme,
            "start_fraction": START_FRACTION,
            "score_window": DEFAULT_WINDOW,
            "frame_skip": FRAME_SKIP,
        },
        "games": [{**asdict(g), "human_normalised_R": g.human_normalised_R} for g in games],
        "aggregate": aggregate,
        "status": status,
    }
    write_json(config.bench_dir / RESULTS, payload)
    return write_report(config.bench_dir, settings, scheme, games, aggregate, status)


def check(config: BenchReportConfig) -> None:
    """Fail early (``ValueError``) if the directory is not a benchmark, or its finished runs measured no scheme in
    common."""
    if not (config.bench_dir / BENCH).exists():
        raise ValueError(f"{config.bench_dir} is not a benchmark directory (no bench.json)")
    check_outputs(config.bench_dir, OUTPUTS)
    report_scheme([run.config().gns_schemes for run in finished_runs(config.bench_dir)])
    check_sweeps(config.sweeps)


def check_sweeps(sweeps: tuple[Path, ...]) -> None:
    """``--sweeps``: each named once and analysed (``ValueError`` otherwise)."""
    check_named_once(sweeps, "sweep")
    for sweep_dir in sweeps:
        if not (sweep_dir / "results.json").exists():
            raise ValueError(f"--sweeps {sweep_dir}: no results.json (run rl-gns analyze on it first)")
