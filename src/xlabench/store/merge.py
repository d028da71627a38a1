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
as it is (sources are opened read-only, `store.reader.StoreReader`, and read as a copy in
memory migrated to the current schema: the file is never changed); the merge is then one
transaction of the target, planned again inside it, written through the store's public calls.
A missing, damaged, foreign or newer database is one `UserError` line, and no file is changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xlabench.core import UserError
from xlabench.store.db import (
    COLUMN_NAMES,
    COMBINED_NAMES,
    LEGACY_PREFIX,
    ResultStore,
    check_db_file,
)
from xlabench.store.importer import IMPORT_ENV_ID
from xlabench.store.reader import StoreReader
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
    """Everything a source holds, read in one snapshot as the current schema has it (a copy
    migrated in memory: the file is only read); refuse what is not a sound xlabench
    database."""
    if not path.exists():
        raise UserError(f"no database at {path}; nothing merged")
    if path.is_file() and path.stat().st_size == 0:
        raise UserError(f"{path} is empty, not an xlabench database; nothing merged")
    check_db_file(path)  # a directory, a foreign file, a newer schema: one line each
    try:
        with StoreReader(path) as source:
            version = _check_source(source, path)
            copy = source.migrated_copy()
        with copy:
            return _source_rows(copy, path, version)
    except sqlite3.Error as exc:
        raise UserError(f"{path} is damaged ({exc}); nothing merged") from exc


def _check_source(source: StoreReader, path: Path) -> int:
    """The source's schema version, once it is known sound."""
    check = source.quick_check()
    if check != "ok":  # e.g. "*** in database main ***\nPage 50: btreeInitPage() ..."
        found = " ".join(check.replace("*** in database main ***", "").split())
        raise UserError(f"{path} is damaged ({found}); nothing merged")
    columns = source.columns("results")
    missing = [name for name, _ in V1_RESULT_COLUMNS if name not in columns]
    if missing:
        raise UserError(f"{path} has no results table as xlabench writes it (no column "
                        f"{missing[0]}); nothing merged")
    return int(source.meta()["schema_version"])


def _source_rows(source: StoreReader, path: Path, version: int) -> _Source:
    """The rows of a source (migrated: every column as the current schema has it)."""
    db_id = source.meta()["db_id"]
    processes = source.table_rows("results", COLUMN_NAMES, "id")
    combined = source.table_rows("combined_results", COMBINED_NAMES)
    for row in (*processes, *combined):
        row["_origin"] = row["origin_db"] or db_id
    return _Source(path, db_id, version, processes, combined,
                   source.table_rows("device_peaks", PEAK_NAMES),
                   source.table_rows("model_costs", COST_NAMES))


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
        with StoreReader(path) as target, target.snapshot():
            return _target_state(target, target.meta().get("db_id", ""))
    except sqlite3.Error as exc:
        raise UserError(f"{path} is damaged ({exc}); nothing merged") from exc


class _Rows(Protocol):
    """A database whose tables can be read whole (`StoreReader`, `ResultStore`)."""

    def table_rows(self, table: str, names: Sequence[str], order: str = "rowid"
                   ) -> list[dict[str, Any]]: ...


def _target_state(target: _Rows, db_id: str) -> _State:
    state = _State(db_id=db_id)
    names = ("spec_id", "env_id", "accelerator", "throughput_sps", "record_json", "result_id",
             "origin_db")
    for row in target.table_rows("results", names, "id"):
        origin = row["origin_db"] or db_id
        state.processes.setdefault(_sha(row["record_json"]), set()).add(origin)
        if row["env_id"] == IMPORT_ENV_ID:
            state.imports.add(_import_key(row))
        if row["result_id"]:
            state.owners.setdefault(row["result_id"], (row["spec_id"], row["env_id"], origin))
    for row in target.table_rows("combined_results",
                                 ("result_id", "spec_id", "env_id", "updated_at", "origin_db")):
        state.owners[row["result_id"]] = (row["spec_id"], row["env_id"],
                                          row["origin_db"] or db_id)
        state.updated[row["result_id"]] = row["updated_at"]
    state.peaks = {(r["env_id"], r["dtype"])
                   for r in target.table_rows("device_peaks", PEAK_NAMES)}
    state.costs = {(r["model"], r["resolution"]): r
                   for r in target.table_rows("model_costs", COST_NAMES)}
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
        try:
            with store.transaction():
                plans = _plan_all(sources, _target_state(store, db_id), into)
                for plan in plans:
                    _write(store, plan)
        except sqlite3.Error as exc:
            raise UserError(f"cannot merge into {into} ({exc}); it is left as it was") from exc
    return MergeSummary(into=str(into), db_id=db_id, created=created,
                        sources=tuple(plan.summary() for plan in plans))


def _write(store: ResultStore, plan: _Plan) -> None:
    store.insert_rows("results", COLUMN_NAMES, plan.processes)
    store.insert_rows("combined_results", COMBINED_NAMES, plan.combined, replace=True)
    store.insert_rows("device_peaks", PEAK_NAMES, plan.peaks)
    store.insert_rows("model_costs", COST_NAMES, plan.costs, replace=True)
    summary = plan.summary()
    store.record_merge(summary.db_id, plan.source.path, summary.processes, summary.results,
                       summary.to_dict())


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.absolute() == b.absolute()


def _remove_new_database(path: Path) -> None:
    """A target this merge created and could not fill goes again (with its WAL files)."""
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        name.unlink(missing_ok=True)
