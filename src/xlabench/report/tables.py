"""Tables of findings: which columns, with what headers and number formats.

Cells are plain text here; the HTML writer escapes them and the Markdown writer escapes them
for Markdown, so a value from the db is never markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from xlabench.analysis import FILTER_COLUMNS, first_under

MISSING = "–"


@dataclass(frozen=True)
class Column:
    """One table column.

    Attributes:
        key: the frame's column.
        header: what the reader sees.
        fmt: ``auto``, ``int``, ``sps`` (samples/s), ``ratio`` (x), ``pct`` (signed %),
            ``share`` (unsigned %), ``s``, ``ms``, ``g`` (3 significant digits), ``noise``
            (a within-noise flag), ``parity`` (pass/FAIL) or ``text``.
        ci: (low, high) columns shown as ``[low, high]`` after the value.
    """

    key: str
    header: str
    fmt: str = "auto"
    ci: tuple[str, str] | None = None


@dataclass(frozen=True)
class Bound:
    """A reader-set upper bound on a column of a ranked table.

    The table's frame holds every candidate, in rank order per `group`; what is shown is, per
    group, the first row whose `key` is below the bound (`analysis.first_under`). The HTML page
    asks the reader for the bound (an <input type=number>) and picks in the browser; the
    Markdown report, which cannot ask, shows the picks at `default`.
    """

    key: str
    label: str
    default: float
    group: tuple[str, ...]

    def picked(self, frame: pd.DataFrame, bound: float | None = None) -> pd.DataFrame:
        return first_under(frame, self.key, self.default if bound is None else bound,
                           self.group)


@dataclass(frozen=True, eq=False)
class Table:
    """A titled table of a finding; `empty` is said instead when it has no rows.

    `filterable`: the page's filters hide its rows (False for reference tables).
    `bound`: the rows are candidates, and a reader-set bound picks what is shown.
    """

    title: str
    frame: pd.DataFrame
    columns: tuple[Column, ...]
    note: str = ""
    empty: str = "no data"
    filterable: bool = True
    bound: Bound | None = None

    def at_default_bound(self) -> Table:
        """This table with only the rows its bound picks at the default (itself if unbound)."""
        if self.bound is None:
            return self
        return Table(self.title, self.bound.picked(self.frame), self.columns, self.note,
                     self.empty, self.filterable)

    def shown_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.key in self.frame.columns)

    def cells(self) -> list[list[str]]:
        """Every row's cells as text."""
        shown = self.shown_columns()
        return [[cell(c, row) for c in shown] for row in self.frame.to_dict("records")]

    def filter_values(self) -> list[dict[str, str]]:
        """Per row, the values of the page filters its columns have (for the HTML filters)."""
        if not self.filterable:
            return [{} for _ in range(len(self.frame))]
        present = [c for c in FILTER_COLUMNS if c in self.frame.columns]
        return [
            {c: _filter_text(row[c]) for c in present} for row in self.frame.to_dict("records")
        ]


def _filter_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def cell(column: Column, row: dict[str, Any]) -> str:
    """The text of one cell, with its interval when the column has one."""
    text = fmt_value(column.fmt, row.get(column.key))
    if column.ci and text != MISSING:
        low, high = (row.get(k) for k in column.ci)
        if not _missing(low) and not _missing(high):
            text += f" [{fmt_value(column.fmt, low)}, {fmt_value(column.fmt, high)}]"
    return text


def fmt_value(fmt: str, value: Any) -> str:
    """A value formatted for a table."""
    if fmt == "noise":
        return _noise(value)
    if _missing(value):
        return MISSING
    if fmt == "parity":
        return "pass" if value else "FAIL"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float | int) and fmt != "text":
        return _number(fmt, float(value))
    return str(value)


def _number(fmt: str, value: float) -> str:
    if math.isinf(value):
        return "∞"
    formats = {
        "int": "{:.0f}", "sps": "{:.1f}", "ratio": "{:.2f}x", "pct": "{:+.1f}%",
        "share": "{:.0f}%", "s": "{:.2f}", "ms": "{:.2f}", "g": "{:.3g}",
    }
    if fmt in formats:
        return formats[fmt].format(value)
    return f"{value:.0f}" if value.is_integer() else f"{value:.4g}"


def _noise(value: Any) -> str:
    if _missing(value):
        return "n/a (no CI)"
    return "within noise" if bool(value) else "clear"


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)
