"""LoadGen scenario results in the store: stored like every result, selectable by column,
migrated from schema 4, merged, exported, and shown by `xlabench results` in their unit.

Real records with real `ScenarioOutcome`s (tests/report/scenario_records.py), combined with
`combine.combine` and stored through `ResultStore`, as a sweep stores them.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from tests.report.scenario_records import (
    SHORTFALL,
    scenario_records,
    scenario_result,
    timed_loop_result,
)
from xlabench.cli.tables import (
    format_record,
    format_result,
    format_table,
    result_rows,
    with_scenario_columns,
)
from xlabench.core import Record
from xlabench.core.result import Result, ResultPolicy
from xlabench.core.scenario import Scenario, rate_to_figure
from xlabench.measure import combine
from xlabench.store import SCHEMA_VERSION, ResultStore, merge_databases
from xlabench.store.export import full_csv, results_csv, study_csv

POLICY = ResultPolicy(min_processes=3)
RESULT_COLUMNS = (("id", "id"), ("model", "model"), ("status", "status"),
                  ("throughput_sps", "samples/s"))


def store(path: Path, *results: list[Record]) -> dict[str, Result]:
    """Each result's processes, then its combined figure; the stored results by spec id."""
    stored = {}
    with ResultStore(path) as db:
        for processes in results:
            db.save_many(processes, sweep_id="sw1")
            result = combine.combine(processes, processes[0].process.result_id, POLICY)
            db.save_result(result, POLICY, True, sweep_id="sw1")
            stored[processes[0].spec_id] = result
    return stored


@pytest.fixture
def db(tmp_path: Path) -> tuple[Path, dict[str, Result]]:
    path = tmp_path / "s.db"
    results = store(path, scenario_result("openvino", Scenario.SINGLE_STREAM, 21.0),
                    scenario_result("openvino", Scenario.SERVER, 31.0),
                    scenario_result("openvino", Scenario.OFFLINE, 125.0, batch=8),
                    timed_loop_result("openvino", 100.0, batch=4))
    return path, results


def by_scenario(rows: list[dict]) -> dict[str, dict]:
    return {row["scenario"]: row for row in rows}


def test_scenario_columns_select_them(db: tuple[Path, dict[str, Result]]) -> None:
    path, _ = db
    conn = sqlite3.connect(path)
    try:
        counts = dict(conn.execute("SELECT scenario, COUNT(*) FROM results GROUP BY scenario"))
        combined = dict(conn.execute("SELECT scenario, COUNT(*) FROM combined_results "
                                     "GROUP BY scenario"))
        figures = [r[0] for r in conn.execute(
            "SELECT scenario_figure FROM results WHERE scenario = 'single-stream' ORDER BY id")]
        loop = conn.execute("SELECT scenario_figure FROM results WHERE scenario = ''").fetchall()
    finally:
        conn.close()
    assert counts == {"": 3, "single-stream": 3, "server": 3, "offline": 3}
    assert combined == {"": 1, "single-stream": 1, "server": 1, "offline": 1}
    assert figures == pytest.approx([21.0 * 0.97, 21.0, 21.0 * 1.03])
    assert {r[0] for r in loop} == {None}
    with ResultStore(path) as store_:
        assert store_.schema_version() == SCHEMA_VERSION == 5
        (record, *_) = store_.records(scenario="server")
    assert record.scenario is not None and record.scenario.loadgen["latency_bound_ms"] == 50.0


def test_result_rows_show_the_figure_in_its_unit(db: tuple[Path, dict[str, Result]]) -> None:
    path, results = db
    with ResultStore(path) as store_:
        rows = by_scenario(store_.result_rows())
    single = rows["single-stream"]
    stored = next(r for r in results.values() if r.spec_id == single["spec_id"])
    # the p90 back from the combined rate, the interval's ends swapped (a lower-is-better
    # figure's low end is the rate's high end)
    assert single["figure"] == pytest.approx(rate_to_figure("single-stream", stored.median_sps))
    assert single["figure_ci_low"] == pytest.approx(1000 / stored.ci_high_sps)
    assert single["figure_ci_high"] == pytest.approx(1000 / stored.ci_low_sps)
    assert single["figure_ci_low"] < single["figure"] < single["figure_ci_high"]
    assert single["unit"] == "ms" and single["throughput_sps"] is None
    assert single["loadgen_valid"] is True and single["shortfall"] == SHORTFALL
    assert single["latency_bound_ms"] is None and single["processes"] == 3
    server = rows["server"]
    assert server["unit"] == "queries/s" and server["latency_bound_ms"] == 50.0
    assert server["figure"] == pytest.approx(31.0, rel=0.01) and server["loadgen_valid"] is True
    assert rows["offline"]["unit"] == "samples/s"
    loop = rows[""]
    assert loop["figure"] is None and loop["unit"] is None
    assert loop["throughput_sps"] == pytest.approx(100.0, rel=0.01)


