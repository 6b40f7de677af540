"""``rl-gns scaling``: how PPO throughput grows with ``n_envs`` on this machine, and what it buys.

Three stages talking through files in ``out``:

1. measure (one fresh process per ``n_envs``, so peak memory is its own): env-only throughput with
   random actions, then end-to-end :class:`rl_gns.NoiseScalePPO` (default measurement) with
   ``n_steps``, the number of minibatches ``M`` and ``n_epochs`` fixed, as in a sweep: per-iteration
   rollout and update time and peak memory. One JSON line per ``n_envs`` in ``measurements.jsonl``,
   appended as each finishes (a rerun skips those measured).
2. model (AdaptDL's "goodput" idea: throughput times statistical efficiency), fitted to those lines::

       rollout_s(n) = n_steps · (α + β·n)              α: per vector step, β: per env step
       update_s(n)  = n_epochs · M · γ + δ · n_epochs · n · n_steps     γ: per gradient step, δ: per sample

   With ``D`` data-parallel devices each holding ``n / D`` envs and a ``1 / D`` share of every
   minibatch (an ideal all-reduce, so a lower bound on time), ``β·n`` and ``δ·…`` are divided by ``D``.
   Wall time to a target is ``S(B) · seconds_per_iteration(n, D)`` with ``B = n·n_steps`` and a sweep's
   fitted ``S(B) = S_min + E_min / B`` (McCandlish et al. eq. 2.11).
3. report: ``scaling.json``, ``report.md`` and ``scaling.png``, marking the ``n_envs`` at which the
   rollout reaches the measured noise scale's critical size ``M × B_simple`` (beyond it more envs
   mostly buy experience, not fewer iterations) and the sweep's fitted ``B_crit``.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from rl_gns.atari import FRAME_SKIP, make_atari_vec_env, resolve_game
from rl_gns.ppo import ATARI_PPO_KWARGS, NoiseScalePPO
from rl_gns.progress import read_progress
from rl_gns.throughput import env_steps_per_s, peak_rss_mib, time_phases
from rl_gns.tradeoff import TradeoffFit
from rl_gns.train import run_average


@dataclass
class ScalingConfig:
    """Measure PPO throughput against n_envs on this machine; predict wall time to a target from a sweep's fit."""

    env: str = "BeamRider"
    """Atari game."""
    n_envs: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256])
    """Env counts to measure, smallest first."""
    out: Path = Path("scaling/beamrider")
    """Directory for measurements.jsonl, scaling.json, report.md, scaling.png."""
    n_steps: int = 128
    """Agent steps per env per rollout (fixed; rl-zoo3 Atari setting)."""
    n_minibatches: int = 4
    """Minibatches per epoch, M, fixed as in a sweep (the minibatch grows with n_envs; rl-zoo3's 256 at 8 envs)."""
    minibatch_size: int | None = None
    """Fix the minibatch instead (rl-zoo3: 256 samples), so M grows with n_envs; overrides --n-minibatches."""
    n_epochs: int = 4
    """Passes over each rollout (fixed)."""
    iterations: int = 4
    """Timed PPO iterations per n_envs, after one untimed warm-up iteration (4: one default noise-scale
    measurement among them, so the update time includes its amortised cost)."""
    env_agent_steps: int = 16384
    """Agent steps of the env-only measurement per n_envs (at least 32 vector steps)."""
    device: str = "cpu"
    """Torch device of the agent."""
    sweep: Path | None = Path("sweeps/beamrider_ram")
    """Sweep directory whose results.json gives S(B) (from rl-gns analyze); None: no wall-time prediction."""
    target: float | None = None
    """Target score of the sweep to predict for (default: its highest target with a fit)."""
    noise_run: Path | None = Path("results/beamrider_1m")
    """Training run whose noise scale, averaged over the run, marks the critical n_envs (None: no mark)."""
    devices: list[int] = field(default_factory=lambda: [1, 2, 4, 8])
    """Data-parallel device counts to predict for."""
    report_only: bool = False
    """Skip measuring; redo the model and report from measurements.jsonl."""


