"""The report's findings, one module per topic, in page order: which runtime to deploy, the
2023 study's seven, then what the study did not measure (how each number was measured, where
the speedup comes from, why XLA loses on CPU, how sure it is, what compiling costs, what
failed, batch size, hardware use, backends side by side, and devices side by side)."""

from __future__ import annotations

from xlabench.report.findings.across_backends import across_backends_finding
from xlabench.report.findings.across_devices import across_devices_finding
from xlabench.report.findings.batch_size import batch_size_finding
from xlabench.report.findings.compile_time import compile_time_finding
from xlabench.report.findings.deploy import deploy_finding
from xlabench.report.findings.eager_graph_xla import eager_graph_xla_finding
from xlabench.report.findings.failures import failures_finding
from xlabench.report.findings.gflops import gflops_finding
from xlabench.report.findings.measurement_quality import measurement_quality_finding
from xlabench.report.findings.python_share import python_share_finding
from xlabench.report.findings.speedup_intervals import speedup_intervals_finding
from xlabench.report.findings.study import study_findings
from xlabench.report.findings.xla_flags import xla_flags_finding
from xlabench.report.model import Context, Finding

#: What the report adds to the study, in page order.
BEYOND_THE_STUDY = (
    measurement_quality_finding, eager_graph_xla_finding, xla_flags_finding,
    python_share_finding, speedup_intervals_finding, compile_time_finding, failures_finding,
    batch_size_finding, gflops_finding, across_backends_finding, across_devices_finding,
)


def all_findings(ctx: Context) -> list[Finding]:
    """Every finding in page order: the deployment advice, the study's, then the rest."""
    return [deploy_finding(ctx), *study_findings(ctx), *(f(ctx) for f in BEYOND_THE_STUDY)]
