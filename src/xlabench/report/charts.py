"""One description per chart, rendered twice: by plotly in the browser (assets/report.js) and by
matplotlib into a PNG (png.py).

A chart carries its data rows and the operations that turn them into what is drawn:
filter (the page's filters; the PNG uses `static_filter`), rank (an `analysis.RankRule`, so a
"top 10" is re-ranked after filtering) and aggregate (sum `y` per x and trace). `visible_rows`
is the Python side of that pipeline; report.js's `process` is the browser side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from xlabench.analysis import FILTER_COLUMNS, RankRule, rank

#: plotly's default colour sequence (d3 category10), which is also matplotlib's tab10.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)
BUBBLE_MIN_PX, BUBBLE_SPAN_PX = 6.0, 30.0  # diameter = min + span * sqrt(value / max)
LABEL_LIMIT = 25  # points get a text label only when there are at most this many


@dataclass(frozen=True)
class HLine:
    """A horizontal reference line, shown while the page's filters agree with `when`."""

    y: float
    label: str
    when: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ChartSpec:
    """Everything needed to draw one chart, in either renderer.

    Attributes:
        key: file name of the PNG and id of the chart's div (letters, digits, '-').
        kind: ``scatter`` (points), ``bar`` or ``line``.
        series: column whose values become traces (and colours); None for one trace.
        symbol: column whose value ``published`` draws hollow markers / hatched bars.
        size: column giving bubble area; label: column printed beside points or bars.
        error: (low, high) columns of an interval around `y`.
        hover: (column, header) pairs shown on hover in the browser.
        rank: re-rank the (filtered) rows with this rule before drawing.
        aggregate: sum `y` per (series, symbol, x) after filtering (counts).
        barmode: ``group`` or ``relative`` (stacked, negatives below zero).
        static_filter: the filter state the PNG is drawn in (the page starts unfiltered).
        label_limit: points or bars get a text label only when at most this many are drawn.
    """

    key: str
    title: str
    kind: str
    data: pd.DataFrame
    x: str
    y: str
    x_title: str
    y_title: str
    series: str | None = None
    symbol: str | None = "origin"
    size: str | None = None
    label: str | None = None
    error: tuple[str, str] | None = None
    hover: tuple[tuple[str, str], ...] = ()
    log_x: bool = False
    log_y: bool = False
    x_category: bool = False
    rank: RankRule | None = None
    aggregate: bool = False
    barmode: str = "group"
    hlines: tuple[HLine, ...] = ()
    static_filter: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    label_limit: int = LABEL_LIMIT

    def filter_columns(self) -> list[str]:
        """The page filters that apply: those whose column the data has."""
        return [c for c in FILTER_COLUMNS if c in self.data.columns]

    def columns(self) -> list[str]:
        """Every column the renderers read, in a stable order."""
        wanted = [self.x, self.y, self.series, self.symbol, self.size, self.label]
        wanted += list(self.error or ()) + [c for c, _ in self.hover] + self.filter_columns()
        if self.rank is not None:
            r = self.rank
            wanted += [r.by, *r.per, *r.top_per, r.ci_low, r.ci_high, r.tiebreak]
        present = [c for c in wanted if c is not None and c in self.data.columns]
        return list(dict.fromkeys(present))

    def series_values(self) -> list[str]:
        """Every trace name over all the data: colours stay put when filters change."""
        if self.series is None or self.data.empty:
            return []
        return sorted({str(v) for v in self.data[self.series].dropna()})


