"""Which runtime to deploy: picks on synthetic records where the answer is known."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.conftest import make_record
from tests.report.conftest import deploy_records
from tests.report.test_analysis import frame
from xlabench.analysis import (
    DEFAULT_HOST_MEM_BOUND_MB,
    DEFAULT_LATENCY_BOUND_MS,
    deploy_candidates,
    family_speedups,
    family_speedups_wide,
    fastest_deployments,
    first_under,
    latency_candidates,
    memory_candidates,
    runtime_coverage,
)
from xlabench.core import Parity, Status
from xlabench.core.record import ProcessInfo
from xlabench.measure import combine
from xlabench.report import build_findings
from xlabench.report.findings.deploy import deploy_finding
from xlabench.report.html import html_page
from xlabench.report.markdown import markdown_report, markdown_table
from xlabench.report.model import Context, Finding, ReportOptions


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    return frame(deploy_records())


def context(results: pd.DataFrame) -> Context:
    return Context(results, ReportOptions(), pd.DataFrame(), None, None)


@pytest.fixture(scope="module")
def finding(results: pd.DataFrame) -> Finding:
    return deploy_finding(context(results))


def pick(fastest: pd.DataFrame, model: str, batch: int = 4) -> dict:
    rows = fastest[(fastest["model"] == model) & (fastest["batch_size"] == batch)]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


def test_fastest_is_the_fastest_that_passed_parity(results: pd.DataFrame) -> None:
    best = pick(fastest_deployments(results), "resnet50_v1")
    # OpenVINO (400, parity FAILED) and ORT basic (350, parity never checked) are faster
    # but may not be advised.
    assert (best["backend"], best["mode"], best["runner"]) == ("onnxruntime", "compiled",
                                                               "python")
    assert best["throughput_sps"] == pytest.approx(300.0)
    assert best["ways"] == 3 and best["runner_up_way"] == "tensorflow/xla fp32"
    assert best["vs_runner_up"] == "clear of runner-up"
    ways = set(deploy_candidates(results)["way"])
    assert "openvino/compiled fp32" not in ways and "onnxruntime/basic fp32" not in ways
    assert "tensorflow/eager fp32" in ways  # eager is its own parity reference


def test_fastest_against_the_study_with_intervals(results: pd.DataFrame) -> None:
    best = pick(fastest_deployments(results), "resnet50_v1")
    assert best["over_tf_eager"] == pytest.approx(3.0)
    assert best["over_tf_xla"] == pytest.approx(1.5)
    # make_record's CIs are +-2% with too few samples to bootstrap: the CI-ends interval.
    assert best["over_tf_xla_ci"] == "ci-ends"
    assert best["over_tf_xla_ci_low"] == pytest.approx(300 * 0.98 / (200 * 1.02))
    assert best["over_tf_xla_ci_high"] == pytest.approx(300 * 1.02 / (200 * 0.98))



def test_a_ratio_against_the_study_is_the_one_ratio_method() -> None:
    """Results of three processes each, interleaved in one sweep: the ratio over TF XLA is
    paired by round, with result_ratio's interval (the one compare and the speedups show)."""
    records = []
    for backend, mode, sps in (("tensorflow", "xla", 200.0), ("onnxruntime", "compiled", 300.0)):
        records += [make_record(backend=backend, mode=mode, throughput=sps * f).replace(
            process=ProcessInfo(result_id=f"{backend}-{mode}", index=i, round=i))
            for i, f in enumerate((1.0, 0.8, 1.21))]
    results = frame(records, "s1")
    best = pick(fastest_deployments(results), "resnet50_v1")
    figures = {r["backend"]: r["figure"] for r in results.to_dict("records")}
    expected = combine.result_ratio(figures["onnxruntime"], figures["tensorflow"], True)
    assert expected is not None and best["over_tf_xla_ci"] == expected.method
    assert expected.method.startswith("paired t")
    assert (best["over_tf_xla_ci_low"], best["over_tf_xla_ci_high"]) == pytest.approx(
        (expected.ratio_low, expected.ratio_high))

def test_a_pick_without_a_study_baseline_says_so(results: pd.DataFrame) -> None:
    fastest = fastest_deployments(results)
    vit = pick(fastest, "vit_b16")
    assert vit["vs_runner_up"] == "overlaps runner-up"  # 300 vs 299, +-2% intervals
    assert math.isnan(vit["over_tf_eager"]) and vit["over_tf_eager_ci"] == "not measured"
    xla_pick = pick(fastest, "resnet50_v1", batch=1)
    assert xla_pick["backend"] == "onnxruntime"
    mixer = pick(fastest, "mixer_b16")
    assert mixer["vs_runner_up"] == "only way measured"
    assert mixer["over_tf_xla_ci"] == "not measured"


