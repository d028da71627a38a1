"""The pure parts of bench/xla_cpu_flags.py: where an optimised HLO module's convolutions run,
and which flags reach TF graph's throughput."""

from __future__ import annotations

from pathlib import Path

from tests.bench_scripts import load_bench_script

flags = load_bench_script("xla_cpu_flags")

#: An optimised module in XLA's text form (tests/data): one convolution in a oneDNN fusion,
#: one inside an ordinary loop fusion (XLA's own), one at the entry (XLA's own), a custom call.
HLO = (Path(__file__).resolve().parents[1] / "data" / "xla_cpu_after_optimizations.txt"
       ).read_text(encoding="utf-8")


def test_computations_split_the_module() -> None:
    comps = flags.computations(HLO)
    assert set(comps) == {"fused_computation", "fused_computation.2", "main.9"}
    assert len(comps["fused_computation"]) == 3 and len(comps["main.9"]) == 8


def test_hlo_summary_says_where_each_convolution_runs() -> None:
    summary = flags.hlo_summary(HLO)
    assert summary["convolutions"] == {"__onednn_fusion": 1, "xla": 2}
    assert summary["custom_calls"] == {"__onednn$softmax": 1}
    assert summary["library_fusions"] == {"__onednn_fusion": 1}


def test_a_module_without_libraries_keeps_every_convolution() -> None:
    plain = HLO.replace("__onednn_fusion", "__loop").replace("__onednn$softmax", "x")
    assert flags.hlo_summary(plain)["convolutions"] == {"xla": 3}
    assert flags.hlo_summary(plain)["library_fusions"] == {}


def test_closes_gap_needs_a_flag_reaching_graph() -> None:
    rows = [
        {"model": "m", "variant": "graph", "ratio": 4.0, "ratio_low": 3.8, "ratio_high": 4.2},
        {"model": "m", "variant": "xla-onednn", "ratio": 3.9, "ratio_low": 3.8,
         "ratio_high": 4.1},
        {"model": "m", "variant": "xla-vector-512", "ratio": 1.02, "ratio_low": 0.99,
         "ratio_high": 1.05},
        {"model": "m", "variant": "xla-ynn", "ratio": 1.5, "ratio_low": 1.2, "ratio_high": 1.8},
        {"model": "n", "variant": "graph", "ratio": 1.07, "ratio_low": 1.03, "ratio_high": 1.11},
        {"model": "n", "variant": "xla-vector-512", "ratio": 1.0, "ratio_low": 0.87,
         "ratio_high": 1.16},
        {"model": "n", "variant": "xla-onednn", "error": ["boom"]},
    ]
    assert flags.closes_gap(rows) == [
        "m: graph/xla 4.00 [3.80, 4.20]; reaches graph: xla-onednn; faster than XLA's "
        "defaults: xla-ynn; too wide to tell: none",
        "n: graph/xla 1.07 [1.03, 1.11]; reaches graph: none; faster than XLA's "
        "defaults: none; too wide to tell: xla-vector-512"]
