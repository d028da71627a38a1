"""The same model and configuration on several backends."""

from __future__ import annotations

from xlabench.analysis import RankRule, backend_comparison, backend_comparison_wide
from xlabench.report.charts import ChartSpec
from xlabench.report.model import HOVER_RUN, Context, Finding
from xlabench.report.tables import Column, Table


def across_backends_finding(ctx: Context) -> Finding:
    """The same model and configuration on several backends."""
    title = "The same model across backends"
    frame = backend_comparison(ctx.results)
    if frame.empty:
        return Finding("backends", title, part="beyond",
                       empty="No configuration was measured on two or more backends.")
    bars = frame.assign(bar=[f"{m} · {d}" for m, d in zip(frame["model"], frame["device"],
                                                          strict=True)])
    chart = ChartSpec(
        key="backends", title=title, kind="bar", data=bars, x="bar", y="throughput_sps",
        x_title="model · device", y_title="samples/s", series="backend_mode",
        error=("throughput_sps_ci_low", "throughput_sps_ci_high"), hover=HOVER_RUN,
        x_category=True,
        rank=RankRule("throughput_sps", per=("origin", "bar", "backend_mode")),
        note="Each model's best configuration per backend/mode; filter by device and resolution.",
    )
    wide = backend_comparison_wide(frame)
    value_columns = tuple(Column(c, f"{c} samples/s", "sps") for c in wide.columns
                          if "/" in c)
    columns = (Column("device", "device"), Column("model", "model"),
               Column("resolution", "res", "int"), Column("batch_size", "batch", "int"),
               Column("precision", "precision"), *value_columns)
    return Finding("backends", title, [], [chart], [Table("Throughput per backend/mode", wide,
                                                          columns)], part="beyond")
