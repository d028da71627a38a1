"""Achieved GFLOP/s against the device's peak: a GPU's FP32 datasheet peak, a CPU's matmul
peak measured once per environment (`measure.peak`)."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis.result_rows import latest_per_config

#: Dense FP32 peak (CUDA cores, no tensor cores) in TFLOP/s, from NVIDIA's datasheets.
#: V100, H100 and H200 are the SXM parts (V100 PCIe: 14, H100 PCIe: 51), so a PCIe card's
#: "% of peak" reads low. TF32 and bf16 use tensor cores with other peaks: those rows get none.
#: CPUs have no datasheet peak (it depends on cores, clocks, vector width and matrix units):
#: their rows use the matmul peak measured once per environment (`measure.peak`).
PEAK_FP32_TFLOPS: dict[str, float] = {
    "a100": 19.5,
    "v100": 15.7,
    "t4": 8.1,
    "h100": 67.0,
    "h200": 67.0,
}
PEAK_DATASHEET = "datasheet"
#: Which measured peak a CPU row is read against: a `mixed` policy does its matmuls in bf16.
MEASURED_PEAK_DTYPE = {"fp32": "fp32", "bf16": "bf16", "mixed": "bf16"}


def achieved_gflops(results: pd.DataFrame) -> pd.DataFrame:
    """GFLOP/s each configuration achieved, and its share of the device's peak.

    Achieved = FLOPs per image x throughput, with XLA's cost-analysis FLOPs where stored and
    2 x MACs otherwise (`flops_source` says which). GPUs: the FP32 datasheet peak, for fp32
    runs with TF32 off. CPUs: the matmul peak measured for the row's environment in the row's
    dtype (fp32; bf16 for bf16 and mixed): the best of the GEMM libraries installed
    (`peak_library` names it), with the CPU's theoretical peak beside it
    (`theoretical_peak_gflops_s`: FMA units x lanes x 2 x cores x clock, NaN if unknown).
    `peak_source` says which peak a row used ("" when there is none).

    A share is never above 100%: where a row achieves more than its peak, `pct_of_peak` is
    NaN and `peak_note` says so (the FLOP count, the precision actually executed or the peak
    itself is off); "" elsewhere. `sps_per_core` comes with every result's row
    (`result_rows.per_core`).
    """
    runs = latest_per_config(results)
    runs = runs[runs["gflops_per_image"].notna()]
    datasheet = _datasheet_peak(runs)
    measured = _measured_peak(runs)
    use_datasheet = datasheet.notna()
    peak = datasheet.where(use_datasheet, measured["peak"])
    source = pd.Series(PEAK_DATASHEET, index=runs.index, dtype=object).where(
        use_datasheet, measured["source"]).where(peak.notna(), "")
    library = measured["library"].where(~use_datasheet, "")
    achieved = runs["gflops_per_image"] * runs["throughput_sps"]
    above = (achieved > peak).fillna(False).astype(bool)
    notes = [_above_peak_note(p, s, lib) if a else ""
             for a, p, s, lib in zip(above, peak, source, library, strict=True)]
    return runs.assign(
        achieved_gflops_s=achieved, peak_gflops_s=peak,
        pct_of_peak=(100 * achieved / peak).where(~above), peak_source=source,
        peak_note=pd.Series(notes, index=runs.index, dtype=object), peak_library=library,
        theoretical_peak_gflops_s=measured["theoretical"].where(~use_datasheet),
        flops_source=runs["flops_per_image"].notna().map({True: "xla cost", False: "2 x MACs"}),
    ).sort_values(["device", "achieved_gflops_s"], ascending=[True, False]).reset_index(drop=True)


def _above_peak_note(peak: float, source: str, library: str) -> str:
    """What a row above its peak says in place of a share above 100%."""
    kind = "datasheet" if source == PEAK_DATASHEET else "measured"
    by = f", {library}" if library else ""
    return (f"above the {kind} peak ({peak:.0f} GFLOP/s{by}): the FLOP count, the precision "
            "actually executed or the peak itself may be off")


def _datasheet_peak(runs: pd.DataFrame) -> pd.Series:
    """GFLOP/s from `PEAK_FP32_TFLOPS` for plain fp32 rows of a listed GPU, else NaN."""
    peak = runs["device"].map(lambda d: 1000 * PEAK_FP32_TFLOPS.get(str(d), float("nan")))
    plain_fp32 = (runs["precision"] == "fp32") & (runs["tf32"] == 0)
    return peak.where(plain_fp32).astype("float64")


def _measured_peak(runs: pd.DataFrame) -> pd.DataFrame:
    """CPU rows' measured matmul peak in their dtype (`peak`), its source name (`source`),
    the library that reached it (`library`) and the CPU's theoretical peak in that dtype
    (`theoretical`); NaN / "" elsewhere (the measurement is of the CPU: a GPU row is never
    read against it)."""
    nan = pd.Series(float("nan"), index=runs.index, dtype="float64")
    empty = pd.Series("", index=runs.index, dtype=object)
    found = pd.DataFrame({"peak": nan, "source": empty, "library": empty, "theoretical": nan})
    for precision, dtype in MEASURED_PEAK_DTYPE.items():
        column = f"measured_peak_{dtype}_gflops_s"
        if column not in runs:
            continue
        rows = ((runs["accelerator"] == "cpu") & (runs["precision"] == precision)
                & runs[column].notna())
        found["peak"] = found["peak"].where(~rows, runs[column])
        found["source"] = found["source"].where(~rows, f"measured matmul {dtype}")
        for key, stored in (("library", f"peak_{dtype}_library"),
                            ("theoretical", f"theoretical_peak_{dtype}_gflops_s")):
            if stored in runs:
                found[key] = found[key].where(~rows, runs[stored])
    return found
