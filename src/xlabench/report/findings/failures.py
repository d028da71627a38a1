"""Parity failures, and failed runs by status and reason."""

from __future__ import annotations

from xlabench.analysis import (
    failed_runs,
    failures_by_reason,
    parity_failures,
    parity_within_own_spread,
)
from xlabench.report.charts import ChartSpec
from xlabench.report.model import PAIR_COLUMNS, Context, Finding
from xlabench.report.tables import Column, Table

#: What the parity tables' spread column is (`measure.parity.compare`).
OWN_SPREAD_NOTE = (
    "Eager's own spread: where a run's difference exceeds the tolerance, how far eager differs "
    "from itself (the first image alone against the same image in the batch). A difference "
    "within it passes: with random weights some networks amplify rounding by orders of "
    "magnitude, and no other way can be closer to eager than eager is to itself.")


def failures_finding(ctx: Context) -> Finding:
    """Parity failures, and failed runs by status and reason."""
    title = "Parity failures and failed runs"
    failed = failed_runs(ctx.results)
    parity = parity_failures(ctx.results)
    charts = []
    if not failed.empty:
        failed = failed.assign(backend_mode=failed["backend"] + "/" + failed["mode"])
        charts.append(ChartSpec(
            key="failures", title="Failed runs by status", kind="bar", data=failed, x="status",
            y="runs", x_title="status", y_title="runs", series="backend_mode", symbol=None,
            x_category=True, aggregate=True, hover=(("status", "status"), ("runs", "runs")),
        ))
    parity_columns = (
        *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"),
        Column("parity_max_abs_diff", "max abs diff", "g"),
        Column("parity_max_rel_diff", "max rel diff", "g"),
        Column("parity_own_spread_rel", "eager's own spread", "g"), Column("status", "status"),
    )
    within = parity_within_own_spread(ctx.results)
    tables = [
        Table("Parity failures (compiled output vs eager beyond tolerance)", parity,
              parity_columns, empty="No parity failures.", note=OWN_SPREAD_NOTE),
        Table("Parity within eager's own spread (the network is too sensitive to compare)",
              within, parity_columns, empty="No run passed parity by eager's own spread."),
        Table("Failed runs by status and reason", failures_by_reason(ctx.results), (
            Column("status", "status"), Column("reason", "reason", "text"),
            Column("runs", "runs", "int"), Column("models", "models", "text"),
            Column("backend_modes", "backend/mode", "text")), empty="No failed runs."),
    ]
    summary = [f"{len(failed)} failed runs ({int(failed['later_ok'].sum()) if len(failed) else 0} "
               f"later succeeded); {len(parity)} parity failures"
               + (f", {len(within)} passed only within eager's own spread." if len(within)
                  else ".")]
    return Finding("health", title, summary, charts, tables, part="beyond")
