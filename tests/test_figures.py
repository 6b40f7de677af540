"""What every figure of a command draws, checked on its plotting function with committed results (read only) or small
hand-built ones: ticks a reader can read (plain numbers, no two labels on top of each other, whole env counts), no
empty panel, every target's points visible, titles and legends that name what is drawn and claim nothing, and lines
within their data's range."""

import io
import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from matplotlib.axis import Axis
from matplotlib.container import BarContainer
from PIL import Image

from rl_gns.core.maths.noise_scale import RatioInterval
from rl_gns.core.maths.tradeoff import LocalTradeoffFit, TradeoffFit, fit_local_tradeoff
from rl_gns.records.rundir import RunDir, runs_under
from rl_gns.records.scaling_log import MEASUREMENTS, SETTINGS
from rl_gns.reports import sweep_report
from rl_gns.reports.adaptive_report import load_adaptive_run, load_fixed_results, plot_comparison
from rl_gns.reports.bench_report import LOSSES, WINDOWS, GameResult, NoiseScale, plot_noise_scales
from rl_gns.reports.figures import PALETTE_COLORS, Axes, plt, save_figure
from rl_gns.reports.predictor_validation import load_pairs, plot_predicted_vs_fitted, rank
from rl_gns.reports.probe_report import plot_probe
from rl_gns.reports.probe_validation import load_probe, plot_stages
from rl_gns.reports.run_plot import plot_noise_scale, plot_score
from rl_gns.reports.scaling_report import ScalingReportConfig, plot_scaling, report
from rl_gns.reports.sweep_analysis import Prediction, TargetResult, load_sweep
from rl_gns.reports.sweep_report import plot_noise_scale_by_size, plot_steps_vs_experience, plot_wall_vs_experience

PILOT = Path("results/table1/Breakout/R0/pilot")
SWEEP = Path("results/sweeps/beamrider_ram")
ADAPTIVE = Path("results/sweeps/adaptive_beamrider_ram")
SCALING = Path("results/scaling/beamrider")
NOISE_RUN = Path("results/runs/beamrider_1m")
PROBES = Path("results/probes_v7")
CLAIMS = ("predict", "★")  # a legend names a quantity; a title names only what is drawn


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def tick_labels(axis: Axis) -> list[str]:
    """The labels of ``axis``'s ticks inside its view, after a draw, every one checked readable: plain numbers (no
    ``×10``, no ``1e6`` at the axis's end), no label on a minor tick, no two labels overlapping."""
    axis.figure.canvas.draw()
    low, high = sorted(axis.get_view_interval())
    inside = [t for t in axis.get_major_ticks() if t.label1.get_visible() and low <= t.get_loc() <= high]
    labels = [t.label1.get_text() for t in inside]
    assert all(label and "×" not in label and "$" not in label and "e+" not in label for label in labels), labels
    assert axis.get_offset_text().get_text() == "", "no offset or factor at the axis's end"
    minor = [t.label1.get_text() for t in axis.get_minor_ticks() if low <= t.get_loc() <= high and t.label1.get_visible()]
    assert not any(minor), minor
    boxes = sorted((t.label1.get_window_extent() for t in inside), key=lambda box: (box.x0, box.y0))
    assert not any(a.overlaps(b) for a, b in itertools.pairwise(boxes)), labels
    return labels


def legend_texts(ax: Axes) -> list[str]:
    """The panel's legend entries; none of them a claim."""
    drawn = ax.get_legend()
    texts = [t.get_text() for t in drawn.get_texts()] if drawn is not None else []
    assert not any(claim in text for text in texts for claim in CLAIMS), texts
    return texts


