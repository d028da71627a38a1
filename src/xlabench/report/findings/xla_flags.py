"""Why XLA loses on CPU: the XLA:CPU flags that route convolutions elsewhere, each against
XLA's defaults in an `xlabench ab`, beside TF graph's lead over the same defaults."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import GAP_VERDICTS, flag_gaps, flag_pairs
from xlabench.analysis.xla_flags import GRAPH_LABEL
from xlabench.report.model import Context, Finding
from xlabench.report.tables import Column, Table

TITLE = "Why XLA loses on CPU: XLA:CPU flags against XLA's defaults (TensorFlow)"
RATIO_VS_DEFAULTS = Column("ratio", "b / XLA defaults [95% CI]", "ratio",
                           ci=("ratio_ci_low", "ratio_ci_high"))
GRAPH_RATIO = Column("graph_ratio", "graph / XLA defaults [95% CI]", "ratio",
                     ci=("graph_ratio_ci_low", "graph_ratio_ci_high"))
NOTE = (
    "Each row is one `xlabench ab` (bench/xla_cpu_flags.py --ab): TF XLA at XLA's defaults "
    "against the same with one XLA_FLAGS setting, or against TF graph, run interleaved in "
    "random order until decided or out of budget. Intervals: the one ratio method on the "
    "stored rounds (paired t); the ab's own sequential interval, wider for its repeated "
    "looks, is in the xla-flags.json beside the database. A flag reaches graph where its "
    "interval's low end reaches graph's low end; too wide to tell where its interval still "
    "holds graph's low end without being faster than the defaults.")


def xla_flags_finding(ctx: Context) -> Finding:
    """Each flag against XLA's defaults, and whether any closes the gap to TF graph."""
    source = ctx.flag_results if ctx.flag_results is not None else ctx.results
    pairs = flag_pairs(source)
    if pairs.empty:
        return Finding("xla-flags", TITLE, part="beyond", empty=(
            "No XLA:CPU flag was measured against XLA's defaults "
            "(bench/xla_cpu_flags.py --ab)."))
    gaps = flag_gaps(pairs)
    summary = _model_lines(pairs, gaps) + _overall_line(gaps)
    columns = (
        Column("device", "device"), Column("model", "model"), Column("resolution", "res", "int"),
        Column("batch_size", "batch", "int"), Column("label", "side b"),
        Column("xla_flags", "XLA_FLAGS"), RATIO_VS_DEFAULTS, Column("verdict", "vs defaults"),
        Column("rounds", "rounds", "int"), Column("ci_method", "CI method"),
    )
    tables = [Table("Each side b against TF XLA at XLA's defaults", pairs, columns, NOTE)]
    if not gaps.empty:
        tables.append(Table("Does a flag close the gap to TF graph?", gaps, (
            Column("device", "device"), Column("model", "model"), Column("label", "flag"),
            RATIO_VS_DEFAULTS, GRAPH_RATIO, Column("gap", "closes the gap?"))))
    return Finding("xla-flags", TITLE, summary, [], tables, part="beyond")


def _model_lines(pairs: pd.DataFrame, gaps: pd.DataFrame) -> list[str]:
    """Per device and model: graph's lead, then each flag grouped by what it did."""
    lines = []
    for (device, model), rows in pairs.groupby(["device", "model"], sort=True):
        graph = rows[rows["label"] == GRAPH_LABEL]
        head = (f"{model} on {device}: graph / XLA defaults {_ratio(graph.iloc[0])}"
                if not graph.empty else f"{model} on {device}: graph not measured")
        mine = gaps[(gaps["device"] == device) & (gaps["model"] == model)] \
            if not gaps.empty else gaps
        if mine.empty:  # no graph pair: each flag's own ratio
            parts = [f"{r['label']} {_ratio(r)}"
                     for r in rows[rows["label"] != GRAPH_LABEL].to_dict("records")]
        else:
            parts = [f"{verdict}: {', '.join(mine.loc[mine['gap'] == verdict, 'label'])}"
                     for verdict in GAP_VERDICTS if (mine["gap"] == verdict).any()]
        lines.append("; ".join([head, *parts]) + ".")
    return lines


def _ratio(row: pd.Series | dict) -> str:
    low, high = row["ratio_ci_low"], row["ratio_ci_high"]
    interval = "" if pd.isna(low) else f" [{low:.2f}x, {high:.2f}x]"
    return f"{row['ratio']:.2f}x{interval}"


def _overall_line(gaps: pd.DataFrame) -> list[str]:
    """Whether any flag closes the gap on any model, and which are at least faster."""
    if gaps.empty:
        return []
    named = {verdict: ", ".join(f"{r['label']} ({r['model']})" for r in
                                gaps[gaps["gap"] == verdict].to_dict("records"))
             for verdict in GAP_VERDICTS[:2]}
    if named[GAP_VERDICTS[0]]:
        return [f"Flags that close the gap to TF graph: {named[GAP_VERDICTS[0]]}."]
    faster = named[GAP_VERDICTS[1]]
    tail = f"; faster than XLA's defaults: {faster}" if faster else \
        ", and none is faster than XLA's defaults"
    return [f"No flag closes the gap to TF graph on any of {gaps['model'].nunique()} "
            f"models{tail}."]
