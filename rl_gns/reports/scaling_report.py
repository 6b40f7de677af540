"""``rl-gns scaling --report-only`` (and the last stage of ``rl-gns scaling``): the throughput model and what more envs buy.

Reads only files: a scaling directory (``settings.json``, ``measurements.jsonl``), optionally an analysed
sweep (``results.json``: its fitted ``S(B)``) and a training run (its noise scale). Fits
:class:`rl_gns.core.maths.throughput.ThroughputModel`, predicts the wall time to the sweep's target per device
count, and writes ``scaling.json``, ``report.md`` and ``scaling.png``, marking the ``n_envs`` at which the
rollout reaches the critical size that the run's noise scale predicts (the default predictor
:data:`rl_gns.core.maths.advice.DEFAULT_PREDICTOR`, as ``rl-gns advise`` reads it; a run that did not measure it gives
``M × B_simple`` of the policy and total losses of its scheme instead) and the sweep's fitted ``B_crit``, each with
its 95 % interval.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.envs.atari import FRAME_SKIP
from rl_gns.core.maths.advice import DEFAULT_PREDICTOR, parse_predictor
from rl_gns.core.maths.noise_scale import RatioInterval
from rl_gns.core.maths.schemes import SCHEMES, Candidate
from rl_gns.core.maths.throughput import ThroughputModel, fit_throughput_model, predicted_wall_s
from rl_gns.core.maths.tradeoff import TradeoffFit
from rl_gns.records.logs import check_outputs, write_atomically
from rl_gns.records.rundir import RunDir, read_sweep_results
from rl_gns.records.scaling_log import MEASUREMENTS, SETTINGS, read_measurements, read_settings
from rl_gns.reports.advise import run_advice
from rl_gns.reports.figures import (
    DEFAULT_WORDS,
    LOSS_COLORS,
    Axes,
    env_count_ticks,
    interval_span,
    legend,
    number,
    plain_log_ticks,
    plt,
    predictor_label,
    relative,
    save_figure,
)

#: What the report writes into the scaling directory: the fit and predictions, the figure, the report.
OUTPUTS = ("scaling.json", "scaling.png", "report.md")


@dataclass
class ScalingReportOptions:
    """What the scaling report predicts with (all optional)."""

    sweep: Path | None = None
    """Analysed sweep directory (results.json from rl-gns analyze) whose fitted S(B) gives the wall time to a target."""
    target: float | None = None
    """Target score of the sweep to predict for; if unset, its highest target with a fit."""
    noise_run: Path | None = None
    """Training run whose noise scale, averaged over the run, marks the critical n_envs."""
    devices: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    """Data-parallel device counts to predict for."""


@dataclass
class ScalingReportConfig(ScalingReportOptions):
    """Fit the throughput model to a scaling directory and write scaling.json, report.md and scaling.png."""

    scaling_dir: tyro.conf.Positional[Path] = Path(".")
    """The --out directory of rl-gns scaling."""


def check(config: ScalingReportConfig) -> None:
    """Fail early (``ValueError``) on missing inputs: the measurements (:func:`check_options` for the rest)."""
    if not (config.scaling_dir / SETTINGS).exists():
        raise ValueError(f"{config.scaling_dir} is not a scaling directory (no {SETTINGS}; rl-gns scaling writes one)")
    check_outputs(config.scaling_dir, OUTPUTS)
    check_one_process(config.scaling_dir, set())
    check_options(config)


def check_one_process(scaling_dir: Path, planned: set[int]) -> None:
    """The throughput model is fitted on one-process measurements: at least 2 ``n_envs`` of them, counting those in
    ``scaling_dir`` (if any) and the ``planned`` ones a measurement is about to add.

    :param scaling_dir: the scaling directory, measured or not yet.
    :param planned: ``n_envs`` about to be measured on one process (``--nproc`` includes 1).
    :raises ValueError: with fewer than 2.
    """
    measured = (
        {r["n_envs"] for r in read_measurements(scaling_dir) if r.get("nproc", 1) == 1}
        if (scaling_dir / SETTINGS).exists()
        else set()
    )
    if len(measured | planned) < 2:
        raise ValueError(
            f"{scaling_dir}/{MEASUREMENTS} needs at least 2 n_envs measured on one process, the throughput model's "
            f"data (measured: {sorted(measured) or 'none'}; give --n-envs at least 2 values, with 1 among --nproc)"
        )


def check_options(config: ScalingReportOptions) -> None:
    """Fail early (``ValueError``) on what the report predicts with: the sweep and its target, the run whose noise
    scale marks the critical n_envs, the device counts; ``rl-gns scaling`` checks them before it measures."""
    if not config.devices or min(config.devices) < 1:
        raise ValueError(f"--devices must be positive, got {config.devices}")
    if len(set(config.devices)) != len(config.devices):
        raise ValueError(f"--devices repeats a value: {config.devices}")
    if config.target is not None and config.sweep is None:
        raise ValueError(f"--target {config.target:g} has no effect without --sweep (it picks a target of the sweep's fit)")
    if config.sweep is not None:
        if not (config.sweep / "results.json").exists():
            raise ValueError(f"{config.sweep}/results.json not found: run rl-gns analyze on the sweep")
        sweep_fit(config.sweep, config.target)
    if config.noise_run is not None:
        run = RunDir(config.noise_run)
        run.logged_progress()
        if not run.config().measured_schemes:
            raise ValueError(f"{config.noise_run} did not measure the noise scale (trained with --no-gns)")


def sweep_fit(sweep_dir: Path, target: float | None) -> tuple[float, TradeoffFit, tuple[float, float] | None, dict]:
    """The target, fitted ``S(B)``, the 95 % interval of its ``B_crit`` (``None`` without a bootstrap) and the
    settings of a sweep's ``results.json`` (highest fitted target by default).

    :raises ValueError: if no target (or not ``target``) has a fit: fewer than 2 rollout sizes reached it.
    """
    results = read_sweep_results(sweep_dir / "results.json")
    fitted = [t for t in results["targets"] if t.get("fit")]
    if target is not None:
        fitted = [t for t in fitted if t["target"] == target]
    if not fitted:
        which = "any target" if target is None else f"target {target:g}"
        raise ValueError(f"{sweep_dir}/results.json has no B_crit fit for {which} (fewer than 2 rollout sizes reached it)")
    chosen = max(fitted, key=lambda t: t["target"])
    fit, ci = chosen["fit"], chosen.get("ci_b_crit")
    tradeoff = TradeoffFit(fit["s_min"], fit["e_min"], fit["rms_log_residual"])
    return chosen["target"], tradeoff, None if ci is None else (ci[0], ci[1]), results["settings"]


def noise_predictions(run: RunDir) -> tuple[dict[str, RatioInterval], bool]:
    """The critical rollout sizes a run's noise scale predicts, pooled over the run with their 95 % intervals
    (:func:`rl_gns.reports.advise.run_advice`), agent steps: the default predictor's where the run measured it,
    else ``M × B_simple`` of the policy and total losses of its first scheme; and whether it measured the default.
    """
    progress, config = run.progress(), run.config()
    default = run_advice(progress, config, DEFAULT_PREDICTOR)
    if default is not None:
        return {DEFAULT_PREDICTOR: default.b_crit}, True
    first = config.measured_schemes[0]
    names = [Candidate(SCHEMES[first].name, loss, "xM").name for loss in ("policy", "total")] if first in SCHEMES else []
    advice = {name: run_advice(progress, config, name) for name in names}
    return {name: a.b_crit for name, a in advice.items() if a is not None and math.isfinite(a.b_crit.point)}, False


#: ``settings.json``'s settings, in the order ``rl-gns scaling --help`` lists them.
SCALING_FLAGS = ("n_steps", "n_minibatches", "minibatch_size", "n_epochs", "iterations", "env_agent_steps", "device")


def commands(config: ScalingReportConfig, settings: dict, measured: list[dict]) -> list[str]:
    """The commands that make the report again, with its paths as they were given: ``rl-gns scaling`` with every
    setting ``settings.json`` records and the env counts and ranks measured, then its report alone
    (``--report-only``) with the report's options."""
    n_envs = sorted({row["n_envs"] for row in measured})
    nproc = sorted({row.get("nproc") or 1 for row in measured})
    flags = [f"--env {settings['env']}", f"--n-envs {' '.join(map(str, n_envs))}"]
    flags += [f"--nproc {' '.join(map(str, nproc))}"] if nproc != [1] else []
    flags += [f"--{key.replace('_', '-')} {settings[key]}" for key in SCALING_FLAGS if settings.get(key) is not None]
    scaling_dir = shlex.quote(str(config.scaling_dir))
    given = (("sweep", config.sweep), ("target", config.target), ("noise_run", config.noise_run))
    options = [f"--{key.replace('_', '-')} {shlex.quote(str(value))}" for key, value in given if value is not None]
    options.append(f"--devices {' '.join(map(str, config.devices))}")
    return [
        " ".join(["rl-gns scaling", *flags, "--out", scaling_dir]),
        " ".join(["rl-gns scaling --report-only --out", scaling_dir, *options]),
    ]


