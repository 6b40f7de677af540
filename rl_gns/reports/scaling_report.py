"""``rl-gns scaling-report`` (and the last stage of ``rl-gns scaling``): the throughput model and what more envs buy.

Reads only files: a scaling directory (``settings.json``, ``measurements.jsonl``), optionally an analysed
sweep (``results.json``: its fitted ``S(B)``) and a training run (its noise scale). Fits
:class:`rl_gns.core.throughput.ThroughputModel`, predicts the wall time to the sweep's target per device
count, and writes ``scaling.json``, ``report.md`` and ``scaling.png``, marking the ``n_envs`` at which the
rollout reaches the run's measured critical size ``M × B_simple`` and the sweep's fitted ``B_crit``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tyro

from rl_gns.core.atari import FRAME_SKIP
from rl_gns.core.throughput import ThroughputModel, fit_throughput_model, predicted_wall_s
from rl_gns.core.tradeoff import TradeoffFit
from rl_gns.records.rundir import RunDir, noise_sums, read_json
from rl_gns.records.scaling_log import MEASUREMENTS, read_measurements, read_settings
from rl_gns.reports.figures import plt, relative, save_figure


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
    """Fail early (``ValueError``) on missing inputs."""
    one_process = [r for r in read_measurements(config.scaling_dir / MEASUREMENTS) if r.get("nproc", 1) == 1]
    if len(one_process) < 2:
        raise ValueError(
            f"{config.scaling_dir}/{MEASUREMENTS} needs at least 2 n_envs measured on one process (rl-gns scaling)"
        )
    if min(config.devices) < 1:
        raise ValueError(f"--devices must be positive, got {config.devices}")
    if config.sweep is not None:
        if not (config.sweep / "results.json").exists():
            raise ValueError(f"{config.sweep}/results.json not found: run rl-gns analyze on the sweep")
        sweep_fit(config.sweep, config.target)
    if config.noise_run is not None:
        run = RunDir(config.noise_run)
        run.logged_progress()
        if not run.config().measured_schemes:
            raise ValueError(f"{config.noise_run} did not measure the noise scale (trained with --no-gns)")


def sweep_fit(sweep_dir: Path, target: float | None) -> tuple[float, TradeoffFit, dict]:
    """The target, fitted ``S(B)`` and settings of a sweep's ``results.json`` (highest fitted target by default).

    :raises ValueError: if no target (or not ``target``) has a fit: fewer than 2 rollout sizes reached it.
    """
    results = read_json(sweep_dir / "results.json")
    fitted = [t for t in results["targets"] if t.get("fit")]
    if target is not None:
        fitted = [t for t in fitted if t["target"] == target]
    if not fitted:
        which = "any target" if target is None else f"target {target:g}"
        raise ValueError(f"{sweep_dir}/results.json has no B_crit fit for {which} (fewer than 2 rollout sizes reached it)")
    chosen = max(fitted, key=lambda t: t["target"])
    fit = chosen["fit"]
    return chosen["target"], TradeoffFit(fit["s_min"], fit["e_min"], fit["rms_log_residual"]), results["settings"]


def report(config: ScalingReportConfig) -> Path:
    """Fit the throughput model to ``measurements.jsonl``, predict, and write scaling.json, report.md, scaling.png."""
    check(config)
    out = config.scaling_dir
    settings = read_settings(out)
    measured = read_measurements(out / MEASUREMENTS)
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
    result: dict = {"config": {**settings, **options, "out": out.resolve().name}}
    result["measurements"] = rows
    result["model"] = asdict(model)
    result["model_seconds_per_iteration_K"] = model.seconds_per_iteration(n_K).tolist()
    result["data_parallel"] = data_parallel(model, rows, [r for r in measured if r.get("nproc", 1) > 1])

    marks: dict[str, float] = {}  # label -> n_envs
    if config.noise_run is not None:
        run = RunDir(config.noise_run)
        progress, run_config = run.progress(), run.config()
        scheme = run_config.measured_schemes[0]
        averages = {loss: noise_sums(progress, run_config, scheme, loss).b_simple for loss in ("policy", "total")}
        noise = {loss: b for loss, b in averages.items() if math.isfinite(b)}
        m_run = run_config.n_minibatches
        result["noise_scale"] = {"run": relative(config.noise_run, out), "b_simple": noise, "n_minibatches": m_run}
        for loss, b_simple in noise.items():
            marks[f"M·B_simple ({loss}) = {m_run * b_simple:,.0f}"] = m_run * b_simple / settings["n_steps"]
    prediction = None
    if config.sweep is not None:
        target, fit, sweep_settings = sweep_fit(config.sweep, config.target)
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
        marks[f"sweep B_crit = {fit.b_crit:,.0f}"] = fit.b_crit / settings["n_steps"]
        result["prediction"] = prediction
    result["marks_n_envs"] = marks
    (out / "scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    plot_scaling(result, out / "scaling.png")
    write_report(result, out / "report.md")
    return out / "report.md"


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


def plot_scaling(result: dict, path: Path) -> None:
    """Four panels against n_envs: throughput, time split, peak memory, predicted wall time to the target."""
    rows = result["measurements"]
    n = np.array([r["n_envs"] for r in rows], dtype=float)
    model = ThroughputModel(**result["model"])
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0, 0]
    ax.plot(n, [r["env_only_agent_steps_per_s"] for r in rows], "o-", label="env only (random actions)")
    ax.plot(n, [r["agent_steps_per_s"] for r in rows], "s-", label="PPO end to end (measured)")
    grid = np.geomspace(n.min(), n.max(), 100)
    ax.plot(grid, grid * model.n_steps / model.seconds_per_iteration(grid), "k--", lw=1, label="throughput model")
    for d in sorted({r["nproc"] for r in result["data_parallel"]}):
        ranks = [r for r in result["data_parallel"] if r["nproc"] == d]
        n_d = np.array([r["n_envs"] for r in ranks], dtype=float)
        ax.plot(n_d, [r["agent_steps_per_s"] for r in ranks], "^", ms=8, label=f"{d} ranks (measured)")
        ax.plot(n_d, n_d * model.n_steps / model.seconds_per_iteration(n_d, d), "x", ms=8, label=f"{d} ranks (model, ideal)")
    ax.set(xscale="log", yscale="log", xlabel="n_envs", ylabel="agent steps / s", title="Throughput")
    ax.legend()
    ax = axes[0, 1]
    rollout = np.array([r["rollout_s_per_iteration"] for r in rows])
    update = np.array([r["update_s_per_iteration"] for r in rows])
    ax.plot(n, rollout / n, "o-", label="rollout")
    ax.plot(n, update / n, "s-", label="update (incl. noise-scale measurement)")
    ax.set(xscale="log", yscale="log", xlabel="n_envs", ylabel="seconds per iteration / n_envs")
    ax.set_title("Time per iteration per env (flat = linear growth)")
    ax.legend()
    ax = axes[1, 0]
    ax.plot(n, [r["peak_rss_mib"] for r in rows], "o-")
    ax.set(xscale="log", yscale="log", xlabel="n_envs", ylabel="peak resident memory, MiB", title="Peak memory")
    ax = axes[1, 1]
    prediction = result.get("prediction")
    if prediction:
        for d, wall in prediction["wall_s"].items():
            ax.plot(prediction["n_envs"], np.array(wall) / 3600, label=f"{d} device{'s' if d != '1' else ''}")
        ax.set_title(f"Predicted wall time to score {prediction['target']:g}\n(S(B) from {prediction['sweep']})")
    for (label, n_mark), style in zip(result["marks_n_envs"].items(), ["r:", "m-.", "g--"], strict=False):
        for a in (axes[0, 0], axes[1, 1]):
            a.axvline(n_mark, color=style[0], ls=style[1:], lw=1.2, label=f"{label} → n_envs {n_mark:.0f}")
    ax.set(xscale="log", yscale="log", xlabel="n_envs", ylabel="hours")
    if ax.get_legend_handles_labels()[0]:  # no prediction without a sweep
        ax.legend(fontsize=8)
    axes[0, 0].legend(fontsize=8)
    batches = f"M {model.n_minibatches}" if model.minibatch_size is None else f"minibatch {model.minibatch_size}"
    fig.suptitle(f"{result['config']['env']}: PPO scaling with n_envs (n_steps {model.n_steps}, {batches})")
    save_figure(fig, path)


def write_report(result: dict, path: Path) -> None:
    """A markdown table of the measurements, the fitted model and the prediction."""
    model = result["model"]
    fixed = model["minibatch_size"]
    batches = f"M {model['n_minibatches']} minibatches" if fixed is None else f"minibatch {fixed}"
    ranks = sorted({1} | {r["nproc"] for r in result["data_parallel"]})
    nproc = f" --nproc {','.join(map(str, ranks))}" if len(ranks) > 1 else ""
    lines = [
        f"# Env-count scaling: {result['config']['env']}",
        "",
        f"Command: `rl-gns scaling --env {result['config']['env']} --n-envs "
        f"{','.join(str(r['n_envs']) for r in result['measurements'])}{nproc} --out {result['config']['out']}`. "
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
        values = ", ".join(f"{loss} {value:,.0f}" for loss, value in noise["b_simple"].items()) or "not resolved"
        lines.append(f"Noise scale from `{noise['run']}` (B_simple pooled over the run, samples per gradient step): {values}.")
    for label, n_mark in result["marks_n_envs"].items():
        lines.append(f"- {label} agent steps → n_envs ≈ {n_mark:.0f} at n_steps {model['n_steps']}")
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
    path.write_text("\n".join(lines) + "\n")
