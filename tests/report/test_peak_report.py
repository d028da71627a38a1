"""A row above its measured peak gets no share of it (never above 100%) but a note, and CPU
rows show the library that set the peak, the theoretical peak and throughput per core."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import make_record
from xlabench.analysis import achieved_gflops, load_results
from xlabench.core import Record
from xlabench.report import ReportOptions, build_findings
from xlabench.store import ResultStore

#: make_record: 8.2 GFLOP per image, so GFLOP/s = 8.2 x samples/s.
PEAK = {"dtype": "fp32", "gflops_s": 155.0, "size": 2048, "library": "numpy",
        "library_version": "2.4", "theoretical_gflops_s": 332.3,
        "theoretical_how": "Zen 5: 2 FMA pipes x 16 fp32 lanes x 2 ..."}


def cpu_record(model: str, sps: float, **spec: object) -> Record:
    record = make_record(model=model, accelerator="cpu", throughput=sps, **spec)
    return record.replace(env={**record.env, "cpu_threads": 2})


def db_with(tmp_path: Path, records: list[Record], peaks: list[dict]) -> Path:
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
        store.put_peaks("e1", peaks)
    return tmp_path / "r.db"


def test_a_row_above_the_measured_peak_gets_a_note_not_a_share(tmp_path: Path) -> None:
    records = [cpu_record("above", 25.0),  # 205 GFLOP/s > 155
               cpu_record("below", 10.0),  # 82 GFLOP/s: 52.9%
               make_record(model="gpu_above", throughput=3000.0)]  # 24,600 > 19,500 (a100)
    db = db_with(tmp_path, records, [PEAK, {"dtype": "bf16", "gflops_s": 300.0}])
    gflops = achieved_gflops(load_results(db)).set_index("model")
    assert (gflops["pct_of_peak"].dropna() <= 100).all()
    above = gflops.loc["above"]
    assert above["achieved_gflops_s"] == pytest.approx(205.0)
    assert math.isnan(above["pct_of_peak"]) and above["peak_gflops_s"] == 155.0
    assert above["peak_note"].startswith("above the measured peak (155 GFLOP/s, numpy)")
    assert "precision actually executed" in above["peak_note"]
    below = gflops.loc["below"]
    assert below["pct_of_peak"] == pytest.approx(100 * 82 / 155) and below["peak_note"] == ""
    for row in (above, below):
        assert row["peak_library"] == "numpy"
        assert row["theoretical_peak_gflops_s"] == pytest.approx(332.3)
        assert row["cpu_threads"] == 2
    assert (above["sps_per_core"], below["sps_per_core"]) == pytest.approx((12.5, 5.0))
    gpu = gflops.loc["gpu_above"]
    assert math.isnan(gpu["pct_of_peak"]) and gpu["peak_note"].startswith(
        "above the datasheet peak (19500 GFLOP/s)")
    assert gpu["peak_library"] == "" and math.isnan(gpu["theoretical_peak_gflops_s"])
    assert math.isnan(gpu["sps_per_core"])  # a GPU row's throughput is not per CPU core


def test_the_finding_names_rows_above_the_peak_and_the_winning_library(tmp_path: Path) -> None:
    db = db_with(tmp_path, [cpu_record("above", 25.0), cpu_record("below", 10.0)], [PEAK])
    findings = build_findings(load_results(db), ReportOptions())
    gflops = next(f for f in findings if f.key == "gflops")
    text = " ".join(gflops.summary)
    assert "155 GFLOP/s by numpy" in text and "theoretical 332 GFLOP/s" in text
    assert "1 row(s) run above their peak" in text and "above tensorflow/xla" in text
    runs, peaks = gflops.tables
    keys = {c.key for c in runs.columns}
    assert {"peak_note", "peak_library", "theoretical_peak_gflops_s", "sps_per_core"} <= keys
    assert (runs.frame["pct_of_peak"].dropna() <= 100).all()
    measured = peaks.frame[peaks.frame["peak_source"] == "measured matmul fp32"]
    assert measured[["peak_library", "theoretical_tflops"]].values.tolist() == [
        ["numpy", pytest.approx(0.3323)]]
    (chart,) = gflops.charts
    assert any("(numpy)" in line.label for line in chart.hlines)


def test_a_peak_stored_before_libraries_were_compared_is_torchs(tmp_path: Path) -> None:
    old = {"dtype": "fp32", "gflops_s": 155.0, "size": 2048, "library": "torch"}
    db = db_with(tmp_path, [cpu_record("c", 10.0)], [{"dtype": "fp32", "gflops_s": 155.0},
                                                      {**old, "dtype": "bf16"}])
    gflops = achieved_gflops(load_results(db)).set_index("model")
    assert gflops.loc["c", "peak_library"] == "torch"
    assert math.isnan(gflops.loc["c", "theoretical_peak_gflops_s"])
