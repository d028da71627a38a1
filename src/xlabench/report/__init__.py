"""Layer 4: findings as charts and tables; one self-contained HTML page, PNGs, findings.md."""

from xlabench.report.build import ReportFiles, build_findings, write_report
from xlabench.report.model import Finding, ReportOptions

__all__ = ["Finding", "ReportFiles", "ReportOptions", "build_findings", "write_report"]