def report(config: ScalingReportConfig) -> Path:
    """Fit the throughput model to ``measurements.jsonl``, predict, and write scaling.json, report.md, scaling.png."""
    check(config)
    out = config.scaling_dir
    settings = read_settings(out)
    measured = read_measurements(out)
    rows = [r for r in measured if r.get("nproc", 1) == 1]
    n_K = np.array([r["n_envs"] for r in rows], dtype=float)
    model = fit_throughput_model(
        n_K,
        np.array([r["rollout_s_per_iteration"] for r in rows]),
        np.array([r["update_s_per_iteration"] for r in rows]),
        settings["n_steps"],
        settings["n_epochs"],
        None if settings["minibatch_size"] else settings["n_minibatches"],
        settings["minibatch_size"],
    )
    options = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items() if k != "scaling_dir"}
    options |= {
        key: relative(value, out) for key, value in (("sweep", config.sweep), ("noise_run", config.noise_run)) if value
    }
    result: dict = {
        "config": {**settings, **options, "out": out.resolve().name},
        "commands": commands(config, settings, measured),
    }
    result["measurements"] = rows
    result["model"] = asdict(model)
    result["model_seconds_per_iteration_K"] = model.seconds_per_iteration(n_K).tolist()
    result["data_parallel"] = data_parallel(model, rows, [r for r in measured if r.get("nproc", 1) > 1])

    n_steps = settings["n_steps"]
    marks: dict[str, dict] = {}  # label -> {"n_envs": at the critical size and its 95 % interval's ends, "loss"}
    if config.noise_run is not None:
        run = RunDir(config.noise_run)
        predictions, default_measured = noise_predictions(run)
        result["noise_scale"] = {
            "run": relative(config.noise_run, out),
            "n_envs": run.config().n_envs,
            "default_measured": default_measured,
            "predictions": {name: [b.point, float(b.low), float(b.high)] for name, b in predictions.items()},
        }
        for name, b in predictions.items():
            label = f"B_simple of the noise run, {predictor_label(name)}: {interval_text(b.point, (b.low, b.high))}"
            envs = [b.point / n_steps, float(b.low) / n_steps, float(b.high) / n_steps]
            marks[label] = {"n_envs": envs, "loss": parse_predictor(name).loss, "default": name == DEFAULT_PREDICTOR}
    prediction = None
    if config.sweep is not None:
        target, fit, ci, sweep_settings = sweep_fit(config.sweep, config.target)
        grid = np.unique(np.geomspace(n_K.min(), n_K.max() * 4, 200))
        prediction = {
            "sweep": relative(config.sweep, out),
            "sweep_backend": sweep_settings.get("backend"),
            "target": target,
            "fit": asdict(fit),
            "n_envs": grid.tolist(),
            "wall_s": {str(d): predicted_wall_s(model, fit, grid, d).tolist() for d in config.devices},
        }
        for d in config.devices:
            wall = predicted_wall_s(model, fit, n_K, d)
            prediction[f"wall_s_measured_n_envs_D{d}"] = wall.tolist()
        low, high = ci if ci is not None else (math.nan, math.nan)
        envs = [fit.b_crit / n_steps, low / n_steps, high / n_steps]
        label = f"B_crit fitted on the sweep: {interval_text(fit.b_crit, ci)}"
        marks[label] = {"n_envs": envs, "loss": None, "default": False}
        result["prediction"] = prediction
    result["marks_n_envs"] = marks
    result_json, figure, report_md = (out / name for name in OUTPUTS)
    write_atomically(result_json, json.dumps(result, indent=2) + "\n")
    save_figure(plot_scaling(result), figure)
    write_report(result, report_md)
    return report_md