def test_the_pick_is_the_study_baseline_itself(results: pd.DataFrame) -> None:
    tf_only = results[results["backend"] == "tensorflow"]
    best = pick(fastest_deployments(tf_only), "resnet50_v1")
    assert best["mode"] == "xla" and best["over_tf_xla"] == 1.0
    assert best["over_tf_xla_ci"] == "the pick is this run"
    assert math.isnan(best["over_tf_xla_ci_low"])


@pytest.mark.parametrize(("bound_ms", "way"), [
    (DEFAULT_LATENCY_BOUND_MS, "tensorflow/xla fp32"), (25.0, "onnxruntime/compiled fp32"),
    (6.0, "tensorflow/eager fp32"), (math.inf, "onnxruntime/compiled fp32"), (5.0, None),
])
def test_latency_bound_pick(results: pd.DataFrame, bound_ms: float, way: str | None) -> None:
    ranked = latency_candidates(results)
    assert set(ranked["batch_size"]) == {1}
    picked = first_under(ranked, "latency_ms_p99", bound_ms)
    assert list(picked["way"]) == ([way] if way else [])  # 5 ms: strictly below


@pytest.mark.parametrize(("bound_mb", "way", "batch"), [
    (DEFAULT_HOST_MEM_BOUND_MB, "onnxruntime/compiled fp32", 4),
    (2500.0, "tensorflow/xla fp32", 4), (8000.0, "onnxruntime/compiled fp32", 8),
])
def test_memory_bound_pick(results: pd.DataFrame, bound_mb: float, way: str,
                           batch: int) -> None:
    ranked = memory_candidates(results)
    picked = first_under(ranked[ranked["model"] == "mobilenet_v1"], "peak_host_mem_mb",
                         bound_mb)
    assert list(zip(picked["way"], picked["batch_size"], strict=True)) == [(way, batch)]


def test_coverage_counts(results: pd.DataFrame) -> None:
    coverage = runtime_coverage(results)
    cells = {(r.backend_mode, r.family): (r.ok_models, r.unsupported_models, r.failed_models)
             for r in coverage.itertuples()}
    assert cells[("openvino/compiled", "ViT")] == (0, 1, 0)
    assert cells[("openvino/compiled", "MobileNet_V1")] == (0, 0, 1)  # oom counts as failed
    assert cells[("openvino/compiled", "ResNet_V1")] == (1, 0, 0)  # ran ok, parity aside
    assert cells[("onnxruntime/compiled", "MLP-Mixer")] == (1, 0, 0)  # failed, then ok
    assert cells[("tensorflow/xla", "ResNet_V1")] == (1, 0, 0)
    assert ("tensorflow/eager", "ViT") not in cells


def test_family_speedups_are_medians_over_the_familys_configurations(
    results: pd.DataFrame,
) -> None:
    speedups = family_speedups(results).set_index(["way", "family"])
    ort = "onnxruntime/compiled fp32"
    # resnet50_v1 b4 (3.0 / 1.5) and b1 (5.0 / 1.67): the medians of the two
    resnet = speedups.loc[(ort, "ResNet_V1")]
    assert resnet["over_tf_eager"] == pytest.approx(4.0)
    assert resnet["over_tf_xla"] == pytest.approx((1.5 + 500 / 300) / 2)
    assert resnet["xla_configs"] == 2 and resnet["models"] == 1
    # vit_b16: no TF eager beside it; mobilenet_v1 b8 has no baseline, b4 has XLA only
    assert math.isnan(speedups.loc[(ort, "ViT"), "over_tf_eager"])
    assert speedups.loc[(ort, "ViT"), "over_tf_xla"] == pytest.approx(300 / 299)
    assert speedups.loc[(ort, "MobileNet_V1"), "xla_configs"] == 1
    assert speedups.loc[(ort, "MobileNet_V1"), "over_tf_xla"] == pytest.approx(3.0)
    assert (ort, "MLP-Mixer") not in speedups.index  # never beside a baseline
    every = speedups.loc[(ort, "all families")]
    assert every["over_tf_xla"] == pytest.approx((1.5 + 500 / 300) / 2)  # of 1.5, 1.67, 1.0, 3
    assert every["xla_configs"] == 4 and every["eager_configs"] == 2
    # parity failures are never counted: OpenVINO's 400 did not keep its outputs
    assert not any(w.startswith("openvino") for w, _ in speedups.index)
    assert speedups.loc[("tensorflow/xla fp32", "ResNet_V1"), "over_tf_xla"] == 1.0
    wide = family_speedups_wide(family_speedups(results)).set_index("way")
    assert wide.columns[0] == "all families"
    assert wide.index[0] == ort  # the largest median over XLA first
    assert wide.loc[ort, "ResNet_V1"] == "4.00x / 1.58x (2)"
    assert wide.loc[ort, "ViT"] == "– / 1.00x (1)"


