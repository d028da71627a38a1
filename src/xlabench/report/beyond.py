"""Findings the 2023 study did not make: where the speedup comes from, how sure it is, what
compiling costs, what failed, batch size, hardware use, and backends side by side."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import (
    PEAK_FP32_TFLOPS,
    RankRule,
    achieved_gflops,
    backend_comparison,
    backend_comparison_wide,
    eager_graph_xla_decomposition,
    failed_runs,
    failures_by_reason,
    measurement_quality,
    parity_failures,
    rerun_agreement,
    throughput_vs_batch_size,
)
from xlabench.analysis.intervals import MIN_BOOTSTRAP_SAMPLES
from xlabench.report.charts import ChartSpec, HLine
from xlabench.report.model import (
    HOVER_PAIR,
    HOVER_RUN,
    MARKER_NOTE,
    PROVENANCE,
    SPS,
    Context,
    Finding,
)
from xlabench.report.native import native_stage_table, python_share_finding, stage_summary
from xlabench.report.tables import Column, Table

PAIR_COLUMNS = (
    Column("device", "device"), Column("model", "model"), Column("resolution", "res", "int"),
    Column("batch_size", "batch", "int"), Column("precision", "precision"),
)
RATIO = Column("speedup_ratio", "speedup [95% CI]", "ratio",
               ci=("speedup_ratio_ci_low", "speedup_ratio_ci_high"))


def decomposition_finding(ctx: Context) -> Finding:
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


def speedup_ci_finding(ctx: Context) -> Finding:
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
    f"CI method 'bootstrap': both runs stored >= {MIN_BOOTSTRAP_SAMPLES} raw samples; their "
    "per-sample throughputs were resampled (2000 times, seeded) and the 2.5/97.5 percentiles "
    "of the ratio/difference of medians taken. 'ci-ends': fewer samples, so the bounds combine "
    "the ends of the two stored 95% CIs (ratio in [c_low/b_high, c_high/b_low]), conservative "
    "in width, >= 90% coverage. 'none': published numbers have no spread. 'significant': the "
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


def compile_finding(ctx: Context) -> Finding:
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
    never = ordered[~ordered["pays_off"]]["model"].tolist()
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


def health_finding(ctx: Context) -> Finding:
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
        Column("parity_max_rel_diff", "max rel diff", "g"), Column("status", "status"),
    )
    tables = [
        Table("Parity failures (compiled output vs eager beyond tolerance)", parity,
              parity_columns, empty="No parity failures."),
        Table("Failed runs by status and reason", failures_by_reason(ctx.results), (
            Column("status", "status"), Column("reason", "reason", "text"),
            Column("runs", "runs", "int"), Column("models", "models", "text"),
            Column("backend_modes", "backend/mode", "text")), empty="No failed runs."),
    ]
    summary = [f"{len(failed)} failed runs ({int(failed['later_ok'].sum()) if len(failed) else 0} "
               f"later succeeded); {len(parity)} parity failures."]
    return Finding("health", title, summary, charts, tables, part="beyond")


def quality_finding(ctx: Context) -> Finding:
    """How each local number was measured: processes, interval confidence, interference."""
    title = "How each number was measured: processes, confidence, interference"
    frame = measurement_quality(ctx.results)
    if frame.empty:
        return Finding("quality", title, part="beyond", empty="No local results.")
    flagged = int(frame["flagged"].sum())
    single = int((~frame["between_processes"].astype(bool)).sum())
    summary = [
        f"{len(frame)} local results: {len(frame) - single} combine two or more fresh worker "
        f"processes (interval between processes, 95%), {single} come from one process (its "
        "interval describes that process only, with the confidence its samples allow).",
        f"{flagged} results are FLAGGED: too few of their processes ran on a quiet machine "
        "(another process used their CPUs during timing). Their numbers are shown, marked, "
        "and should not be trusted." if flagged else
        "No result is flagged for interference.",
        _drift_summary(frame),
    ]
    columns = (
        *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"),
        Column("runner", "runner"), SPS, Column("ci_confidence_pct", "confidence", "share"),
        Column("processes", "processes", "int"),
        Column("processes_total", "of", "int"), Column("processes_flagged", "flagged", "int"),
        Column("ci_method", "interval", "text"), Column("flag_reason", "interference", "text"),
    )
    reruns = rerun_agreement(ctx.results)
    tables = [Table("Results", frame, columns)]
    if not reruns.empty:
        summary.append(_rerun_summary(reruns))
        tables.append(Table("Re-runs of one configuration: do the intervals hold?", reruns,
                            RERUN_TABLE_COLUMNS))
    return Finding("quality", title, summary, [], tables, part="beyond")


def _drift_summary(frame: pd.DataFrame) -> str:
    between = frame[frame["between_processes"].astype(bool)]
    drift = pd.to_numeric(between.get("drift_rel_sd", pd.Series(dtype=float)),
                          errors="coerce").dropna()
    if drift.empty:
        return ("No configuration has been re-run on this machine: the intervals hold for the "
                "processes of each run, not for how runs at other times differ (often by more). "
                "Re-run a few configurations to measure that; later results then include it.")
    return (f"{len(drift)} of {len(between)} multi-process intervals also include the "
            f"between-run variation of this machine (σ {100 * drift.min():.1f}-"
            f"{100 * drift.max():.1f}%, measured from re-runs: the machine's other "
            "configurations as a prior, each configuration's own earlier results on top): "
            "processes of one run share the machine's state of that hour; re-runs show it.")


RERUN_TABLE_COLUMNS = (
    *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"),
    Column("runner", "runner"), Column("results", "results", "int"),
    Column("low_sps", "lowest samples/s", "sps"), Column("high_sps", "highest samples/s", "sps"),
    Column("spread_pct", "spread", "share"),
    Column("median_halfwidth_pct", "typical interval ±", "share"),
    Column("pairs_held", "pairs held", "int"), Column("pairs", "of", "int"),
    Column("agreement", "agreement", "ratio"),
)


def _rerun_summary(reruns: pd.DataFrame) -> str:
    held, pairs = int(reruns["pairs_held"].sum()), int(reruns["pairs"].sum())
    return (f"{len(reruns)} configurations were measured by two or more results here: one "
            f"result's interval held another's figure in {held} of {pairs} ordered pairs "
            f"({held / pairs:.2f}; an honest 95% interval scores about 0.83, both sides "
            "varying). Far below that, re-runs differ by more than the processes of one run "
            "do: the machine changed between them.")


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


def gflops_finding(ctx: Context) -> Finding:
    """Achieved GFLOP/s against the device's peak: the FP32 datasheet peak on a GPU, the
    best measured GEMM of the environment on a CPU (with the CPU's theoretical peak beside
    it). A row above its peak is named, never given a share above 100%."""
    title = "Achieved GFLOP/s against the device's peak"
    frame = achieved_gflops(ctx.results)
    peak_table = _peak_table(frame)
    if frame.empty:
        return Finding("gflops", title, tables=[peak_table], part="beyond",
                       empty="No successful run with a FLOP or MAC count.")
    devices = sorted({str(d) for d in frame["device"]} & set(PEAK_FP32_TFLOPS))
    datasheet_lines = tuple(HLine(1000 * PEAK_FP32_TFLOPS[d], f"{d} FP32 peak (datasheet)",
                                  {"device": d}) for d in devices)
    chart = ChartSpec(
        key="gflops", title=title, kind="scatter", data=frame, x="gflops_per_image",
        y="achieved_gflops_s", x_title="GFLOPs per image", y_title="achieved GFLOP/s",
        series="device", label="model", log_x=True, log_y=True,
        hover=(*HOVER_RUN, ("achieved_gflops_s", "GFLOP/s"), ("pct_of_peak", "% of peak"),
               ("peak_source", "peak from"), ("peak_library", "peak by"),
               ("peak_note", "note"), ("flops_source", "FLOPs from")),
        hlines=datasheet_lines + _measured_lines(frame),
        note=("FLOPs: XLA cost analysis where stored, else 2 x MACs. Peak: "
              + _sources_note(frame) + ". " + MARKER_NOTE),
    )
    columns = (
        *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"), SPS,
        Column("sps_per_core", "samples/s per core", "sps"),
        Column("gflops_per_image", "GFLOPs/image", "g"),
        Column("achieved_gflops_s", "GFLOP/s", "int"), Column("peak_gflops_s", "peak", "int"),
        Column("pct_of_peak", "% of peak", "g"), Column("peak_source", "peak from"),
        Column("peak_library", "peak by"),
        Column("theoretical_peak_gflops_s", "theoretical peak", "int"),
        Column("peak_note", "note", "text"),
        Column("flops_source", "FLOPs from"), PROVENANCE,
    )
    return Finding("gflops", title, _gflops_summary(frame), [chart],
                   [Table("Achieved GFLOP/s", frame, columns), peak_table], part="beyond")


def _gflops_summary(frame: pd.DataFrame) -> list[str]:
    """The measured peaks (winning library, theoretical peak) and the rows above their peak."""
    lines = []
    for row in _measured_rows(frame).itertuples():
        theoretical = (f"; theoretical {row.theoretical_peak_gflops_s:.0f} GFLOP/s"
                       if pd.notna(row.theoretical_peak_gflops_s) else "")
        if theoretical and row.peak_gflops_s > row.theoretical_peak_gflops_s:
            # the clock a VM's /proc shows is not its boost clock: no bound here
            theoretical += (" at the clock /proc shows, below what was measured: the CPU ran "
                            "faster than that clock, so it is no bound here")
        lines.append(f"{row.device}: {row.peak_source} peak {row.peak_gflops_s:.0f} GFLOP/s "
                     f"by {row.peak_library or 'unknown library'}{theoretical}.")
    above = frame[frame["peak_note"] != ""]
    if not above.empty:
        runs = [f"{r.model} {r.backend}/{r.mode} {r.precision} b{r.batch_size} on {r.device} "
                f"({r.achieved_gflops_s:.0f} vs {r.peak_gflops_s:.0f} GFLOP/s)"
                for r in above.itertuples()]
        lines.append(f"{len(above)} row(s) run above their peak, so they get no % of peak "
                     "(the FLOP count, the precision actually executed or the peak itself may "
                     "be off): " + "; ".join(runs) + ".")
    return lines


def _sources_note(frame: pd.DataFrame) -> str:
    """Which peaks the chart's rows were read against, e.g. "datasheet (a100), measured
    matmul fp32 (cpu)"."""
    used = frame[frame["peak_source"] != ""]
    parts = [f"{source} ({', '.join(sorted({str(d) for d in group['device']}))})"
             for source, group in used.groupby("peak_source")]
    return ", ".join(parts) if parts else "none known for these rows"