def data_parallel(model: ThroughputModel, one_process: list[dict], ranks: list[dict]) -> list[dict]:
    """Measured data-parallel rows against one process at the same ``n_envs`` and the model's ideal prediction.

    :return: per row: ``n_envs``, ``nproc``, measured seconds per iteration and its split, ``speedup`` over one
        process measured at the same ``n_envs`` (NaN if none), ``efficiency = speedup / nproc``, and the model's
        ``predicted_speedup`` (an ideal all-reduce: the per-env and per-sample terms divided by ``nproc``).
    """
    single = {r["n_envs"]: r["seconds_per_iteration"] for r in one_process}
    out = []
    for row in ranks:
        n, d = row["n_envs"], row["nproc"]
        speedup = single[n] / row["seconds_per_iteration"] if n in single else math.nan
        predicted = float(model.seconds_per_iteration(n) / model.seconds_per_iteration(n, d))
        keys = ("seconds_per_iteration", "rollout_s_per_iteration", "update_s_per_iteration", "all_reduce_s_per_iteration")
        out.append({"n_envs": n, "nproc": d, **{k: row[k] for k in keys}, "agent_steps_per_s": row["agent_steps_per_s"],
                    "speedup": speedup, "efficiency": speedup / d, "predicted_speedup": predicted})  # fmt: skip
    return out


