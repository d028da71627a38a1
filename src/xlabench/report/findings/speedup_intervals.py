"""Every speedup of the comparison with its 95% interval, and whether it is significant."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import RankRule
from xlabench.measure.combine import BOOTSTRAP_RESAMPLES, MIN_BOOTSTRAP_SAMPLES
from xlabench.report.charts import ChartSpec, HLine
from xlabench.report.model import (
    HOVER_PAIR,
    MARKER_NOTE,
    PAIR_COLUMNS,
    PROVENANCE,
    RATIO,
    Context,
    Finding,
)
from xlabench.report.tables import Column, Table


def speedup_intervals_finding(ctx: Context) -> Finding:
    """Every speedup with its 95% interval, and whether it is significant."""
    cmp = ctx.options.comparison
    title = f"Speedups with confidence intervals: {cmp.label}"
    table = ctx.speedups
    if table.empty:
        return Finding("speedup-ci", title, part="beyond", empty=(
            f"No configuration was measured both in {cmp.baseline_mode} and in "
            f"{cmp.compiled_mode} on {cmp.backend}."))
    data = table.assign(pair=[f"{m} @{r} b{b} {p}" for m, r, b, p in zip(
        table["model"], table["resolution"], table["batch_size"], table["precision"], strict=True)])
    chart = ChartSpec(
        key="speedup-ci", title=title, kind="bar", data=data, x="pair", y="speedup_ratio",
        x_title="configuration", y_title="speedup (compiled / baseline)", series="device",
        error=("speedup_ratio_ci_low", "speedup_ratio_ci_high"), hover=HOVER_PAIR,
        x_category=True, rank=RankRule("speedup_ratio", tiebreak="pair"),
        hlines=(HLine(1.0, "no speedup"),), note=MARKER_NOTE,
    )
    columns = (
        *PAIR_COLUMNS, Column("baseline_sps", "baseline samples/s", "sps",
                              ci=("baseline_ci_low_sps", "baseline_ci_high_sps")),
        Column("compiled_sps", "compiled samples/s", "sps",
               ci=("compiled_ci_low_sps", "compiled_ci_high_sps")), RATIO,
        Column("speedup_abs_sps", "samples/s gained", "sps",
               ci=("speedup_abs_ci_low_sps", "speedup_abs_ci_high_sps")),
        Column("ci_method", "CI method"), Column("significant", "significant"),
        Column("parity_passed", "parity", "parity"), PROVENANCE,
    )
    return Finding("speedup-ci", title, _ci_summary(table), [chart],
                   [Table("Every pair", table.sort_values("speedup_ratio", ascending=False),
                          columns, note=CI_NOTE)], part="beyond")


CI_NOTE = (
    "Every interval is the one ratio method `compare` uses too (measure.combine.result_ratio). "
    "CI method 'paired t': both ran interleaved in one sweep (same sweep id, overlapping "
    "times): the t interval of the per-round log ratios. 'welch t': two or more processes a "
    "side, not interleaved: Welch's interval of the mean log process medians, with each run's "
    "between-run variation where known. One process a side: 'bootstrap' when both runs "
    f"stored >= {MIN_BOOTSTRAP_SAMPLES} raw samples (their per-sample throughputs resampled "
    f"{BOOTSTRAP_RESAMPLES} times, seeded, and the 2.5/97.5 percentiles of the "
    "ratio/difference of medians taken); 'ci-ends' with fewer samples (the bounds combine the "
    "ends of the two stored 95% CIs, ratio in [c_low/b_high, c_high/b_low]: conservative in "
    "width, >= 90% hold rate). 'none': published numbers have no spread. 'significant': the "
    "ratio's interval excludes 1."
)


def _ci_summary(table: pd.DataFrame) -> list[str]:
    methods = table["ci_method"].value_counts().to_dict()
    known = table["significant"].dropna()
    faster = int(((table["speedup_ratio"] > 1) & table["significant"].fillna(False)).sum())
    slower = int(((table["speedup_ratio"] < 1) & table["significant"].fillna(False)).sum())
    return [
        f"{len(table)} pairs; CI methods: "
        + ", ".join(f"{k} {v}" for k, v in sorted(methods.items())) + ".",
        f"Of {len(known)} pairs with an interval: {faster} significantly faster compiled, "
        f"{slower} significantly slower, {len(known) - faster - slower} within noise.",
    ]
