"""The results database: SQLite in WAL mode, the only writer of the db file."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from xlabench.core import Record, UserError, utc_now
from xlabench.core.device import device_name
from xlabench.core.result import (
    Result,
    ResultPolicy,
    interference_reason,
    machine_id,
    software_id,
)
from xlabench.store.schema import (
    APPLICATION,
    COMBINED_COLUMNS,
    CREATE_STATEMENTS,
    MIGRATIONS,
    RESULT_COLUMNS,
    SCHEMA_VERSION,
)
from xlabench.store.view import process_row, result_view

SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_DB = "xlabench.db"
COLUMN_NAMES = tuple(name for name, _ in RESULT_COLUMNS)
COMBINED_NAMES = tuple(name for name, _ in COMBINED_COLUMNS)


def check_db_file(path: Path) -> bool:
    """Refuse anything that is not an xlabench database, before touching it.

    Returns:
        True if the file exists and must be opened as it is, False if it must be created.
    """
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a database file")
    if not path.exists() or path.stat().st_size == 0:
        return False
    open_read_only(path).close()
    return True


def require_sqlite_header(path: Path) -> None:
    """Refuse (one line) a folder, an unreadable file or one that is not SQLite."""
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a database file")
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc
    if header != SQLITE_MAGIC:
        raise UserError(f"{path} is not an xlabench database (not an SQLite file); left untouched")


def open_read_only(path: Path) -> sqlite3.Connection:
    """An existing xlabench database of a schema this xlabench reads, opened so that nothing
    on disk changes: not created, not migrated, no journal or shared-memory file left behind
    (a database whose write-ahead log exists, a writer's or a crashed one's, is read through
    it). The one place a database is opened and its schema checked; anything else is refused
    in one line, untouched."""
    require_sqlite_header(path)
    wal = path.with_name(path.name + "-wal")
    uri = path.resolve().as_uri() + ("?mode=ro" if wal.exists() else "?mode=ro&immutable=1")
    conn = None
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=30.0)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        meta = (dict(conn.execute("SELECT key, value FROM meta").fetchall())
                if "meta" in tables else {})
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise UserError(f"{path} is not an xlabench database ({exc}); left untouched") from exc
    if meta.get("application") != APPLICATION or "schema_version" not in meta:
        conn.close()
        raise UserError(f"{path} is an SQLite file but not an xlabench database; left untouched")
    if int(meta["schema_version"]) > SCHEMA_VERSION:
        conn.close()
        raise UserError(f"{path} was written by a newer xlabench (schema "
                        f"{meta['schema_version']} > {SCHEMA_VERSION})")
    return conn


class ResultStore:
    """Results, model costs and measured device peaks in one SQLite file."""

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
        self._depth = 0  # of nested `transaction`s: the outermost one commits
        if exists:
            migrate(self._conn)
        else:
            self._create()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[ResultStore]:
        """Writes in one transaction: all of them or none, and nobody writes in between (the
        store's own writes inside it join it)."""
        with self._transaction():
            yield self

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self._depth:  # inside an outer transaction: it commits or rolls back
            yield self._conn
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        finally:
            self._depth -= 1
        self._conn.execute("COMMIT")

    def _create(self) -> None:
        with self._transaction() as conn:
            for statement in CREATE_STATEMENTS:
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION)),
                 ("created_at", utc_now()), ("db_id", _new_db_id())],
            )

    def db_id(self) -> str:
        """This database's id (meta `db_id`): what rows merged from it are marked with."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'db_id'").fetchone()
        return str(row[0])

    def schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    # ---------------------------------------------------------------- processes
    def save(self, record: Record, sweep_id: str | None = None, label: str | None = None) -> int:
        """Store one record; returns its row id."""
        return self.save_many([record], sweep_id, label)[0]

    def save_many(self, records: Iterable[Record], sweep_id: str | None = None,
                  label: str | None = None) -> list[int]:
        """Store records in one transaction: all of them or none. `label` names the run
        (`--label`), for `compare`."""
        placeholders = ", ".join("?" for _ in COLUMN_NAMES)
        sql = f"INSERT INTO results ({', '.join(COLUMN_NAMES)}) VALUES ({placeholders})"
        ids = []
        with self._transaction() as conn:
            for record in records:
                row = record_to_row(record, sweep_id, label)
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

    def completed_spec_ids(self, env_ids: Iterable[str], label: str | None = None,
                           processes: int = 1) -> set[str]:
        """Spec ids with a finished result in any of the given environments: a complete
        combined result of at least `processes` processes (a sweep asking for more continues
        a result with the ones it has, one round after another), or a successful v1 row (one
        process; kept, not silently re-run). With `label`, only that run's results count: a
        labelled sweep measures again what another label (or none) already has, and resumes
        its own."""
        env_list = list(env_ids)
        if not env_list:
            return set()
        marks = ", ".join("?" for _ in env_list)
        legacy = (f"SELECT DISTINCT spec_id FROM results WHERE status = 'ok' AND source = 'local' "
                  f"AND result_id IS NULL AND env_id IN ({marks})")
        combined = (f"SELECT DISTINCT spec_id FROM combined_results WHERE complete = 1 "
                    f"AND status = 'ok' AND env_id IN ({marks})")
        if label is not None:
            legacy += " AND label = ?"
            combined += " AND label = ?"
            env_list.append(label)
        found = {row[0] for row in self._conn.execute(legacy, env_list)}
        combined += " AND k_total >= ?"
        return found | {row[0] for row in self._conn.execute(combined, [*env_list, processes])}

    def processes(self, result_id: str) -> list[Record]:
        """The process records of one result, in the order they were stored."""
        return self.records(result_id=result_id)

    # ------------------------------------------------------------------ results
    def save_result(
        self, result: Result, policy: ResultPolicy, complete: bool, sweep_id: str | None = None,
        label: str | None = None,
    ) -> None:
        """Store (or update) the combined figure of a result. Its scenario is its processes'
        (a spec id fixes it; the processes are stored first)."""
        placeholders = ", ".join("?" for _ in COMBINED_NAMES)
        sql = (f"INSERT OR REPLACE INTO combined_results ({', '.join(COMBINED_NAMES)}) "
               f"VALUES ({placeholders})")
        with self._transaction() as conn:
            found = conn.execute("SELECT scenario FROM results WHERE spec_id = ? LIMIT 1",
                                 (result.spec_id,)).fetchone()
            row = result_to_row(result, policy, complete, sweep_id, label,
                                scenario=found[0] if found else "")
            conn.execute(sql, [row[c] for c in COMBINED_NAMES])

    def result_rows(self, **filters: Any) -> list[dict[str, Any]]:
        """One row per result, oldest first: the store's one reading of a result
        (`store.view`: its figure, interval, processes and whether it is complete; numbers
        and identifiers, no display text). `status` filters the results' status; other
        filters the processes'."""
        status = filters.pop("status", None)
        processes = [process_row(row) for row in self.rows_with_records(**filters)]
        rows = result_view(processes, self.stored_results())
        return [r for r in rows if status is None or r["status"] == status]

    def stored_results(self) -> dict[str, tuple[Result, bool]]:
        """Every stored combined result by id, with whether it is complete."""
        sql = "SELECT result_id, result_json, complete FROM combined_results ORDER BY rowid"
        return {result_id: (Result.from_json(text), bool(complete))
                for result_id, text, complete in self._conn.execute(sql)}

    def combined(self, **filters: Any) -> list[Result]:
        """Stored combined results, oldest first."""
        unknown = set(filters) - set(COMBINED_NAMES)
        if unknown:
            raise ValueError(f"unknown filter columns {sorted(unknown)}")
        where = " AND ".join(f"{k} = ?" for k in filters)
        sql = ("SELECT result_json FROM combined_results" + (f" WHERE {where}" if where else "")
               + " ORDER BY rowid")
        return [Result.from_json(r[0]) for r in self._conn.execute(sql, list(filters.values()))]

    def drift_history(self, env_id: str, spec_id: str, result_id: str = ""
                      ) -> tuple[list[list[list[float]]], list[list[float]]]:
        """What a result's interval takes its between-run variation from
        (`sweep.run.environment_drift`), from one read of the store:

        - the machine's re-runs: per configuration but `spec_id` measured by two or more
          finished results with the same software on `env_id`'s machine (clean, of two or
          more processes each), each result's process medians; what
          `measure.combine.run_drift` estimates the variation from. A group spans the
          machine's environments that agree on what can change its backend's speed
          (`core.result.software_id`): installing a runtime for another backend must not
          split a configuration's re-runs, or a re-run after it would never count as one; a
          new version of its own framework does split them.
        - the configuration's own re-runs: the process medians of every such result of
          `spec_id`, oldest first, but `result_id` (the result being combined, stored already
          when a sweep re-runs its flagged processes), which `measure.combine.config_drift`
          weighs against the machine's pool.
        """
        software = self.software_ids()
        groups = self._reruns(env_id, software, result_id)
        others = [runs for (spec, _), runs in groups.items()
                  if spec != spec_id and len(runs) >= 2]
        own = groups.get((spec_id, software.get((spec_id, env_id), env_id)), [])
        return others, own

    def _reruns(self, env_id: str, software: dict[tuple[str, str], str],
                exclude_result_id: str = "") -> dict[tuple[str, str], list[list[float]]]:
        """(spec_id, software id) -> the process medians of each finished, clean result of
        two or more processes stored on `env_id`'s machine, oldest first (`software`: the
        store's `software_ids`)."""
        env_ids = self.machine_env_ids(env_id)
        if not env_ids:
            return {}
        marks = ", ".join("?" for _ in env_ids)
        sql = ("SELECT spec_id, env_id, result_json FROM combined_results WHERE complete = 1 "
               f"AND status = 'ok' AND flagged = 0 AND k >= 2 AND env_id IN ({marks}) "
               "AND result_id != ? ORDER BY rowid")
        groups: dict[tuple[str, str], list[list[float]]] = {}
        for spec_id, env, text in self._conn.execute(sql, (*env_ids, exclude_result_id)):
            medians = json.loads(text).get("process_medians_sps") or []
            key = (spec_id, software.get((spec_id, env), env))
            groups.setdefault(key, []).append([float(m) for m in medians])
        return groups

    def software_ids(self) -> dict[tuple[str, str], str]:
        """(spec_id, env_id) -> `core.result.software_id` of that environment for that
        spec's backend, for every pair with records."""
        sql = ("SELECT spec_id, env_id, backend, json_extract(record_json, '$.env') FROM results "
               "WHERE id IN (SELECT MIN(id) FROM results GROUP BY spec_id, env_id)")
        return {(spec, env): software_id(json.loads(text or "{}"), backend)
                for spec, env, backend, text in self._conn.execute(sql)}

    def machine_env_ids(self, env_id: str) -> list[str]:
        """The stored environments of `env_id`'s machine (`core.result.machine_id`), itself
        included if it has records; [] if it has none."""
        sql = ("SELECT env_id, json_extract(record_json, '$.env') FROM results "
               "WHERE id IN (SELECT MIN(id) FROM results GROUP BY env_id)")
        machines = {env: machine_id(json.loads(text or "{}"))
                    for env, text in self._conn.execute(sql)}
        if env_id not in machines:
            return []
        return sorted(e for e, m in machines.items() if m == machines[env_id])

    def table_rows(self, table: str, names: Sequence[str], order: str = "rowid"
                   ) -> list[dict[str, Any]]:
        """Every row of a table (`select_rows`)."""
        return select_rows(self._conn, table, names, order)

    def insert_rows(self, table: str, names: Sequence[str], rows: Sequence[dict[str, Any]],
                    replace: bool = False) -> None:
        """Rows as they are (`names` their columns; `replace`: a row of the same key goes),
        in one transaction: what `store.merge` copies from another database."""
        if table not in COPIED_TABLES:
            raise ValueError(f"rows are not copied into {table}")
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        sql = (f"{verb} INTO {table} ({', '.join(names)}) "
               f"VALUES ({', '.join('?' for _ in names)})")
        with self._transaction() as conn:
            conn.executemany(sql, [[row[name] for name in names] for row in rows])

    def record_merge(self, source_db_id: str, source_path: Path, processes: int, results: int,
                     summary: dict[str, Any]) -> None:
        """A source merged in (table `merges`)."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO merges (source_db_id, source_path, merged_at, processes, results, "
                "summary_json) VALUES (?, ?, ?, ?, ?, ?)",
                (source_db_id, str(source_path.absolute()), utc_now(), processes, results,
                 json.dumps(summary, sort_keys=True)))

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

    # -------------------------------------------------------------------- peaks
    def get_peaks(self, env_id: str) -> dict[str, dict[str, Any]]:
        """The measured peaks of one environment, keyed by dtype ({} if never measured);
        each is its method dict with `gflops_s`."""
        return self.all_peaks(env_id).get(env_id, {})

    def all_peaks(self, env_id: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """Measured peaks by environment id, then dtype (every environment by default)."""
        sql = "SELECT env_id, dtype, gflops_s, method_json FROM device_peaks"
        rows = (self._conn.execute(sql + " WHERE env_id = ?", (env_id,)) if env_id is not None
                else self._conn.execute(sql))
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for row in rows:
            method = json.loads(row["method_json"])
            found.setdefault(row["env_id"], {})[row["dtype"]] = {
                **method, "gflops_s": row["gflops_s"]}
        return found

    def put_peaks(self, env_id: str, peaks: Iterable[dict[str, Any]]) -> None:
        """Store an environment's peaks (dicts with `dtype`, `gflops_s` and how they were
        measured), replacing any of the same dtype."""
        with self._transaction() as conn:
            for peak in peaks:
                method = {k: v for k, v in peak.items() if k != "gflops_s"}
                conn.execute(
                    "INSERT OR REPLACE INTO device_peaks VALUES (?, ?, ?, ?, ?)",
                    (env_id, peak["dtype"], float(peak["gflops_s"]),
                     json.dumps(method, sort_keys=True), utc_now()),
                )


#: The tables `ResultStore.insert_rows` copies rows into.
COPIED_TABLES = ("results", "combined_results", "device_peaks", "model_costs")


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a database (a file's, or a read-only one's copy in memory) to SCHEMA_VERSION: the
    one place the migrations are run."""
    conn.create_function("xlabench_device", 1, _device_of_env_json, deterministic=True)
    version = int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                               ).fetchone()[0])
    old_id = legacy_db_id(conn) if version < SCHEMA_VERSION else ""
    while version < SCHEMA_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            version += 1
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                         (str(version),))
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('db_id', ?)",
                         (old_id,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def select_rows(conn: sqlite3.Connection, table: str, names: Sequence[str],
                order: str = "rowid") -> list[dict[str, Any]]:
    """Every row of `table` with `names` as keys: columns the table (of an older schema) does
    not have are None; [] if it has no such table."""
    present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if not present:
        return []
    read = [n for n in names if n in present]
    sql = f"SELECT {', '.join(read)} FROM {table} ORDER BY {order}"
    return [{**dict.fromkeys(names), **dict(zip(read, tuple(row), strict=True))}
            for row in conn.execute(sql)]


def _new_db_id() -> str:
    return uuid.uuid4().hex[:16]


#: The id of a database made before databases had ids starts with this.
LEGACY_PREFIX = "legacy"


def legacy_db_id(conn: sqlite3.Connection) -> str:
    """The id of a database from before ids, from what never changes in it (its creation
    time and its first row): the same whether the migration gives it or `store.merge` reads
    an unmigrated copy read-only, so merging it before and after it was opened agrees."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    first = conn.execute("SELECT record_json FROM results ORDER BY id LIMIT 1").fetchone()
    text = json.dumps([meta.get("created_at"), first[0] if first else None])
    return LEGACY_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:16 - len(LEGACY_PREFIX)]


def _device_of_env_json(text: str | None) -> str:
    """`core.device.device_name` of a stored environment (the migration's SQL function)."""
    try:
        env = json.loads(text or "{}")
    except ValueError:
        env = {}
    return device_name(env if isinstance(env, dict) else {})


def record_to_row(record: Record, sweep_id: str | None, label: str | None = None
                  ) -> dict[str, Any]:
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
        "record_json": record.to_json(), "device": device_name(record.env), "label": label,
        "origin_db": None, "scenario": spec.scenario,
        "scenario_figure": record.scenario.figure if record.scenario else None,
        **_process_columns(record),
    }


def _process_columns(record: Record) -> dict[str, Any]:
    figures, process = record.interference, record.process
    return {
        "result_id": process.result_id or None,
        "process_index": process.index if process.result_id else None,
        "process_round": process.round if process.result_id else None,
        "interference_other_pct": None if figures is None else 100 * figures.other_frac,
        "interference_steal_pct": None if figures is None else 100 * figures.steal_frac,
        "interference_flagged": None if figures is None
        else int(interference_reason(figures) is not None),
    }


def result_to_row(
    result: Result, policy: ResultPolicy, complete: bool, sweep_id: str | None,
    label: str | None = None, scenario: str = "",
) -> dict[str, Any]:
    return {
        "result_id": result.result_id, "spec_id": result.spec_id, "env_id": result.env_id,
        "sweep_id": sweep_id, "updated_at": utc_now(), "status": result.status,
        "complete": int(complete), "k": result.k, "k_total": result.k_total,
        "k_flagged": result.k_flagged, "throughput_sps": result.median_sps,
        "throughput_sps_ci_low": result.ci_low_sps, "throughput_sps_ci_high": result.ci_high_sps,
        "ci_confidence": result.ci_confidence, "ci_method": result.ci_method,
        "target_met": int(result.target_met), "flagged": int(result.flagged),
        "flag_reason": result.flag_reason,
        "policy_json": json.dumps(policy.to_dict(), sort_keys=True),
        "result_json": result.to_json(), "label": label, "origin_db": None,
        "scenario": scenario,
    }
