"""Results from many machines in one database: `merge_databases`.

Every row of every source is copied into the target: each process row (`results`, with a new
id from the target and every other column as it was), each combined result
(`combined_results`), each measured peak (`device_peaks`) and each model's costs
(`model_costs`). Copied rows say where they were measured (`origin_db`: the source's
`db_id`, or the id the source row already carried when it had been merged into the source
earlier); the target keeps one `merges` row per source merged.

Merging is idempotent. A process row is already present when a row of the same origin has the
same `record_json` (a row measured in the target itself has `origin_db` NULL: the target's
own id). Two rules widen that: published numbers (`xlabench import`, env_id ``import``) are
one measurement whatever database imported them, matched as the importer matches them (spec,
accelerator, number); and a database from before databases had ids (schema < 4) is given an
id derived from its contents (``legacy…``, `store.db.legacy_db_id`, which the migration gives
it too when xlabench next opens it), and its rows are matched on their `record_json` alone.
A combined result is already present when its `result_id` is; a newer copy of it (a resumed
sweep added processes: later `updated_at`) replaces the older one. A sweep's result ids are
a hash of (sweep, configuration, environment), so two machines of one type running one sweep
give their results the same id: the second keeps it with its origin's id appended
(``<id>@<last 8 characters of its db id>``, the same on every merge and undone where the plain
id is free or its own), in the column and in `result_json`; `record_json` is kept as
measured. The same id for a different configuration or environment is refused.

Nothing is written until every source has been read and the merge planned against the target
as it is (sources are opened read-only, SQLite URI ``mode=ro``); the merge is then one
transaction of the target, planned again inside it. A missing, damaged, foreign or newer
database is one `UserError` line, and no file is changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sqlite3
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlabench.core import UserError, utc_now
from xlabench.core.device import device_name
from xlabench.store.db import (
    COLUMN_NAMES,
    COMBINED_NAMES,
    LEGACY_PREFIX,
    ResultStore,
    check_db_file,
    legacy_db_id,
)
from xlabench.store.importer import IMPORT_ENV_ID
from xlabench.store.schema import V1_RESULT_COLUMNS

PEAK_NAMES = ("env_id", "dtype", "gflops_s", "method_json", "created_at")
COST_NAMES = ("model", "resolution", "params", "macs_per_image", "flops_per_image", "method",
              "created_at")
_COST_VALUES = ("params", "macs_per_image", "flops_per_image")
#: A result id taken by another database's result becomes `<id>@<end of its origin's id>`.
RENAMED_SEPARATOR = "@"


@dataclass(frozen=True)
class SourceSummary:
    """What one source brought: rows added, and rows skipped as already in the target."""

    path: str
    db_id: str
    schema_version: int
    processes: int = 0
    results: int = 0
    environments: int = 0  # distinct env_ids of the processes added
    peaks: int = 0
    costs: int = 0
    processes_present: int = 0
    results_present: int = 0
    results_updated: int = 0  # a newer copy of a result already present replaced it
    results_renamed: int = 0  # added under a new id: another database's result had theirs
    peaks_present: int = 0
    costs_present: int = 0
    costs_differing: int = 0  # in the target with other values: the target's were kept

    @property
    def already_present(self) -> int:
        return (self.processes_present + self.results_present + self.peaks_present
                + self.costs_present + self.costs_differing)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class MergeSummary:
    """A merge: the target, and one summary per source in the order they were given."""

    into: str
    db_id: str  # the target's
    created: bool  # the target did not exist before
    sources: tuple[SourceSummary, ...]

    @property
    def processes(self) -> int:
        return sum(s.processes for s in self.sources)

    @property
    def results(self) -> int:
        return sum(s.results for s in self.sources)


def merge_databases(sources: Sequence[Path], into: Path) -> MergeSummary:
    """Copy every result of `sources` into `into` (created if missing), in one transaction.

    Raises:
        UserError: a source missing, damaged, not an xlabench database or from a newer
            xlabench; `into` one of the sources or not an xlabench database; one result id
            naming two different results. Nothing is written then.
    """
    into = Path(into)
    if not sources:
        raise UserError("nothing to merge: name at least one database")
    paths = [Path(p) for p in sources]
    for path in paths:
        if _same_file(path, into):
            raise UserError(f"{path} is also --into: a database cannot be merged into itself")
    existed = check_db_file(into)  # a foreign or newer target is refused untouched
    if not existed and not into.parent.exists():
        raise UserError(f"cannot create {into}: folder {into.parent} does not exist")
    read = [_read_source(path) for path in paths]
    _plan_all(read, _read_target_read_only(into) if existed else _State(db_id=""), into)
    new_file = not into.exists()
    try:
        return _apply(read, into, created=not existed)
    except BaseException:
        if new_file:
            _remove_new_database(into)
        raise


# ------------------------------------------------------------------------------ sources
@dataclass
class _Source:
    path: Path
    db_id: str
    schema_version: int
    processes: list[dict[str, Any]]  # COLUMN_NAMES, origin_db filled, plus "_origin"
    combined: list[dict[str, Any]]  # COMBINED_NAMES, plus "_origin"
    peaks: list[dict[str, Any]]
    costs: list[dict[str, Any]]


def _read_source(path: Path) -> _Source:
    """Everything a source holds, read in one read-only snapshot; refuse what is not a sound
    xlabench database."""
    if not path.exists():
        raise UserError(f"no database at {path}; nothing merged")
    if path.is_file() and path.stat().st_size == 0:
        raise UserError(f"{path} is empty, not an xlabench database; nothing merged")
    check_db_file(path)  # a directory, a foreign file, a newer schema: one line each
    try:
        conn = _connect_read_only(path)
        try:
            conn.execute("BEGIN")  # one snapshot, even while a sweep writes to the source
            return _source_rows(conn, path)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UserError(f"{path} is damaged ({exc}); nothing merged") from exc


def _source_rows(conn: sqlite3.Connection, path: Path) -> _Source:
    (check,) = conn.execute("PRAGMA quick_check(1)").fetchone()
    if check != "ok":  # e.g. "*** in database main ***\nPage 50: btreeInitPage() ..."
        found = " ".join(str(check).replace("*** in database main ***", "").split())
        raise UserError(f"{path} is damaged ({found}); nothing merged")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    version = int(meta["schema_version"])
    columns = set(_columns(conn, "results"))
    missing = [name for name, _ in V1_RESULT_COLUMNS if name not in columns]
    if missing:
        raise UserError(f"{path} has no results table as xlabench writes it (no column "
                        f"{missing[0]}); nothing merged")
    db_id = meta.get("db_id") or legacy_db_id(conn)
    processes = _select(conn, "results", COLUMN_NAMES, "id")
    for row in processes:
        if row["device"] is None:  # a row from before v4: named as the migration names it
            row["device"] = _device_of(row["record_json"])
        if row["scenario"] is None:  # before v5: as the migration fills it
            row["scenario"], row["scenario_figure"] = _scenario_of(row["record_json"])
        row["_origin"] = row["origin_db"] or db_id
    scenarios = {row["spec_id"]: row["scenario"] for row in processes if row["scenario"]}
    combined = _select(conn, "combined_results", COMBINED_NAMES)
    for row in combined:
        if row["scenario"] is None:  # before v5: its processes' (a spec id fixes it)
            row["scenario"] = scenarios.get(row["spec_id"], "")
        row["_origin"] = row["origin_db"] or db_id
    return _Source(path, db_id, version, processes, combined,
                   _select(conn, "device_peaks", PEAK_NAMES),
                   _select(conn, "model_costs", COST_NAMES))


def _device_of(record_json: str) -> str:
    try:
        env = json.loads(record_json).get("env") or {}
    except (ValueError, AttributeError):
        env = {}
    return device_name(env if isinstance(env, dict) else {})


def _scenario_of(record_json: str) -> tuple[str, float | None]:
    """The scenario and the process's figure of a stored record ("" and None: the timed
    loop)."""
    try:
        record = json.loads(record_json)
    except ValueError:
        return "", None
    if not isinstance(record, dict):
        return "", None
    scenario = str((record.get("spec") or {}).get("scenario") or "")
    figure = (record.get("scenario") or {}).get("figure") if scenario else None
    return scenario, None if figure is None else float(figure)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=60.0, isolation_level=None)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _select(conn: sqlite3.Connection, table: str, names: Sequence[str],
            order: str = "rowid") -> list[dict[str, Any]]:
    """Every row of `table` with `names` as keys: columns the table (of an older schema) does
    not have are None; [] if it has no such table."""
    present = set(_columns(conn, table))
    if not present:
        return []
    read = [n for n in names if n in present]
    sql = f"SELECT {', '.join(read)} FROM {table} ORDER BY {order}"
    return [{**dict.fromkeys(names), **dict(zip(read, row, strict=True))}
            for row in conn.execute(sql)]


# ------------------------------------------------------------------------------- target
@dataclass
class _State:
    """What the target holds, as far as deciding what is already there needs."""

    db_id: str
    processes: dict[str, set[str]] = field(default_factory=dict)  # sha -> origins
    imports: set[tuple[Any, ...]] = field(default_factory=set)
    owners: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # id -> spec,env,origin
    updated: dict[str, str] = field(default_factory=dict)  # combined result id -> updated_at
    peaks: set[tuple[str, str]] = field(default_factory=set)
    costs: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


def _read_target_read_only(path: Path) -> _State:
    try:
        conn = _connect_read_only(path)
        try:
            conn.execute("BEGIN")
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            return _target_state(conn, meta.get("db_id", ""))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise UserError(f"{path} is damaged ({exc}); nothing merged") from exc


def _target_state(conn: sqlite3.Connection, db_id: str) -> _State:
    state = _State(db_id=db_id)
    names = ("spec_id", "env_id", "accelerator", "throughput_sps", "record_json", "result_id",
             "origin_db")
    for row in _select(conn, "results", names, "id"):
        origin = row["origin_db"] or db_id
        state.processes.setdefault(_sha(row["record_json"]), set()).add(origin)
        if row["env_id"] == IMPORT_ENV_ID:
            state.imports.add(_import_key(row))
        if row["result_id"]:
            state.owners.setdefault(row["result_id"], (row["spec_id"], row["env_id"], origin))
    for row in _select(conn, "combined_results",
                       ("result_id", "spec_id", "env_id", "updated_at", "origin_db")):
        state.owners[row["result_id"]] = (row["spec_id"], row["env_id"],
                                          row["origin_db"] or db_id)
        state.updated[row["result_id"]] = row["updated_at"]
    state.peaks = {(r["env_id"], r["dtype"]) for r in _select(conn, "device_peaks", PEAK_NAMES)}
    state.costs = {(r["model"], r["resolution"]): r
                   for r in _select(conn, "model_costs", COST_NAMES)}
    return state


# --------------------------------------------------------------------------------- plan
@dataclass
class _Plan:
    source: _Source
    processes: list[dict[str, Any]] = field(default_factory=list)
    combined: list[dict[str, Any]] = field(default_factory=list)
    peaks: list[dict[str, Any]] = field(default_factory=list)
    costs: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def summary(self) -> SourceSummary:
        envs = {row["env_id"] for row in self.processes}
        return SourceSummary(path=str(self.source.path), db_id=self.source.db_id,
                             schema_version=self.source.schema_version,
                             environments=len(envs), **self.counts)


def _plan_all(sources: Sequence[_Source], state: _State, into: Path) -> list[_Plan]:
    """What each source adds to the target, in order (each sees what those before it add)."""
    return [_plan(source, state, into) for source in sources]


def _plan(source: _Source, state: _State, into: Path) -> _Plan:
    plan = _Plan(source)
    ids = _result_ids(source, state, into)
    for row in source.processes:
        if _process_present(row, state):
            plan.count("processes_present")
            continue
        _remember_process(row, state)
        new = {name: row[name] for name in COLUMN_NAMES}
        if row["result_id"]:
            new["result_id"] = ids[(row["_origin"], row["result_id"])]
        new["origin_db"] = _stored_origin(row["_origin"], state)
        plan.processes.append(new)
        plan.count("processes")
    for row in source.combined:
        result_id = ids[(row["_origin"], row["result_id"])]
        new = {name: row[name] for name in COMBINED_NAMES}
        new["origin_db"] = _stored_origin(row["_origin"], state)
        if result_id != row["result_id"]:
            new["result_id"] = result_id
            new["result_json"] = json.dumps({**json.loads(row["result_json"]),
                                             "result_id": result_id}, sort_keys=True)
        known = state.updated.get(result_id)
        if known is not None and not row["updated_at"] > known:
            plan.count("results_present")
            continue
        plan.combined.append(new)
        state.updated[result_id] = row["updated_at"]
        plan.count("results" if known is None else "results_updated")
        if known is None and result_id != _base_id(row["result_id"], row["_origin"]):
            plan.count("results_renamed")
    for row in source.peaks:
        key = (row["env_id"], row["dtype"])
        if key in state.peaks:
            plan.count("peaks_present")
            continue
        state.peaks.add(key)
        plan.peaks.append(row)
        plan.count("peaks")
    for row in source.costs:
        known_costs = state.costs.get((row["model"], row["resolution"]))
        # a count that failed (stored as data: no MACs, `method` says why) gives way to one
        if known_costs is None or (known_costs["macs_per_image"] is None
                                   and row["macs_per_image"] is not None):
            state.costs[(row["model"], row["resolution"])] = row
            plan.costs.append(row)
            plan.count("costs")
        else:
            plan.count("costs_present" if _same_costs(known_costs, row) else "costs_differing")
    return plan


def _result_ids(source: _Source, state: _State, into: Path) -> dict[tuple[str, str], str]:
    """(origin, result id) -> the id the result has in the target: its own, or a renamed one
    when a result measured elsewhere has it."""
    ids: dict[tuple[str, str], str] = {}
    rows = [*source.combined, *(r for r in source.processes if r["result_id"])]
    for row in rows:
        key = (row["_origin"], row["result_id"])
        if key not in ids:
            ids[key] = _place(row, state, source.path, into)
    return ids


def _place(row: dict[str, Any], state: _State, path: Path, into: Path) -> str:
    """The id a source's result has in the target: its own unless a result of another
    database has it (then the renamed one), and refuse one id for two configurations."""
    origin, what = row["_origin"], (row["spec_id"], row["env_id"])
    base = _base_id(row["result_id"], origin)
    for candidate in (base, _renamed(base, origin)):
        owner = state.owners.get(candidate)
        if owner is None:
            state.owners[candidate] = (*what, origin)
            return candidate
        if owner[:2] != what:
            raise UserError(
                f"{path}: result {row['result_id']} is {what[0]} on {what[1]} there, but "
                f"{candidate} is {owner[0]} on {owner[1]} in {into}: one id for two "
                "results; nothing merged")
        if _same_origin(owner[2], origin):
            return candidate
    raise UserError(f"{path}: result {row['result_id']} is in {into} twice, from other "
                    "databases; nothing merged")


def _renamed(result_id: str, origin: str) -> str:
    return f"{result_id}{RENAMED_SEPARATOR}{origin[-8:]}"


def _base_id(result_id: str, origin: str) -> str:
    """A result's id before a merge renamed it (into the database it comes from now)."""
    tail = _renamed("", origin)
    return result_id[:-len(tail)] if result_id.endswith(tail) else result_id


