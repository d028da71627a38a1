"""Compile time against speedup, the batches before compiling pays off, and the build stages
of the native artifacts."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import NATIVE_STAGES, native_stage_times, stage_column
from xlabench.report.charts import ChartSpec, HLine
from xlabench.report.model import (
    CONFIG_COLUMNS,
    HOVER_PAIR,
    PAIR_COLUMNS,
    PROVENANCE,
    RATIO,
    Context,
    Finding,
)
from xlabench.report.tables import Column, Table


def compile_time_finding(ctx: Context) -> Finding:
    """Compile time against speedup, and the batches needed before compiling pays off."""
    cmp = ctx.options.comparison
    title = f"Compile time against speedup, and the break-even ({cmp.label})"
    table = ctx.speedups[ctx.speedups["compile_s"].notna()] if not ctx.speedups.empty \
        else ctx.speedups
    stages = native_stage_table(ctx)
    if table.empty and stages.frame.empty:
        return Finding("compile", title, part="beyond", empty=(
            "No pair of runs with a compile time (published numbers have none), and no "
            "native run."))
    if table.empty:  # native runs only: their stage times are still worth showing
        return Finding("compile", title, stage_summary(stages), tables=[stages], part="beyond")
    chart = ChartSpec(
        key="compile", title=title, kind="scatter", data=table, x="compile_s", y="speedup_ratio",
        x_title="compile + first-call time, s", y_title="speedup (compiled / baseline)",
        series="device", label="model", log_x=True,
        error=("speedup_ratio_ci_low", "speedup_ratio_ci_high"),
        hover=(*HOVER_PAIR, ("compile_s", "compile s"),
               ("break_even_batches", "break-even batches")),
        hlines=(HLine(1.0, "no speedup"),),
    )
    columns = (
        *PAIR_COLUMNS, Column("compile_s", "compile s", "s"), RATIO,
        Column("baseline_batch_ms", "baseline ms/batch", "ms"),
        Column("compiled_batch_ms", "compiled ms/batch", "ms"),
        Column("break_even_batches", "break-even batches", "int"),
        Column("break_even_images", "break-even images", "int"), PROVENANCE,
    )
    ordered = table.sort_values("break_even_batches", na_position="last")
    never_rows = ordered[~ordered["pays_off"]]
    # each model once, with the devices where it never pays where there are several
    several = ordered["device"].nunique() > 1
    never = [f"{model} ({', '.join(rows['device'])})" if several else str(model)
             for model, rows in never_rows.groupby("model", sort=False)]
    median = ordered["break_even_batches"].median()
    summary = [] if pd.isna(median) else [
        f"Median break-even: {median:.0f} batches (compile_s / (baseline - compiled batch time))."]
    if never:
        summary.append("Compiling never pays off (compiled not faster): " + ", ".join(never) + ".")
    tables = [Table("Break-even per pair", ordered, columns,
                    note="'–' break-even: the compiled mode is not faster.")]
    if not stages.frame.empty:
        summary += stage_summary(stages)
        tables.append(stages)
    return Finding("compile", title, summary, [chart], tables, part="beyond")


STAGE_NAMES = {"native_load": "native load", "native_prepare": "native prepare"}


def stage_name(stage: str) -> str:
    """How the report names a compile stage (``native_load`` -> ``native load``)."""
    return STAGE_NAMES.get(stage, stage.replace("_", " "))


def _stages(frame: pd.DataFrame) -> list[str]:
    """The stages a stage-times frame has, in `NATIVE_STAGES` order, then any other."""
    stored = [c.removeprefix("stage_").removesuffix("_s") for c in frame.columns
              if c.startswith("stage_")]
    return [s for s in NATIVE_STAGES if s in stored] + [s for s in stored
                                                       if s not in NATIVE_STAGES]


def native_stage_table(ctx: Context) -> Table:
    """Export, package and load times of each native artifact, beside the compile times."""
    frame = native_stage_times(ctx.results)
    columns = (
        *CONFIG_COLUMNS,
        *(Column(stage_column(s), f"{stage_name(s)} s", "s") for s in _stages(frame)),
        Column("stages_total_s", "artifact total s", "s"),
        Column("compile_s", "native first call - steady s", "s"),
        Column("python_compile_s", "python compile s", "s"), PROVENANCE,
    )
    return Table("Native artifacts: export, package and load", frame, columns, note=(
        "Stages of the native runner, latest process: export (and package for AOTInductor) in "
        "Python, native load and prepare (PJRT: the plugin's compile) in xlabench-native. "
        "'python compile s': the Python runner's compile + first call of the same program."),
        empty="No native runs.")


def stage_summary(table: Table) -> list[str]:
    """Median stage times of the native artifacts, one line."""
    frame = table.frame
    if frame.empty:
        return []
    parts = [f"{stage_name(s)} {frame[stage_column(s)].median():.2f} s" for s in _stages(frame)]
    total = frame["stages_total_s"].median()
    return [f"Native artifacts ({len(frame)} configurations), median "
            + ", ".join(parts) + (f"; {total:.2f} s in all before the first native call."
                                  if pd.notna(total) else ".")]
