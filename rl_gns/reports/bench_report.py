"""``rl-gns bench-report``: the benchmark's Table 1, scores against references, and the aggregate.

Stage two of ``rl-gns bench``. Reads only files on disk: ``bench.json`` and each finished run's
``progress.csv`` and ``episodes.csv`` (plus the ``results.json`` of analysed sweeps, for B_crit).
Writes ``results.json``, ``report.md`` and ``b_simple_start_vs_average.png`` into the benchmark directory.

Definitions:

- ``B_simple`` of a loss over a window of training is **pooled**: ``Σ raw tr(Σ) / Σ raw |G|²`` over
  every measurement in the window and every seed (:func:`rl_gns.reports.sweep_analysis.noise_sums`), never an average
  of ratios. It is "not resolved" where the pooled ``|G|²`` is not positive.
- **Start**: the measurements at or before ``START_FRACTION`` (25 %) of the run's budget in agent steps.
  **Average**: every measurement of the run (the paper's "averaged over training").
- Units: samples per gradient step, i.e. agent steps; frames = 4 × agent steps (frame skip 4), the
  unit of McCandlish et al.'s Table 1.
- Intervals: 95 % percentile bootstrap over seeds (seeds resampled with replacement, pooled ratio of
  each resample; a resample whose pooled ``|G|²`` is not positive counts as ∞), only with ≥ 2 seeds.
- Final score: mean raw score of the last 20 games of a run (:func:`rl_gns.core.targets.running_score`);
  none if the run finished fewer games. Human-normalised: ``(score − random) / (human − random)``.
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

from rl_gns.core.atari import FRAME_SKIP, resolve_game
from rl_gns.core.noise_scale import NoiseSums, b_simple
from rl_gns.core.targets import DEFAULT_WINDOW, first_reached, running_score
from rl_gns.records.rundir import RunDir, noise_sums, read_json, write_json
from rl_gns.reports.figures import Axes, legend, number, plt, relative, save_figure

#: "Start" of training: the first quarter of a run's budget (agent steps).
START_FRACTION = 0.25
#: Losses in the report (the paper's Table 1 is for the policy; total is what PPO optimises).
LOSSES = ("policy", "total")
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
    n_games: int
    """Games finished."""
    reached_target_at: int | None
    """Agent steps at the game after which the running score first reached the game's target."""
    sums: dict[str, dict[str, NoiseSums]]
    """loss -> window -> pooled raw estimates (first measured scheme)."""


@dataclass
class NoiseScale:
    """Pooled ``B_simple`` of one loss over one window, in agent steps (samples per gradient step)."""

    b_simple: float
    """NaN where not resolved (pooled ``|G|²`` not positive)."""
    ci: tuple[float, float] | None
    """95 % bootstrap interval over seeds (upper bound ∞ where resamples are not resolved); ``None`` with 1 seed."""
    n_measurements: int

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
    ppo_references: list[dict]
    b_crit: list[dict] = field(default_factory=list)
    """Fitted B_crit of analysed sweeps on this game: ``{sweep, backend, target, b_crit, ci}`` in agent steps."""

    @property
    def human_normalised_R(self) -> list[float | None]:
        span = self.human_score - self.random_score
        return [None if s is None else (s - self.random_score) / span for s in self.scores_R]