def test_results_csv_has_the_scenario_columns(db: tuple[Path, dict[str, Result]]) -> None:
    path, _ = db
    with ResultStore(path) as store_:
        rows = by_scenario(list(csv.DictReader(io.StringIO(results_csv(
            store_.result_rows())))))
        study = list(csv.DictReader(io.StringIO(study_csv(store_.result_rows()))))
        full = list(csv.DictReader(io.StringIO(full_csv(store_.rows_with_records()))))
    server = rows["server"]
    assert (server["unit"], server["loadgen_valid"], server["latency_bound_ms"],
            server["shortfall"]) == ("queries/s", "True", "50.0", SHORTFALL)
    assert float(server["figure_ci_low"]) < float(server["figure"]) < float(
        server["figure_ci_high"])
    assert server["throughput_sps"] == "" and rows[""]["figure"] == ""
    assert len(study) == 1  # the study's CSV is the timed loop's throughput only
    scenarios = [json.loads(r["scenario_json"]) for r in full]
    assert sum(s is not None for s in scenarios) == 9
    assert {r["scenario"] for r in full} == {"", "single-stream", "server", "offline"}


def test_results_table_and_run_output(db: tuple[Path, dict[str, Result]]) -> None:
    path, results = db
    with ResultStore(path) as store_:
        rows = result_rows(store_)
        processes = store_.rows()
        records = store_.records(scenario="single-stream")
    columns = with_scenario_columns(RESULT_COLUMNS, rows)
    assert [key for key, _ in columns] == ["id", "model", "status", "scenario", "figure_shown",
                                           "throughput_sps"]
    table = format_table(rows, columns)
    single = next(r for r in rows if r["scenario"] == "single-stream")
    p90_ms = 1000 / results[single["spec_id"]].median_sps
    assert single["figure_shown"].startswith(f"{p90_ms:.4g} ms [")
    assert single["figure_shown"] in table
    assert [k for k, _ in with_scenario_columns(RESULT_COLUMNS, processes)][3:5] == [
        "scenario", "scenario_figure"]
    assert with_scenario_columns(RESULT_COLUMNS, [r for r in rows if not r["scenario"]]) == \
        RESULT_COLUMNS
    result = results[records[0].spec_id]
    text = format_result(result, records)
    assert text.splitlines()[0].startswith(
        f"{records[0].spec.label()}: p90 latency {1000 / result.median_sps:.4g} ms")
    assert "process 1 (round 0): p90 latency 20.37 ms (LoadGen: valid;" in text
    assert "single-stream: p90 latency" in format_record(records[-1])


def _as_schema_4(path: Path) -> None:
    """What schema 4 wrote: no scenario columns (a development build may have stored
    scenario records already)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "ALTER TABLE results DROP COLUMN scenario; ALTER TABLE results DROP COLUMN "
        "scenario_figure; ALTER TABLE combined_results DROP COLUMN scenario;"
        "UPDATE meta SET value = '4' WHERE key = 'schema_version';")
    conn.commit()
    conn.close()


def test_a_schema_4_database_is_migrated(db: tuple[Path, dict[str, Result]]) -> None:
    path, _ = db
    with ResultStore(path) as store_:
        before = store_.result_rows()
    _as_schema_4(path)
    with ResultStore(path) as store_:
        assert store_.schema_version() == 5
        assert store_.result_rows() == before  # columns filled from the records' JSON
        assert len(store_.rows(scenario="offline")) == 3


def test_merge_carries_scenario_results(tmp_path: Path,
                                        db: tuple[Path, dict[str, Result]]) -> None:
    path, _ = db
    old = tmp_path / "old.db"
    store(old, scenario_result("onnxruntime", Scenario.SERVER, 21.0))
    _as_schema_4(old)  # a source from before scenarios had columns: read as it is
    into = tmp_path / "all.db"
    summary = merge_databases([path, old], into)
    assert (summary.processes, summary.results) == (15, 5)
    with ResultStore(path) as store_:
        want = {(r["spec_id"], r["scenario"], r["figure"]) for r in store_.result_rows()}
    with ResultStore(into) as store_:
        got = store_.result_rows()
        assert want < {(r["spec_id"], r["scenario"], r["figure"]) for r in got}
        assert len(store_.rows(scenario="server")) == 6
    servers = {r["backend"]: r for r in got if r["scenario"] == "server"}
    assert servers["onnxruntime"]["figure"] == pytest.approx(21.0, rel=0.01)
    conn = sqlite3.connect(into)
    try:
        combined = dict(conn.execute("SELECT scenario, COUNT(*) FROM combined_results "
                                     "GROUP BY scenario"))
    finally:
        conn.close()
    assert combined == {"": 1, "single-stream": 1, "server": 2, "offline": 1}


def test_a_failed_scenario_process_keeps_its_scenario(tmp_path: Path) -> None:
    (failed,) = [r for r in scenario_records() if not r.ok]
    with ResultStore(tmp_path / "f.db") as store_:
        store_.save(failed)
        (row,) = store_.result_rows()
    assert (row["status"], row["scenario"], row["unit"]) == ("failed", "offline", "samples/s")
    assert row["figure"] is None and row["loadgen_valid"] is None


def test_a_failed_result_shows_no_figure() -> None:
    from xlabench.cli.tables import _figure_text

    row = {"figure": 0.0, "unit": "queries/s", "figure_ci_low": None, "figure_ci_high": None}
    assert _figure_text({**row, "status": "failed"}) is None  # no Server rate passed
    assert _figure_text({**row, "figure": 22.6, "status": "ok"}) == "22.6 queries/s"
