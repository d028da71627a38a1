"""Eager → graph → XLA (TensorFlow): how much of the "XLA speedup" is Python's op-by-op
dispatch, how much the compiler, and, where timed natively, what launching from Python costs."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import eager_graph_xla_decomposition
from xlabench.report.charts import ChartSpec
from xlabench.report.model import PAIR_COLUMNS, PROVENANCE, Context, Finding
from xlabench.report.tables import Column, Table


def eager_graph_xla_finding(ctx: Context) -> Finding:
    """Eager -> graph -> XLA: how much of the "XLA speedup" is Python overhead."""
    title = "Eager → graph → XLA: Python overhead or compiler? (TensorFlow)"
    frame = eager_graph_xla_decomposition(ctx.results)
    if frame.empty:
        return Finding("decomposition", title, part="beyond", empty=(
            "No TensorFlow configuration was measured in all three modes (eager, graph, xla)."))
    chart = ChartSpec(
        key="decomposition", title=title, kind="bar", data=_decomposition_bars(frame), x="bar",
        y="share_pct", x_title="configuration", y_title="% of the eager batch time saved",
        series="component", x_category=True, barmode="relative",
        hover=(("model", "model"), ("device", "device"), ("component", "step"),
               ("share_pct", "% of eager time"), ("eager_sps", "eager samples/s"),
               ("graph_sps", "graph samples/s"), ("xla_sps", "xla samples/s"),
               ("native_sps", "native samples/s")),
        note="Batch time t = batch / median throughput. t_eager - t_xla = (t_eager - t_graph) "
             "+ (t_graph - t_xla): the first part is Python's op-by-op dispatch, the second XLA. "
             "Where xla was also timed by xlabench-native, t_xla - t_native is what launching "
             "the compiled program from Python costs.",
    )
    columns = (
        *PAIR_COLUMNS, Column("eager_sps", "eager samples/s", "sps"),
        Column("graph_sps", "graph samples/s", "sps"), Column("xla_sps", "xla samples/s", "sps"),
        Column("graph_over_eager", "graph/eager", "ratio"),
        Column("xla_over_graph", "xla/graph", "ratio"),
        Column("xla_over_eager", "xla/eager", "ratio"),
        Column("python_overhead_ms", "Python overhead ms/batch", "ms"),
        Column("compiler_saving_ms", "compiler saving ms/batch", "ms"),
        Column("overhead_share_pct", "share of saving from Python", "share"),
        *NATIVE_STEP_COLUMNS, PROVENANCE,
    )
    if frame["native_sps"].isna().all():  # no native run: no empty native columns either
        columns = tuple(c for c in columns if c not in NATIVE_STEP_COLUMNS)
    share = frame["overhead_share_pct"].median()
    summary = [] if pd.isna(share) else [
        f"Median over {len(frame)} configurations: {share:.0f}% of the time eager → XLA saves "
        f"is Python overhead (eager → graph), {100 - share:.0f}% is the compiler (graph → XLA)."]
    summary += _native_step_summary(frame)
    return Finding("decomposition", title, summary, [chart],
                   [Table("Per configuration", frame, columns)], part="beyond")


NATIVE_STEP_COLUMNS = (
    Column("native_sps", "native samples/s", "sps"),
    Column("native_over_xla", "native/xla", "ratio"),
    Column("python_launch_ms", "xla → native: Python launch ms/batch", "ms"),
    Column("launch_share_pct", "share of eager → native saving from the launch", "share"),
)


def _native_step_summary(frame: pd.DataFrame) -> list[str]:
    with_native = frame[frame["native_sps"].notna()]
    share = with_native["launch_share_pct"].median()
    if with_native.empty or pd.isna(share):
        return []
    return [f"{len(with_native)} of them were also timed natively: launching the compiled "
            f"program from Python (xla → native) is a median {share:.0f}% of the eager → "
            f"native saving ({with_native['python_launch_ms'].median():.2f} ms/batch)."]


def _decomposition_bars(frame: pd.DataFrame) -> pd.DataFrame:
    """Stacked bars per configuration: the Python-overhead part, the compiler part and, where
    xla was also timed natively, the Python-launch part."""
    label = [f"{m} · {d} @{r} b{b}" for m, d, r, b in zip(
        frame["model"], frame["device"], frame["resolution"], frame["batch_size"], strict=True)]
    parts = (("eager → graph: Python overhead", "python_overhead_pct"),
             ("graph → XLA: compiler", "compiler_saving_pct"),
             ("xla → native: Python launch", "python_launch_pct"))
    bars = [frame.assign(bar=label, component=name, share_pct=frame[col]) for name, col in parts]
    bars[-1] = bars[-1][bars[-1]["share_pct"].notna()]  # only configurations timed natively
    return pd.concat(bars, ignore_index=True)
