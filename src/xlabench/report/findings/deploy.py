"""Which runtime to deploy: how each model behaves when deployed (the LoadGen scenarios, led by
the highest Server rate within its latency bound, and bf16 beside fp32: `findings.deployed`),
the fastest way to run each model that kept its outputs, against the study's TensorFlow eager
and XLA, under reader-set latency and memory bounds, each way's median speedup per model
family, and which runtimes ran which model families."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import (
    DEFAULT_HOST_MEM_BOUND_MB,
    DEFAULT_LATENCY_BOUND_MS,
    family_speedups,
    family_speedups_wide,
    fastest_deployments,
    latency_candidates,
    memory_candidates,
    runtime_coverage,
    runtime_coverage_wide,
)
from xlabench.analysis.deploy import BOUND_KEYS
from xlabench.core.backends import STUDY_BACKEND
from xlabench.report.findings.deployed import deployed_tables
from xlabench.report.model import PROVENANCE, SPS, Context, Finding
from xlabench.report.tables import Bound, Column, Table

TITLE = "Which runtime to deploy"
KEY = "deploy"
PART = "deploy"  # its own part, first on the page (report.markdown.PARTS)
CONFIG = (Column("device", "device"), Column("model", "model"),
          Column("resolution", "res", "int"), Column("batch_size", "batch", "int"))
WAY = Column("way", "fastest way (backend/mode precision runner)", "text")
FASTEST_NOTE = (
    "Among local ok results that passed parity (eager runs are their own reference). "
    "'vs runner-up': whether the two throughput intervals (95%) overlap. Ratios compare with "
    "TensorFlow eager / XLA (Python runner) of the same device, model, resolution, batch and "
    "precision; their intervals are the one ratio method's (measure.combine.result_ratio: "
    "paired t where both ran interleaved in one sweep, else Welch t of log process medians, "
    "else bootstrap of samples, else CI ends) and 'interval' says which, or why there is none."
)
BOUND_NOTE = ("Rows: per device, model and resolution, the fastest way whose {what} is below "
              "the bound; the page's filters apply first. Ways that passed parity only.")


def deploy_finding(ctx: Context) -> Finding:
    """Per model and device: the scenario and bf16 tables where there are such results (the
    Server one first), the fastest way, the bound picks, and the runtime coverage."""
    fastest = fastest_deployments(ctx.results)
    coverage = runtime_coverage(ctx.results)
    if coverage.empty:
        return Finding(KEY, TITLE, part=PART, empty=(
            "No local result: nothing was measured on this machine to choose a runtime from."))
    opening, deployed = deployed_tables(ctx.results)
    if fastest.empty:  # only failures (or parity failures): still say which runtimes failed
        return Finding(KEY, TITLE, opening, tables=[*deployed, _coverage_table(coverage)],
                       part=PART, empty=None if deployed else (
                           "No local result ran ok and passed parity: no runtime can be "
                           "advised."))
    tables = [*deployed, _fastest_table(fastest), _latency_table(ctx.results),
              _memory_table(ctx.results), _family_table(ctx.results), _coverage_table(coverage)]
    return Finding(KEY, TITLE, opening + _summary(fastest), [], tables, part=PART)


def _summary(fastest: pd.DataFrame) -> list[str]:
    study = fastest["backend"].eq(STUDY_BACKEND) & fastest["mode"].isin(("eager", "xla")) \
        & fastest["runner"].eq("python")
    clear = int(fastest["vs_runner_up"].eq("clear of runner-up").sum())
    contested = int((fastest["ways"] >= 2).sum())
    beats_xla = fastest["over_tf_xla_ci_low"] > 1
    return [
        f"{len(fastest)} configurations (device, model, resolution, batch): the fastest way is "
        f"one of the study's (TensorFlow eager or XLA) in {int(study.sum())}, another way in "
        f"{len(fastest) - int(study.sum())}.",
        f"Of {contested} configurations with two or more ways, the fastest is clear of the "
        f"runner-up (intervals apart) in {clear}; {int(beats_xla.sum())} picks are faster than "
        "TensorFlow XLA beyond the ratio's interval.",
    ]


def _fastest_table(fastest: pd.DataFrame) -> Table:
    columns = (
        *CONFIG, WAY, SPS, Column("ways", "ways measured", "int"),
        Column("runner_up_way", "runner-up", "text"),
        Column("runner_up_sps", "runner-up samples/s [CI]", "sps",
               ci=("runner_up_ci_low_sps", "runner_up_ci_high_sps")),
        Column("vs_runner_up", "vs runner-up", "text"),
        Column("over_tf_eager", "fastest / TF eager [CI]", "ratio",
               ci=("over_tf_eager_ci_low", "over_tf_eager_ci_high")),
        Column("over_tf_eager_ci", "interval (eager)", "text"),
        Column("over_tf_xla", "fastest / TF XLA [CI]", "ratio",
               ci=("over_tf_xla_ci_low", "over_tf_xla_ci_high")),
        Column("over_tf_xla_ci", "interval (XLA)", "text"), PROVENANCE,
    )
    return Table("Fastest way per device, model, resolution and batch", fastest, columns,
                 note=FASTEST_NOTE, empty="No local ok result passed parity.")


def _bound_columns(extra: Column) -> tuple[Column, ...]:
    return (*CONFIG, WAY, SPS, extra,
            Column("rank", "rank by samples/s", "int"), PROVENANCE)


def _latency_table(results: pd.DataFrame) -> Table:
    bound = Bound("latency_ms_p99", "p99 latency bound, ms", DEFAULT_LATENCY_BOUND_MS,
                  BOUND_KEYS)
    return Table(
        "Fastest at batch 1 under a p99 latency bound", latency_candidates(results),
        _bound_columns(Column("latency_ms_p99", "p99 ms", "ms")),
        note=BOUND_NOTE.format(what="p99 per-batch latency (batch 1: per image)"),
        empty="No batch-1 result with a latency passed parity.", bound=bound)


def _memory_table(results: pd.DataFrame) -> Table:
    bound = Bound("peak_host_mem_mb", "peak host memory bound, MB", DEFAULT_HOST_MEM_BOUND_MB,
                  BOUND_KEYS)
    return Table(
        "Fastest under a peak host memory bound (any batch)", memory_candidates(results),
        _bound_columns(Column("peak_host_mem_mb", "peak host MB", "int")),
        note=BOUND_NOTE.format(what="peak host memory (the worker's resident set)"),
        empty="No result with a peak host memory passed parity.", bound=bound)


def _family_table(results: pd.DataFrame) -> Table:
    wide = family_speedups_wide(family_speedups(results))
    families = tuple(Column(c, c, "text") for c in wide.columns if c != "way")
    return Table(
        "Runtimes × model families: median speedup over TF eager / over TF XLA", wide,
        (Column("way", "backend/mode precision runner", "text"), *families),
        note="Per way and family: the median over the family's configurations (device, model, "
             "resolution, batch, precision) of its throughput over TensorFlow eager's and over "
             "TensorFlow XLA's (Python runner) of the same configuration; (n): how many "
             "configurations (the larger of the two counts). Point ratios of the combined "
             "throughputs: each configuration's own interval is in the fastest-way table. Ways "
             "that passed parity only; rows by the median over XLA of all families.",
        empty="No way was measured beside TensorFlow eager or XLA of the same configuration.")


def _coverage_table(coverage: pd.DataFrame) -> Table:
    wide = runtime_coverage_wide(coverage)
    families = tuple(Column(c, c, "text") for c in wide.columns
                     if c not in ("backend", "mode", "backend_mode"))
    return Table(
        "Runtimes × model families: models ok / unsupported / failed", wide,
        (Column("backend_mode", "backend/mode"), *families),
        note="Each model counted once per backend/mode, by its best outcome over every device "
             "(ok, else unsupported, else failed: failed, oom, timeout or crashed). A parity "
             "failure ran ok; see the health finding. '–': not attempted.",
        empty="No local record.")
