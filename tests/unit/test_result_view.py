"""One reading of every result: a complete result, then a later result of the same
configuration that a killed sweep left incomplete. `results` lists both (the killed one
marked), and the report's latest row, `compare` and `results`' figure all take the complete one.
Which processes make a figure is combine's decision, stored with it and read as stored.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import pytest

from tests.unit.test_combine import _process
from tests.unit.test_compare import store_result
from xlabench.analysis import compare as cmp
from xlabench.analysis import load_results
from xlabench.analysis.result_rows import every_result, latest_per_config
from xlabench.cli.tables import result_rows
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine
from xlabench.store import ResultStore
from xlabench.store.export import results_csv


@pytest.fixture
def killed_after_a_complete_result(tmp_path: Path) -> tuple[Path, str, str]:
    """(database, the complete result's id, the killed one's id)."""
    db = tmp_path / "killed.db"
    complete = store_result(db, "tf_graph", [100.0, 101.0, 99.0], hour=1)
    # `sweep --repeats 2` killed after the next result's first process
    killed = store_result(db, "tf_graph", [60.0], hour=2, complete=False)
    return db, complete, killed


def test_results_lists_the_killed_result_marked_incomplete(
        killed_after_a_complete_result: tuple[Path, str, str]) -> None:
    db, complete, killed = killed_after_a_complete_result
    with ResultStore(db) as store:
        rows = {row["result_id"]: row for row in result_rows(store)}
        exported = {row["result_id"]: row
                    for row in csv.DictReader(io.StringIO(results_csv(store.result_rows())))}
    assert set(rows) == {complete, killed}
    assert rows[complete]["complete"] and not rows[killed]["complete"]
    assert (rows[complete]["processes_shown"], rows[killed]["processes_shown"]) == (
        "3", "1, incomplete")
    assert (exported[complete]["complete"], exported[killed]["complete"]) == ("True", "False")


def test_the_report_compare_and_results_agree_on_the_complete_result(
        killed_after_a_complete_result: tuple[Path, str, str]) -> None:
    db, complete, _ = killed_after_a_complete_result
    with ResultStore(db) as store:
        figure = {row["result_id"]: row["throughput_sps"] for row in store.result_rows()}
    (latest,) = latest_per_config(load_results(db)).to_dict("records")
    (chosen,) = cmp.read_side(cmp.Side(db)).results.values()
    assert latest["result_id"] == chosen.result.result_id == complete
    assert latest["processes"] == chosen.result.k == 3
    assert latest["throughput_sps"] == chosen.result.median_sps == figure[complete]


def test_which_processes_make_a_figure_is_combines_decision_as_stored(tmp_path: Path) -> None:
    processes = [_process(100.0, 0), _process(30.0, 1, other_frac=0.5), _process(104.0, 2)]
    policy = ResultPolicy(min_processes=2)
    result = combine.combine(processes, "r1", policy)
    assert result.process_indices == (0, 2)  # combine decides: the flagged one is left out
    # readers take the decision as stored: a figure stored as of processes 0 and 1 (which no
    # reader's own rule would choose) is read as of those two
    stored = dataclasses.replace(result, process_indices=(0, 1))
    db = tmp_path / "used.db"
    with ResultStore(db) as store:
        store.save_many(processes)
        store.save_result(stored, policy, complete=True)
        (row,) = store.result_rows()
    assert row["processes_used"] == (0, 1)
    (frame_row,) = every_result(load_results(db)).to_dict("records")
    assert min(frame_row["sample_sps"]) < 35.0 < 95.0 < max(frame_row["sample_sps"])
