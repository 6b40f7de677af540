"""``rl-gns analyze`` (report): ``report.md`` and its figures from a sweep's analysed results
(:mod:`rl_gns.reports.sweep_analysis`)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np

from rl_gns.core.maths.advice import DEFAULT_CANDIDATE, DEFAULT_PREDICTOR, parse_predictor
from rl_gns.core.maths.noise_scale import b_simple_interval
from rl_gns.core.maths.schemes import scheme_label
from rl_gns.records.logs import write_atomically
from rl_gns.records.rundir import RunDir, noise_columns
from rl_gns.reports.figures import (
    LOSS_COLORS,
    Axes,
    colors,
    fmt,
    interval_bars,
    legend,
    log_limits,
    noise_label,
    number,
    plain_log_axes,
    plain_log_ticks,
    plain_ticks,
    plt,
    prediction_marker,
    predictor_label,
    run_average,
    save_plot,
    unresolved_entry,
)
from rl_gns.reports.sweep_analysis import (
    IDENTIFIED_FACTOR,
    Prediction,
    RunRecord,
    TargetResult,
    identified_reach,
    unidentified,
)

#: The marker of each target's points, in the order of the targets: no target's points hide another's.
TARGET_MARKERS = ("o", "s", "^", "D", "v", "P")
#: Where each target's rollout-size labels sit around its points (points right and up, then down, left...).
LABEL_OFFSETS = ((5, 4), (5, -10), (-5, 4), (-5, -10))


def plot_targets(results: list[TargetResult], y: str, ax: Axes, joined: bool = False) -> None:
    """Each target's points against experience (agent steps), in its colour and marker (:data:`TARGET_MARKERS`),
    later targets' smaller and in front, so that one at the same place as another's still shows; each labelled with
    its rollout size (:data:`LABEL_OFFSETS`, a side per target).

    :param y: the attribute of :class:`TargetResult` on the y axis (``steps_K``, ``wall_s_K``).
    :param joined: whether to join a target's points in the order of rollout size.
    """
    for i, (result, color) in enumerate(zip(results, colors(len(results)), strict=True)):
        if not result.rollout_size_K:
            continue
        y_K = getattr(result, y)
        marker, (dx, dy) = TARGET_MARKERS[i % len(TARGET_MARKERS)], LABEL_OFFSETS[i % len(LABEL_OFFSETS)]
        ax.plot(result.experience_K, y_K, ls="-" if joined else "none", marker=marker, ms=max(8.0 - i, 4.0),
                mec="white", mew=0.6, color=color, zorder=3 + i, label=f"target {result.target:g}")  # fmt: skip
        for e, value, size in zip(result.experience_K, y_K, result.rollout_size_K, strict=True):
            ax.annotate(f"{size}", (e, value), textcoords="offset points", xytext=(dx, dy), fontsize=7, color=color,
                        ha="left" if dx > 0 else "right")  # fmt: skip


def plot_steps_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against steps (y), log-log: each target's points (:func:`plot_targets`), its fitted hyperbola
    over the rollout sizes that reached it (and its B_crit), and B_crit marked where fitted."""
    ax = ax or plt.gca()
    plot_targets(results, "steps_K", ax)
    fitted = [
        (r.fit, r.rollout_size_K, color)
        for r, color in zip(results, colors(len(results)), strict=True)
        if r.fit is not None and r.rollout_size_K
    ]
    for fit, sizes, color in fitted:
        batch = np.geomspace(min(*sizes, fit.b_crit), max(*sizes, fit.b_crit), 200)
        ax.plot(fit.experience(batch), fit.steps(batch), color=color, lw=1.2)
        ax.plot([2 * fit.e_min], [2 * fit.s_min], marker="*", ms=14, color=color, mec="black", zorder=2.5)
    if fitted:  # one legend entry for every target's star, behind the points so that it hides none
        ax.plot([], [], ls="none", marker="*", ms=14, color="lightgray", mec="black", label="B_crit (2·E_min, 2·S_min)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axes(ax)
    ax.set_xlabel("experience E to target (agent steps)")
    ax.set_ylabel("steps S to target (PPO iterations)")
    lines = "lines: the fit over the sizes that reached the target" if fitted else "no target's B_crit identified: no fit"
    ax.set_title(f"labels: rollout size (agent steps); {lines}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    legend(ax, "no run reached a target", fontsize=8)
    return ax


def plot_wall_vs_experience(results: list[TargetResult], ax: Axes | None = None) -> Axes:
    """Experience (x) against wall-clock seconds (y) to each target, log-log (:func:`plot_targets`, joined)."""
    ax = ax or plt.gca()
    plot_targets(results, "wall_s_K", ax, joined=True)
    ax.set_title("labels: rollout size (agent steps)", fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axes(ax)
    ax.set_xlabel("experience E to target (agent steps)")
    ax.set_ylabel("wall time to target (s)")
    ax.grid(alpha=0.3, which="both")
    legend(ax, "no run reached a target", fontsize=8)
    return ax


def plot_noise_scale_by_size(sweep_dir: Path, runs: list[RunRecord], ax: Axes) -> Axes:
    """The default predictor of the critical rollout size (:data:`DEFAULT_PREDICTOR`), ``B_simple`` averaged over
    training so far (:func:`cumulative_b_simple`, agent steps, log scale), one line per rollout size: its seed-0 run
    at the grid's upper-middle learning rate, with the 95 % interval of the whole run's average at its end
    (:func:`b_simple_interval`) and a marker at the right edge at its rollout size."""
    scheme, loss = DEFAULT_CANDIDATE.scheme, DEFAULT_CANDIDATE.loss
    sizes = sorted({run.rollout_size for run in runs})
    bands = []
    for size, color in zip(sizes, colors(len(sizes)), strict=True):
        candidates = sorted((r for r in runs if r.rollout_size == size and r.seed == 0), key=lambda r: r.learning_rate)
        if not candidates:
            continue
        run_record = candidates[len(candidates) // 2]
        run = RunDir(sweep_dir / "runs" / run_record.name)
        columns = noise_columns(run.progress(), scheme, loss)
        if columns is None:
            continue
        steps, g2, trace_sigma, average = run_average(columns)
        ok = np.isfinite(average) & (average > 0)
        ax.plot(steps[ok], average[ok], color=color, lw=1.6, label=f"{size:,} ({run_record.n_envs} envs)")
        ax.plot([1.0], [size], marker="<", ms=7, color=color, transform=ax.get_yaxis_transform(), clip_on=False)
        interval = b_simple_interval(g2, trace_sigma)
        bands.append((steps[-1:], [interval.low], [interval.high], color))
    limits = log_limits(ax)
    for band in (*bands, ([], [], [], "gray")):  # the last, empty, gives the legend its entries in gray
        interval_bars(ax, *band, limits=limits, alpha=(0.7, 0.35))
    ax.set_ylim(*limits)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    plain_ticks(ax.xaxis)
    ax.set_xlabel("agent steps")
    ax.set_ylabel("B_simple averaged so far (agent steps)")
    ax.set_title(f"{noise_label(scheme, loss)}\nbars: 95 % interval of each run's whole average, at its end", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    empty = f"no run measured the {loss} loss with {scheme_label(scheme)} ({DEFAULT_PREDICTOR})"
    legend(ax, empty, title="rollout size (◀ at the right edge)", fontsize=7, title_fontsize=8,
           loc="upper left", bbox_to_anchor=(1.04, 1.0))  # fmt: skip
    return ax


#: The marker of each candidate's scheme and units factor (``× M`` or not); its colour is its loss's.
CANDIDATE_MARKERS = {("envs", ""): "o", ("envs", "xM"): "s", ("minibatch", ""): "D", ("minibatch", "xM"): "P"}


def swept_sizes(results: list[TargetResult]) -> list[int]:
    """Every rollout size the sweep ran (reached a target or not), agent steps, in order."""
    return sorted({size for r in results for size in (*r.rollout_size_K, *r.censored_sizes)})


def candidates_limits(results: list[TargetResult]) -> tuple[float, float]:
    """The y limits of :func:`plot_predicted_vs_fitted`: a factor 2 beyond the rollout sizes swept, every finite
    candidate and every fitted B_crit within reach of its sizes (:func:`identified_reach`); intervals are clipped to
    them, as a degenerate one may run off to 1e21."""
    values = [float(size) for size in swept_sizes(results)]
    for r in results:
        values += [c.value for c in r.candidates.values() if math.isfinite(c.value) and c.value > 0]
        if r.fit is not None and r.rollout_size_K:
            low, high = identified_reach(r.rollout_size_K)
            values += [r.fit.b_crit] if low <= r.fit.b_crit <= high else []
    return (min(values) / 2, max(values) * 2) if values else (1.0, 10.0)


def plot_candidate(name: str, prediction: Prediction, x: float, limits: tuple[float, float], ax: Axes) -> None:
    """One candidate at one target in its loss's colour (:func:`prediction_marker`; faint unless it is the default),
    with its 95 % interval as a bar (open above where resamples do not resolve ``|G|²``)."""
    candidate = parse_predictor(name)
    loss, default = candidate.loss, name == DEFAULT_PREDICTOR
    marker = CANDIDATE_MARKERS[candidate.scheme, candidate.factor]
    prediction_marker(ax, x, prediction.value, limits, marker, LOSS_COLORS[loss], default, 0.6)
    if prediction.ci is not None:
        interval_bars(ax, [x], [prediction.ci[0]], [prediction.ci[1]], LOSS_COLORS[loss], limits,
                      alpha=(0.6, 0.25) if default else (0.35, 0.12), lw=3.0 if default else 1.5)  # fmt: skip


def plot_fitted(result: TargetResult, x: float, limits: tuple[float, float], ax: Axes) -> bool:
    """A target's fitted B_crit as a black star with its 95 % bootstrap interval (clipped to the panel); one beyond
    the panel (a degenerate fit, :func:`candidates_limits`) as a triangle at its edge with its value. Return whether
    it lay beyond."""
    assert result.fit is not None
    b_crit = result.fit.b_crit
    if result.ci_b_crit is not None:
        interval_bars(ax, [x], [result.ci_b_crit[0]], [result.ci_b_crit[1]], "black", limits, alpha=(0.8, 0.3), lw=1.5)
    if limits[0] <= b_crit <= limits[1]:
        ax.plot([x], [b_crit], marker="*", ms=14, color="black", zorder=5)
        return False
    above = b_crit > limits[1]
    edge = limits[1] if above else limits[0]
    ax.plot([x], [edge], marker="^" if above else "v", ms=9, color="black", clip_on=False, zorder=5)
    ax.annotate(number(b_crit), (x, edge), textcoords="offset points", xytext=(6, -12 if above else 6), fontsize=7)
    return True


def plot_predicted_vs_fitted(results: list[TargetResult], ax: Axes) -> Axes:
    """Per target, the fitted B_crit (:func:`plot_fitted`) beside every noise-scale candidate (:func:`plot_candidate`,
    the default predictor next to it), agent steps on a log scale, over the range of rollout sizes swept (shaded)."""
    names = sorted({name for r in results for name in r.candidates}, key=lambda name: (name != DEFAULT_PREDICTOR, name))
    offsets = np.linspace(-0.38, 0.38, len(names) + 1)
    limits = candidates_limits(results)
    ax.plot([], [], ls="none", marker="*", ms=12, color="black", label="fitted B_crit (95 % bootstrap interval over seeds)")
    for name in names:  # one legend entry per candidate, the default's first
        named = parse_predictor(name)
        default, color = name == DEFAULT_PREDICTOR, LOSS_COLORS[named.loss]
        ax.plot([], [], ls="none", marker=CANDIDATE_MARKERS[named.scheme, named.factor], ms=10 if default else 6, color=color,
                mec="black" if default else color, label=predictor_label(name))  # fmt: skip
    sizes = swept_sizes(results)
    if sizes:
        ax.axhspan(sizes[0], sizes[-1], color="gray", alpha=0.15,
                   label=f"rollout sizes swept ({number(sizes[0])}–{number(sizes[-1])})")  # fmt: skip
    beyond = False
    for i, result in enumerate(results):
        if result.fit is not None:
            beyond |= plot_fitted(result, i + offsets[0], limits, ax)
        for name, offset in zip(names, offsets[1:], strict=True):
            if name in result.candidates:
                plot_candidate(name, result.candidates[name], i + offset, limits, ax)
        if i:
            ax.axvline(i - 0.5, color="gray", lw=0.8, alpha=0.5)
    interval_bars(ax, [], [], [], "gray", limits)  # the last bars of their labels: the legend's entries in gray
    unresolved_entry(ax, (c.value for r in results for c in r.candidates.values()))
    if beyond:
        ax.plot([], [], ls="none", marker="^", color="black",
                label=f"fitted B_crit beyond {IDENTIFIED_FACTOR:g}× the sizes (degenerate fit), at the edge")  # fmt: skip
    if not names and all(r.fit is None for r in results):
        ax.text(0.5, 0.5, "no fitted B_crit and no prediction at any target", transform=ax.transAxes, ha="center",
                va="center", color="gray")  # fmt: skip
    ax.set_xticks(range(len(results)), [f"{r.target:g}" for r in results])
    ax.set_xlim(-0.5, len(results) - 0.5)
    ax.set(xlabel="target score", ylabel="critical rollout size (agent steps)", yscale="log", ylim=limits)
    plain_log_ticks(ax.yaxis)
    ax.grid(alpha=0.3, which="major", axis="y")
    ax.set_title("fitted B_crit and the noise-scale predictions of it, per target", fontsize=10)
    legend(ax, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return ax


def interval_cell(ci: tuple[float, float] | None) -> str:
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "–"


def candidate_rows(results: list[TargetResult]) -> list[str]:
    """Markdown rows: every candidate per target with its interval and its ratio to the fitted B_crit."""
    if not any(r.candidates for r in results):
        return ["None: no run reached a target, or none measured the noise scale."]
    lines = [
        "| target | candidate | prediction (agent steps) [95 % CI] | / fitted B_crit | B_simple per size (samples) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        for name, c in sorted(r.candidates.items()):
            ratio = c.value / r.fit.b_crit if r.fit else math.nan
            per_size = ", ".join(f"{size}: {fmt(b)}" for size, b in zip(r.rollout_size_K, c.b_simple_K, strict=True))
            default = " (default)" if name == DEFAULT_PREDICTOR else ""
            lines.append(
                f"| {r.target:g} | `{name}`{default} | {fmt(c.value)} {interval_cell(c.ci)} | {fmt(ratio)} | {per_size} |"
            )
    return lines


def path_candidate_rows(results: list[TargetResult]) -> list[str]:
    """Markdown rows: criterion v8's path averages and start values per target, with intervals and ratios."""
    if not any(r.path_candidates for r in results):
        return ["None: no run reached a target, or none measured the noise scale."]
    lines = ["| target | candidate | prediction (agent steps) [95 % CI] | / fitted B_crit |", "|---|---|---|---|"]
    for r in results:
        for name, c in sorted(r.path_candidates.items()):
            ratio = c.value / r.fit.b_crit if r.fit else math.nan
            lines.append(f"| {r.target:g} | `{name}` | {fmt(c.value)} {interval_cell(c.ci)} | {fmt(ratio)} |")
    return lines


def resumed_note(runs: list[RunRecord]) -> list[str]:
    """A paragraph naming the finished runs that lost games in progress as they went on from checkpoints, where any
    did: each started every env anew at once, so that its next games end in order of length (the short first) and
    its running score can pass a target sooner or later than the uninterrupted run's would. A run whose checkpoints
    held its games (:mod:`rl_gns.core.envs.games`) played on as if uninterrupted, and is not named."""
    resumed = [run for run in runs if run.games_dropped]
    if not resumed:
        return []
    sizes = sorted({run.rollout_size for run in resumed})
    return [
        f"Note: {len(resumed)} of {sum(run.status == 'done' for run in runs)} finished runs resumed from checkpoints "
        f"that held no games (rollout sizes {', '.join(map(str, sizes))}; the Runs table names them). Each dropped its "
        "games in progress and started all its envs anew at once, so its next games end in order of length: its steps "
        "to a target may differ from an uninterrupted run's, and the analysis keeps them as they are.",
        "",
    ]


#: The figures the report draws, by name (``<name>.png`` in the sweep directory).
FIGURES = ("steps_vs_experience", "wall_vs_experience", "noise_scale_by_size", "bcrit_predicted_vs_fitted")
#: Every file of the analysis in the sweep directory (``results.json`` from :mod:`~rl_gns.reports.sweep_analysis`).
OUTPUTS = ("results.json", "report.md", *(f"{figure}.png" for figure in FIGURES))


def write_report(sweep_dir: Path, settings: dict, runs: list[RunRecord], results: list[TargetResult]) -> Path:
    """Write the figures and ``report.md`` into ``sweep_dir``; return the report's path."""
    drawn = (
        (lambda ax: plot_steps_vs_experience(results, ax), (7, 5.5)),
        (lambda ax: plot_wall_vs_experience(results, ax), (7, 4.5)),
        (lambda ax: plot_noise_scale_by_size(sweep_dir, runs, ax), (8.5, 4.5)),
        (lambda ax: plot_predicted_vs_fitted(results, ax), (12, 5.5)),
    )
    plots = dict(zip(FIGURES, drawn, strict=True))
    figures = {name: save_plot(plot, sweep_dir / f"{name}.png", size).name for name, (plot, size) in plots.items()}

    m, n_steps, n_epochs = settings["n_minibatches"], settings["n_steps"], settings["n_epochs"]
    status = Counter(run.status for run in runs)
    lines = [
        f"# Steps–experience tradeoff: {settings['env']}",
        "",
        f"Sweep `{sweep_dir.name}`: env counts {settings['n_envs']}, n_steps {n_steps} (rollout size = n_envs × {n_steps} "
        f"agent steps), M = {m} minibatches per epoch, {n_epochs} epochs, backend `{settings['backend']}`, "
        f"{settings['seeds']} seeds, {settings['lr_points']} learning rates per size (rule `{settings['lr_rule']}`, "
        f"lr_ref {settings['lr_ref']} at {settings['n_envs_ref']} envs, factor {settings['lr_factor']}), "
        f"budget {settings['budget_steps']:,} agent steps per run, noise-scale scheme(s) {', '.join(settings['gns_scheme'])}, "
        f"regime `{settings.get('regime', 'ppo')}`.",
        "",
        f"Runs: {len(settings['runs'])} planned; {status.get('done', 0)} finished, {status.get('failed', 0)} failed, "
        f"{status.get('unfinished', 0)} unfinished, {len(settings['runs']) - len(runs)} not started.",
        "",
        *resumed_note(runs),
        f"Score measure: mean raw game score (whole games, all lives) of the last {settings['window']} finished games. "
        "S = PPO iterations to the target, E = S × rollout size (agent steps; frames = 4·E), "
        f"gradient steps = S × {n_epochs} × {m}. Per size and seed the fastest learning rate is kept; a size's point "
        "is the geometric mean over the seeds that reached the target. Fit of log S against log(S_min + E_min/B), "
        "B = rollout size; 95 % intervals from a bootstrap over seeds. B_crit = E_min/S_min (McCandlish et al.); "
        "Zhang et al.'s critical batch (20 % more steps than perfect scaling) is 0.2·B_crit in this model. "
        "Noise-scale candidates (docs/prediction-criterion.md): per size B_k = Σ raw tr(Σ) / Σ raw |G|² over the "
        "measurements up to the target of every run of the size that reached it; the median over sizes, times M "
        f"(`_xM_`) or not; `mb`: minibatch scheme, `env`: whole-trajectory groups. Default: `{DEFAULT_PREDICTOR}`.",
        "",
        "## Fits",
        "",
        "| target | sizes reached | S_min (iterations) [95 % CI] | E_min (agent steps) [95 % CI] "
        "| B_crit (agent steps) [95 % CI] | B_crit / n_steps (envs) | 0.2·B_crit | default prediction | flags |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fit = r.fit
        lines.append(
            f"| {r.target:g} | {len(r.rollout_size_K)}/{len(r.rollout_size_K) + len(r.censored_sizes)} "
            f"| {fmt(fit.s_min if fit else None)} {interval_cell(r.ci_s_min)} "
            f"| {fmt(fit.e_min if fit else None)} {interval_cell(r.ci_e_min)} "
            f"| {fmt(fit.b_crit if fit else None)} {interval_cell(r.ci_b_crit)} "
            f"| {fmt(fit.b_crit / n_steps if fit else None)} | {fmt(fit.b_crit_20pct if fit else None)} "
            f"| {fmt(r.predicted_b_crit)} | {'; '.join(r.flags) or '–'} |"
        )
    lines += ["", "## Noise-scale candidates against the fitted B_crit", "", *candidate_rows(results)]
    lines += [
        "",
        "## Path averages and start values (criterion v8)",
        "",
        "Pooled Σ raw tr(Σ) / Σ raw |G|² over the kept runs (the fastest learning rate per size and seed): `path_` over "
        "every measurement from the run's start to the target, `start_` over the first 10 % of its agent steps to it "
        "(at least its first measurement); `_xM_` × M, `_xEM_` × n_epochs · M. 95 % intervals: bootstrap of the kept runs.",
        "",
        *path_candidate_rows(results),
    ]
    lines += ["", "## Steps and experience to each target", ""]
    for r in results:
        lines += [
            f"### Target {r.target:g}",
            "",
            "| rollout size | seeds reached | S (iterations) | gradient steps | E (agent steps) | wall (s) "
            "| fastest lr per seed |",
            "|---|---|---|---|---|---|---|",
        ]
        for k, size in enumerate(r.rollout_size_K):
            lines.append(
                f"| {size} | {r.seeds_reached_K[k]} | {r.steps_K[k]:.1f} | {r.steps_K[k] * n_epochs * m:.0f} "
                f"| {r.experience_K[k]:,.0f} | {r.wall_s_K[k]:.0f} | {', '.join(f'{lr:.2e}' for lr in r.best_lr_K[k])} |"
            )
        for size in r.censored_sizes:
            lines.append(f"| {size} | 0 (censored) | – | – | – | – | – |")
        reason = unidentified(r)
        if reason is not None:
            lines += ["", f"{reason[:1].upper()}{reason[1:]}."]
        lines.append("")
    lines += [
        "## Figures",
        "",
        *(f"![{name.replace('_', ' ')}]({figure})\n" for name, figure in figures.items()),
        "## Runs",
        "",
        "| run | status | agent steps | resumes | targets reached |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        reached = ", ".join(f"{t:g}" for t in sorted(run.reached)) or "–"
        lines.append(f"| {run.name} | {run.status} | {run.env_steps:,} | {run.resumes} | {reached} |")
    notes = sweep_dir / "NOTES.md"
    if notes.exists():
        lines += ["", notes.read_text().strip()]
    path = sweep_dir / "report.md"
    write_atomically(path, "\n".join(lines) + "\n")
    return path
