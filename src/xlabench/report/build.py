"""Build the whole report: findings from the results, then index.html, PNGs and findings.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from xlabench.analysis import default_slice, most_common, speedup_table
from xlabench.core import utc_now
from xlabench.report.findings import all_findings
from xlabench.report.html import html_page
from xlabench.report.markdown import markdown_report
from xlabench.report.model import Context, Finding, ReportOptions
from xlabench.report.png import write_png


@dataclass(frozen=True)
class ReportFiles:
    """What `write_report` wrote."""

    index_html: Path
    findings_md: Path
    pngs: tuple[Path, ...]


def build_findings(results: pd.DataFrame, options: ReportOptions,
                   flag_results: pd.DataFrame | None = None) -> list[Finding]:
    """Every finding in page order (the deployment advice, the study's, then the rest),
    computed from `results` (any subset of the grid) and, where given, the XLA:CPU flags'
    ab pairs from `flag_results` (else from `results`)."""
    speedups = speedup_table(results, options.comparison)
    device, resolution = chosen_slice(speedups, options)
    ctx = Context(results, options, speedups, device, resolution, flag_results)
    return all_findings(ctx)


def chosen_slice(speedups: pd.DataFrame, options: ReportOptions) -> tuple[str | None, int | None]:
    """The device and resolution of findings 4 and 5: the user's, else the most common."""
    if options.device is None:
        device, resolution = default_slice(speedups)
    else:
        device = options.device
        on_device = speedups.loc[speedups["device"] == device, "resolution"]
        common = most_common(on_device)
        resolution = None if common is None else int(common)
    return device, options.resolution if options.resolution is not None else resolution


def overview(results: pd.DataFrame, options: ReportOptions, source_name: str) -> list[str]:
    """The page's opening lines: what the db holds and what the report compares."""
    statuses = results["status"].value_counts().to_dict()
    sources = results["source"].value_counts().to_dict()
    devices = sorted({str(d) for d in results["device"]})
    return [
        f"Database: {source_name}; generated {utc_now()}.",
        f"{len(results)} runs: " + (", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
                                    or "none") + ".",
        "Sources: " + (", ".join(f"{k} ({v})" for k, v in sorted(sources.items())) or "none")
        + "; devices: " + (", ".join(devices) or "none") + ".",
        f"'With and without the compiler' means {options.comparison.label}.",
        "Published numbers (imported) were measured once without device sync and have no CI.",
    ]


def write_report(
    results: pd.DataFrame, out_dir: Path, options: ReportOptions, source_name: str,
    flag_results: pd.DataFrame | None = None,
) -> ReportFiles:
    """Write index.html, one PNG per chart and findings.md into `out_dir` (created if needed).

    Args:
        results: the frame of `analysis.load_results`.
        out_dir: the report folder.
        options: comparison, slice and top-N.
        source_name: how the page names the database (its file name).
        flag_results: the frame of the XLA:CPU flags' ab pairs, where kept apart.
    """
    findings = build_findings(results, options, flag_results)
    lines = overview(results, options, source_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = tuple(write_png(c, out_dir / f"{c.key}.png") for f in findings for c in f.charts)
    findings_md = out_dir / "findings.md"
    findings_md.write_text(markdown_report(findings, lines), encoding="utf-8")
    index = out_dir / "index.html"
    index.write_text(html_page(findings, lines, f"xlabench report: {source_name}"),
                     encoding="utf-8")
    return ReportFiles(index, findings_md, pngs)
