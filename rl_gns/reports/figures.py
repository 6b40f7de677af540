"""The toolkit every report shares: figure style and saving, colours, numbers and intervals in tables, and the
noise scale as every figure draws it (loss colours, scheme words, the default predictor, its 95 % intervals)."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import matplotlib

matplotlib.use("Agg")  # reports write files; they never open windows
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from PIL import Image

from rl_gns.core.maths.advice import DEFAULT_CANDIDATE, DEFAULT_PREDICTOR, parse_predictor
from rl_gns.core.maths.noise_scale import b_simple_interval, cumulative_b_simple
from rl_gns.core.maths.schemes import scheme_label
from rl_gns.records.logs import OutputError, check_output, printable, write_atomically

__all__ = [
    "DEFAULT_LOSS",
    "DEFAULT_SCHEME",
    "DEFAULT_WORDS",
    "LOSS_COLORS",
    "Axes",
    "colors",
    "env_count_ticks",
    "fmt",
    "interval_bars",
    "interval_span",
    "intervals_so_far",
    "is_default_predictor",
    "legend",
    "log_limits",
    "noise_label",
    "number",
    "plain_log_axes",
    "plain_log_ticks",
    "plain_ticks",
    "plt",
    "prediction_marker",
    "predictor_label",
    "relative",
    "resolved",
    "run_average",
    "save_figure",
    "save_plot",
    "unresolved_entry",
    "write_palette_png",
]

#: The default predictor's scheme and loss (``envs``, ``value``).
DEFAULT_SCHEME: str = DEFAULT_CANDIDATE.scheme
DEFAULT_LOSS: str = DEFAULT_CANDIDATE.loss
#: The colour of each loss in every noise-scale figure.
LOSS_COLORS = {"policy": "tab:blue", "value": "tab:orange", "total": "tab:green"}
#: The default predictor in words, where it was not measured.
DEFAULT_WORDS = f"the default predictor {DEFAULT_PREDICTOR} ({DEFAULT_LOSS} loss, {scheme_label(DEFAULT_SCHEME)})"


def relative(path: Path, report_dir: Path) -> str:
    """``path`` as a report in ``report_dir`` should name it: relative to that directory (a working link in
    the rendered report, the same whatever the working directory of the command that wrote it)."""
    return os.path.relpath(Path(path).resolve(), Path(report_dir).resolve())


def colors(n: int) -> list:
    """``n`` colours from viridis, dark to light (light yellow left out: it vanishes on white); none for ``n = 0``."""
    return [plt.get_cmap("viridis")(x) for x in np.linspace(0.0, 0.85, n)]


def legend(ax: Axes, empty: str | None = None, **kwargs: Any) -> Axes:
    """The panel's legend, one entry per label (``kwargs``: matplotlib's ``legend``); a panel with nothing drawn
    says ``empty`` instead, where given (a sweep that reached no target)."""
    handles, labels = ax.get_legend_handles_labels()
    if labels:
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(list(unique.values()), list(unique), **kwargs)
    elif empty is not None and not ax.has_data():
        ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center", color="gray")
    return ax


class FigureError(ValueError):
    """Data that matplotlib cannot lay out (values near the largest float); the message names the figure."""


PALETTE_COLORS = 256
"""Colours a saved figure keeps. Lines, markers, text and their anti-aliased edges fit in 256 colours, so the figure
looks as matplotlib drew it, in about a third of the bytes of its RGBA PNG."""


def write_palette_png(source: Path | BinaryIO, path: Path) -> Path:
    """Write the image read from ``source`` to ``path`` as a PNG of at most :data:`PALETTE_COLORS` colours: composited
    on white, quantized by median cut without dithering (the same pixels give the same file), its resolution kept.

    :param source: a PNG file, or a stream holding one.
    :param path: where the palette PNG goes, written whole or not at all (:func:`write_atomically`; ``path`` may be
        ``source``).
    """
    with Image.open(source) as image:
        rgba = image.convert("RGBA")
        dpi = image.info.get("dpi")
    flat = Image.new("RGB", rgba.size, "white")
    flat.paste(rgba, mask=rgba.getchannel("A"))
    palette = flat.quantize(colors=PALETTE_COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    encoded = io.BytesIO()
    palette.save(encoded, format="PNG", optimize=True, **({"dpi": dpi} if dpi else {}))
    write_atomically(path, encoded.getvalue())
    return path


def save_figure(fig: plt.Figure, path: Path) -> Path:
    """Lay out, save at print resolution as a palette PNG (:func:`write_palette_png`) and close a figure; return its
    path. A text drawn from a path that is not UTF-8 (a title naming a run's directory) is drawn as :func:`printable`
    writes it: the fonts have no glyph for it.

    :raises FigureError: if the data cannot be laid out (nothing is written).
    :raises OutputError: if something other than a file is at ``path``.
    """
    try:
        check_output(path)
    except OutputError:
        plt.close(fig)
        raise
    try:
        for text in fig.findobj(Text):
            text.set_text(printable(text.get_text()))
        fig.tight_layout()
        drawn = io.BytesIO()
        fig.savefig(drawn, format="png", dpi=120)
    except (ValueError, OverflowError) as error:
        raise FigureError(f"cannot draw {path}: {error} (values too large to plot?)") from None
    finally:
        plt.close(fig)
    drawn.seek(0)
    return write_palette_png(drawn, path)


def save_plot(plot: Callable[[Axes], object], path: Path, size: tuple[float, float]) -> Path:
    """Draw one panel with ``plot(ax)`` into a new figure of ``size`` inches and save it."""
    fig, ax = plt.subplots(figsize=size)
    plot(ax)
    return save_figure(fig, path)


def fmt(value: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant digits; "–" for none or NaN, "∞" for infinity."""
    if value is None or math.isnan(value):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}g}"