def interval_text(point: float, ci: tuple[float, float] | None) -> str:
    """``26,527 agent steps [10,900, ∞]``: a critical rollout size with its 95 % interval, where it has one."""
    return f"{number(point)} agent steps" + (f" [{number(ci[0])}, {number(ci[1])}]" if ci is not None else "")


#: Colours of the measured curves, apart from the loss colours that the noise-scale marks use.
CURVE_COLORS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def plot_marks(result: dict, ax: Axes, labelled: bool) -> None:
    """The ``n_envs`` at each critical rollout size (a line in its loss's colour, black for the sweep's fitted
    ``B_crit``) with its 95 % interval (a span; hatched to the right edge where it has no upper end), the default
    predictor's bold, and the noise run's own ``n_envs``; with legend entries where ``labelled``."""
    for label, mark in result["marks_n_envs"].items():
        n_mark, low, high = mark["n_envs"]
        color = LOSS_COLORS[mark["loss"]] if mark["loss"] else "black"
        ax.axvline(n_mark, color=color, lw=2.4 if mark["default"] else 1.2, ls="-" if mark["default"] else "--",
                   label=label if labelled else None)  # fmt: skip
        if math.isfinite(low):
            interval_span(ax, low, high, color, label="95 % interval" if labelled else None)
    noise = result.get("noise_scale")
    if noise is not None:
        ax.axvline(noise["n_envs"], color="gray", ls=":", lw=1.2,
                   label=f"n_envs of the noise run ({noise['n_envs']})" if labelled else None)  # fmt: skip


def plot_throughput(result: dict, ax: Axes) -> Axes:
    """Agent steps per second against ``n_envs``: the env alone, PPO end to end, the throughput model, data-parallel
    ranks measured and as the model predicts them, and the critical rollout sizes (:func:`plot_marks`)."""
    rows = result["measurements"]
    n = np.array([r["n_envs"] for r in rows], dtype=float)
    model = ThroughputModel(**result["model"])
    ax.plot(n, [r["env_only_agent_steps_per_s"] for r in rows], "o-", color=CURVE_COLORS[0], label="env only (random actions)")
    ax.plot(n, [r["agent_steps_per_s"] for r in rows], "s-", color=CURVE_COLORS[1], label="PPO end to end (measured)")
    grid = np.geomspace(n.min(), n.max(), 100)
    ax.plot(grid, grid * model.n_steps / model.seconds_per_iteration(grid), "--", color="gray", lw=1, label="throughput model")
    for d, color in zip(sorted({r["nproc"] for r in result["data_parallel"]}), CURVE_COLORS[2:], strict=False):
        ranks = [r for r in result["data_parallel"] if r["nproc"] == d]
        n_d = np.array([r["n_envs"] for r in ranks], dtype=float)
        ax.plot(n_d, [r["agent_steps_per_s"] for r in ranks], "^", ms=8, color=color, label=f"{d} ranks (measured)")
        ax.plot(n_d, n_d * model.n_steps / model.seconds_per_iteration(n_d, d), "x", ms=8, color=color,
                label=f"{d} ranks (model, ideal)")  # fmt: skip
    ax.set(xscale="log", yscale="log", ylabel="agent steps / s", title="Throughput")
    plot_marks(result, ax, labelled=True)
    return ax


