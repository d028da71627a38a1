"""One reading of every result, over the database issue 36 describes: a complete result, a
later result of the same configuration that a killed sweep left incomplete, a re-run
(`sweep --repeats`), a result with a flagged process, two labels, an interleaved pair (one
sweep id, overlapping process times) and a LoadGen scenario result.

Every reader shows each result with the figure and interval stored for it and takes the same
result as a configuration's latest: `results` (its table), `export --format results-csv`,
the report's frame (`load_results`, `every_result`, `latest_per_config`; a scenario's
figure in `scenarios.scenario_results`), the trackers' rows and `compare` (the two labels, the
interleaved pair, the database against a copy). The report's row of a result is the store's
row (`store.view`), key for key.

The database is built through the store API as a sweep stores results
(`test_compare.store_result`: processes, then the combined figure).
"""

from __future__ import annotations

import csv
import io
import math
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import make_record
from tests.report.scenario_records import scenario_result
from tests.unit.test_compare import ENV, MACHINE, POLICY, store_result
from xlabench.analysis import compare as cmp
from xlabench.analysis import load_results, scenarios
from xlabench.analysis.result_rows import every_result, latest_per_config
from xlabench.cli.main import main
from xlabench.cli.tables import result_rows
from xlabench.core import Record
from xlabench.core.record import Interference, ProcessInfo
from xlabench.core.result import Result
from xlabench.core.scenario import Scenario
from xlabench.measure import combine
from xlabench.store import ResultStore
from xlabench.store.scenario_rows import figure_interval
from xlabench.sweep.trackers import run_metrics

#: Side a of the interleaved pair, round by round (side b: 10% faster in every round).
AB_ROUNDS = (100.0, 80.0, 120.0, 95.0, 105.0, 90.0, 110.0, 100.0)
#: A figure with its interval: (median, low, high), in the result's own unit.
Figure = tuple[float | None, float | None, float | None]


class Database(NamedTuple):
    path: Path
    ids: dict[str, str]  # what each result is (the module docstring) -> its result id
    stored: dict[str, tuple[Result, bool]]  # every stored result by id, with `complete`


def _processes(result_id: str, medians: Sequence[float], hour: int, busy: Sequence[int] = (),
               **spec: Any) -> list[Record]:
    """One result's processes (rounds 0, 1, ...); those in `busy` measured while other
    processes used half of their CPUs."""
    return [make_record(throughput=median, **spec).replace(
        env=dict(ENV), env_id="e1", duration_s=60.0,
        started_at=f"2026-12-01T{hour:02d}:{index:02d}:00+00:00",
        interference=Interference(5.0, (0, 1), 0.95, 0.45 if index in busy else 0.95,
                                  0.5 if index in busy else 0.0, 0.0),
        process=ProcessInfo(result_id=result_id, index=index, round=index))
        for index, median in enumerate(medians)]


def _store(db: Path, processes: list[Record], complete: bool = True) -> str:
    """`processes` of one result stored, then its combined figure, as a sweep stores them."""
    result_id = processes[0].process.result_id
    with ResultStore(db) as store:
        store.save_many(processes, sweep_id=result_id)
        result = combine.combine(processes, result_id, POLICY, "e1", MACHINE)
        store.save_result(result, POLICY, complete=complete, sweep_id=result_id)
    return result_id


def _offline(samples_per_s: float, result_id: str = "") -> list[Record]:
    """The three processes of an offline LoadGen result (`scenario_result`'s, or of
    `result_id`)."""
    processes = scenario_result("openvino", Scenario.OFFLINE, samples_per_s, batch=8)
    return [record.replace(env=dict(ENV), env_id="e1", process=ProcessInfo(
        result_id or record.process.result_id, record.process.index, record.process.round))
        for record in processes]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Database:
    db = tmp_path_factory.mktemp("one-reading") / "issue36.db"
    ids = {
        "complete": store_result(db, "tf_graph", [100.0, 101.0, 99.0], hour=1),
        # `sweep --repeats 2` killed after the next result's first process
        "killed": store_result(db, "tf_graph", [60.0], hour=2, complete=False),
        "repeat 0": _store(db, _processes("rep0", [200.0, 202.0, 198.0], 3, backend="jax")),
        "repeat 1": _store(db, _processes("rep1", [210.0, 208.0, 212.0], 4, backend="jax",
                                          repeat=1)),
        "flagged": _store(db, _processes("busy", [150.0, 40.0, 152.0, 149.0], 5, busy=[1],
                                         backend="torch", mode="eager")),
        "before": store_result(db, "tf_eager", [100.0, 101.0, 99.0], label="before", hour=6),
        "after": store_result(db, "tf_eager", [120.0, 121.0, 119.0], label="after", hour=7),
        # xlabench ab's sides: one sweep, their processes in the same minutes
        "a": store_result(db, "torch_compiled", AB_ROUNDS, label="a", sweep_id="ab", hour=9),
        "b": store_result(db, "torch_compiled", [1.1 * (1 + 0.002 * (-1) ** i) * sps
                                                 for i, sps in enumerate(AB_ROUNDS)],
                          label="b", sweep_id="ab", hour=9),
        "scenario": _store(db, _offline(125.0)),
        # the next offline result, killed after its first process
        "scenario killed": _store(db, [_offline(90.0, "offline-killed")[0]], complete=False),
    }
    with ResultStore(db) as store:
        stored = store.stored_results()
    return Database(db, ids, stored)


