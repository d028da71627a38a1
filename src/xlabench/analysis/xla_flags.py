"""XLA:CPU flags against XLA's defaults, and TF graph against both: the `xlabench ab` pairs
`bench/xla_cpu_flags.py --ab` stores. Each pair is one ab (one sweep): side a is TF XLA at
XLA's defaults, labelled `DEFAULTS_LABEL`; side b the same with one `XLA_FLAGS` setting
(labelled by the flag's name), or TF graph (`GRAPH_LABEL`). Read with the one ratio method
(`intervals.row_ratio`: both sides ran interleaved, so the paired t of their rounds), and per
model, which flag, if any, closes XLA's gap to graph (`gap_verdict`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlabench.analysis.intervals import Spans, ratio_verdict, result_spans, row_ratio
from xlabench.analysis.result_rows import every_result

#: The labels `bench/xla_cpu_flags.py` gives XLA's defaults and TF graph.
DEFAULTS_LABEL, GRAPH_LABEL = "xla", "graph"
#: Side a and side b of one ab agree on these.
PAIR_ON = ("device", "model", "resolution", "batch_size", "precision")
#: `gap_verdict`'s answers, strongest first.
GAP_VERDICTS = ("reaches graph", "faster than XLA's defaults", "too wide to tell",
                "does not close it", "no interval")


def gap_verdict(flag_low: float, flag_high: float, graph_low: float) -> str:
    """What one flag did against TF graph's lead, both as b / XLA's defaults: it reaches graph
    where its interval's low end reaches graph's low end; it is faster than XLA's defaults
    where its low end is above 1; it is too wide to tell where its interval still holds
    graph's low end; else it does not close the gap."""
    if pd.isna(flag_low) or pd.isna(flag_high) or pd.isna(graph_low):
        return GAP_VERDICTS[4]
    if flag_low >= graph_low:
        return GAP_VERDICTS[0]
    if flag_low > 1:
        return GAP_VERDICTS[1]
    return GAP_VERDICTS[2] if flag_high >= graph_low else GAP_VERDICTS[3]


def flag_pairs(results: pd.DataFrame) -> pd.DataFrame:
    """Every ab pair of `results` against XLA's defaults: one row per side b, with ``label``,
    ``mode``, ``xla_flags``, ``defaults_sps``, ``variant_sps``, ``ratio`` (variant /
    defaults) with ``ratio_ci_low``/``_high``, ``ci_method``, ``rounds`` (pairs used) and
    ``verdict`` (`intervals.ratio_verdict`)."""
    rows = every_result(results) if not results.empty else results
    if rows.empty or "label" not in rows:
        return pd.DataFrame()
    rows = rows[rows["sweep_id"].notna() & rows["label"].notna()]
    spans = result_spans(results)
    found = []
    for _, sweep in rows.groupby("sweep_id", sort=False):
        defaults = sweep[sweep["label"] == DEFAULTS_LABEL]
        for side_b in sweep[sweep["label"] != DEFAULTS_LABEL].to_dict("records"):
            side_a = defaults[(defaults[list(PAIR_ON)] == pd.Series(
                {k: side_b[k] for k in PAIR_ON})).all(axis=1)]
            if not side_a.empty:
                found.append(_pair(side_a.iloc[-1].to_dict(), side_b, spans))
    if not found:
        return pd.DataFrame()
    return pd.DataFrame(found).sort_values([*PAIR_ON, "label"]).reset_index(drop=True)


def _pair(side_a: dict[str, Any], side_b: dict[str, Any], spans: Spans) -> dict[str, Any]:
    interval = row_ratio(side_b, side_a, spans)
    return {
        **{k: side_b[k] for k in ("origin", *PAIR_ON, "label", "mode", "xla_flags")},
        "defaults_sps": side_a["throughput_sps"], "variant_sps": side_b["throughput_sps"],
        "ratio": side_b["throughput_sps"] / side_a["throughput_sps"],
        "ratio_ci_low": interval.ratio_low, "ratio_ci_high": interval.ratio_high,
        "ci_method": interval.method, "rounds": interval.n_pairs,
        "verdict": ratio_verdict(interval.ratio_low, interval.ratio_high),
    }


def flag_gaps(pairs: pd.DataFrame) -> pd.DataFrame:
    """`flag_pairs`' flags (not graph) of the models whose graph pair was also measured, each
    with ``graph_ratio`` and its interval and ``gap`` (`gap_verdict`)."""
    if pairs.empty:
        return pd.DataFrame()
    keys = list(PAIR_ON)
    graph = pairs.loc[pairs["label"] == GRAPH_LABEL, [*keys, "ratio", "ratio_ci_low",
                                                      "ratio_ci_high"]]
    graph = graph.rename(columns={c: f"graph_{c}" for c in graph.columns if c not in keys})
    flags = pairs[pairs["label"] != GRAPH_LABEL].merge(graph, on=keys, how="inner")
    if flags.empty:
        return pd.DataFrame()
    gaps = [gap_verdict(low, high, graph_low) for low, high, graph_low in zip(
        flags["ratio_ci_low"], flags["ratio_ci_high"], flags["graph_ratio_ci_low"],
        strict=True)]
    return flags.assign(gap=gaps).sort_values([*keys, "label"]).reset_index(drop=True)
