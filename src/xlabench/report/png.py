"""A chart description drawn by matplotlib into a PNG (the object API: no pyplot state)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from xlabench.report.charts import (
    ChartSpec,
    bubble_diameters,
    categories,
    filter_value,
    series_colour,
    trace_groups,
    visible_rows,
)

PX_PER_PT = 100 / 72  # the PNG is drawn at 100 dpi
FIGSIZE_IN = (10.0, 5.6)


def write_png(chart: ChartSpec, path: Path) -> Path:
    """Draw `chart` (in its static filter state) into `path`."""
    rows = visible_rows(chart)
    # Fixed margins: a layout engine (constrained/tight) doubles the time per chart.
    fig = Figure(figsize=FIGSIZE_IN, dpi=100)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.93, bottom=0.24)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if rows.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    elif chart.kind == "bar":
        _bars(ax, chart, rows)
    else:
        _points(ax, chart, rows)
    ax.set_title(_short(_png_title(chart), 110), fontsize=10)
    ax.set_xlabel(chart.x_title)
    ax.set_ylabel(chart.y_title)
    for line in chart.hlines:
        if all(filter_value(chart.static_filter.get(k, v)) == filter_value(v)
               for k, v in line.when.items()):
            ax.axhline(line.y, linestyle=":", color="grey", linewidth=1)
            ax.annotate(line.label, (0.01, line.y), xycoords=("axes fraction", "data"),
                        fontsize=7, color="grey", va="bottom")
    if len(ax.get_legend_handles_labels()[0]) > 1:
        legend = ax.legend(fontsize=7, ncols=2 if len(trace_groups(chart, rows)) > 8 else 1)
        for handle in legend.legend_handles:  # bubbles of any size, legend markers of one
            if hasattr(handle, "set_sizes"):
                handle.set_sizes([30])
    fig.savefig(path)
    return path


def _png_title(chart: ChartSpec) -> str:
    """The title, with the filter state the PNG is drawn in (the page starts unfiltered)."""
    shown = {k: v for k, v in chart.static_filter.items() if v is not None}
    if not shown:
        return chart.title
    return chart.title + " [" + ", ".join(f"{k}={v}" for k, v in shown.items()) + "]"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _errors(chart: ChartSpec, rows: pd.DataFrame) -> Any:
    """Asymmetric error bar lengths, or None; missing or inverted bounds draw nothing."""
    if chart.error is None:
        return None
    low = pd.to_numeric(rows[chart.error[0]], errors="coerce")
    high = pd.to_numeric(rows[chart.error[1]], errors="coerce")
    y = rows[chart.y].astype(float)
    return np.vstack([(y - low).clip(lower=0).fillna(0), (high - y).clip(lower=0).fillna(0)])


def _bars(ax: Axes, chart: ChartSpec, rows: pd.DataFrame) -> None:
    cats = categories(rows, chart.x)
    groups = trace_groups(chart, rows)
    stacked = chart.barmode == "relative"
    width = 0.8 if stacked else 0.8 / max(len(groups), 1)
    positive, negative = np.zeros(len(cats)), np.zeros(len(cats))
    for i, (name, published, group) in enumerate(groups):
        pos = np.array([cats.index(filter_value(v)) for v in group[chart.x]], dtype=float)
        y = group[chart.y].astype(float).to_numpy()
        base = None
        if stacked:
            base = np.where(y >= 0, positive[pos.astype(int)], negative[pos.astype(int)])
            np.add.at(positive, pos.astype(int), np.where(y >= 0, y, 0))
            np.add.at(negative, pos.astype(int), np.where(y < 0, y, 0))
        else:
            pos = pos - 0.4 + width * (i + 0.5)
        colour = series_colour(chart, str(group[chart.series].iloc[0])) if chart.series \
            else series_colour(chart, "")
        ax.bar(pos, y, width, bottom=base, label=name, color=colour,
               hatch="//" if published else None, alpha=0.6 if published else 1.0,
               yerr=None if stacked else _errors(chart, group), capsize=2)
        if chart.label and len(rows) <= chart.label_limit:
            for x, value, text in zip(pos, y, group[chart.label], strict=True):
                ax.annotate(str(text), (x, value), fontsize=6, ha="center", va="bottom",
                            rotation=90 if len(cats) > 6 else 0)
    ax.set_xticks(range(len(cats)), cats, rotation=45 if len(cats) > 4 else 0, ha="right",
                  fontsize=7)
    if chart.label:
        ax.margins(y=0.15)  # room for the labels above the bars
    _scales(ax, chart, categorical=True)


def _points(ax: Axes, chart: ChartSpec, rows: pd.DataFrame) -> None:
    cats = categories(rows, chart.x) if chart.x_category else None
    sizes = bubble_diameters(rows[chart.size].astype(float)) if chart.size else None
    for name, published, group in trace_groups(chart, rows):
        group = group[group[chart.x].notna() & group[chart.y].notna()]
        if chart.kind == "line":
            group = group.sort_values(chart.x)
        x = [cats.index(filter_value(v)) for v in group[chart.x]] if cats else \
            group[chart.x].astype(float).to_numpy()
        y = group[chart.y].astype(float).to_numpy()
        colour = series_colour(chart, str(group[chart.series].iloc[0])) \
            if chart.series and len(group) else series_colour(chart, "")
        area = None if sizes is None else [(sizes[i] / PX_PER_PT) ** 2 for i in
                                           rows.index.get_indexer(group.index)]
        ax.scatter(x, y, s=area if area else 30, marker="D" if published else "o", label=name,
                   facecolors="none" if published else colour, edgecolors=colour, alpha=0.8)
        if chart.kind == "line":
            ax.plot(x, y, color=colour, linewidth=1)
        if chart.error is not None and len(group):
            ax.errorbar(x, y, yerr=_errors(chart, group), fmt="none", ecolor=colour, alpha=0.6)
        if chart.label and len(rows) <= chart.label_limit:
            for xi, yi, text in zip(x, y, group[chart.label], strict=True):
                ax.annotate(str(text), (xi, yi), fontsize=6, xytext=(0, 5),
                            textcoords="offset points", ha="center")
    if cats:
        ax.set_xticks(range(len(cats)), cats)
    _scales(ax, chart, categorical=bool(cats))


def _scales(ax: Axes, chart: ChartSpec, categorical: bool) -> None:
    if chart.log_x and not categorical:
        ax.set_xscale("log")
    if chart.log_y:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