def _measured_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per measured peak the rows were read against: device, peak, its source, the
    library that reached it and the theoretical peak."""
    measured = frame[frame["peak_source"].str.startswith("measured")]
    return measured[["device", "peak_gflops_s", "peak_source", "peak_library",
                     "theoretical_peak_gflops_s"]].drop_duplicates(
        ["device", "peak_gflops_s", "peak_source"])


def _measured_lines(frame: pd.DataFrame) -> tuple[HLine, ...]:
    rows = _measured_rows(frame).itertuples()
    return tuple(HLine(r.peak_gflops_s, f"{r.device} {r.peak_source} peak"
                       + (f" ({r.peak_library})" if r.peak_library else ""),
                       {"device": r.device})
                 for r in rows)


def _peak_table(frame: pd.DataFrame) -> Table:
    peaks = pd.DataFrame([{"device": d, "peak_tflops": p, "peak_source": "datasheet"}
                          for d, p in PEAK_FP32_TFLOPS.items()])
    measured = _measured_rows(frame) if not frame.empty else pd.DataFrame()
    if not measured.empty:
        measured = measured.assign(peak_tflops=measured["peak_gflops_s"] / 1000,
                                   theoretical_tflops=measured["theoretical_peak_gflops_s"]
                                   / 1000)
        peaks = pd.concat([peaks, measured[["device", "peak_tflops", "peak_source",
                                            "peak_library", "theoretical_tflops"]]],
                          ignore_index=True)
    peaks = peaks.reindex(columns=["device", "peak_tflops", "peak_source", "peak_library",
                                   "theoretical_tflops"])
    return Table("Peaks used", peaks,
                 (Column("device", "device"), Column("peak_tflops", "TFLOP/s", "g"),
                  Column("peak_source", "from"), Column("peak_library", "by"),
                  Column("theoretical_tflops", "theoretical TFLOP/s", "g")),
                 note=("datasheet: dense FP32 on CUDA cores, SXM parts; bf16, mixed and TF32 "
                       "GPU runs get none (tensor cores). measured matmul: CPUs, the best "
                       "median GFLOP/s over the GEMM libraries installed (torch.matmul, NumPy's "
                       "BLAS in fp32, an OpenVINO MatMul) on square n x n matrices (2 n^3 "
                       "FLOPs) with every thread of the environment, once per environment "
                       "(every library's figure, sizes and versions in the database's "
                       "device_peaks); mixed runs use the bf16 peak. theoretical: FMA units x "
                       "vector lanes x 2 x cores x clock from /proc/cpuinfo, an upper bound "
                       "no GEMM reaches."),
                 filterable=False)


def backends_finding(ctx: Context) -> Finding:
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


def beyond_findings(ctx: Context) -> list[Finding]:
    """Everything the report adds to the study."""
    return [
        quality_finding(ctx), decomposition_finding(ctx), python_share_finding(ctx),
        speedup_ci_finding(ctx),
        compile_finding(ctx), health_finding(ctx), batch_size_finding(ctx), gflops_finding(ctx),
        backends_finding(ctx),
    ]
