"""The toolkit every report shares: figure style and saving, colours, numbers and intervals in tables."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # reports write files; they never open windows
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

__all__ = ["Axes", "colors", "error_bar", "fmt", "legend", "number", "plt", "relative", "save_figure", "save_plot"]


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


def save_figure(fig: plt.Figure, path: Path) -> Path:
    """Lay out, save at print resolution and close a figure; return its path."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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


def error_bar(point: float, ci: tuple[float, float] | list[float] | None) -> list[list[float]] | None:
    """Matplotlib's ``yerr`` of one point from its interval: ``None`` without a bounded interval. A percentile
    interval need not contain its point (a bootstrapped median), so each bar reaches at least the point."""
    if ci is None or not math.isfinite(ci[1]):
        return None
    return [[max(point - ci[0], 0.0)], [max(ci[1] - point, 0.0)]]