def _same_origin(a: str, b: str) -> bool:
    """The same database: a legacy id (before ids) matches any, as that database may have
    been given an id of its own since."""
    return a == b or a.startswith(LEGACY_PREFIX) or b.startswith(LEGACY_PREFIX)


def _process_present(row: dict[str, Any], state: _State) -> bool:
    if row["env_id"] == IMPORT_ENV_ID and _import_key(row) in state.imports:
        return True
    origins = state.processes.get(_sha(row["record_json"]), set())
    return any(_same_origin(known, row["_origin"]) for known in origins)


def _remember_process(row: dict[str, Any], state: _State) -> None:
    state.processes.setdefault(_sha(row["record_json"]), set()).add(row["_origin"])
    if row["env_id"] == IMPORT_ENV_ID:
        state.imports.add(_import_key(row))


def _stored_origin(origin: str, state: _State) -> str | None:
    """NULL for the target's own rows (merged back from a database they went to)."""
    return None if origin == state.db_id else origin


def _import_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """A published number's identity, as `store.importer.split_new` has it."""
    value = row["throughput_sps"]
    return row["spec_id"], row["accelerator"], None if value is None else round(value, 6)


def _same_costs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    for name in _COST_VALUES:
        x, y = a[name], b[name]
        if x is None or y is None:
            if x is not y:
                return False
        elif not math.isclose(float(x), float(y), rel_tol=1e-9):
            return False
    return True


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -------------------------------------------------------------------------------- write
def _apply(sources: Sequence[_Source], into: Path, created: bool) -> MergeSummary:
    with ResultStore(into) as store:
        db_id = store.db_id()
        conn = store._conn
        try:
            with store._transaction():
                plans = _plan_all(sources, _target_state(conn, db_id), into)
                for plan in plans:
                    _write(conn, plan)
        except sqlite3.Error as exc:
            raise UserError(f"cannot merge into {into} ({exc}); it is left as it was") from exc
    return MergeSummary(into=str(into), db_id=db_id, created=created,
                        sources=tuple(plan.summary() for plan in plans))