def plot_time_split(result: dict, ax: Axes) -> Axes:
    """Seconds per PPO iteration per env against ``n_envs``, the rollout's and the update's (flat: linear growth)."""
    rows = result["measurements"]
    n = np.array([r["n_envs"] for r in rows], dtype=float)
    rollout = np.array([r["rollout_s_per_iteration"] for r in rows])
    update = np.array([r["update_s_per_iteration"] for r in rows])
    ax.plot(n, rollout / n, "o-", color=CURVE_COLORS[0], label="rollout")
    ax.plot(n, update / n, "s-", color=CURVE_COLORS[1], label="update (incl. noise-scale measurement)")
    ax.set(xscale="log", yscale="log", ylabel="seconds per iteration / n_envs")
    ax.set_title("Time per iteration per env (flat = linear growth)")
    return ax


def plot_memory(result: dict, ax: Axes) -> Axes:
    """Peak resident memory (MiB) against ``n_envs``."""
    rows = result["measurements"]
    ax.plot([r["n_envs"] for r in rows], [r["peak_rss_mib"] for r in rows], "o-", color=CURVE_COLORS[0])
    ax.set(xscale="log", yscale="log", ylabel="peak resident memory, MiB", title="Peak memory")
    return ax


def plot_wall_time(result: dict, ax: Axes) -> Axes:
    """The predicted wall time to the sweep's target (hours) against ``n_envs``, one line per device count, and the
    critical rollout sizes (:func:`plot_marks`, without legend entries: the throughput panel's name them)."""
    prediction = result["prediction"]
    devices = prediction["wall_s"]
    shades = [plt.get_cmap("Purples")(x) for x in np.linspace(0.5, 1.0, len(devices))]
    for (d, wall), color in zip(devices.items(), shades, strict=True):
        ax.plot(prediction["n_envs"], np.array(wall) / 3600, color=color, label=f"{d} device{'s' if d != '1' else ''}")
    ax.set_title(f"Predicted wall time to score {prediction['target']:g}\n(S(B) from {prediction['sweep']})")
    ax.set(xscale="log", yscale="log", ylabel="hours")
    plot_marks(result, ax, labelled=False)
    return ax


def plot_scaling(result: dict) -> plt.Figure:
    """``scaling.png``: panels against ``n_envs`` (whole numbers on the axis): throughput, time split, peak memory
    and, where a sweep gives one, the predicted wall time to its target; three panels in a row without it."""
    model = ThroughputModel(**result["model"])
    panels = [plot_throughput, plot_time_split, plot_memory] + ([plot_wall_time] if result.get("prediction") else [])
    shape, size = ((2, 2), (13, 12)) if len(panels) == 4 else ((1, 3), (19, 7.5))
    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    envs = f"n_envs (rollout size = n_envs × {model.n_steps} agent steps)"
    for plot, ax in zip(panels, axes.flat, strict=True):
        plot(result, ax)
        ax.set_xlabel(envs)
        env_count_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
        ax.grid(alpha=0.3, which="major")
        legend(ax, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, frameon=False)
    batches = f"M {model.n_minibatches}" if model.minibatch_size is None else f"minibatch {model.minibatch_size}"
    title = f"{result['config']['env']}: PPO scaling with n_envs (n_steps {model.n_steps}, {batches})"
    noise = result.get("noise_scale")
    if noise is not None and not noise["default_measured"]:
        title += f"\nthe noise run did not measure {DEFAULT_WORDS}: M × B_simple of its scheme stands in"
    fig.suptitle(title)
    return fig


