"""The SQLite store: schema, WAL, round trips, refusing foreign files, exports."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest

from xlabench.core import Status, UserError
from xlabench.store import SCHEMA_VERSION, ResultStore
from xlabench.store.export import STUDY_COLUMNS, full_csv, study_csv


def test_new_db_has_schema_version_and_wal(tmp_path: Path, record_factory) -> None:
    path = tmp_path / "r.db"
    with ResultStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        store.save(record_factory())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_records_round_trip_through_the_db(tmp_path: Path, record_factory) -> None:
    record = record_factory()
    with ResultStore(tmp_path / "r.db") as store:
        row_id = store.save(record, sweep_id="s1")
        assert store.records(id=row_id) == [record]
        row = store.rows()[0]
    assert row["spec_id"] == record.spec_id and row["sweep_id"] == "s1"
    assert row["throughput_sps"] == 100.0 and row["compiled"] == 1 and row["accelerator"] == "a100"


def test_failed_records_are_stored_with_their_reason(tmp_path: Path, record_factory) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record_factory(status=Status.TIMEOUT))
        (row,) = store.rows()
    assert row["status"] == "timeout" and row["throughput_sps"] is None
    assert "on purpose" in row["error"]


def test_completed_spec_ids_only_count_successes_in_that_env(
    tmp_path: Path, record_factory
) -> None:
    ok, bad = record_factory(), record_factory(status=Status.CRASHED, batch_size=8)
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many([ok, bad])
        assert store.completed_spec_ids(["e1"]) == {ok.spec_id}
        assert store.completed_spec_ids(["other"]) == set()


def test_save_many_is_all_or_nothing(tmp_path: Path, record_factory) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        with pytest.raises(AttributeError):
            store.save_many([record_factory(), "not a record"])  # type: ignore[list-item]
        assert store.count() == 0


@pytest.mark.parametrize(
    "content", [b"hello, not a database", b"SQLite format 3\x00" + b"\0" * 200]
)
def test_foreign_files_are_refused_and_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "foreign.db"
    path.write_bytes(content)
    with pytest.raises(UserError, match="not an xlabench database"):
        ResultStore(path)
    assert path.read_bytes() == content
    assert not (tmp_path / "foreign.db-wal").exists()


def test_other_sqlite_databases_are_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(UserError, match="not an xlabench database"):
        ResultStore(path)
    assert path.read_bytes() == before


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    ResultStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer xlabench"):
        ResultStore(path)


def test_costs_cache(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        assert store.get_costs("m", 224) is None
        store.put_costs("m", 224, {"params": 3, "macs_per_image": 2.0, "method": "x"})
        assert store.get_costs("m", 224)["macs_per_image"] == 2.0


def test_study_csv_has_exactly_the_study_columns(tmp_path: Path, record_factory) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(
            [
                record_factory(),
                record_factory(mode="eager", throughput=50.0),
                record_factory(status=Status.FAILED, batch_size=2),
            ]
        )
        text = study_csv(store.rows())
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == STUDY_COLUMNS
    assert len(rows) == 2  # failures are not throughput numbers
    assert rows[0]["xla"] == "True" and rows[1]["xla"] == "False"
    assert rows[0]["flop (giga)"] == "4.1" and rows[0]["params (million)"] == "25.64"


def test_full_csv_has_every_field_and_raw_samples(tmp_path: Path, record_factory) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record_factory())
        text = full_csv(store.rows_with_records())
    (row,) = list(csv.DictReader(io.StringIO(text)))
    for column in (
        "throughput_sps_ci_low",
        "latency_ms_p99",
        "compile_s",
        "sample_s",
        "env_json",
        "parity_max_rel_diff",
        "spec_json",
        "peak_host_mem_mb",
        "macs_per_image",
    ):
        assert column in row
    assert len(eval(row["sample_s"])) == 5
