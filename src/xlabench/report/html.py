"""index.html: one self-contained page (plotly.js, data, script and style inline).

Safety: every value from the db or an imported file reaches the page either through
`html.escape` (tables, headings, filter options) or inside the JSON data block, where `<`, `>`
and `&` are written as \\u escapes so that no value can close the <script> element; the
browser code escapes values again before Plotly draws them (Plotly reads a subset of HTML in
labels). A Content-Security-Policy forbids any network access.
"""

from __future__ import annotations

import html
import importlib.resources
import json
from typing import Any

from xlabench.analysis import FILTER_COLUMNS
from xlabench.report.charts import PALETTE, ChartSpec, filter_value, payload
from xlabench.report.markdown import PARTS
from xlabench.report.model import Finding
from xlabench.report.tables import Table

FILTER_LABELS = {"device": "device", "resolution": "resolution", "backend": "backend",
                 "mode": "mode", "precision": "precision"}
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:")


def esc(value: object) -> str:
    """Text or attribute value, escaped for HTML."""
    return html.escape(str(value), quote=True)


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' characters, no NaN."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def asset(name: str) -> str:
    return (importlib.resources.files("xlabench.report") / "assets" / name).read_text("utf-8")


def plotly_js() -> str:
    """plotly.js from the installed plotly package (no CDN: the page must work offline)."""
    bundled = importlib.resources.files("plotly") / "package_data" / "plotly.min.js"
    if bundled.is_file():
        return bundled.read_text("utf-8")
    from plotly.offline import get_plotlyjs  # older layouts of the package

    return get_plotlyjs()


def html_page(findings: list[Finding], overview: list[str], title: str) -> str:
    """The whole index.html."""
    charts = [c for f in findings for c in f.charts]
    data = {"palette": list(PALETTE), "charts": [payload(c) for c in charts]}
    body = [
        f"<header><h1>{esc(title)}</h1><ul class=\"overview\">",
        *(f"<li>{esc(line)}</li>" for line in overview),
        "</ul></header>", _filter_bar(findings), _toc(findings), "<main>",
    ]
    for part, heading in PARTS:
        body.append(f"<h2 class=\"part\">{esc(heading)}</h2>")
        body += [_section(f) for f in findings if f.part == part]
    body.append("</main>")
    return "\n".join([
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head><body>",
        *body,
        f"<script type=\"application/json\" id=\"xlabench-data\">{script_json(data)}</script>",
        f"<script>{plotly_js()}</script>", f"<script>{asset('report.js')}</script>",
        "</body></html>",
    ]) + "\n"


def filter_values(findings: list[Finding]) -> dict[str, list[str]]:
    """Every value each filter can take, over all charts and tables."""
    frames = [c.data for f in findings for c in f.charts]
    frames += [t.frame for f in findings for t in f.tables if t.filterable]
    values: dict[str, set[str]] = {c: set() for c in FILTER_COLUMNS}
    for frame in frames:
        for column in FILTER_COLUMNS:
            if column in frame.columns:
                values[column] |= {filter_value(v) for v in frame[column].dropna()}
    return {c: sorted(v, key=_natural) for c, v in values.items() if v}


def _natural(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _filter_bar(findings: list[Finding]) -> str:
    parts = ["<form class=\"filters\" id=\"filters\"><strong>Filters</strong>"]
    for column, values in filter_values(findings).items():
        options = "".join(f"<option value=\"{esc(v)}\">{esc(v)}</option>" for v in values)
        parts.append(f"<label>{esc(FILTER_LABELS[column])} <select data-filter=\"{column}\">"
                     f"<option value=\"\">all</option>{options}</select></label>")
    parts.append("<button type=\"reset\" id=\"reset-filters\">reset</button></form>")
    return "".join(parts)


def _toc(findings: list[Finding]) -> str:
    items = "".join(f"<li><a href=\"#{f.key}\">{esc(f.title)}</a></li>" for f in findings)
    return f"<nav><ul>{items}</ul></nav>"


def _section(finding: Finding) -> str:
    parts = [f"<section id=\"{finding.key}\"><h3>{esc(finding.title)}</h3>"]
    if finding.empty:
        parts.append(f"<p class=\"empty\">{esc(finding.empty)}</p>")
    if finding.summary:
        parts.append("<ul class=\"summary\">" + "".join(
            f"<li>{esc(s)}</li>" for s in finding.summary) + "</ul>")
    parts += [_chart(c) for c in finding.charts]
    parts += [_table(t) for t in finding.tables]
    return "".join(parts) + "</section>"


def _chart(chart: ChartSpec) -> str:
    applies = ", ".join(chart.filter_columns()) or "none"
    note = f"{chart.note} " if chart.note else ""
    return (f"<figure><div class=\"chart\" id=\"chart-{chart.key}\" data-chart=\"{chart.key}\">"
            f"</div><figcaption>{esc(note)}Filters that apply: {esc(applies)}. "
            f"<a href=\"{chart.key}.png\">PNG</a></figcaption></figure>")


def _table(table: Table) -> str:
    head = f"<h4>{esc(table.title)}</h4>"
    if table.frame.empty:
        return f"{head}<p class=\"empty\">{esc(table.empty)}</p>"
    headers = "".join(f"<th>{esc(c.header)}</th>" for c in table.shown_columns())
    rows = []
    bounded = _bound_attrs(table)
    for cells, filters, extra in zip(table.cells(), table.filter_values(), bounded,
                                     strict=True):
        attrs = "".join(f" data-f-{k}=\"{esc(v)}\"" for k, v in filters.items()) + extra
        rows.append(f"<tr{attrs}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    note = f"<p class=\"note\">{esc(table.note)}</p>" if table.note else ""
    return (f"{head}<div class=\"table-wrap\">{_bound_input(table)}<table data-filterable>"
            f"<thead><tr>{headers}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p class=\"filtered-empty\" hidden>No rows for these filters.</p></div>{note}")


def _bound_input(table: Table) -> str:
    """The reader's bound for a bounded table (report.js re-picks its rows on input)."""
    if table.bound is None:
        return ""
    bound = table.bound
    return (f"<label class=\"bound\">{esc(bound.label)} <input type=\"number\" min=\"0\" "
            f"step=\"any\" value=\"{bound.default:g}\" data-bound-input=\"{esc(bound.key)}\">"
            "</label> <small>(empty: no bound)</small>")


def _bound_attrs(table: Table) -> list[str]:
    """Per row of a bounded table: its group, its bounded value, and `hidden` unless the
    default bound picks it (so the page shows the default picks before the script runs)."""
    if table.bound is None:
        return ["" for _ in range(len(table.frame))]
    bound = table.bound
    picked = set(bound.picked(table.frame).index)
    attrs = []
    for index, row in zip(table.frame.index, table.frame.to_dict("records"), strict=True):
        group = json.dumps([_group_text(row[c]) for c in bound.group])
        value = float(row[bound.key])
        attrs.append(f" data-group=\"{esc(group)}\" data-bound-value=\"{value!r}\""
                     + ("" if index in picked else " hidden"))
    return attrs


def _group_text(value: object) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