def load_run(run: RunDir, target: float) -> BenchRun | None:
    """Read one finished run; ``None`` if it has not finished."""
    if run.status() != "done":
        return None
    config, progress, episodes = run.config(), run.progress(), run.episodes()
    scores_N, env_steps_N = episodes["score"], episodes["env_steps"]
    scheme = config.measured_schemes[0]
    score = float(running_score(scores_N, DEFAULT_WINDOW)[-1]) if len(scores_N) else math.nan
    reached = first_reached(env_steps_N, scores_N, target, DEFAULT_WINDOW)
    until = {"start": START_FRACTION * config.total_steps, "average": math.inf}
    return BenchRun(
        name=run.name,
        game=config.game,
        seed=config.seed,
        env_steps=run.env_steps(progress),
        score=score if math.isfinite(score) else None,
        n_games=len(scores_N),
        reached_target_at=None if reached is None else int(env_steps_N[reached]),
        sums={loss: {w: noise_sums(progress, config, scheme, loss, until[w]) for w in WINDOWS} for loss in LOSSES},
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
        results = read_json(sweep_dir / "results.json")
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


def plot_b_simple_start_vs_average(games: list[GameResult], loss: str, ranges: dict, ax: Axes | None = None) -> Axes:
    """Per game, pooled B_simple at the start and averaged over training (frames, log scale, 95 % intervals),
    over the paper's Atari ranges (shaded)."""
    ax = ax or plt.gca()
    ax.axhspan(*ranges["b_simple_start"], color="tab:blue", alpha=0.12, label="paper, start")
    ax.axhspan(*ranges["b_simple_average"], color="tab:orange", alpha=0.12, label="paper, average")
    for offset, window, marker, color in ((-0.1, "start", "o", "tab:blue"), (0.1, "average", "s", "tab:orange")):
        for i, game in enumerate(games):
            scale = game.noise[loss][window]
            if not scale.resolved or scale.b_simple <= 0:
                continue
            y = scale.b_simple * FRAME_SKIP
            yerr = None
            if scale.ci is not None and math.isfinite(scale.ci[1]):
                yerr = [[max(y - scale.ci[0] * FRAME_SKIP, 0.0)], [scale.ci[1] * FRAME_SKIP - y]]
            ax.errorbar([i + offset], [y], yerr=yerr, fmt=marker, color=color, capsize=3,
                        label=f"this benchmark, {window}")  # fmt: skip
    ax.set_xticks(range(len(games)), [g.name for g in games], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("B_simple (frames)")
    ax.set_title(f"{loss} loss: not-resolved points are left out", fontsize=9)
    ax.grid(alpha=0.3, which="both", axis="y")
    legend(ax, fontsize=7)
    return ax


def interval(value: float, ci: tuple[float, float] | list[float] | None, factor: int) -> str:
    """``value [95 % CI]`` times ``factor`` (1: agent steps, 4: frames); the value alone without an interval."""
    cell = number(value * factor)
    return cell if ci is None else f"{cell} [{number(ci[0] * factor)}, {number(ci[1] * factor)}]"


def noise_cell(scale: NoiseScale, factor: int) -> str:
    """A table cell: ``B_simple [95 % CI]`` times ``factor`` (1: agent steps, 4: frames), or "not resolved"."""
    if not scale.resolved:
        return f"not resolved ({scale.n_measurements} meas.)"
    return interval(scale.b_simple, scale.ci, factor)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


def noise_table(games: list[GameResult], factor: int, unit: str) -> list[str]:
    """Markdown rows in the shape of the paper's Table 1, in ``unit`` (``factor`` × agent steps)."""
    lines = [
        f"| game | seeds | B_simple policy, start ({unit}) | B_simple policy, average ({unit}) "
        f"| B_simple total, start ({unit}) | B_simple total, average ({unit}) | B_crit ({unit}) |",
        "|---|---|---|---|---|---|---|",
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


def write_report(bench_dir: Path, settings: dict, games: list[GameResult], aggregate: dict, status: dict) -> Path:
    """Write the figure and ``report.md`` into ``bench_dir``; return the report's path."""
    ranges = settings["paper_ranges_frames"]
    fig, axes = plt.subplots(1, len(LOSSES), figsize=(11, 4.5), sharey=True)
    for loss, ax in zip(LOSSES, axes, strict=True):
        plot_b_simple_start_vs_average(games, loss, ranges, ax)
    save_figure(fig, bench_dir / "b_simple_start_vs_average.png")

    tier = settings["tier"]
    r = {key: f"{low:,}–{high:,}" for key, (low, high) in ranges.items()}
    lines = [
        f"# Benchmark `{settings['suite']}`: gradient noise scale of PPO on Atari",
        "",
        f"Directory `{bench_dir.resolve().name}`. Tier: {tier['description']}. {tier['total_steps']:,} agent steps "
        f"({tier['total_steps'] * FRAME_SKIP:,} frames) per run, {tier['n_envs']} envs × {tier['n_steps']} steps "
        f"per rollout, minibatch {tier['minibatch_size']}, {tier['n_epochs']} epochs, noise scale measured every "
        f"{tier['every']} iteration(s) (minibatch scheme), device `{settings['device']}`.",
        "",
        f"Runs: {status['planned']} planned; {status['done']} finished, {status['failed']} failed, "
        f"{status['unfinished']} unfinished or not started. Only finished runs are used.",
        "",
        "## Noise scale (the shape of McCandlish et al.'s Table 1)",
        "",
        "B_simple = Σ tr(Σ) / Σ |G|², pooled over every measurement of the window and every seed "
        f"(never an average of ratios). **Start**: measurements in the first {START_FRACTION:.0%} of each run's "
        "budget; **average**: the whole run. Unit: samples per gradient step, in frames (= 4 × agent steps, "
        "frame skip 4) as in the paper, then in agent steps. [95 % bootstrap interval over seeds] where ≥ 2 "
        "seeds; ∞ as an upper bound means some resamples did not resolve |G|². **Not resolved**: the pooled "
        "|G|² is not positive, so there is no finite estimate.",
        "",
        f"Paper's Atari ranges (per frame): B_crit {r['b_crit_start']} at the start and {r['b_crit_average']} "
        f"averaged over training; B_simple {r['b_simple_start']} at the start and {r['b_simple_average']} averaged.",
        "",
        *noise_table(games, FRAME_SKIP, "frames"),
        "",
        *noise_table(games, 1, "agent steps"),
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
        "PPO score (envs/atari_games.toml). Published PPO scores are after 10M agent steps (40M frames).",
        "",
        "| game | final score (mean) | per seed | random | human | human-normalised (mean) "
        "| target (seeds reached) | published PPO |",
        "|---|---|---|---|---|---|---|---|",
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
            f"| {', '.join(_score(s) for s in g.scores_R) or '–'} | {g.random_score:,} | {g.human_score:,} "
            f"| {f'{np.mean(normalised):.3f}' if normalised else '–'} "
            f"| {g.target_score:,} ({g.reached_target}/{len(g.seeds)}) "
            f"| {refs or '–'} |"
        )
    lines += ["", "## Aggregate", ""]
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
    path = bench_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def report(config: BenchReportConfig) -> Path:
    """Write ``results.json``, ``report.md`` and the figure into the benchmark directory; return the report's path."""
    settings = read_json(config.bench_dir / "bench.json")
    rng = np.random.default_rng(config.seed)
    table = settings["games_table"]
    run_dirs = sorted(p for p in (config.bench_dir / "runs").iterdir() if p.is_dir())
    by_game: dict[str, list[BenchRun]] = {game: [] for game in table}
    for run_dir in run_dirs:
        game = run_dir.name.rsplit("_s", 1)[0]
        run = load_run(RunDir(run_dir), table[game]["target_score"]) if game in table else None
        if run is not None:
            by_game[game].append(run)
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
    selected = [resolve_game(name) for name in settings["games"]] if settings["games"] else list(table)
    planned = max(len(selected) * (settings["seeds"] or settings["tier"]["seeds"]), len(run_dirs))
    status = {"planned": planned, "done": statuses.count("done"), "failed": statuses.count("failed")}
    status["unfinished"] = planned - status["done"] - status["failed"]

    payload = {
        "settings": settings,
        "definitions": {"start_fraction": START_FRACTION, "score_window": DEFAULT_WINDOW, "frame_skip": FRAME_SKIP},
        "games": [{**asdict(g), "human_normalised_R": g.human_normalised_R} for g in games],
        "aggregate": aggregate,
        "status": status,
    }
    write_json(config.bench_dir / "results.json", payload)
    return write_report(config.bench_dir, settings, games, aggregate, status)


def check(config: BenchReportConfig) -> None:
    """Fail early (``ValueError``) if the directory is not a benchmark."""
    if not (config.bench_dir / "bench.json").exists():
        raise ValueError(f"{config.bench_dir} is not a benchmark directory (no bench.json)")
    for sweep_dir in config.sweeps:
        if not (sweep_dir / "results.json").exists():
            raise ValueError(f"--sweeps {sweep_dir}: no results.json (run rl-gns analyze on it first)")