def check(config: ScalingConfig) -> None:
    """Validate settings before anything is written (raises ``ValueError``)."""
    resolve_game(config.env)
    if not config.n_envs or min(config.n_envs) < 1:
        raise ValueError(f"--n-envs must be positive integers, got {config.n_envs}")
    if config.iterations < 1 or config.n_epochs < 1 or config.n_steps < 2:
        raise ValueError("iterations and n_epochs must be >= 1 and n_steps >= 2")
    if min(config.devices) < 1:
        raise ValueError(f"--devices must be positive, got {config.devices}")
    if config.sweep is not None and not (config.sweep / "results.json").exists():
        raise ValueError(f"{config.sweep}/results.json not found: run rl-gns analyze on the sweep, or pass --sweep None")
    if config.noise_run is not None and not (config.noise_run / "progress.csv").exists():
        raise ValueError(f"{config.noise_run}/progress.csv not found: pass a training run directory, or --noise-run None")
    if config.report_only and not (config.out / "measurements.jsonl").exists():
        raise ValueError(f"--report-only needs {config.out}/measurements.jsonl")
    for n_envs in config.n_envs:
        if config.minibatch_size is None and (n_envs * config.n_steps) % config.n_minibatches:
            raise ValueError(f"n_minibatches {config.n_minibatches} must divide the rollout size of n_envs {n_envs}")
        if config.minibatch_size is not None and (n_envs * config.n_steps) % config.minibatch_size:
            raise ValueError(f"minibatch_size {config.minibatch_size} must divide the rollout size of n_envs {n_envs}")


# --- stage 1: measure -------------------------------------------------------------------------