def test_training_png_noise_panel():
    run = RunDir(PILOT)
    _, (ax_score, ax) = plt.subplots(2, 1, sharex=True)
    plot_score(run.progress(), ax_score)
    plot_noise_scale(run.progress(), run.config(), ax)
    lines = {line.get_label(): line for line in ax.get_lines()}
    value = lines["value loss, whole trajectories (env_value)"]
    policy = lines["policy loss, whole trajectories"]
    legend_texts(ax)
    policy_y = np.asarray(policy.get_ydata(), dtype=float)
    assert np.isnan(policy_y).any() and np.isfinite(policy_y).any()  # breaks where not resolved, drawn where it is
    assert np.all(np.diff(np.asarray(value.get_xdata(), dtype=float)) > 0)
    bands = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert {c.get_label() for c in bands} <= {"95 % interval", "95 % interval, no upper end (|G|² not resolved)"}
    assert bands, "the interval is drawn as a band"
    steps = sorted((bar.get_x(), bar.get_x() + bar.get_width()) for band in bands for bar in band)
    assert all(np.isclose(end, start) for (_, end), (start, _) in itertools.pairwise(steps)), "a band, no gaps"
    bottom, top = ax.get_ylim()
    assert bottom > 0 and top > 80  # the run's rollout size (80 agent steps) is inside the panel
    assert "1,000,000" in tick_labels(ax.xaxis)  # 1 million agent steps, not "1.0" and "1e6"
    assert "1,000" in tick_labels(ax.yaxis)


def small_sweep() -> list[TargetResult]:
    """Three targets within a factor 1.5 of experience, two at the same point; the last fitted."""
    sizes = [64, 128, 256]
    same = TargetResult(4.0, sizes, [66.0, 34.0, 17.5], [4224.0, 4352.0, 4480.0], [30.0, 31.0, 32.0])
    hidden = TargetResult(5.0, sizes, [66.0, 34.0, 17.5], [4224.0, 4352.0, 4480.0], [30.0, 31.0, 32.0])
    fitted = TargetResult(6.0, sizes, [80.0, 45.0, 27.0], [5120.0, 5760.0, 6912.0], [40.0, 45.0, 52.0])
    fitted.fit = TradeoffFit(s_min=30.0, e_min=4480.0, rms_log_residual=0.01)  # B_crit 149, among the sizes
    return [same, hidden, fitted]


def test_steps_vs_experience_ticks_markers_and_title():
    results = small_sweep()
    _, ax = plt.subplots(figsize=(7, 5.5))
    plot_steps_vs_experience(results, ax)
    x_labels, y_labels = tick_labels(ax.xaxis), tick_labels(ax.yaxis)
    assert len(x_labels) >= 2 and len(y_labels) >= 2 and all(label.replace(",", "").isdigit() for label in x_labels)
    points = {line.get_label(): line for line in ax.get_lines() if line.get_label().startswith("target")}
    assert len({line.get_marker() for line in points.values()}) == 3  # a target at another's place still shows
    assert points["target 5"].get_zorder() > points["target 4"].get_zorder()
    assert points["target 5"].get_markersize() < points["target 4"].get_markersize()
    assert "★" not in ax.get_title() and "lines: the fit over the sizes that reached the target" in ax.get_title()
    assert legend_texts(ax) == ["target 4", "target 5", "target 6", "B_crit (2·E_min, 2·S_min)"]
    curve = next(line for line in ax.get_lines() if line.get_label().startswith("_") and len(line.get_xdata()) > 2)
    experience = np.asarray(curve.get_xdata(), dtype=float)  # the fit over the sizes that reached the target only
    assert experience.min() == pytest.approx(30 * 64 + 4480) and experience.max() == pytest.approx(30 * 256 + 4480)

    _, ax = plt.subplots()
    plot_steps_vs_experience(results[:2], ax)  # nothing fitted: no star, neither drawn nor named
    assert not any(line.get_marker() == "*" for line in ax.get_lines())
    assert legend_texts(ax) == ["target 4", "target 5"]
    assert "lines" not in ax.get_title() and "no fit" in ax.get_title()  # the title names no line it does not draw
    assert all(line.get_label().startswith("target") for line in ax.get_lines())  # points only


def test_wall_vs_experience_plain_ticks():
    _, results = load_fixed_results(SWEEP)
    _, ax = plt.subplots(figsize=(7, 4.5))
    plot_wall_vs_experience(results, ax)
    assert "100" in tick_labels(ax.yaxis)  # seconds as numbers, not 10²
    assert "50,000" in tick_labels(ax.xaxis)
    assert legend_texts(ax) == [f"target {r.target:g}" for r in results]
    assert len({line.get_marker() for line in ax.get_lines()}) == len(results)


