"""Throughput against batch size, for configurations measured at several."""

from __future__ import annotations

from xlabench.analysis import throughput_vs_batch_size
from xlabench.report.charts import ChartSpec
from xlabench.report.model import HOVER_RUN, PROVENANCE, SPS, Context, Finding
from xlabench.report.tables import Column, Table


def batch_size_finding(ctx: Context) -> Finding:
    """Throughput against batch size, for configurations measured at several."""
    title = "Throughput against batch size"
    frame = throughput_vs_batch_size(ctx.results)
    if frame.empty:
        return Finding("batch-size", title, part="beyond", empty=(
            "Every configuration ran at a single batch size."))
    chart = ChartSpec(
        key="batch-size", title=title, kind="line", data=frame, x="batch_size",
        y="throughput_sps", x_title="batch size", y_title="samples/s", series="series",
        error=("throughput_sps_ci_low", "throughput_sps_ci_high"), hover=HOVER_RUN,
        log_x=True, log_y=True,
    )
    columns = (Column("series", "configuration"), Column("device", "device"),
               Column("batch_size", "batch", "int"), SPS,
               Column("latency_ms_p50", "p50 ms/batch", "ms"), PROVENANCE)
    return Finding("batch-size", title, [], [chart], [Table("Runs", frame, columns)],
                   part="beyond")
