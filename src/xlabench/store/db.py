"""The results database: SQLite in WAL mode, the only writer of the db file."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from xlabench.core import Record, UserError, utc_now
from xlabench.store.schema import (
    APPLICATION,
    CREATE_STATEMENTS,
    MIGRATIONS,
    RESULT_COLUMNS,
    SCHEMA_VERSION,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_DB = "xlabench.db"
COLUMN_NAMES = tuple(name for name, _ in RESULT_COLUMNS)


def check_db_file(path: Path) -> bool:
    """Refuse anything that is not an xlabench database, before touching it.

    Returns:
        True if the file exists and must be opened as it is, False if it must be created.
    """
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a database file")
    if not path.exists() or path.stat().st_size == 0:
        return False
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    if header != SQLITE_MAGIC:
        raise UserError(f"{path} is not an xlabench database (not an SQLite file); left untouched")
    version = _read_version(path)
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{path} was written by a newer xlabench (schema {version} > {SCHEMA_VERSION})"
        )
    return True


def _read_version(path: Path) -> int:
    """Schema version from the meta table, reading the file read-only."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path} is not an xlabench database ({exc}); left untouched") from exc
    if rows.get("application") != APPLICATION or "schema_version" not in rows:
        raise UserError(f"{path} is an SQLite file but not an xlabench database; left untouched")
    return int(rows["schema_version"])


class ResultStore:
    """Results and model costs in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB) -> None:
        self.path = Path(path)
        exists = check_db_file(self.path)
        if not exists and not self.path.parent.exists():
            raise UserError(f"cannot create {self.path}: folder {self.path.parent} does not exist")
        try:
            self._conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            self._conn.execute("PRAGMA busy_timeout=60000")
        except sqlite3.Error as exc:
            raise UserError(f"cannot open {self.path}: {exc}") from exc
        self._conn.row_factory = sqlite3.Row
        if exists:
            self._migrate()
        else:
            self._create()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _create(self) -> None:
        with self._transaction() as conn:
            for statement in CREATE_STATEMENTS:
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION)),
                 ("created_at", utc_now())],
            )

    def _migrate(self) -> None:
        version = self.schema_version()
        while version < SCHEMA_VERSION:
            with self._transaction() as conn:
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                version += 1
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                             (str(version),))

    def schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    # ----------------------------------------------------------------- results
    def save(self, record: Record, sweep_id: str | None = None) -> int:
        """Store one record; returns its row id."""
        return self.save_many([record], sweep_id)[0]

    def save_many(self, records: Iterable[Record], sweep_id: str | None = None) -> list[int]:
        """Store records in one transaction: all of them or none."""
        placeholders = ", ".join("?" for _ in COLUMN_NAMES)
        sql = f"INSERT INTO results ({', '.join(COLUMN_NAMES)}) VALUES ({placeholders})"
        ids = []
        with self._transaction() as conn:
            for record in records:
                row = record_to_row(record, sweep_id)
                ids.append(conn.execute(sql, [row[c] for c in COLUMN_NAMES]).lastrowid)
        return ids

    def records(self, **filters: Any) -> list[Record]:
        return [Record.from_json(r["record_json"]) for r in self._select(filters)]

    def rows(self, **filters: Any) -> list[dict[str, Any]]:
        """Flat result rows (no record JSON), oldest first."""
        return [
            {k: r[k] for k in r.keys() if k != "record_json"}  # noqa: SIM118 (sqlite3.Row)
            for r in self._select(filters)
        ]

    def rows_with_records(self, **filters: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in self._select(filters)]

    def _select(self, filters: dict[str, Any]) -> list[sqlite3.Row]:
        unknown = set(filters) - set(COLUMN_NAMES) - {"id"}
        if unknown:
            raise ValueError(f"unknown filter columns {sorted(unknown)}")
        where = " AND ".join(f"{k} = ?" for k in filters)
        sql = "SELECT * FROM results" + (f" WHERE {where}" if where else "") + " ORDER BY id"
        return self._conn.execute(sql, list(filters.values())).fetchall()

    def completed_spec_ids(self, env_ids: Iterable[str]) -> set[str]:
        """Spec ids with a successful local result in any of the given environments."""
        env_list = list(env_ids)
        if not env_list:
            return set()
        marks = ", ".join("?" for _ in env_list)
        sql = (f"SELECT DISTINCT spec_id FROM results WHERE status = 'ok' AND source = 'local' "
               f"AND env_id IN ({marks})")
        return {row[0] for row in self._conn.execute(sql, env_list)}

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    # -------------------------------------------------------------------- costs
    def get_costs(self, model: str, resolution: int) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT params, macs_per_image, flops_per_image, method FROM model_costs "
            "WHERE model = ? AND resolution = ?", (model, resolution)
        ).fetchone()
        return dict(row) if row else None

    def put_costs(self, model: str, resolution: int, costs: dict[str, Any]) -> None:
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO model_costs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (model, resolution, costs.get("params"), costs.get("macs_per_image"),
                 costs.get("flops_per_image"), costs.get("method", ""), utc_now()),
            )


def record_to_row(record: Record, sweep_id: str | None) -> dict[str, Any]:
    """The flat columns of a record; the whole record goes in `record_json`."""
    spec, tp, lat = record.spec, record.throughput, record.latency
    par, warm, costs, mem = record.parity, record.warmup, record.costs, record.memory
    return {
        "spec_id": record.spec_id, "env_id": record.env_id or "unknown", "source": record.source,
        "created_at": record.started_at or utc_now(), "model": spec.model,
        "family": record.family, "kind": record.kind, "backend": spec.backend,
        "mode": spec.mode, "compiled": int(spec.compiled), "resolution": spec.resolution,
        "batch_size": spec.batch_size, "precision": spec.precision, "weights": spec.weights,
        "tf32": int(spec.tf32), "repeat": spec.repeat,
        "accelerator": record.env.get("accelerator", "unknown"),
        "status": record.status.value, "error": record.error,
        "throughput_sps": tp and tp.median_sps,
        "throughput_sps_ci_low": tp and tp.ci_low_sps,
        "throughput_sps_ci_high": tp and tp.ci_high_sps,
        "rel_ci_halfwidth": tp and tp.rel_ci_halfwidth,
        "precision_target_met": None if tp is None else int(tp.target_met),
        "n_samples": None if tp is None else len(tp.sample_s),
        "batch_time_ms": tp and tp.batch_time_ms_median,
        "latency_ms_p50": lat and lat.p50_ms, "latency_ms_p90": lat and lat.p90_ms,
        "latency_ms_p99": lat and lat.p99_ms,
        "first_call_s": warm and warm.first_call_s, "compile_s": warm and warm.compile_s,
        "peak_host_mem_mb": mem.peak_host_mb, "peak_device_mem_mb": mem.peak_device_mb,
        "params": costs.params, "macs_per_image": costs.macs_per_image,
        "flops_per_image": costs.flops_per_image,
        "parity_passed": None if par is None else int(par.passed),
        "parity_max_abs_diff": par and par.max_abs_diff,
        "parity_max_rel_diff": par and par.max_rel_diff,
        "synced": int(bool(record.sync)), "sweep_id": sweep_id,
        "record_json": record.to_json(),
    }