def test_noise_scale_by_size_plain_ticks():
    _, runs = load_sweep(SWEEP)
    _, ax = plt.subplots(figsize=(8.5, 4.5))
    plot_noise_scale_by_size(SWEEP, runs, ax)
    assert "100,000" in tick_labels(ax.xaxis)  # agent steps with thousands separated, no 1e5 at the end
    assert "1,000" in tick_labels(ax.yaxis)
    assert legend_texts(ax)[0] == "64 (2 envs)"


def test_sweep_predicted_vs_fitted_one_column_per_target():
    _, results = load_fixed_results(SWEEP)
    for result in results:
        result.candidates = {name: Prediction(**fields) for name, fields in result.candidates.items()}
    _, ax = plt.subplots(figsize=(12, 5.5))
    sweep_report.plot_predicted_vs_fitted(results, ax)
    assert tick_labels(ax.xaxis) == [f"{r.target:g}" for r in results]
    assert "1,000" in tick_labels(ax.yaxis)
    texts = legend_texts(ax)
    assert texts[:2] == ["fitted B_crit (95 % bootstrap interval over seeds)", "value loss, whole trajectories (env_value)"]


def test_scaling_panels_and_whole_env_counts(tmp_path):
    for name in (SETTINGS, MEASUREMENTS):
        shutil.copy(SCALING / name, tmp_path / name)
    report(ScalingReportConfig(sweep=SWEEP, noise_run=NOISE_RUN, scaling_dir=tmp_path))
    result = json.loads((tmp_path / "scaling.json").read_text())
    narrow = {**result, "measurements": [row for row in result["measurements"] if row["n_envs"] in (2, 4)]}
    del narrow["prediction"], narrow["noise_scale"]
    fig = plot_scaling({**narrow, "marks_n_envs": {}})
    assert len(fig.axes) == 3 and all(ax.has_data() for ax in fig.axes)  # no empty wall-time panel without a sweep
    for ax in fig.axes:
        assert tick_labels(ax.xaxis) == ["2", "4"]  # env counts are whole: never 2.25 or 2.5
    fig = plot_scaling(result)
    assert len(fig.axes) == 4 and all(ax.has_data() for ax in fig.axes)
    for ax in fig.axes:
        labels = tick_labels(ax.xaxis)
        assert labels[0] == "1" and len(labels) >= 5 and all(label.replace(",", "").isdigit() for label in labels)
        tick_labels(ax.yaxis)
    texts = legend_texts(fig.axes[0])
    assert "throughput model" in texts and any(text.startswith("B_crit fitted on the sweep") for text in texts)
    assert any(text.startswith("B_simple of the noise run, policy loss") for text in texts)


def small_probe() -> tuple[np.ndarray, np.ndarray]:
    """Two branches at each of three rollout sizes, agent steps, and their PPO iterations to the target."""
    return np.array([256.0, 256.0, 512.0, 512.0, 1024.0, 1024.0]), np.array([40.0, 44.0, 24.0, 26.0, 15.0, 16.0])


def test_probe_draws_every_line_it_names_within_range():
    batch_N, steps_N = small_probe()
    fit = fit_local_tradeoff(batch_N, steps_N)
    b_simple = RatioInterval(14809.0, 3900.0, math.inf)  # far above the sizes branched at
    _, ax = plt.subplots(figsize=(7.0, 5.5))
    plot_probe(batch_N, steps_N, fit, b_simple, ax)
    left, right = ax.get_xlim()
    lines = {line.get_label(): line for line in ax.get_lines()}
    b_simple_line = lines["B_simple (env_value) at fixed parameters 14,809"]
    assert left < 256 and left < b_simple_line.get_xdata()[0] < right  # the line the legend names is in the panel
    assert left < fit.b_crit < right
    curve = np.asarray(lines["fit S = S_min + E_min / B"].get_xdata(), dtype=float)
    assert curve.min() == pytest.approx(256) and curve.max() == pytest.approx(1024)  # the fit over its data only
    assert "10,000" in tick_labels(ax.xaxis)
    tick_labels(ax.yaxis)
    legend_texts(ax)

    _, ax = plt.subplots()
    plot_probe(np.empty(0), np.empty(0), None, RatioInterval(1104.0, 477.0, math.inf), ax)  # no branch reached
    assert "branches (fastest learning rate per seed)" not in legend_texts(ax)
    assert not ax.get_yticks().size and any(t.get_text() == "no branch reached the target" for t in ax.texts)
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] < 1104 < ax.get_xlim()[1]
    _, ax = plt.subplots()
    plot_probe(np.empty(0), np.empty(0), None, None, ax, censored=[(64, 3_860.0), (4_096, 61.0)])  # none reached
    assert "did not reach: more steps than this" in legend_texts(ax) and ax.get_yscale() == "log"
    assert any(t.get_text() == "no branch reached the target" for t in ax.texts)
    assert ax.get_xlim()[0] < 64 and 4_096 < ax.get_xlim()[1]