def test_family_table_in_the_finding(finding: Finding) -> None:
    table = next(t for t in finding.tables if t.title.startswith("Runtimes × model families: "
                                                                 "median speedup"))
    rows = {r[0]: r for r in table.cells()}
    assert "onnxruntime/compiled fp32" in rows and "openvino/compiled fp32" not in rows


def test_coverage_table_in_the_finding(finding: Finding) -> None:
    coverage = finding.tables[-1]
    rows = {r[0]: r for r in coverage.cells()}
    headers = [c.header for c in coverage.shown_columns()]
    assert rows["openvino/compiled"][headers.index("ViT")] == "0 / 1 / 0"
    assert rows["tensorflow/eager"][headers.index("ViT")] == "–"


def test_markdown_shows_the_default_bound(finding: Finding) -> None:
    latency = next(t for t in finding.tables if t.bound and t.bound.key == "latency_ms_p99")
    text = "\n".join(markdown_table(latency))
    assert f"{DEFAULT_LATENCY_BOUND_MS:g} (the default" in text
    rows = [line for line in text.splitlines() if line.startswith("| a100")]
    assert len(rows) == 1 and "tensorflow/xla fp32" in rows[0]
    assert "### Which runtime to deploy" in markdown_report([finding], [])


def test_html_has_the_bound_inputs(finding: Finding) -> None:
    page = html_page([finding], [], "t")
    for key, default in (("latency_ms_p99", DEFAULT_LATENCY_BOUND_MS),
                         ("peak_host_mem_mb", DEFAULT_HOST_MEM_BOUND_MB)):
        assert (f"<input type=\"number\" min=\"0\" step=\"any\" value=\"{default:g}\" "
                f"data-bound-input=\"{key}\">") in page
    # Every candidate is in the page (the script re-picks); those the default leaves out
    # start hidden: at 10 ms ORT (20 ms) and TF eager (slower than TF XLA); at 4096 MB ORT
    # b8 (6000 MB) and TF XLA (slower than ORT b4).
    assert page.count("data-bound-value=\"20.0\"") == 1
    assert page.count(" hidden><td>") == 4


def test_empty_section() -> None:
    empty = deploy_finding(context(frame([])))
    assert empty.empty and "No local result:" in empty.empty and not empty.tables


def test_failures_only_section_keeps_the_coverage() -> None:
    failed = deploy_finding(context(frame([
        make_record(status=Status.UNSUPPORTED, backend="openvino", mode="compiled"),
        make_record(backend="openvino", mode="compiled").replace(
            parity=Parity("keras_eager", 0.5, 0.2, 2e-3, False, "too far")),
    ])))
    assert failed.empty and "no runtime can be advised" in failed.empty
    assert [t.title for t in failed.tables] == [
        "Runtimes × model families: models ok / unsupported / failed"]
    assert failed.tables[0].cells() == [["openvino/compiled", "1 / 0 / 0"]]


def test_first_on_the_page_and_in_the_markdown(results: pd.DataFrame) -> None:
    """The issue asks for the part of the report a reader looks at first: before the study's
    findings in the list, the table of contents, the page and findings.md."""
    findings = build_findings(results, ReportOptions())
    assert findings[0].key == "deploy" and findings[0].part == "deploy"
    assert "deploy" not in {f.key for f in findings[1:]}
    page = html_page(findings, [], "t")
    first_section = page.index("<section id=")
    assert page.index('<section id="deploy">') == first_section
    contents = page[page.index("<nav>"):]
    assert contents.index('href="#') == contents.index('href="#deploy"')
    markdown = markdown_report(findings, [])
    assert markdown.index("### Which runtime to deploy") < markdown.index("## The 2023 study")
