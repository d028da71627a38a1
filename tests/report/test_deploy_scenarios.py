"""The deployment section's scenario and bf16 tables: a database built from real scenario
records (tests/report/scenario_records.py) through the real store; every number checked
against the combined result the store holds for it (the one owner of a figure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tests.report.scenario_records import (
    BAD_PARITY,
    scenario_records,
    scenario_result,
    timed_loop_result,
)
from tests.report.test_analysis import _by_result, _store_figure, frame
from xlabench.analysis import load_results, scenarios
from xlabench.core import Record
from xlabench.core.result import Result, ResultPolicy
from xlabench.core.scenario import Scenario
from xlabench.measure.combine import result_ratio
from xlabench.report import build_findings
from xlabench.report.findings.deploy import deploy_finding
from xlabench.report.html import html_page
from xlabench.report.markdown import markdown_report
from xlabench.report.model import Context, Finding, ReportOptions
from xlabench.report.tables import Table
from xlabench.store import ResultStore

SERVER_TITLE = "Highest Server rate with p99 within the bound"
SINGLE_TITLE = "Single-stream p90 latency (one query at a time, batch 1)"
OFFLINE_TITLE = "Offline samples/s (every query at once)"
GAIN_TITLE = "Gain from batching and concurrency: offline over one request"
PRECISION_TITLE = "fp32 and bf16 side by side"


@dataclass(frozen=True)
class Stored:
    results: pd.DataFrame
    combined: dict[tuple[str, str, str, float | None], Result]  # backend, precision, scenario,
    # latency bound -> its stored result


def store_records(path: Path, records: list[Record]) -> None:
    """As a sweep stores them: a result's processes, then its combined figure."""
    with ResultStore(path) as store:
        for result_id, processes in _by_result(records):
            store.save_many(processes)
            if result_id:
                _store_figure(store, result_id, ResultPolicy())


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    path = tmp_path_factory.mktemp("scenarios") / "scenarios.db"
    records = scenario_records()
    store_records(path, records)
    by_result = {r.process.result_id: r for r in records if r.process.result_id}
    with ResultStore(path) as store:
        combined = {}
        for result in store.combined():
            spec = by_result[result.result_id].spec
            bound = (spec.scenario_settings.latency_bound_ms
                     if spec.scenario == Scenario.SERVER else None)
            combined[(spec.backend, spec.precision, spec.scenario, bound)] = result
    return Stored(load_results(path), combined)


@pytest.fixture(scope="module")
def finding(stored: Stored) -> Finding:
    return deploy_finding(Context(stored.results, ReportOptions(), pd.DataFrame(), None, None))


def table(finding: Finding, title: str) -> tuple[Table, list[dict[str, str]]]:
    """The table called `title`, and its rows as header -> cell."""
    (found,) = [t for t in finding.tables if t.title == title]
    headers = [c.header for c in found.shown_columns()]
    return found, [dict(zip(headers, row, strict=True)) for row in found.cells()]


def sps(value: float) -> str:
    return f"{value:.1f}"


def test_the_section_opens_with_the_server_rate(stored: Stored, finding: Finding) -> None:
    best = stored.combined[("openvino", "bf16", "server", 50.0)]
    assert finding.tables[0].title == SERVER_TITLE
    assert finding.summary[0] == (
        f"Server (MLPerf LoadGen), p99 within 50 ms: resnet50_v1@224 on a100 sustains "
        f"{sps(best.median_sps)} [{sps(best.ci_low_sps)}, {sps(best.ci_high_sps)}] queries/s "
        "with openvino/compiled bf16 (LoadGen: valid; 3 ways measured).")
    assert finding.summary[1].startswith("Server (MLPerf LoadGen), p99 within 200 ms: ")
    assert [t.title for t in finding.tables[:5]] == [
        SERVER_TITLE, SINGLE_TITLE, OFFLINE_TITLE, GAIN_TITLE, PRECISION_TITLE]
    assert finding.tables[5].title.startswith("Fastest way per device")


