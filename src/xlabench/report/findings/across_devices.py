"""The same models on each device (the fleet's CPU kinds): does XLA's verdict hold on every
one, is the fastest way the same, and how much faster is one device than another per way."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import (
    comparison_for,
    device_ratio_summary,
    device_ratios,
    picks_across_devices,
    speedup_table,
    verdicts_across_devices,
)
from xlabench.analysis.across_devices import ACROSS_KEYS, PICK_KEYS
from xlabench.analysis.speedup import Comparison
from xlabench.core.backends import STUDY_BACKEND
from xlabench.report.charts import ChartSpec
from xlabench.report.model import PAIR_COLUMNS, RATIO, SPS, Context, Finding
from xlabench.report.tables import Column, Table

TITLE = "The same models on each CPU kind: do the verdicts hold?"
#: The study's comparison and the honest one: XLA against eager and against graph.
COMPARISONS = (comparison_for(STUDY_BACKEND, "eager"), comparison_for(STUDY_BACKEND, "graph"))
DEVICE_RATIO = Column("device_ratio", "device / reference [95% CI]", "ratio",
                      ci=("device_ratio_ci_low", "device_ratio_ci_high"))


def across_devices_finding(ctx: Context) -> Finding:
    """Verdicts, picks and throughput of the configurations measured on several devices."""
    verdicts = pd.concat([_verdicts(ctx, c) for c in COMPARISONS], ignore_index=True)
    picks = picks_across_devices(ctx.results)
    ratios = device_ratios(ctx.results)
    if verdicts.empty and picks.empty and ratios.empty:
        return Finding("devices", TITLE, part="beyond", empty=(
            "No configuration was measured on two or more devices (local results)."))
    summary = [_devices_line(verdicts, picks, ratios)]
    summary += [_verdict_line(verdicts[verdicts["comparison"] == c.label], c)
                for c in COMPARISONS if (verdicts["comparison"] == c.label).any()]
    summary += [_pick_line(picks)] if not picks.empty else []
    summary += _ratio_lines(device_ratio_summary(ratios))
    tables = [
        Table("TensorFlow XLA's speedup on each device", verdicts, (
            Column("comparison", "comparison"), *PAIR_COLUMNS, RATIO,
            Column("verdict", "verdict"), Column("holds", "same verdict on every device"))),
        Table("The fastest way on each device", picks, (
            Column("device", "device"), Column("model", "model"),
            Column("resolution", "res", "int"), Column("batch_size", "batch", "int"),
            Column("way", "fastest way"), SPS, Column("vs_runner_up", "vs runner-up"),
            Column("same_pick", "same way on every device"))),
        Table("Throughput of each device over the reference device, per way", ratios, (
            Column("way", "way"), Column("model", "model"), Column("resolution", "res", "int"),
            Column("batch_size", "batch", "int"), Column("device", "device"),
            Column("reference", "reference"), DEVICE_RATIO, Column("ci_method", "CI method"))),
    ]
    charts = [_ratio_chart(ratios)] if not ratios.empty else []
    return Finding("devices", TITLE, summary, charts, tables, part="beyond")


def _verdicts(ctx: Context, comparison: Comparison) -> pd.DataFrame:
    speedups = ctx.speedups if comparison == ctx.options.comparison else \
        speedup_table(ctx.results, comparison)
    return verdicts_across_devices(speedups).assign(comparison=comparison.label)


def _devices_line(verdicts: pd.DataFrame, picks: pd.DataFrame, ratios: pd.DataFrame) -> str:
    devices = sorted({*verdicts.get("device", ()), *picks.get("device", ()),
                      *ratios.get("device", ()), *ratios.get("reference", ())})
    models = sorted({*verdicts.get("model", ()), *picks.get("model", ()),
                     *ratios.get("model", ())})
    plural = "model was" if len(models) == 1 else "models were"
    return (f"{len(models)} {plural} measured on {len(devices)} devices "
            f"({', '.join(devices)}); a verdict is faster or slower where its 95% interval "
            "excludes 1, else within noise.")


def _verdict_line(rows: pd.DataFrame, comparison: Comparison) -> str:
    configs = rows.groupby(list(ACROSS_KEYS), sort=True, dropna=False)
    held = sum(bool(g["holds"].all()) for _, g in configs)
    differ = [f"{model} ({_per_device(g)})" for (model, *_), g in configs
              if not g["holds"].all()]
    tail = f"; it differs for {'; '.join(differ)}" if differ else ""
    return (f"TensorFlow {comparison.compiled_mode} vs {comparison.baseline_mode}: the same "
            f"verdict on every device for {held} of {configs.ngroups} configurations{tail}.")


def _per_device(group: pd.DataFrame) -> str:
    """Each device's speedup with its interval, as the tables print a ratio."""
    return ", ".join(
        f"{r['speedup_ratio']:.2f}x [{r['speedup_ratio_ci_low']:.2f}x, "
        f"{r['speedup_ratio_ci_high']:.2f}x] on {r['device']}" for r in group.to_dict("records"))


def _pick_line(picks: pd.DataFrame) -> str:
    models = picks.groupby(list(PICK_KEYS), sort=True)
    same = sum(bool(g["same_pick"].all()) for _, g in models)
    differ = []
    for (model, *_), g in models:
        if g["same_pick"].all():
            continue
        ways = ", ".join(f"{r['way']} on {r['device']} ({r['vs_runner_up']})"
                         for r in g.to_dict("records"))
        differ.append(f"{model}: {ways}")
    tail = f"; it differs for {'; '.join(differ)}" if differ else ""
    return (f"The fastest way is the same on every device for {same} of {models.ngroups} "
            f"models{tail}.")


def _ratio_lines(summary: pd.DataFrame) -> list[str]:
    lines = []
    for (device, reference), rows in summary.groupby(["device", "reference"], sort=True):
        ways = ", ".join(
            f"{r['way']} {r['median_ratio']:.2f}x ({r['configurations']} models, "
            f"{r['faster']} faster, {r['slower']} slower)" for r in rows.to_dict("records"))
        lines.append(f"{device} over {reference}, median throughput ratio per way: {ways}.")
    return lines


def _ratio_chart(ratios: pd.DataFrame) -> ChartSpec:
    return ChartSpec(
        key="devices", title="Throughput of each device over the reference device",
        kind="bar", data=ratios, x="model", y="device_ratio", x_title="model",
        y_title="device / reference samples/s", series="way",
        error=("device_ratio_ci_low", "device_ratio_ci_high"), x_category=True,
        hover=(("model", "model"), ("way", "way"), ("device", "device"),
               ("reference", "reference"), ("device_ratio", "ratio"),
               ("device_ratio_ci_low", "CI low"), ("device_ratio_ci_high", "CI high"),
               ("ci_method", "CI method")),
        note="Each bar: one way's throughput on the device over the same way on the "
             "reference device (the first by name), with the ratio's 95% interval.",
    )