def write_report(result: dict, path: Path) -> None:
    """A markdown table of the measurements, the fitted model and the prediction."""
    model = result["model"]
    fixed = model["minibatch_size"]
    batches = f"M {model['n_minibatches']} minibatches" if fixed is None else f"minibatch {fixed}"
    measure, report = result["commands"]
    lines = [
        f"# Env-count scaling: {result['config']['env']}",
        "",
        f"Commands: `{measure}`, then `{report}`. "
        f"Agent steps (1 agent step = {FRAME_SKIP} frames); NoiseScalePPO with the default measurement, n_steps "
        f"{model['n_steps']}, {batches}, {model['n_epochs']} epochs.",
        "",
        "| n_envs | rollout size | env only, agent steps/s | end to end, agent steps/s | rollout s/iter | update s/iter"
        " | rollout share | peak RSS MiB | model s/iter |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row, modelled in zip(result["measurements"], result["model_seconds_per_iteration_K"], strict=True):
        share = row["rollout_s_per_iteration"] / (row["rollout_s_per_iteration"] + row["update_s_per_iteration"])
        lines.append(
            f"| {row['n_envs']} | {row['rollout_size']} | {row['env_only_agent_steps_per_s']:.0f}"
            f" | {row['agent_steps_per_s']:.0f}"
            f" | {row['rollout_s_per_iteration']:.2f} | {row['update_s_per_iteration']:.2f} | {share:.0%}"
            f" | {row['peak_rss_mib']:.0f} | {modelled:.2f} |"
        )
    lines += [
        "",
        f"Throughput model: rollout = n_steps·(α + β·n_envs), α = {model['alpha'] * 1e3:.2f} ms per vector step,"
        f" β = {model['beta'] * 1e3:.3f} ms per agent step; update = n_epochs·M·γ + δ·samples,"
        f" γ = {model['gamma'] * 1e3:.1f} ms per gradient step, δ = {model['delta'] * 1e3:.3f} ms per sample per epoch.",
        "",
    ]
    if "noise_scale" in result:
        noise = result["noise_scale"]
        lacks = (
            ""
            if noise["default_measured"]
            else f"; it did not measure {DEFAULT_WORDS}, so M × B_simple of its policy and total losses stands in"
        )
        lines.append(
            f"Noise scale from `{noise['run']}` ({noise['n_envs']} envs), pooled over the run as `rl-gns advise` reads it, "
            f"with 95 % intervals{lacks}."
        )
    for label, mark in result["marks_n_envs"].items():
        n_mark, low, high = mark["n_envs"]
        interval = f" [{number(low)}, {number(high)}]" if math.isfinite(low) else ""
        lines.append(f"- {label} → n_envs ≈ {number(n_mark)}{interval} at n_steps {model['n_steps']}")
    if result["data_parallel"]:
        lines += [
            "",
            "Data-parallel ranks (`--nproc`; each rank steps n_envs / nproc envs, its torch threads a share of the cores),"
            " against one process at the same n_envs and the model's ideal prediction:",
            "",
            "| n_envs | ranks | s/iter | rollout s | update s | of which all-reduce s | speedup | efficiency"
            " | model speedup |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in result["data_parallel"]:
            lines.append(
                f"| {r['n_envs']} | {r['nproc']} | {r['seconds_per_iteration']:.2f} | {r['rollout_s_per_iteration']:.2f}"
                f" | {r['update_s_per_iteration']:.2f} | {r['all_reduce_s_per_iteration']:.2f} | {r['speedup']:.2f}x"
                f" | {r['efficiency']:.0%} | {r['predicted_speedup']:.2f}x |"
            )
    prediction = result.get("prediction")
    if prediction:
        lines += [
            "",
            f"Predicted wall time to score {prediction['target']:g} = S(B)·seconds per iteration, with S(B) fitted on"
            f" `{prediction['sweep']}` (backend {prediction['sweep_backend']}; its S(B) is borrowed for this game's pixel"
            " agent, so read the curve's shape, not its hours). Data-parallel devices assume an ideal all-reduce.",
            "",
            "| n_envs | " + " | ".join(f"{d} device(s), h" for d in prediction["wall_s"]) + " |",
            "|---|" + "---|" * len(prediction["wall_s"]),
        ]
        for i, row in enumerate(result["measurements"]):
            walls = [prediction[f"wall_s_measured_n_envs_D{d}"][i] for d in prediction["wall_s"]]
            cells = " | ".join("—" if math.isnan(wall) else f"{wall / 3600:.2f}" for wall in walls)
            lines.append(f"| {row['n_envs']} | {cells} |")
    write_atomically(path, "\n".join(lines) + "\n")
