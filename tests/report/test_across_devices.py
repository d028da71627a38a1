"""The same models on two devices: verdicts, picks and device ratios where the answer is known."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import make_record
from tests.report.test_analysis import frame
from xlabench.analysis import (
    comparison_for,
    device_ratio_summary,
    device_ratios,
    picks_across_devices,
    speedup_table,
    verdicts_across_devices,
)
from xlabench.analysis.intervals import ratio_verdict
from xlabench.report.findings.across_devices import across_devices_finding
from xlabench.report.model import Context, ReportOptions

#: (model, device, backend, mode, samples/s). On a100 XLA beats eager and graph and ONNX
#: Runtime is fastest; on t4 XLA beats eager but loses to graph, and OpenVINO (measured there
#: only) is fastest. mobilenet_v1 ran on a100 only.
RUNS = (
    ("resnet50_v1", "a100", "tensorflow", "eager", 100.0),
    ("resnet50_v1", "a100", "tensorflow", "graph", 150.0),
    ("resnet50_v1", "a100", "tensorflow", "xla", 200.0),
    ("resnet50_v1", "a100", "onnxruntime", "compiled", 300.0),
    ("resnet50_v1", "t4", "tensorflow", "eager", 50.0),
    ("resnet50_v1", "t4", "tensorflow", "graph", 100.0),
    ("resnet50_v1", "t4", "tensorflow", "xla", 60.0),
    ("resnet50_v1", "t4", "onnxruntime", "compiled", 90.0),
    ("resnet50_v1", "t4", "openvino", "compiled", 120.0),
    ("mobilenet_v1", "a100", "tensorflow", "eager", 400.0),
    ("mobilenet_v1", "a100", "tensorflow", "xla", 500.0),
)


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return frame([make_record(model=m, backend=b, mode=mode, throughput=sps, accelerator=d,
                              family="ResNet_V1" if m.startswith("resnet") else "MobileNet_V1")
                  for m, d, b, mode, sps in RUNS])


def context(results: pd.DataFrame) -> Context:
    options = ReportOptions()
    return Context(results, options, speedup_table(results, options.comparison), None, None)


def by_device(table: pd.DataFrame, column: str) -> dict[str, object]:
    return dict(zip(table["device"], table[column], strict=True))


def test_a_verdict_is_the_side_of_one_its_interval_is_on() -> None:
    assert ratio_verdict(1.1, 1.3) == "faster"
    assert ratio_verdict(0.7, 0.9) == "slower"
    assert ratio_verdict(0.9, 1.1) == "within noise"
    assert ratio_verdict(float("nan"), 1.1) == "no interval"


def test_xla_vs_eager_holds_and_xla_vs_graph_does_not(results: pd.DataFrame) -> None:
    eager = verdicts_across_devices(speedup_table(results, comparison_for("tensorflow", "eager")))
    assert set(eager["model"]) == {"resnet50_v1"}  # mobilenet_v1 ran on one device only
    assert by_device(eager, "verdict") == {"a100": "faster", "t4": "faster"}
    assert eager["holds"].all()
    graph = verdicts_across_devices(speedup_table(results, comparison_for("tensorflow", "graph")))
    assert by_device(graph, "verdict") == {"a100": "faster", "t4": "slower"}
    assert not graph["holds"].any()


def test_the_fastest_way_differs_between_the_devices(results: pd.DataFrame) -> None:
    picks = picks_across_devices(results)
    assert by_device(picks, "way") == {"a100": "onnxruntime/compiled fp32",
                                       "t4": "openvino/compiled fp32"}
    assert not picks["same_pick"].any()


def test_device_ratios_are_over_the_first_device_way_by_way(results: pd.DataFrame) -> None:
    ratios = device_ratios(results)
    assert set(ratios["reference"]) == {"a100"} and set(ratios["device"]) == {"t4"}
    # OpenVINO ran on t4 only and mobilenet_v1 on a100 only: neither has a ratio.
    got = dict(zip(ratios["way"], ratios["device_ratio"], strict=True))
    assert got == pytest.approx({"tensorflow/eager fp32": 0.5, "tensorflow/graph fp32": 100 / 150,
                                 "tensorflow/xla fp32": 0.3, "onnxruntime/compiled fp32": 0.3})
    assert (ratios["device_ratio_ci_low"] < ratios["device_ratio"]).all()
    assert (ratios["device_ratio"] < ratios["device_ratio_ci_high"]).all()
    assert set(ratios["verdict"]) == {"slower"}
    summary = device_ratio_summary(ratios)
    assert summary["way"].iloc[0] == "tensorflow/graph fp32"  # the highest median first
    assert set(summary["slower"]) == {1} and set(summary["configurations"]) == {1}


def test_the_finding_says_what_holds_and_what_differs(results: pd.DataFrame) -> None:
    finding = across_devices_finding(context(results))
    text = "\n".join(finding.summary)
    assert "1 model was measured on 2 devices (a100, t4)" in text
    assert "xla vs eager: the same verdict on every device for 1 of 1 configurations." in text
    assert "xla vs graph: the same verdict on every device for 0 of 1 configurations; it " \
           "differs for resnet50_v1 (1.33x" in text
    assert "0.60x" in text and "on t4" in text
    assert "The fastest way is the same on every device for 0 of 1 models" in text
    assert "t4 over a100, median throughput ratio per way: tensorflow/graph fp32 0.67x" in text
    assert finding.tables[0].title == "TensorFlow XLA's speedup on each device"
    assert finding.charts and finding.charts[0].key == "devices"


def test_one_device_has_nothing_to_compare(results: pd.DataFrame) -> None:
    one = results[results["device"] == "a100"]
    finding = across_devices_finding(context(one))
    assert finding.empty and "two or more devices" in finding.empty