def number(value: float) -> str:
    """A table number: thousands separated above 100, 3 significant digits below, ∞ as such."""
    if math.isinf(value):
        return "∞"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def is_default_predictor(scheme: str, loss: str) -> bool:
    """Whether ``scheme`` and ``loss`` are those of the default predictor of the critical rollout size
    (:data:`rl_gns.core.maths.advice.DEFAULT_PREDICTOR`, ``env_value``: the envs scheme's value loss)."""
    return scheme == DEFAULT_SCHEME and loss == DEFAULT_LOSS


def noise_label(scheme: str, loss: str) -> str:
    """A legend's words for one noise scale, what it is and no claim: ``value loss, whole trajectories (env_value)``."""
    label = f"{loss} loss, {scheme_label(scheme)}"
    return label + (f" ({DEFAULT_PREDICTOR})" if is_default_predictor(scheme, loss) else "")


def predictor_label(name: str) -> str:
    """A legend's words for one candidate predictor of the critical rollout size: the default's as
    :func:`noise_label` says it, another's with its name, ``policy loss, random minibatch, × M (mb_xM_policy)``
    (``× M``: times the minibatches per epoch)."""
    candidate = parse_predictor(name)
    if name == DEFAULT_PREDICTOR:
        return noise_label(candidate.scheme, candidate.loss)
    times = f", × {candidate.factor[1:]}" if candidate.factor else ""
    return f"{candidate.loss} loss, {scheme_label(candidate.scheme)}{times} ({name})"


def prediction_marker(
    ax: Axes, x: float, value: float, limits: tuple[float, float], marker: str, color: Any, default: bool, alpha: float = 1.0
) -> None:
    """One noise-scale prediction on a log y axis: the default predictor's large and black-edged, another's smaller
    (and ``alpha`` faint); one not resolved (+∞ or NaN: ``|G|²`` not positive) hollow at the panel's top edge.

    :param value: the prediction, in the panel's unit.
    :param limits: the panel's y limits ``(bottom, top)``.
    :param marker: matplotlib's marker.
    :param alpha: the opacity of a prediction other than the default's.
    """
    shown = resolved(value)
    ax.plot([x], [value if shown else limits[1]], ls="none", marker=marker, ms=10 if default else 6, color=color,
            mec="black" if default else color, mfc=color if shown else "none", alpha=1.0 if default else alpha,
            zorder=4 if default else 3, clip_on=shown)  # fmt: skip


def resolved(value: float) -> bool:
    """Whether a noise-scale prediction is resolved: finite and positive (not +∞ or NaN, where ``|G|²`` is not
    positive)."""
    return math.isfinite(value) and value > 0


def unresolved_entry(ax: Axes, values: Iterable[float]) -> None:
    """The legend's entry of the hollow markers of :func:`prediction_marker`, where any of ``values`` (the
    predictions drawn) is not resolved."""
    if not all(resolved(value) for value in values):
        ax.plot([], [], ls="none", marker="o", mfc="none", color="gray", label="hollow, at the top edge: not resolved (∞)")


