"""Adaptive-rollout runs against a fixed-size sweep: steps and experience to the sweep's targets.

``rl-gns compare-adaptive <adaptive_dir> --fixed <analysed sweep dir>`` reads the adaptive
runs under ``<adaptive_dir>/runs/`` (``rl-gns train --adaptive-r ...`` run directories) and the fixed
sweep's ``results.json`` (``rl-gns analyze``), and writes ``comparison.md`` and
``steps_vs_experience.png`` into ``<adaptive_dir>``.

Same definitions as :mod:`rl_gns.reports.sweep_analysis`: the score measure of the sweep (mean raw score of the
last ``window`` games), ``S`` = PPO iterations to the target, ``E`` = agent steps trained on up to
and including that iteration (with a growing rollout, the sum of the rollout sizes so far).
Each adaptive run is set against the fixed sweep's fitted hyperbola: ``S_fit(E)``, the iterations
fixed-size training needs to reach the target with experience ``E`` (eq. 2.11).

Shape glossary: ``T`` PPO iterations (log rows) of one run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.maths.names import N_ENVS_KEY
from rl_gns.core.maths.targets import first_reached
from rl_gns.core.maths.tradeoff import TradeoffFit
from rl_gns.records.logs import check_outputs, write_atomically
from rl_gns.records.rundir import CONFIG, STEP_KEY, RunDir, RunFileError, noise_columns, read_sweep_results, runs_under
from rl_gns.reports.figures import Axes, colors, legend, relative, save_plot
from rl_gns.reports.sweep_analysis import TargetResult
from rl_gns.reports.sweep_report import plot_steps_vs_experience

#: The comparison's files in the adaptive sweep's directory.
FIGURE, REPORT = "steps_vs_experience.png", "comparison.md"
OUTPUTS = (FIGURE, REPORT)


@dataclass
class CompareConfig:
    """Compare adaptive-rollout runs with a fixed-size sweep (reads only files on disk)."""

    adaptive_dir: tyro.conf.Positional[Path]
    """Directory whose runs/ holds the adaptive runs; comparison.md and the figure are written here."""
    fixed: Path
    """The fixed-size sweep, analysed (results.json from rl-gns analyze)."""


def steps_and_experience_logged(env_steps: int, total_timesteps_T: np.ndarray) -> tuple[int, int]:
    """``(S, E)`` for an event at agent step ``env_steps`` of a run whose rollout size may change:
    it happened in the first iteration ``S`` (1-based) with ``total_timesteps_T[S-1] >= env_steps``, and
    ``E = total_timesteps_T[S-1]`` agent steps (``Σ`` of the rollout sizes up to ``S``). With a fixed
    rollout size this is :func:`rl_gns.core.maths.targets.steps_and_experience`.

    :param env_steps: agent steps when the event happened.
    :param total_timesteps_T: ``(T,)`` agent steps at the end of each iteration (increasing).
    """
    index = int(np.searchsorted(total_timesteps_T, env_steps, side="left"))
    if index == len(total_timesteps_T):
        last = f"{total_timesteps_T[-1]:.0f}" if len(total_timesteps_T) else "none logged"
        raise ValueError(f"agent step {env_steps} lies after the last logged iteration ({last})")
    return index + 1, int(total_timesteps_T[index])


def fit_steps(fit: TradeoffFit, experience: float) -> float:
    """``S_fit(E) = S_min · (1 + 1 / (E/E_min − 1))``: fixed-size iterations to the target at experience ``E``
    on the fitted hyperbola (eq. 2.11); ``inf`` for ``E <= E_min``."""
    ratio = experience / fit.e_min
    return fit.s_min * (1.0 + 1.0 / (ratio - 1.0)) if ratio > 1.0 else math.inf


def measured_g2(run: RunDir, loss: str) -> np.ndarray:
    """The raw ``|G|²`` estimates of ``loss`` a run logged (its first scheme); none if it has not measured it."""
    config = run.config()
    schemes = config.measured_schemes
    columns = noise_columns(run.progress(), schemes[0], loss) if schemes else None
    return np.empty(0) if columns is None else columns[1][np.isfinite(columns[1])]


def g2_resolution(sweep_dir: Path, loss: str) -> tuple[float, float] | None:
    """How well a sweep's runs resolve ``|G|²`` of ``loss`` (the denominator of B_simple), as evidence for the
    loss that drives the rule: ``(fraction of runs whose Σ raw g2 > 0, median over runs of the relative standard
    error of the mean raw g2)``; a relative error near or above 1 means B_simple is not resolved. Only runs with
    at least 2 measurements count; ``None`` if there are none (not enough data)."""
    positive, relative_se = [], []
    for run in (RunDir(d) for d in runs_under(sweep_dir) if (d / CONFIG).exists()):
        g2 = measured_g2(run, loss)
        if len(g2) < 2:
            continue
        positive.append(g2.sum() > 0)
        relative_se.append(g2.std(ddof=1) / math.sqrt(len(g2)) / abs(g2.mean()))
    return (float(np.mean(positive)), float(np.median(relative_se))) if positive else None


@dataclass
class AdaptiveRun:
    """One adaptive run, read back from its directory."""

    name: str
    r: float
    seed: int
    n_envs_T: list[int]
    """Env count of each iteration's rollout."""
    reached: dict[float, tuple[int, int]] = field(default_factory=dict)
    """Target -> ``(S, E)``; absent targets were not reached."""


