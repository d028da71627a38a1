"""findings.md: every finding's summary and every table, in Markdown."""

from __future__ import annotations

import html

from xlabench.report.model import Finding
from xlabench.report.tables import Table

#: The page's parts in order. The deployment advice comes first: it is the question a reader
#: brings ("what should I run this on, here?"), and none of the study's findings answers it.
PARTS = (("deploy", "Start here: deployment"), ("study", "The 2023 study's findings"),
         ("beyond", "Beyond the study"))
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]|"})


def md_text(text: object) -> str:
    """Text made inert in Markdown: HTML special characters as entities, Markdown ones escaped,
    one line (a newline would end a table row)."""
    one_line = " ".join(str(text).split())
    return html.escape(one_line, quote=False).translate(_MD_SPECIAL)


def markdown_report(findings: list[Finding], overview: list[str]) -> str:
    """The whole findings.md."""
    lines = ["# xlabench report", ""]
    lines += [f"- {md_text(line)}" for line in overview] + [""]
    for part, heading in PARTS:
        lines += [f"## {heading}", ""]
        for finding in (f for f in findings if f.part == part):
            lines += _finding(finding)
    return "\n".join(lines).rstrip() + "\n"


def _finding(finding: Finding) -> list[str]:
    lines = [f"### {md_text(finding.title)}", ""]
    if finding.empty:
        lines += [f"_{md_text(finding.empty)}_", ""]
    if finding.summary:
        lines += [f"- {md_text(s)}" for s in finding.summary] + [""]
    for chart in finding.charts:
        lines += [f"![{md_text(chart.title)}]({chart.key}.png)", ""]
        if chart.note:
            lines += [md_text(chart.note), ""]
    for table in finding.tables:
        lines += markdown_table(table)
    return lines


def markdown_table(table: Table) -> list[str]:
    """A titled pipe table, or its `empty` sentence; a bounded table at its default bound."""
    lines = [f"**{md_text(table.title)}**", ""]
    if table.bound is not None:
        lines += [md_text(f"{table.bound.label}: {table.bound.default:g} (the default; the "
                          "HTML report lets the reader change it)."), ""]
        table = table.at_default_bound()
    if table.frame.empty:
        return [*lines, f"_{md_text(table.empty)}_", ""]
    headers = [md_text(c.header) for c in table.shown_columns()]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|" + "|".join(" --- " for _ in headers) + "|")
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in table.cells()]
    if table.note:
        lines += ["", md_text(table.note)]
    return [*lines, ""]