def test_a_censored_probe_draws_its_branches_that_did_not_reach_within_range():
    """Branches that did not reach the target, at sizes beyond those that did: drawn at their bounds, inside the panel,
    named in the legend, and the fit drawn over them too."""
    batch_N, steps_N = small_probe()
    censored = [(128, 90.0), (4096, 6.0)]
    _, ax = plt.subplots()
    plot_probe(batch_N, steps_N, fit_local_tradeoff(batch_N, steps_N), None, ax, censored)
    left, right = ax.get_xlim()
    assert left < 128 and 4096 < right
    triangles = next(c for c in ax.collections if c.get_label() == "did not reach: more steps than this")
    assert triangles.get_offsets().tolist() == [[128.0, 90.0], [4096.0, 6.0]]
    curve = np.asarray(next(line for line in ax.get_lines() if line.get_label().startswith("fit")).get_xdata())
    assert curve.min() == pytest.approx(128) and curve.max() == pytest.approx(4096)
    assert "did not reach: more steps than this" in legend_texts(ax)


def test_a_second_fit_bounded_above_only_draws_its_upper_end_within_range():
    """A second fit whose steps are flat in the rollout size (``E_min`` 0): its interval has an upper end only, drawn
    and named, inside the panel, and no ``B_crit`` line."""
    batch_N, steps_N = small_probe()
    flat = LocalTradeoffFit(s_min=20.0, e_min=0.0, b_crit_low=0.0, b_crit_high=3_000.0, level=0.95, n_points=6)
    _, ax = plt.subplots()
    plot_probe(batch_N, steps_N, fit_local_tradeoff(batch_N, steps_N), None, ax, upper=(256, flat))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["its B_crit ≤ 3,000 (95 %)"].get_xdata()[0] == 3_000.0
    assert ax.get_xlim()[1] > 3_000.0 and not any(label.startswith("its B_crit ") and "≤" not in label for label in lines)
    assert "fit from B = 256 up" in legend_texts(ax)

    _, ax = plt.subplots()  # the fit over every size alike
    plot_probe(batch_N, steps_N, flat, None, ax)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["B_crit ≤ 3,000 (95 %)"].get_xdata()[0] == 3_000.0 and ax.get_xlim()[1] > 3_000.0


def test_bench_figure_names_quantities():
    def scale(value: float) -> NoiseScale:
        return NoiseScale(value, (value / 2, value * 2), 10)

    def game(name: str, b_simple: float) -> GameResult:
        noise = {loss: {window: scale(b_simple) for window in WINDOWS} for loss in LOSSES}
        return GameResult(name, name, [0, 1], noise, [1.0, 2.0], 0.0, 10.0, 5.0, 2, None, [])

    games = [game("Pong", 100.0), game("Qbert", 200.0)]
    ranges = {"b_simple_start": [100, 1000], "b_simple_average": [1000, 20000]}
    fig = plot_noise_scales(games, "envs", ranges, 1024)
    assert len(fig.axes) == 2  # a panel per window
    assert not any(claim in fig.get_suptitle() for claim in CLAIMS)
    assert "large, black-edged: value loss, whole trajectories (env_value)" in fig.get_suptitle()
    texts = legend_texts(fig.axes[1])
    assert texts[0] == "value loss, whole trajectories (env_value)"
    assert tick_labels(fig.axes[0].xaxis) == ["Pong", "Qbert"]
    assert "1,000" in tick_labels(fig.axes[0].yaxis)