def _truth(database: Database) -> dict[str, Figure]:
    """Each result's stored figure and interval, in its unit (a scenario's: its figure)."""
    figures = {}
    for result_id, (result, _) in database.stored.items():
        figure = (result.median_sps, result.ci_low_sps, result.ci_high_sps)
        if result_id in _scenarios(database):
            figure = figure_interval(Scenario.OFFLINE.value, *figure)
        figures[result_id] = figure
    return figures


def _scenarios(database: Database) -> set[str]:
    return {database.ids["scenario"], database.ids["scenario killed"]}


def _figure(row: Mapping[str, Any], in_unit: Any = False) -> Figure:
    """A reader's row's figure and interval, as numbers: its throughput's, or (`in_unit`: a
    scenario's row, or a `compare` side) its figure's in the result's unit."""
    keys = (("figure", "figure_ci_low", "figure_ci_high") if in_unit else
            ("throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high"))
    return tuple(None if row[k] in (None, "") else float(row[k]) for k in keys)  # type: ignore


def _agree(shown: Mapping[str, Figure], truth: Mapping[str, Figure], reader: str) -> None:
    for result_id, figure in shown.items():
        assert figure == pytest.approx(truth[result_id], rel=1e-12), (reader, result_id)


def test_the_database_holds_what_the_issue_describes(database: Database) -> None:
    ids, stored = database.ids, database.stored
    assert set(stored) == set(ids.values())
    incomplete = {ids["killed"], ids["scenario killed"]}
    assert {result_id for result_id, (_, complete) in stored.items() if not complete} == \
        incomplete
    assert stored[ids["flagged"]][0].k_flagged == 1 and stored[ids["flagged"]][0].k == 3
    assert stored[ids["scenario"]][0].status == "ok"