def load_adaptive_run(run_dir: Path, targets: list[float], window: int) -> AdaptiveRun:
    """Read one finished adaptive run directory (``config.json``, ``summary.json``, ``progress.csv``, ``episodes.csv``).

    :raises RunFileError: for a run trained without ``--adaptive-r``, or one whose games end after its last
        logged iteration.
    """
    run_files = RunDir(run_dir)
    config, progress, episodes = run_files.config(), run_files.progress(), run_files.episodes()
    if config.adaptive_r is None:
        raise RunFileError(f"{run_dir} is not an adaptive run (trained without --adaptive-r)")
    n_envs_final = run_files.summary().n_envs_final or config.n_envs
    # a run stopped at its stop score ends inside an iteration that is never logged: count it whole, as analyze does
    n_envs_T = [*progress.get(N_ENVS_KEY, np.empty(0)).astype(int).tolist(), n_envs_final]
    last_T = run_files.env_steps(progress) + n_envs_final * config.n_steps  # from 0 if no row was logged
    total_timesteps_T = np.append(progress.get(STEP_KEY, np.empty(0)), last_T)
    run = AdaptiveRun(run_dir.name, config.adaptive_r, config.seed, n_envs_T)
    for target in targets:
        game = first_reached(episodes.get("env_steps", np.array([])), episodes.get("score", np.array([])), target, window)
        if game is not None:
            try:
                run.reached[target] = steps_and_experience_logged(int(episodes["env_steps"][game]), total_timesteps_T)
            except ValueError as error:
                raise RunFileError(f"{run_dir}: its progress.csv does not cover its episodes.csv ({error})") from error
    return run


def load_fixed_results(sweep_dir: Path) -> tuple[dict, list[TargetResult]]:
    """The fixed sweep's settings and per-target results (points and fits) from its ``results.json``."""
    payload = read_sweep_results(sweep_dir / "results.json")
    names = {f.name for f in fields(TargetResult)}
    results = []
    for target in payload["targets"]:
        result = TargetResult(**{k: v for k, v in target.items() if k in names})
        result.fit = TradeoffFit(**target["fit"]) if target["fit"] else None
        results.append(result)
    return payload["settings"], results


