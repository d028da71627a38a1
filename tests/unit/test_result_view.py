"""One reading of every result: a complete result, then a later result of the same
configuration that a killed sweep left incomplete. `results` lists both (the killed one
marked), and the report's latest row, `compare` and `results`' figure all take the complete one.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.unit.test_compare import store_result
from xlabench.analysis import compare as cmp
from xlabench.analysis import load_results
from xlabench.analysis.result_rows import latest_per_config
from xlabench.cli.tables import result_rows
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