def _write(conn: sqlite3.Connection, plan: _Plan) -> None:
    _insert(conn, "INSERT", "results", COLUMN_NAMES, plan.processes)
    _insert(conn, "INSERT OR REPLACE", "combined_results", COMBINED_NAMES, plan.combined)
    _insert(conn, "INSERT", "device_peaks", PEAK_NAMES, plan.peaks)
    _insert(conn, "INSERT OR REPLACE", "model_costs", COST_NAMES, plan.costs)
    summary = plan.summary()
    conn.execute(
        "INSERT INTO merges (source_db_id, source_path, merged_at, processes, results, "
        "summary_json) VALUES (?, ?, ?, ?, ?, ?)",
        (summary.db_id, str(plan.source.path.absolute()), utc_now(), summary.processes,
         summary.results, json.dumps(summary.to_dict(), sort_keys=True)),
    )


def _insert(conn: sqlite3.Connection, verb: str, table: str, names: Sequence[str],
            rows: Sequence[dict[str, Any]]) -> None:
    sql = (f"{verb} INTO {table} ({', '.join(names)}) "
           f"VALUES ({', '.join('?' for _ in names)})")
    conn.executemany(sql, [[row[name] for name in names] for row in rows])


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.absolute() == b.absolute()


def _remove_new_database(path: Path) -> None:
    """A target this merge created and could not fill goes again (with its WAL files)."""
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        name.unlink(missing_ok=True)