def measure_n_envs(config: ScalingConfig, n_envs: int) -> dict:
    """Env-only and end-to-end throughput, time split and peak memory at one ``n_envs`` (run in a fresh process)."""
    game = resolve_game(config.env)
    env = make_atari_vec_env(game, n_envs, seed=0)
    env_sps = env_steps_per_s(env, max(32, config.env_agent_steps // n_envs))
    rollout_size = n_envs * config.n_steps
    ppo_kwargs = {**ATARI_PPO_KWARGS, "n_steps": config.n_steps, "n_epochs": config.n_epochs}
    ppo_kwargs["batch_size"] = config.minibatch_size or rollout_size // config.n_minibatches
    model = NoiseScalePPO("CnnPolicy", env, seed=0, device=config.device, **ppo_kwargs)
    model.learn(rollout_size)  # warm-up iteration
    times = time_phases(model)
    start = time.perf_counter()
    model.learn(config.iterations * rollout_size, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    env.close()
    return {
        "n_envs": n_envs,
        "rollout_size": rollout_size,
        "minibatch_size": ppo_kwargs["batch_size"],
        "env_only_agent_steps_per_s": env_sps,
        "agent_steps_per_s": config.iterations * rollout_size / wall,
        "seconds_per_iteration": wall / config.iterations,
        "rollout_s_per_iteration": times.rollout_s / config.iterations,
        "update_s_per_iteration": times.update_s / config.iterations,
        "peak_rss_mib": peak_rss_mib(),
    }


def _measure_child(config: ScalingConfig, n_envs: int, queue: mp.Queue) -> None:
    queue.put(measure_n_envs(config, n_envs))


def read_measurements(path: Path) -> list[dict]:
    """The measured lines of ``measurements.jsonl``, smallest ``n_envs`` first (empty if none)."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda row: row["n_envs"])


def measure(config: ScalingConfig) -> list[dict]:
    """Measure every ``n_envs`` not yet in ``measurements.jsonl``, each in a fresh process, appending as it goes."""
    path = config.out / "measurements.jsonl"
    done = {row["n_envs"] for row in read_measurements(path)}
    context = mp.get_context("spawn")
    for n_envs in config.n_envs:
        if n_envs in done:
            print(f"scaling: n_envs {n_envs} measured before, skipped", flush=True)
            continue
        queue = context.Queue()
        process = context.Process(target=_measure_child, args=(config, n_envs, queue))
        process.start()
        row = queue.get()
        process.join()
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(
            f"scaling: n_envs {n_envs:>4}: env-only {row['env_only_agent_steps_per_s']:7.0f}, end to end"
            f" {row['agent_steps_per_s']:6.0f} agent steps/s; rollout {row['rollout_s_per_iteration']:.2f} s +"
            f" update {row['update_s_per_iteration']:.2f} s per iteration; peak {row['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    return read_measurements(path)


# --- stage 2: model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ThroughputModel:
    """Seconds per PPO iteration as a function of ``n_envs`` and data-parallel devices (see the module docstring)."""

    alpha: float
    """Rollout seconds per vector step, independent of n_envs (Python, launch overheads)."""
    beta: float
    """Rollout seconds per agent step (emulation, inference, buffer)."""
    gamma: float
    """Update seconds per gradient step, independent of the minibatch size."""
    delta: float
    """Update seconds per sample per epoch (forward and backward)."""
    n_steps: int
    n_epochs: int
    n_minibatches: int | None = None
    """Minibatches per epoch when fixed (a sweep's protocol); else ``minibatch_size`` is."""
    minibatch_size: int | None = None
    """Samples per minibatch when fixed (rl-zoo3's protocol); the number of minibatches then grows with n_envs."""

    def minibatches(self, n_envs: np.ndarray | float) -> np.ndarray:
        """Minibatches per epoch, M: fixed, or ``n_envs · n_steps / minibatch_size``."""
        n = np.asarray(n_envs, dtype=float)
        if self.minibatch_size is not None:
            return n * self.n_steps / self.minibatch_size
        assert self.n_minibatches is not None, "one of n_minibatches and minibatch_size must be set"
        return np.full_like(n, self.n_minibatches)

    def rollout_s(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """``n_steps · (α + β·n_envs / D)``, seconds."""
        return self.n_steps * (self.alpha + self.beta * np.asarray(n_envs, dtype=float) / devices)

    def update_s(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """``n_epochs · M · γ + δ · n_epochs · n_envs · n_steps / D``, seconds."""
        samples = self.n_epochs * np.asarray(n_envs, dtype=float) * self.n_steps
        return self.n_epochs * self.minibatches(n_envs) * self.gamma + self.delta * samples / devices

    def seconds_per_iteration(self, n_envs: np.ndarray | float, devices: int = 1) -> np.ndarray:
        """Rollout plus update seconds of one PPO iteration."""
        return self.rollout_s(n_envs, devices) + self.update_s(n_envs, devices)


def fit_throughput_model(
    n_envs_K: np.ndarray,
    rollout_s_K: np.ndarray,
    update_s_K: np.ndarray,
    n_steps: int,
    n_epochs: int,
    n_minibatches: int | None = None,
    minibatch_size: int | None = None,
) -> ThroughputModel:
    """Non-negative least squares of the two linear laws, each in relative error (every size weighs alike).

    :param n_envs_K: ``(K,)`` env counts measured.
    :param rollout_s_K: ``(K,)`` rollout seconds per iteration.
    :param update_s_K: ``(K,)`` update seconds per iteration.
    :param n_steps: agent steps per env per rollout.
    :param n_epochs: passes over each rollout.
    :param n_minibatches: minibatches per epoch if fixed, else ``None``.
    :param minibatch_size: samples per minibatch if fixed, else ``None`` (exactly one of the two). Then the
        gradient steps grow in step with the samples, so only their joint per-sample cost is identified:
        it is returned as ``delta``, with ``gamma = 0``.
    """
    if (n_minibatches is None) == (minibatch_size is None):
        raise ValueError("give exactly one of n_minibatches and minibatch_size")
    shape = ThroughputModel(0.0, 0.0, 0.0, 0.0, n_steps, n_epochs, n_minibatches, minibatch_size)
    n = np.asarray(n_envs_K, dtype=float)
    rollout = np.asarray(rollout_s_K, dtype=float)
    update = np.asarray(update_s_K, dtype=float)
    rollout_design = np.stack([np.full_like(n, n_steps), n_steps * n], axis=1) / rollout[:, None]
    (alpha, beta), _ = nnls(rollout_design, np.ones_like(n))
    if minibatch_size is None:
        update_design = np.stack([n_epochs * shape.minibatches(n), n_epochs * n * n_steps], axis=1) / update[:, None]
        (gamma, delta), _ = nnls(update_design, np.ones_like(n))
    else:  # gradient steps grow with the samples: gamma and delta are one per-sample cost, reported as delta
        (delta,), _ = nnls((n_epochs * n * n_steps / update)[:, None], np.ones_like(n))
        gamma = 0.0
    return ThroughputModel(
        float(alpha), float(beta), float(gamma), float(delta), n_steps, n_epochs, n_minibatches, minibatch_size
    )


def predicted_wall_s(model: ThroughputModel, fit: TradeoffFit, n_envs: np.ndarray, devices: int = 1) -> np.ndarray:
    """Wall seconds to the target: ``S(B) · seconds_per_iteration(n_envs, D)`` with ``B = n_envs · n_steps``;
    NaN where ``n_envs < D`` (a device holds at least one env)."""
    n = np.asarray(n_envs, dtype=float)
    wall = fit.steps(n * model.n_steps) * model.seconds_per_iteration(n, devices)
    return np.where(n >= devices, wall, np.nan)


# --- stage 3: report --------------------------------------------------------------------------


def sweep_fit(sweep_dir: Path, target: float | None) -> tuple[float, TradeoffFit, dict]:
    """The target, fitted ``S(B)`` and settings of a sweep's ``results.json`` (highest fitted target by default)."""
    results = json.loads((sweep_dir / "results.json").read_text())
    fitted = [t for t in results["targets"] if t.get("fit")]
    if target is not None:
        fitted = [t for t in fitted if t["target"] == target]
    if not fitted:
        raise ValueError(f"{sweep_dir}/results.json has no fit for target {target}")
    chosen = max(fitted, key=lambda t: t["target"])
    fit = chosen["fit"]
    return chosen["target"], TradeoffFit(fit["s_min"], fit["e_min"], fit["rms_log_residual"]), results["settings"]


def report(config: ScalingConfig) -> Path:
    """Fit the throughput model to ``measurements.jsonl``, predict, and write scaling.json, report.md, scaling.png."""
    rows = read_measurements(config.out / "measurements.jsonl")
    if len(rows) < 2:
        raise ValueError("the throughput model needs at least 2 measured n_envs")
    n_K = np.array([r["n_envs"] for r in rows], dtype=float)
    model = fit_throughput_model(
        n_K,
        np.array([r["rollout_s_per_iteration"] for r in rows]),
        np.array([r["update_s_per_iteration"] for r in rows]),
        config.n_steps,
        config.n_epochs,
        None if config.minibatch_size else config.n_minibatches,
        config.minibatch_size,
    )
    result: dict = {"config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()}}
    result["measurements"] = rows
    result["model"] = asdict(model)
    result["model_seconds_per_iteration_K"] = model.seconds_per_iteration(n_K).tolist()

    marks: dict[str, float] = {}  # label -> n_envs
    if config.noise_run is not None:
        progress = read_progress(config.noise_run / "progress.csv")
        averages = {loss: run_average(progress, loss) for loss in ("policy", "total")}
        noise = {loss: b for loss, b in averages.items() if b is not None and math.isfinite(b)}
        run_config = json.loads((config.noise_run / "config.json").read_text())
        m_run = run_config["rollout_size"] // run_config["minibatch_size"]
        result["noise_scale"] = {"run": str(config.noise_run), "b_simple": noise, "n_minibatches": m_run}
        for loss, b_simple in noise.items():
            marks[f"M·B_simple ({loss}) = {m_run * b_simple:,.0f}"] = m_run * b_simple / config.n_steps
    prediction = None
    if config.sweep is not None:
        target, fit, settings = sweep_fit(config.sweep, config.target)
        grid = np.unique(np.geomspace(n_K.min(), n_K.max() * 4, 200))
        prediction = {
            "sweep": str(config.sweep),
            "sweep_backend": settings.get("backend"),
            "target": target,
            "fit": asdict(fit),
            "n_envs": grid.tolist(),
            "wall_s": {str(d): predicted_wall_s(model, fit, grid, d).tolist() for d in config.devices},
        }
        for d in config.devices:
            wall = predicted_wall_s(model, fit, n_K, d)
            prediction[f"wall_s_measured_n_envs_D{d}"] = wall.tolist()
        marks[f"sweep B_crit = {fit.b_crit:,.0f}"] = fit.b_crit / config.n_steps
        result["prediction"] = prediction
    result["marks_n_envs"] = marks
    (config.out / "scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    plot_scaling(result, config.out / "scaling.png")
    write_report(result, config.out / "report.md")
    return config.out


def plot_scaling(result: dict, path: Path) -> None:
    """Four panels against n_envs: throughput, time split, peak memory, predicted wall time to the target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["measurements"]
    n = np.array([r["n_envs"] for r in rows], dtype=float)
    model = ThroughputModel(**result["model"])
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0, 0]
    ax.plot(n, [r["env_only_agent_steps_per_s"] for r in rows], "o-", label="env only (random actions)")
    ax.plot(n, [r["agent_steps_per_s"] for r in rows], "s-", label="PPO end to end (measured)")
    grid = np.geomspace(n.min(), n.max(), 100)
    ax.plot(grid, grid * model.n_steps / model.seconds_per_iteration(grid), "k--", lw=1, label="throughput model")
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
    ax.legend(fontsize=8)
    axes[0, 0].legend(fontsize=8)
    batches = f"M {model.n_minibatches}" if model.minibatch_size is None else f"minibatch {model.minibatch_size}"
    fig.suptitle(f"{result['config']['env']}: PPO scaling with n_envs (n_steps {model.n_steps}, {batches})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(result: dict, path: Path) -> None:
    """A markdown table of the measurements, the fitted model and the prediction."""
    model = result["model"]
    fixed = model["minibatch_size"]
    batches = f"M {model['n_minibatches']} minibatches" if fixed is None else f"minibatch {fixed}"
    lines = [
        f"# Env-count scaling: {result['config']['env']}",
        "",
        f"Command: `rl-gns scaling --env {result['config']['env']} --n-envs "
        f"{','.join(str(r['n_envs']) for r in result['measurements'])} --out {result['config']['out']}`. "
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
        values = ", ".join(f"{loss} {value:,.0f}" for loss, value in noise["b_simple"].items())
        lines.append(f"Noise scale from `{noise['run']}` (B_simple pooled over the run, samples per gradient step): {values}.")
    for label, n_mark in result["marks_n_envs"].items():
        lines.append(f"- {label} agent steps → n_envs ≈ {n_mark:.0f} at n_steps {model['n_steps']}")
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


def scaling(config: ScalingConfig) -> Path:
    """Measure (unless ``report_only``), then model and report; returns ``config.out``."""
    config.out.mkdir(parents=True, exist_ok=True)
    if not config.report_only:
        measure(config)
    return report(config)