def test_compare_adaptive_names_what_is_drawn():
    settings, fixed = load_fixed_results(SWEEP)
    targets = [float(t) for t in settings["targets"]]
    runs = [load_adaptive_run(d, targets, settings["window"]) for d in runs_under(ADAPTIVE) if (d / "summary.json").exists()]
    _, ax = plt.subplots(figsize=(7, 5.5))
    plot_comparison(fixed, runs, ax)
    assert "filled: fixed n_envs" in ax.get_title() and "★" not in ax.get_title()
    texts = legend_texts(ax)
    assert "B_crit (2·E_min, 2·S_min)" in texts and "adaptive, r = 64" in texts
    assert "50,000" in tick_labels(ax.xaxis) and "100" in tick_labels(ax.yaxis)


def test_probes_by_stage_side_by_side():
    dirs = sorted(p.parent for p in PROBES.glob("*/at*/probe_results.json") if "retest" not in p.parent.name)
    pairs = [load_probe(d) for d in dirs]
    _, ax = plt.subplots(figsize=(7.5, 6.5))
    plot_stages(pairs, ax)
    colours_at: dict[float, set] = {}  # every x where a marker or an interval is drawn: one game's colour there
    for line in ax.get_lines():
        for v in np.asarray(line.get_xdata(), dtype=float):
            colours_at.setdefault(round(float(v)), set()).add(str(line.get_color()))
    stages = {p.env_steps for p in pairs}
    assert all(len(colours) == 1 for x, colours in colours_at.items() if any(0.5 < x / s < 2 for s in stages))
    assert "1,000,000" in tick_labels(ax.xaxis)
    tick_labels(ax.yaxis)
    assert any(text.endswith("value loss, whole trajectories (env_value)") for text in legend_texts(ax))


def test_predictors_figure_panels():
    pairs, _ = load_pairs((SWEEP,))
    rankings = rank(pairs)
    shown = [r.name for r in rankings][:3]
    fig = plot_predicted_vs_fitted(pairs, rankings, shown, [64, 2048])
    drawn = [ax for ax in fig.axes if ax.axison]
    assert len(drawn) == 3 and all(ax.has_data() for ax in drawn)  # the fourth place of the grid is blank
    for ax in drawn:
        assert "1,000" in tick_labels(ax.xaxis) and "1,000" in tick_labels(ax.yaxis)
    legend_texts(fig.axes[1])


def test_a_title_naming_a_directory_that_is_not_utf8_is_drawn_as_a_message_writes_it(tmp_path):
    """A path whose name is not UTF-8 holds a surrogate escape, which no font can draw: the figure shows it escaped."""
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], label="bad\udcffdir/run")
    ax.set_title("bad\udcffdir/run at 50,176 agent steps")
    ax.legend()
    assert save_figure(fig, tmp_path / "figure.png").stat().st_size > 0
    assert ax.get_title() == "bad\\udcffdir/run at 50,176 agent steps"
    assert ax.get_legend().get_texts()[0].get_text() == "bad\\udcffdir/run"


def test_a_saved_figure_is_a_palette_png_that_looks_as_matplotlib_drew_it(tmp_path):
    """The palette PNG against matplotlib's own RGBA render of the same figure: at most 256 colours, the same size and
    resolution, 99 % of pixels within 12 of 255 levels of the render on white and a mean error under one level (the
    quantizer merges only near shades), and fewer bytes. Drawn with forty shades of a colour map, each with its own
    anti-aliased edges, so the quantizer is given more colours than it keeps."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in range(40):
        ax.plot([0, 1], [k, k + 0.7], color=plt.get_cmap("viridis")(k / 40), label=f"line {k}" if k % 10 == 0 else None)
    ax.set_title("forty lines")
    ax.legend()
    fig.tight_layout()
    render = io.BytesIO()
    fig.savefig(render, format="png", dpi=120)
    path = save_figure(fig, tmp_path / "figure.png")
    with Image.open(render) as drawn, Image.open(path) as saved:
        assert saved.mode == "P" and len(saved.getcolors(maxcolors=PALETTE_COLORS + 1) or []) <= PALETTE_COLORS
        assert saved.size == drawn.size and round(saved.info["dpi"][0]) == 120
        reference = Image.new("RGB", drawn.size, "white")
        reference.paste(drawn, mask=drawn.convert("RGBA").getchannel("A"))
        error = np.abs(np.asarray(saved.convert("RGB"), dtype=int) - np.asarray(reference, dtype=int))
    assert np.percentile(error, 99) <= 12 and error.mean() < 1.0
    assert path.stat().st_size < len(render.getvalue())
