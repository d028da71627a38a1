"""Achieved GFLOP/s against the device's peak (datasheet on a GPU, measured on a CPU)."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import PEAK_FP32_TFLOPS, achieved_gflops
from xlabench.report.charts import ChartSpec, HLine
from xlabench.report.model import (
    HOVER_RUN,
    MARKER_NOTE,
    PAIR_COLUMNS,
    PROVENANCE,
    SPS,
    Context,
    Finding,
)
from xlabench.report.tables import Column, Table


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