def test_results_and_export_show_every_result_as_stored(
        database: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth, ids = _truth(database), database.ids
    with ResultStore(database.path) as store:
        table = {row["result_id"]: row for row in result_rows(store)}
    assert main(["results", "--db", str(database.path)]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "results.csv"
    assert main(["export", "--db", str(database.path), "--format", "results-csv",
                 "--out", str(out)]) == 0
    exported = {row["result_id"]: row for row in csv.DictReader(io.StringIO(out.read_text()))}
    assert set(table) == set(exported) == set(truth)  # the killed result is listed
    for result_id, row in table.items():
        scenario = row["scenario"]
        shown = row["figure_shown"] if scenario else row["throughput_shown"]
        assert shown in printed, result_id
        assert int(exported[result_id]["processes"]) == row["processes"] == \
            database.stored[result_id][0].k
    _agree({r: _figure(row, row["scenario"]) for r, row in table.items()}, truth, "results")
    _agree({r: _figure(row, row["scenario"]) for r, row in exported.items()}, truth, "export")
    assert (table[ids["complete"]]["processes_shown"], table[ids["killed"]]["processes_shown"]
            ) == ("3", "1, incomplete")


def test_the_trackers_log_every_result_as_stored(database: Database) -> None:
    truth, logged = _truth(database), {}
    with ResultStore(database.path) as store:
        for result_id in truth:
            if result_id in _scenarios(database):
                continue  # its figure is in its own unit: no throughput to log
            (row,) = store.result_rows(result_id=result_id)  # what a sweep hands them
            metrics = run_metrics(row)
            logged[result_id] = (metrics["throughput_sps"], metrics["throughput_ci_low_sps"],
                                 metrics["throughput_ci_high_sps"])
    assert len(logged) == len(truth) - 2
    _agree(logged, truth, "trackers")


def test_the_report_shows_every_result_as_stored(database: Database) -> None:
    truth, ids = _truth(database), database.ids
    frame = load_results(database.path)
    rows = every_result(frame)
    _agree({r: _figure(row) for r, row in rows.set_index("result_id").iterrows()}, truth,
           "report")
    assert set(rows["result_id"]) == set(truth) - _scenarios(database)  # timed-loop results
    (offline,) = scenarios.scenario_results(frame).to_dict("records")
    assert (offline["figure_value"], offline["figure_ci_low"], offline["figure_ci_high"]) == \
        pytest.approx(truth[ids["scenario"]], rel=1e-12)
    (busy,) = rows[rows["result_id"] == ids["flagged"]].to_dict("records")
    assert min(busy["sample_sps"]) > 100.0  # the flagged process's samples are not its own


def test_the_reports_row_of_a_result_is_the_stores(database: Database) -> None:
    """Key for key: the report reads the store's one row of each result, it builds none."""
    keys = ("id", "status", "processes", "processes_total", "processes_flagged",
            "processes_used", "complete", "ci_confidence", "ci_method", "flagged",
            "run_ci_low", "run_ci_high", "drift_rel_sd", "between_processes", "process_sps",
            "process_rounds", "n_samples", "latency_ms_p50", "compile_s", "runner")
    report = every_result(load_results(database.path)).set_index("result_id")
    with ResultStore(database.path) as store:
        stored = {row["result_id"]: row for row in store.result_rows(status="ok")}
    for result_id, row in report.iterrows():
        for key in keys:
            assert _same(row[key], stored[result_id][key]), (result_id, key)
        assert row["flag_reason"] == stored[result_id]["interference"]
        assert row["figure"] == stored[result_id]["result"] == database.stored[result_id][0]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        return list(a) == list(b)
    if a is None or b is None:
        return (a is None or (isinstance(a, float) and math.isnan(a))) and \
            (b is None or (isinstance(b, float) and math.isnan(b)))
    return bool(a == b)


def test_compare_reads_the_labels_and_the_interleaved_pair_as_stored(
        database: Database) -> None:
    db, ids, stored = database.path, database.ids, database.stored
    (labels,) = cmp.compare(cmp.Side(db, label="before"), cmp.Side(db, label="after")).pairs
    assert (labels.baseline, labels.new) == (stored[ids["before"]][0], stored[ids["after"]][0])
    (pair,) = cmp.compare(cmp.Side(db, label="a"), cmp.Side(db, label="b")).pairs
    assert (pair.baseline, pair.new) == (stored[ids["a"]][0], stored[ids["b"]][0])
    assert pair.ratio is not None and pair.ratio.n_pairs == len(AB_ROUNDS)  # round by round
    # the verdict is the one the stored results give, paired by round as they ran
    assert pair.verdict == cmp.judge(pair.ratio, stored[ids["b"]][0], stored[ids["a"]][0],
                                     cmp.DEFAULT_THRESHOLD)[0] == "faster"


def test_every_reader_takes_the_same_latest_result(database: Database, tmp_path: Path) -> None:
    """A configuration's latest result is its latest complete one, for the report and for
    `compare` (the database against a copy of itself); the killed one never is."""
    db, ids, truth = database.path, database.ids, _truth(database)
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    report = latest_per_config(load_results(db))
    compared = cmp.compare(cmp.Side(db), cmp.Side(copy)).pairs
    compare_ids = {pair.baseline.result_id for pair in compared}
    assert all(pair.baseline == pair.new for pair in compared)
    expected = {ids[name] for name in ("complete", "repeat 0", "repeat 1", "flagged", "after",
                                       "b", "scenario")}
    assert compare_ids == expected  # by spec id: each repeat is a configuration of its own
    # by configuration (repeats of one are re-runs): the latest repeat
    assert set(report["result_id"]) == expected - {ids["repeat 0"], ids["scenario"]}
    (offline,) = scenarios.scenario_results(load_results(db)).to_dict("records")
    assert offline["result"].result_id == ids["scenario"]
    _agree({pair.baseline.result_id: _figure(pair.to_dict()["baseline"], in_unit=True)
            for pair in compared}, truth, "compare")
    _agree({r: _figure(row) for r, row in report.set_index("result_id").iterrows()}, truth,
           "report's latest")