def run_average(
    columns: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows of one scheme and loss that hold a measurement, and ``B_simple`` averaged over training up to each
    (:func:`cumulative_b_simple`: NaN or below 0 where the pooled ``|G|²`` is not yet positive).

    :param columns: ``(env_steps_T, g2_T, trace_sigma_T)`` of :func:`rl_gns.records.rundir.noise_columns`, NaN in
        rows without a measurement.
    :return: ``(env_steps_M, g2_M, trace_sigma_M, b_simple_M)`` over the ``M`` measured rows, in agent steps.
    """
    steps_T, g2_T, trace_sigma_T = columns
    measured = np.isfinite(g2_T)
    g2_M, trace_sigma_M = g2_T[measured], trace_sigma_T[measured]
    return steps_T[measured], g2_M, trace_sigma_M, cumulative_b_simple(g2_M, trace_sigma_M)


def intervals_so_far(g2_T: np.ndarray, trace_sigma_T: np.ndarray, points: int = 100) -> tuple[np.ndarray, ...]:
    """95 % intervals (:func:`b_simple_interval`) of ``B_simple`` averaged over training so far, at up to ``points``
    measurements from the fourth on (the interval needs a few).

    :param g2_T: ``(T,)`` raw ``|G|²`` estimates of the measurements, in order (no NaN).
    :param trace_sigma_T: ``(T,)`` raw ``tr(Σ)`` estimates.
    :param points: most intervals returned.
    :return: ``(at_P, low_P, high_P)``: the measurements' indices and the bounds (``high`` is ∞ where ``|G|²`` is
        not resolved), in the estimates' unit (samples: agent steps).
    """
    at_P = np.unique(np.linspace(3, len(g2_T) - 1, min(points, max(len(g2_T) - 3, 0))).astype(int))
    intervals = [b_simple_interval(g2_T[: t + 1], trace_sigma_T[: t + 1]) for t in at_P]
    return at_P, np.array([i.low for i in intervals], dtype=float), np.array([i.high for i in intervals], dtype=float)


def log_limits(ax: Axes, margin: float = 10.0) -> tuple[float, float]:
    """Limits of a log axis ``margin`` times beyond the positive values of every line drawn (markers included);
    the axis's own limits where nothing positive is drawn, or one decade from 1 where those are not positive (an
    empty panel: its legend says why).

    :param ax: the panel, with its lines drawn.
    :param margin: factor beyond the smallest and the largest value (10: a decade).
    """
    values = np.concatenate([np.empty(0), *(np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines())])
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        bottom, top = ax.get_ylim()
        return (float(bottom), float(top)) if bottom > 0 else (1.0, 10.0)
    return float(values.min() / margin), float(values.max() * margin)


def interval_band(
    ax: Axes, x: Any, low: Any, high: Any, color: Any, limits: tuple[float, float], alpha: tuple[float, float] = (0.3, 0.12)
) -> None:
    """95 % intervals along a curve as a band, a step for each position (to halfway to its neighbours): filled
    between its bounds where bounded, and fainter up to the top of the panel where open above (``|G|²`` not
    resolved); clipped to the panel's y limits.

    :param x: ``(P,)`` positions along the curve, ascending.
    :param low: ``(P,)`` lower bounds, in the panel's unit.
    :param high: ``(P,)`` upper bounds (∞: open above).
    :param color: the band's colour.
    :param limits: the panel's y limits ``(bottom, top)``.
    :param alpha: opacity where bounded and where open above.
    """
    x, low, high = (np.asarray(v, dtype=float) for v in (x, low, high))
    bottom, top = limits
    if not len(x):
        return
    middles = (x[1:] + x[:-1]) / 2
    half = (x[-1] - x[0]) / (2 * (len(x) - 1)) if len(x) > 1 else 0.5
    left, right = np.concatenate([[x[0] - half], middles]), np.concatenate([middles, [x[-1] + half]])
    bounded = np.isfinite(high)
    low_clipped = np.clip(low, bottom, top)  # no lower bound (<= 0): from the bottom of the panel
    high_clipped = np.clip(np.where(bounded, high, top), bottom, top)
    for where, opacity, label in (
        (bounded, alpha[0], "95 % interval"),
        (~bounded, alpha[1], "95 % interval, no upper end (|G|² not resolved)"),
    ):
        if where.any():
            ax.bar(left[where], (high_clipped - low_clipped)[where], (right - left)[where], bottom=low_clipped[where],
                   align="edge", color=color, alpha=opacity, lw=0, label=label)  # fmt: skip


def interval_bars(
    ax: Axes,
    x: Any,
    low: Any,
    high: Any,
    color: Any,
    limits: tuple[float, float],
    alpha: tuple[float, float] = (0.45, 0.15),
    lw: float = 3.0,
) -> None:
    """95 % intervals as vertical bars where they say something: bounded, or open above (fainter, up to the top of
    the panel, where ``|G|²`` is not resolved); clipped to the panel's y limits.

    :param x: ``(P,)`` positions of the bars.
    :param low: ``(P,)`` lower bounds, in the panel's unit.
    :param high: ``(P,)`` upper bounds (∞: open above).
    :param color: the bars' colour.
    :param limits: the panel's y limits ``(bottom, top)``.
    :param alpha: opacity of the bounded bars and of the open ones.
    :param lw: the bars' width, points.
    """
    x, low, high = (np.asarray(v, dtype=float) for v in (x, low, high))
    bounded = np.isfinite(high)
    open_above = ~bounded  # from the lower bound, or the panel's bottom where there is none, to the top
    bottom, top = limits
    low_clipped, high_clipped = np.clip(low, bottom, top), np.clip(high, bottom, top)
    ax.vlines(x[bounded], low_clipped[bounded], high_clipped[bounded], color=color, lw=lw, alpha=alpha[0],
              label="95 % interval")  # fmt: skip
    ax.vlines(x[open_above], low_clipped[open_above], top, color=color, lw=lw, alpha=alpha[1],
              label="95 % interval, no upper end (|G|² not resolved)")  # fmt: skip


def interval_span(ax: Axes, low: float, high: float, color: Any, label: str | None = "its 95 % interval") -> None:
    """A 95 % interval along the x axis as a shaded span over the panel's height: hatched and fainter up to the
    panel's right edge where it has no upper end (``high`` = ∞: ``|G|²`` not resolved). Draw it after the data, so
    that the panel's x limits are known.

    :param low: lower bound, in the x axis's unit.
    :param high: upper bound (∞: open to the right).
    :param color: the span's colour.
    :param label: its legend entry (`` (no upper end)`` is added where it has none); ``None``: none.
    """
    bounded = math.isfinite(high)
    entry = None if label is None else label + ("" if bounded else " (no upper end)")
    ax.axvspan(low, high if bounded else ax.get_xlim()[1], color=color, alpha=0.12 if bounded else 0.06,
               hatch=None if bounded else "//", label=entry)  # fmt: skip


class PlainLogLocator(LogLocator):
    """Ticks of a log axis at 1, 10, 100, ..., with 2 and 5 between them where the view spans fewer than three
    decades, chosen anew whenever the view changes; linear steps (matplotlib's ``AutoLocator``) where a view that
    narrow holds fewer than two of those."""

    def __init__(self, base: float = 10.0) -> None:
        super().__init__(base=base, subs=(1.0,))

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        """The ticks of the view ``[vmin, vmax]``, in the axis's unit."""
        low, high = sorted((vmin, vmax))
        self.set_params(subs=(1.0, 2.0, 5.0) if 0 < low and high < 1e3 * low else (1.0,))
        return super().tick_values(vmin, vmax)


def plain_log_ticks(axis: Axis) -> None:
    """Tick labels of a log axis as plain numbers (10, 100, 1,000; with 2 and 5 between them where the view spans
    fewer than three decades, :class:`PlainLogLocator`), never ``6×10¹``, and no labels on the minor ticks.

    :param axis: the axis (``ax.yaxis``, or a secondary axis's).
    """
    axis.set_major_locator(PlainLogLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: number(value)))
    axis.set_minor_formatter(NullFormatter())


