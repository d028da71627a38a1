"""The pure parts of bench/process_spread.py: its spread statistics and how it reads the
runtimes' own benchmark tools (fixed outputs of benchmark_app 2026.4, iree-benchmark-module
with Google Benchmark 1.9 JSON, litert-benchmark's result JSON)."""

from __future__ import annotations

import argparse
import math

import pytest

from tests.bench_scripts import load_bench_script

process_spread = load_bench_script("process_spread")

BENCHMARK_APP_OUTPUT = """\
[Step 8/11] Querying optimal runtime parameters
[ INFO ] Model:
[ INFO ]   NETWORK_NAME: TensorFlow_Frontend_IR
[ INFO ]   NUM_STREAMS: 1
[ INFO ]   INFERENCE_NUM_THREADS: 2
[ INFO ]   INFERENCE_PRECISION_HINT: <Type: 'float32'>
[ INFO ]   PERFORMANCE_HINT: LATENCY
[ INFO ]   ENABLE_CPU_PINNING: True
[Step 9/11] Creating infer requests and preparing input tensors
[ INFO ] Fill input 'images' with random values
[Step 10/11] Measuring performance (Start inference synchronously, limits: 1000 ms duration)
[ INFO ] First inference took 4.45 ms
[Step 11/11] Dumping statistics report
[ INFO ] Execution Devices:['CPU']
[ INFO ] Count:            193 iterations
[ INFO ] Duration:         1001.33 ms
[ INFO ] Latency:
[ INFO ]    Median:        5.09 ms
[ INFO ]    Average:       5.20 ms
[ INFO ]    Min:           1.05 ms
[ INFO ]    Max:           13.38 ms
[ INFO ] Throughput:   770.97 FPS
"""

IREE_JSON = """\
{
  "context": {"date": "2026-12-05T23:40:00+00:00", "library_version": "v1.9.5"},
  "benchmarks": [
    {"name": "BM_main/process_time/real_time_mean", "run_type": "aggregate",
     "aggregate_name": "mean", "real_time": 3.0157824705856555e+00, "time_unit": "ms"},
    {"name": "BM_main/process_time/real_time_median", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 3.3770423382382466e+00, "time_unit": "ms"},
    {"name": "BM_main/process_time/real_time_stddev", "run_type": "aggregate",
     "aggregate_name": "stddev", "real_time": 9.6949459634540991e-01, "time_unit": "ms"}
  ]
}
"""


def test_spread_of_per_process_medians() -> None:
    found = process_spread.spread([2.0, 4.0, 2.0, 4.0])
    assert (found["n"], found["min_ms"], found["max_ms"]) == (4, 2.0, 4.0)
    assert found["median_ms"] == 3.0
    assert found["range_rel"] == pytest.approx(1.0)
    # logs ln2, ln4 twice each: SD = ln2 / 2 * sqrt(4/3)
    assert found["sd_log"] == pytest.approx(math.log(2) / 2 * math.sqrt(4 / 3))


def test_a_rounded_harness_that_printed_one_figure_is_below_its_step(capsys) -> None:
    """litert-benchmark rounds to 0.01 ms: six processes all at 0.46 ms spread less than
    0.01/0.46 = 2.2%, not 0%, and xlabench's spread is compared with that bound."""
    theirs = process_spread.spread([0.46] * 6, resolution_ms=0.01)
    assert theirs["range_rel"] == 0 and theirs["resolution_rel"] == pytest.approx(0.01 / 0.46)
    ours = process_spread.spread([0.47, 0.48, 0.47, 0.82, 0.81, 0.48])
    row = {"runtime": "litert/compiled", "harness": "litert-benchmark", "xlabench": ours,
           "harness_spread": theirs, "sd_ratio": math.inf, "range_ratio": math.inf,
           "level_ratio": 1.05}
    process_spread.print_table([row])
    line = capsys.readouterr().out.splitlines()[-1]
    assert "<2.2%/ <2.2%" in line and f">{ours['range_rel'] / (0.01 / 0.46):4.2f}" in line
    assert "inf" not in line


def test_spread_ratio_is_ours_over_theirs() -> None:
    assert process_spread.spread_ratio(0.04, 0.02) == pytest.approx(2.0)
    assert process_spread.spread_ratio(0.01, 0.0) == math.inf
    assert process_spread.spread_ratio(0.0, 0.0) == 1.0


def test_benchmark_app_median_latency_and_properties() -> None:
    assert process_spread.parse_benchmark_app(BENCHMARK_APP_OUTPUT) == 5.09
    properties = process_spread.benchmark_app_properties(BENCHMARK_APP_OUTPUT)
    assert properties["PERFORMANCE_HINT"] == "LATENCY"
    assert properties["INFERENCE_NUM_THREADS"] == "2"
    assert "Fill input" not in " ".join(properties)  # step 9 is not a property


def test_benchmark_app_median_below_a_millisecond_is_in_microseconds() -> None:
    """benchmark_app 2026.4 writes `Median: 744.44 us` for a sub-millisecond latency."""
    text = BENCHMARK_APP_OUTPUT.replace("5.09 ms", "744.44 us")
    assert "744.44 us" in text
    assert process_spread.parse_benchmark_app(text) == pytest.approx(0.74444)


def test_benchmark_app_without_latency_block_is_refused() -> None:
    with pytest.raises(ValueError, match="Median"):
        process_spread.parse_benchmark_app("[ ERROR ] -nstreams ... set -hint option to none")


def test_iree_benchmark_median_aggregate_in_ms() -> None:
    text = "some log line first\n" + IREE_JSON
    assert process_spread.parse_iree_benchmark(text) == pytest.approx(3.3770423382382466)


def test_iree_benchmark_single_run_in_other_units() -> None:
    text = ('{"benchmarks": [{"name": "BM_main/process_time/real_time", '
            '"run_type": "iteration", "real_time": 1500.0, "time_unit": "us"}]}')
    assert process_spread.parse_iree_benchmark(text) == pytest.approx(1.5)


def test_litert_benchmark_median() -> None:
    result = {"latency": {"median_ms": 0.87, "avg_ms": 0.9}, "num_threads": 2}
    assert process_spread.parse_litert_benchmark(result) == 0.87


def test_runtimes_take_the_default_mode_and_refuse_unknowns() -> None:
    found = process_spread.targets("openvino, tensorflow/graph,litert")
    assert [(t.name, t.harness) for t in found] == [
        ("openvino/compiled", "benchmark_app"), ("tensorflow/graph", "bare loop"),
        ("litert/compiled", "litert-benchmark")]
    for bad in ("tensorflow/compiled", "nosuch", "litert/basic"):
        with pytest.raises(argparse.ArgumentTypeError):
            process_spread.targets(bad)