def filter_value(value: Any) -> str:
    """A value as the filters compare it (the browser's String(x) of the JSON number)."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def visible_rows(chart: ChartSpec, filters: dict[str, Any] | None = None) -> pd.DataFrame:
    """The rows a chart draws under `filters` (default: its static filter)."""
    data = chart.data[chart.columns()]
    for column, wanted in (chart.static_filter if filters is None else filters).items():
        if column in data.columns and wanted is not None:
            data = data[data[column].map(filter_value) == filter_value(wanted)]
    if chart.rank is not None:
        data = rank(data, chart.rank)
    if chart.aggregate and not data.empty:
        keys = [c for c in (chart.series, chart.symbol, chart.x) if c is not None]
        data = data.groupby(keys, sort=False, dropna=False)[chart.y].sum().reset_index()
    return data.reset_index(drop=True)


def categories(rows: pd.DataFrame, column: str) -> list[str]:
    """Category order on the x axis: first appearance in the drawn rows."""
    return list(dict.fromkeys(filter_value(v) for v in rows[column]))


def bubble_diameters(values: pd.Series) -> list[float]:
    """Bubble diameters in pixels, area proportional to the value (report.js does the same)."""
    top = values.max()
    if not top or not math.isfinite(top) or top <= 0:
        return [BUBBLE_MIN_PX + BUBBLE_SPAN_PX / 2] * len(values)
    return [
        BUBBLE_MIN_PX + BUBBLE_SPAN_PX * math.sqrt(max(v, 0) / top) if pd.notna(v)
        else BUBBLE_MIN_PX for v in values
    ]


def trace_groups(chart: ChartSpec, rows: pd.DataFrame) -> list[tuple[str, bool, pd.DataFrame]]:
    """(trace name, published?, rows) per trace, ordered by series then local before published."""
    series = chart.series_values()
    names = [str(v) for v in rows[chart.series]] if chart.series else [""] * len(rows)
    if chart.symbol and chart.symbol in rows.columns:
        published = [v == "published" for v in rows[chart.symbol]]
    else:
        published = [False] * len(rows)
    keys = list(zip(names, published, strict=True))
    groups = []
    for name, is_published in sorted(set(keys), key=lambda k: (_order(series, k[0]), k[1])):
        mask = [k == (name, is_published) for k in keys]
        groups.append((trace_name(chart, name, is_published), is_published, rows[mask]))
    return groups


def trace_name(chart: ChartSpec, name: str, published: bool) -> str:
    """Legend text: the series value, marked when the numbers are published ones."""
    if chart.series:
        return f"{name} (published)" if published else name
    if chart.symbol:
        return "published" if published else "local"
    return chart.y_title


def series_colour(chart: ChartSpec, name: str) -> str:
    values = chart.series_values()
    return PALETTE[_order(values, name) % len(PALETTE)]


def _order(values: list[str], name: str) -> int:
    return values.index(name) if name in values else 0


def payload(chart: ChartSpec) -> dict[str, Any]:
    """The chart as plain JSON data for report.js."""
    return {
        "key": chart.key, "title": chart.title, "kind": chart.kind, "x": chart.x, "y": chart.y,
        "x_title": chart.x_title, "y_title": chart.y_title, "series": chart.series,
        "symbol": chart.symbol, "size": chart.size, "label": chart.label,
        "error": list(chart.error) if chart.error else None,
        "hover": [list(h) for h in chart.hover], "log_x": chart.log_x, "log_y": chart.log_y,
        "x_category": chart.x_category,
        "rank": chart.rank.to_dict() if chart.rank else None, "aggregate": chart.aggregate,
        "barmode": chart.barmode, "series_values": chart.series_values(),
        "hlines": [{"y": h.y, "label": h.label, "when": h.when} for h in chart.hlines],
        "filter_columns": chart.filter_columns(), "rows": json_rows(chart.data, chart.columns()),
        "bubble": [BUBBLE_MIN_PX, BUBBLE_SPAN_PX], "label_limit": chart.label_limit,
    }


def json_rows(frame: pd.DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN/NA become null, numpy scalars Python ones."""
    return [
        {c: json_value(v) for c, v in zip(columns, values, strict=True)}
        for values in frame[columns].itertuples(index=False, name=None)
    ]


def json_value(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return str(value)