def plain_log_axes(ax: Axes) -> None:
    """Both axes of a log-log panel with plain-number ticks (:func:`plain_log_ticks`)."""
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)


def plain_ticks(axis: Axis, most: int = 6) -> None:
    """At most ``most`` ticks on a linear axis, labelled as plain numbers with thousands separated (``250,000``),
    never with an offset or a ``1e6`` factor at the axis's end.

    :param axis: the axis (``ax.xaxis``).
    :param most: the most ticks.
    """
    axis.set_major_locator(MaxNLocator(nbins=most - 1, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda value, _: number(value)))


class EnvCountLocator(LogLocator):
    """Ticks of a log axis of env counts at whole numbers only: powers of two from 1 on, every second or fourth where
    more than ``most`` would fit."""

    def __init__(self, most: int = 9) -> None:
        super().__init__(base=2.0, subs=(1.0,), numticks=most)

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        """The ticks of the view ``[vmin, vmax]``, in envs: none below 1 env."""
        return [float(tick) for tick in super().tick_values(vmin, vmax) if tick >= 1]


def env_count_ticks(axis: Axis) -> None:
    """Ticks of a log axis of env counts at whole numbers (:class:`EnvCountLocator`), labelled plainly (``1,024``),
    and no minor labels: an env count is never 2.25.

    :param axis: the axis of env counts (``ax.xaxis``).
    """
    axis.set_major_locator(EnvCountLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: number(value)))
    axis.set_minor_formatter(NullFormatter())
