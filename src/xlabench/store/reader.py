"""An existing xlabench database read without changing it: `StoreReader`.

Opened by `store.db.open_read_only` (nothing on disk changes; the schema is checked there). A
database of any schema this xlabench knows is read as it is, a column an older schema lacks
reading as NULL, or as a copy migrated in memory (`StoreReader.migrated_copy`). `compare` and
`merge` read through it; the SQL stays here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlabench.core import UserError
from xlabench.core.result import Result
from xlabench.store.db import migrate, open_read_only, select_rows


@dataclass(frozen=True)
class StoredResult:
    """A combined result as stored, with what the table keeps beside its JSON."""

    result_id: str
    spec_id: str
    sweep_id: str | None
    complete: bool
    result: Result


@dataclass(frozen=True)
class ProcessRow:
    """What a reader of a result needs of one of its processes (the spec from the record's
    JSON, which a database of any schema has)."""

    row_id: int
    result_id: str | None
    env_id: str
    model: str
    backend: str
    mode: str
    resolution: int
    batch_size: int
    precision: str
    runner: str | None
    scenario: str | None
    latency_bound_ms: float | None
    created_at: str
    duration_s: float | None


class StoreReader:
    """An existing xlabench database, opened read-only (see the module docstring)."""

    def __init__(self, path: Path, connection: sqlite3.Connection | None = None) -> None:
        self.path = Path(path)
        self._conn = connection or _open_read_only(self.path)

    def migrated_copy(self) -> StoreReader:
        """This database as the current schema has it: a copy in memory (one snapshot, even
        while a sweep writes to the file), migrated as `ResultStore` would migrate the file
        (`store.db.migrate`), the file itself left as it is."""
        copy = sqlite3.connect(":memory:", isolation_level=None)
        try:
            self._conn.backup(copy)
            migrate(copy)
        except BaseException:
            copy.close()
            raise
        return StoreReader(self.path, copy)

    @contextmanager
    def snapshot(self) -> Iterator[StoreReader]:
        """Reads that see one state of the file, even while a sweep writes to it."""
        self._conn.execute("BEGIN")
        try:
            yield self
        finally:
            self._conn.execute("ROLLBACK")

    def meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def quick_check(self) -> str:
        """SQLite's quick check of the file: "ok", or the damage it found."""
        (found,) = self._conn.execute("PRAGMA quick_check(1)").fetchone()
        return str(found)

    def columns(self, table: str) -> set[str]:
        """The columns of `table` ({} if the database has no such table)."""
        return {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}

    def table_rows(self, table: str, names: Sequence[str], order: str = "rowid"
                   ) -> list[dict[str, Any]]:
        """Every row of a table (`store.db.select_rows`)."""
        return select_rows(self._conn, table, names, order)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def reading(self) -> Iterator[StoreReader]:
        """Read in one go: an SQLite error while reading is one `UserError` line."""
        try:
            yield self
        except sqlite3.Error as exc:
            raise UserError(f"{self.path} is not a readable xlabench database ({exc})") from exc

    def labels(self) -> set[str]:
        """Every run label of processes or results ({} in a database from before labels)."""
        labels: set[str] = set()
        for table in ("combined_results", "results"):
            if "label" in self.columns(table):
                labels |= {r[0] for r in self._conn.execute(
                    f"SELECT DISTINCT label FROM {table} WHERE label IS NOT NULL")}
        return labels

    def env_ids(self) -> set[str]:
        """Every environment id of processes or results."""
        envs = {r[0] for r in self._conn.execute("SELECT DISTINCT env_id FROM results")}
        if self.columns("combined_results"):
            envs |= {r[0] for r in self._conn.execute(
                "SELECT DISTINCT env_id FROM combined_results")}
        return envs

    def result_ids(self) -> set[str]:
        """The ids of every stored combined result."""
        if not self.columns("combined_results"):
            return set()
        return {r[0] for r in self._conn.execute("SELECT result_id FROM combined_results")}

    def stored_results(self, **filters: str) -> list[StoredResult]:
        """The combined results matching `filters` (columns: label, env_id), in the order
        they were last updated."""
        if not self.columns("combined_results"):
            return []
        where, params = _where(filters)
        sql = ("SELECT result_id, spec_id, sweep_id, complete, result_json FROM combined_results "
               f"WHERE 1 = 1{where} ORDER BY updated_at, rowid")
        return [StoredResult(result_id, spec_id, sweep_id, bool(complete), Result.from_json(text))
                for result_id, spec_id, sweep_id, complete, text in
                self._conn.execute(sql, params)]

    def process_rows(self, **filters: str) -> list[ProcessRow]:
        """The processes matching `filters` (columns: label, env_id), oldest first."""
        where, params = _where(filters)
        result_id = "result_id" if "result_id" in self.columns("results") else "NULL"  # v1
        sql = (f"SELECT id, {result_id}, env_id, model, backend, mode, resolution, batch_size, "
               "precision, json_extract(record_json, '$.spec.runner'), "
               "json_extract(record_json, '$.spec.scenario'), "
               "json_extract(record_json, '$.spec.scenario_settings.latency_bound_ms'), "
               "created_at, json_extract(record_json, '$.duration_s') FROM results "
               f"WHERE 1 = 1{where} ORDER BY id")
        return [ProcessRow(*row) for row in self._conn.execute(sql, params)]

    def environments(self, env_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored environment of each id (its first process's)."""
        sql = ("SELECT env_id, json_extract(record_json, '$.env') FROM results "
               "WHERE id IN (SELECT MIN(id) FROM results GROUP BY env_id)")
        wanted = set(env_ids)
        envs: dict[str, dict[str, Any]] = {}
        for env_id, text in self._conn.execute(sql):
            if env_id in wanted:
                try:
                    env = json.loads(text or "{}")
                except ValueError:
                    env = {}
                envs[env_id] = env if isinstance(env, dict) else {}
        return envs


def _where(filters: Mapping[str, str]) -> tuple[str, list[str]]:
    unknown = set(filters) - {"label", "env_id"}
    if unknown:
        raise ValueError(f"unknown filter columns {sorted(unknown)}")
    return "".join(f" AND {column} = ?" for column in filters), list(filters.values())


def _open_read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise UserError(f"no database at {path}")
    return open_read_only(path)
