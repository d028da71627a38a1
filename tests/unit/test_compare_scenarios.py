"""`xlabench compare` of LoadGen scenario results: like with like only (the same scenario and
settings), the figure in its unit, verdicts read as rates (a higher p90 is slower).

Databases built through the store: real records with real `ScenarioOutcome`s
(tests/report/scenario_records.py), combined and stored as a sweep stores them.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.report.scenario_records import scenario_result
from tests.unit.test_compare import MACHINE
from xlabench.analysis import compare as cmp
from xlabench.cli.compare_commands import _csv, format_compare
from xlabench.core import Record
from xlabench.core.record import ProcessInfo
from xlabench.core.result import Result, ResultPolicy
from xlabench.core.scenario import Scenario
from xlabench.measure import combine
from xlabench.store import ResultStore

POLICY = ResultPolicy(min_processes=3)


def store_labelled(db: Path, label: str, processes: list[Record]) -> Result:
    """One result of `processes` under `label` (its own result id), with a known between-run
    variation so that two separate runs can be judged."""
    result_id = f"{label}-{processes[0].spec_id}"
    records = [r.replace(process=ProcessInfo(result_id, i, i)) for i, r in enumerate(processes)]
    result = combine.combine(records, result_id, POLICY, "e1", MACHINE)
    with ResultStore(db) as store:
        store.save_many(records, sweep_id=result_id, label=label)
        store.save_result(result, POLICY, True, sweep_id=result_id, label=label)
    return result


@pytest.fixture
def report(tmp_path: Path) -> cmp.CompareReport:
    db = tmp_path / "c.db"
    single, server, offline = Scenario.SINGLE_STREAM, Scenario.SERVER, Scenario.OFFLINE
    store_labelled(db, "before", scenario_result("openvino", single, 20.0))
    store_labelled(db, "after", scenario_result("openvino", single, 15.0))  # p90 down: faster
    store_labelled(db, "before", scenario_result("openvino", offline, 120.0, batch=8))
    store_labelled(db, "after", scenario_result("openvino", offline, 90.0, batch=8))  # slower
    # a Server search under another latency bound is another question: never paired
    store_labelled(db, "before", scenario_result("openvino", server, 30.0, bound_ms=50.0))
    store_labelled(db, "after", scenario_result("openvino", server, 45.0, bound_ms=200.0))
    return cmp.compare(cmp.Side(db, label="before"), cmp.Side(db, label="after"))


def pair_of(report: cmp.CompareReport, scenario: str) -> cmp.Pair:
    (pair,) = [p for p in report.pairs if p.scenario == scenario]
    return pair


def test_only_like_with_like_is_paired(report: cmp.CompareReport) -> None:
    assert {p.scenario for p in report.pairs} == {"single-stream", "offline"}
    assert (report.only_baseline, report.only_new) == (1, 1)


def test_a_lower_p90_is_faster(report: cmp.CompareReport) -> None:
    single = pair_of(report, "single-stream")
    assert single.verdict == cmp.FASTER and single.unit == "ms"
    # the ratio is of rates: the baseline's p90 over the new one's
    assert single.estimate == pytest.approx(20.0 / 15.0)
    assert single.ratio is not None and single.ratio.ratio_low > 1.05
    figures = single.to_dict()
    assert figures["new"]["figure"] == pytest.approx(15.0, rel=0.01)
    assert figures["baseline"]["figure"] == pytest.approx(20.0, rel=0.01)
    assert figures["new"]["figure_ci_low"] < 15.0 < figures["new"]["figure_ci_high"]
    assert figures["scenario"] == "single-stream" and figures["latency_bound_ms"] is None
    offline = pair_of(report, "offline")
    assert offline.verdict == cmp.SLOWER and offline.unit == "samples/s"
    assert offline.estimate == pytest.approx(90.0 / 120.0)
    assert report.slowdowns(0.05) == [offline]


def test_the_table_and_csv_show_each_figure_in_its_unit(report: cmp.CompareReport) -> None:
    text = format_compare(report)
    single = next(line for line in text.splitlines() if "single-stream" in line)
    assert "openvino/compiled single-stream" in single and " ms [" in single
    assert "faster" in single and "baseline [CI]" in text
    assert "for a p90 latency, the baseline's p90 over the new" in text
    rows = {r["scenario"]: r for r in csv.DictReader(io.StringIO(_csv(report)))}
    assert float(rows["single-stream"]["new_figure"]) == pytest.approx(15.0, rel=0.01)
    assert float(rows["single-stream"]["new_sps"]) == pytest.approx(1000 / 15.0, rel=0.01)
    assert rows["offline"]["unit"] == "samples/s" and rows["offline"]["verdict"] == "slower"