def plot_comparison(fixed: list[TargetResult], runs: list[AdaptiveRun], ax: Axes | None = None) -> Axes:
    """The fixed sweep's points and hyperbolae, with the adaptive runs' ``(E, S)`` overlaid (one marker per ``r``)."""
    ax = plot_steps_vs_experience(fixed, ax)
    markers = dict(zip(sorted({run.r for run in runs}), "Dv^sP", strict=False))
    for result, color in zip(fixed, colors(len(fixed)), strict=True):
        for run in runs:
            if result.target in run.reached:
                s, e = run.reached[result.target]
                ax.scatter([e], [s], marker=markers[run.r], s=60, facecolor="none", edgecolor=color, lw=1.5, zorder=5)
    for r, marker in markers.items():
        ax.scatter([], [], marker=marker, facecolor="none", edgecolor="black", label=f"adaptive, r = {r:g}")
    legend(ax, fontsize=8)
    ax.set_title("filled: fixed n_envs (labels: rollout size); open: adaptive runs, in their target's colour", fontsize=9)
    return ax


def compare(config: CompareConfig) -> Path:
    """Write ``comparison.md`` and ``steps_vs_experience.png`` into ``config.adaptive_dir``; return the report's path."""
    settings, fixed = load_fixed_results(config.fixed)
    targets = [float(t) for t in settings["targets"]]
    run_dirs = [d for d in runs_under(config.adaptive_dir) if (d / "summary.json").exists()]
    runs = [load_adaptive_run(d, targets, settings["window"]) for d in run_dirs]

    save_plot(lambda ax: plot_comparison(fixed, runs, ax), config.adaptive_dir / FIGURE, (7, 5.5))

    fixed_name = relative(config.fixed, config.adaptive_dir)
    lines = [
        f"# Adaptive rollout size against the fixed-size sweep `{fixed_name}`",
        "",
        f"S = PPO iterations to the target, E = agent steps trained on up to that iteration; score measure: mean raw "
        f"score of the last {settings['window']} games. S_fit(E): iterations the fixed sweep's fitted hyperbola needs "
        "at the same E; S / S_fit < 1 means fewer iterations than fixed-size training at equal experience.",
        "",
        "| target | run | r | seed | S (iterations) | E (agent steps) | n_envs at target | S_fit(E) | S / S_fit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in fixed:
        for run in runs:
            if result.target not in run.reached:
                lines.append(f"| {result.target:g} | {run.name} | {run.r:g} | {run.seed} | not reached | – | – | – | – |")
                continue
            s, e = run.reached[result.target]
            s_fit = fit_steps(result.fit, e) if result.fit else math.nan
            lines.append(
                f"| {result.target:g} | {run.name} | {run.r:g} | {run.seed} | {s} | {e:,} | {run.n_envs_T[s - 1]} "
                f"| {s_fit:.1f} | {s / s_fit:.2f} |"
            )
    lines += ["", "Env-count schedule (iteration at which each size was first used):", ""]
    for run in runs:
        first = {n: i + 1 for i, n in reversed(list(enumerate(run.n_envs_T)))}
        lines.append(f"- {run.name}: " + ", ".join(f"{n} envs from iteration {i}" for n, i in sorted(first.items())))
    lines += [
        "",
        f"Which loss drives the rule: how well the runs of `{fixed_name}` resolve |G|² (whole runs, raw estimates).",
        "",
        "| loss | runs with Σ g2 > 0 | median relative standard error of mean g2 |",
        "|---|---|---|",
    ]
    for loss in ("policy", "value", "total"):
        resolution = g2_resolution(config.fixed, loss)
        if resolution is None:
            lines.append(f"| {loss} | not enough data: no run measured it twice | – |")
        else:
            lines.append(f"| {loss} | {resolution[0]:.0%} | {resolution[1]:.2f} |")
    lines += ["", "![steps vs experience](steps_vs_experience.png)"]
    path = config.adaptive_dir / REPORT
    write_atomically(path, "\n".join(lines) + "\n")
    return path


def check(config: CompareConfig) -> None:
    """Fail early (``ValueError``) on missing inputs."""
    if not (config.fixed / "results.json").exists():
        raise ValueError(f"--fixed {config.fixed}: no results.json (run rl-gns analyze on the fixed sweep first)")
    if not (config.adaptive_dir / "runs").is_dir():
        raise ValueError(f"{config.adaptive_dir} holds no runs/ directory")
    check_outputs(config.adaptive_dir, OUTPUTS)
