"""The SQLite store: schema, WAL, round trips, refusing foreign files, exports."""

from __future__ import annotations

import csv
import io
import json
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


def _v1_database(path: Path, record_factory) -> dict:
    """A database as xlabench wrote it before results had processes (schema 1): the v1
    tables by hand, and a record JSON without the fields v2 added."""
    from xlabench.store.db import record_to_row
    from xlabench.store.schema import V1_RESULT_COLUMNS

    v1_columns = V1_RESULT_COLUMNS
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                 + ", ".join(f"{n} {k}" for n, k in v1_columns) + ")")
    conn.execute("CREATE TABLE model_costs (model TEXT NOT NULL, resolution INTEGER NOT NULL, "
                 "params INTEGER, macs_per_image REAL, flops_per_image REAL, method TEXT NOT "
                 "NULL, created_at TEXT NOT NULL, PRIMARY KEY (model, resolution))")
    conn.executemany("INSERT INTO meta VALUES (?, ?)",
                     [("application", "xlabench"), ("schema_version", "1")])
    record = record_factory()
    old = json.loads(record.to_json())
    del old["interference"], old["process"]
    row = {**record_to_row(record, "old-sweep"), "record_json": json.dumps(old)}
    names = [n for n, _ in v1_columns]
    conn.execute(f"INSERT INTO results ({', '.join(names)}) VALUES "
                 f"({', '.join('?' for _ in names)})", [row[n] for n in names])
    conn.commit()
    conn.close()
    return row


def test_a_schema_1_database_loads_as_results_of_one_process(
    tmp_path: Path, record_factory
) -> None:
    from xlabench.analysis import load_results, top_models
    from xlabench.analysis.speedup import Comparison

    path = tmp_path / "v1.db"
    old = _v1_database(path, record_factory)
    with ResultStore(path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 5
        assert store.get_peaks("e1") == {}  # v3 table made by the migration
        assert len(store.db_id()) == 16  # v4: the database has an id
        (device,) = store.rows()
        assert device["device"] == "a100"  # v4: named from the stored environment
        (record,) = store.records()
        assert record.interference is None and record.process.result_id == ""
        (row,) = store.result_rows()
        assert row["processes"] == 1 and row["complete"]
        assert row["throughput_sps"] == old["throughput_sps"]
        assert row["ci_method"].startswith("one process")
        assert store.completed_spec_ids(["e1"]) == {old["spec_id"]}  # kept, not re-run
        store.save(record_factory(throughput=50.0))  # v2 rows go beside the old one
    frame = load_results(path)
    (top,) = top_models(frame, Comparison()).to_dict("records")
    assert top["processes"] == 1 and not top["between_processes"]


def test_results_csv_has_one_row_per_result(tmp_path: Path, record_factory) -> None:
    from xlabench.core.record import ProcessInfo
    from xlabench.core.result import ResultPolicy
    from xlabench.measure import combine
    from xlabench.store.export import results_csv

    processes = [record_factory(throughput=t).replace(
        process=ProcessInfo(result_id="r1", index=i, round=i))
        for i, t in enumerate((100.0, 104.0, 98.0))]
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(processes)
        store.save_result(combine.combine(processes, "r1", ResultPolicy()), ResultPolicy(), True)
        rows = list(csv.DictReader(io.StringIO(results_csv(store.result_rows()))))
        study = list(csv.DictReader(io.StringIO(study_csv(store.result_rows()))))
    assert len(rows) == 1 and rows[0]["processes"] == "3"
    assert rows[0]["processes_total"] == "3" and rows[0]["complete"] == "True"
    assert rows[0]["ci_confidence"] == "0.95"
    assert float(rows[0]["throughput_sps"]) == pytest.approx((100 * 104 * 98) ** (1 / 3))
    assert len(study) == 1  # the study's CSV: one row per result, not per process


def test_peaks_are_stored_per_environment_and_dtype(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with ResultStore(path) as store:
        store.put_peaks("envA", [{"dtype": "fp32", "gflops_s": 100.0, "size": 1024},
                                 {"dtype": "bf16", "gflops_s": 900.0, "size": 2048}])
        store.put_peaks("envB", [{"dtype": "fp32", "gflops_s": 50.0}])
        store.put_peaks("envA", [{"dtype": "fp32", "gflops_s": 110.0, "size": 2048}])
    with ResultStore(path) as store:  # survives reopening
        peaks = store.get_peaks("envA")
        assert peaks["fp32"] == {"dtype": "fp32", "gflops_s": 110.0, "size": 2048}  # replaced
        assert peaks["bf16"]["gflops_s"] == 900.0
        assert store.get_peaks("envC") == {}
        assert set(store.all_peaks()) == {"envA", "envB"}