def test_server_rates_per_bound_highest_first(stored: Stored, finding: Finding) -> None:
    _, rows = table(finding, SERVER_TITLE)
    shown = [(r["p99 bound ms"], r["way (backend/mode precision)"], r["rank"]) for r in rows]
    # TensorFlow XLA's 90/s failed parity: never advised
    assert shown == [("50", "openvino/compiled bf16", "1"), ("50", "openvino/compiled fp32", "2"),
                     ("50", "onnxruntime/compiled fp32", "3"), ("200", "openvino/compiled fp32",
                                                                 "1")]
    fp32 = stored.combined[("openvino", "fp32", "server", 50.0)]
    assert rows[1]["queries/s within the bound [CI]"] == (
        f"{sps(fp32.median_sps)} [{sps(fp32.ci_low_sps)}, {sps(fp32.ci_high_sps)}]")
    assert rows[1]["p99 ms at that rate"] == "30.00"  # the passing trial's: within 50 ms
    assert rows[1]["next rate tried (failed), /s"] == sps(1.5 * 31.0 * 1.03)  # last process's
    assert rows[1]["LoadGen"] == "valid" and rows[1]["vs MLPerf"].startswith("shortened")
    assert rows[1]["provenance"] == "local; 3 processes"


def test_single_stream_p90_from_the_stored_rate(stored: Stored, finding: Finding) -> None:
    _, rows = table(finding, SINGLE_TITLE)
    assert [r["way (backend/mode precision)"] for r in rows] == [
        "openvino/compiled bf16", "openvino/compiled fp32"]
    fp32 = stored.combined[("openvino", "fp32", "single-stream", None)]
    # the p90 is 1000 / the combined rate; a latency's interval ends swap
    assert rows[1]["p90 ms [CI]"] == (f"{1000 / fp32.median_sps:.2f} [{1000 / fp32.ci_high_sps:.2f}"
                                      f", {1000 / fp32.ci_low_sps:.2f}]")
    assert rows[1]["p50 ms"] == f"{0.8 * 21.0 * 1.03:.2f}"  # LoadGen's, of the last process


def test_offline_and_the_gain_from_batching(stored: Stored, finding: Finding) -> None:
    _, offline = table(finding, OFFLINE_TITLE)
    ov = stored.combined[("openvino", "fp32", "offline", None)]
    assert offline[0]["way (backend/mode precision)"] == "openvino/compiled fp32"
    assert offline[0]["samples/s [CI]"].startswith(sps(ov.median_sps) + " [")
    assert offline[0]["max batch"] == "8"
    _, gains = table(finding, GAIN_TITLE)
    by_way = {r["way (backend/mode precision)"]: r for r in gains}
    single = stored.combined[("openvino", "fp32", "single-stream", None)]
    ov_gain = result_ratio(ov, single)
    assert ov_gain is not None
    assert by_way["openvino/compiled fp32"]["one request from"] == "single-stream: 1000 / p90"
    assert by_way["openvino/compiled fp32"]["gain from batching [CI]"] == (
        f"{ov.median_sps / single.median_sps:.2f}x [{ov_gain.ratio_low:.2f}x, "
        f"{ov_gain.ratio_high:.2f}x]")
    # ONNX Runtime has no single-stream result: its batch-1 timed loop is the one request
    ort = stored.combined[("onnxruntime", "fp32", "offline", None)]
    loop = stored.combined[("onnxruntime", "fp32", "", None)]
    assert by_way["onnxruntime/compiled fp32"]["one request from"] == "timed loop at batch 1"
    assert by_way["onnxruntime/compiled fp32"]["gain from batching [CI]"].startswith(
        f"{ort.median_sps / loop.median_sps:.2f}x [")


def test_fp32_and_bf16_side_by_side(stored: Stored, finding: Finding) -> None:
    _, rows = table(finding, PRECISION_TITLE)
    by_what = {r["measured"]: r for r in rows}
    assert set(by_what) == {"server (p99 ≤ 50 ms)", "single-stream", "timed loop"}
    single = by_what["single-stream"]
    fp32 = stored.combined[("openvino", "fp32", "single-stream", None)]
    bf16 = stored.combined[("openvino", "bf16", "single-stream", None)]
    speedup = result_ratio(bf16, fp32)
    assert speedup is not None and speedup.ratio > 1.9  # bf16's p90 is half of fp32's
    assert (single["fp32 executed as"], single["bf16 executed as"]) == ("fp32", "bf16")
    assert single["unit"] == "ms" and single["bf16 speedup [CI]"] == (
        f"{speedup.ratio:.2f}x [{speedup.ratio_low:.2f}x, {speedup.ratio_high:.2f}x]")
    assert single["interval"] == speedup.method
    assert single["bf16 [CI]"].startswith(f"{1000 / bf16.median_sps:.4g} [")
    assert (single["fp32 max rel diff"], single["fp32 rtol"], single["fp32 parity"]) == (
        "1e-06", "0.002", "pass")
    assert (single["bf16 max rel diff"], single["bf16 rtol"], single["bf16 parity"]) == (
        "0.015", "0.05", "pass")
    assert finding.summary[2].startswith("bf16 against fp32: 3 pair(s)")


def test_a_bf16_parity_failure_is_kept_beside_fp32() -> None:
    bad = [r.replace(parity=BAD_PARITY) for r in timed_loop_result("openvino", 180.0, batch=4,
                                                                   precision="bf16")]
    results = frame([*timed_loop_result("openvino", 100.0, batch=4), *bad])
    found = deploy_finding(Context(results, ReportOptions(), pd.DataFrame(), None, None))
    _, (row,) = table(found, PRECISION_TITLE)
    assert row["bf16 parity"] == "FAIL" and row["measured"] == "timed loop"
    assert not any(t.title == SERVER_TITLE for t in found.tables)  # no Server result: none


def test_scenario_results_alone_still_advise(tmp_path: Path) -> None:
    path = tmp_path / "only.db"
    store_records(path, scenario_result("openvino", Scenario.SERVER, 31.0))
    found = deploy_finding(Context(load_results(path), ReportOptions(), pd.DataFrame(), None,
                                   None))
    assert found.empty is None and found.tables[0].title == SERVER_TITLE
    assert found.tables[-1].title.startswith("Runtimes × model families: models ok")
    server = found.tables[0].frame
    assert math.isclose(server["figure_value"].iloc[0], 31.0, rel_tol=0.01)


def test_markdown_and_page(stored: Stored) -> None:
    findings = build_findings(stored.results, ReportOptions())
    assert findings[0].key == "deploy" and findings[0].tables[0].title == SERVER_TITLE
    markdown = markdown_report(findings, [])
    deploy = markdown[markdown.index("### Which runtime to deploy"):]
    assert deploy.index(f"**{SERVER_TITLE}**") < deploy.index(f"**{PRECISION_TITLE}**") \
        < deploy.index("**Fastest way per device")
    page = html_page(findings, [], "t")
    section = page[page.index('<section id="deploy">'):]
    assert section.index(f"<h4>{SERVER_TITLE}</h4>") == section.index("<h4>")


def _result(result_id: str, medians: tuple[float, ...]) -> Result:
    figure = math.exp(sum(math.log(m) for m in medians) / len(medians))
    return Result(
        result_id=result_id, spec_id="s", env_id="e", status="ok", k=len(medians),
        k_total=len(medians), k_flagged=0, median_sps=figure, ci_low_sps=figure,
        ci_high_sps=figure, ci_confidence=0.95, ci_method="test", between_processes=True,
        target_rel_ci=None, target_met=True, flagged=False, flag_reason="",
        process_medians_sps=medians, process_rounds=tuple(range(len(medians))))


def test_a_scenario_ratio_pairs_rounds_only_where_both_ran_interleaved() -> None:
    """The same sweep id is not enough (the grid swept again later has it too): the processes'
    times must overlap as well, the rule compare uses (`measure.combine.interleaved`)."""
    rows = [{"rate_per_s": r.median_sps, "result": r, "sweep_id": "s1"}
            for r in (_result("new", (90.0, 72.0, 108.0)), _result("base", (100.0, 80.0, 119.0)))]
    together = {"new": (0, 10), "base": (5, 15)}
    apart = {"new": (0, 10), "base": (100, 110)}
    assert scenarios.ratio_of(*rows, together)[3].startswith("paired t")
    assert scenarios.ratio_of(*rows, apart)[3].startswith("welch t")
    assert scenarios.ratio_of(*rows, {})[3].startswith("welch t")  # times unknown
