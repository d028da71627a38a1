"""`xlabench merge`: results from many machines in one database, nothing lost, nothing twice.

The "machines" are databases built with the store API: records from the factory with each
machine's own CPU environment, combined into results the way a run combines them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_record
from xlabench.core import UserError
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine
from xlabench.store import ResultStore, merge_databases
from xlabench.store.merge import LEGACY_PREFIX

MACHINES: dict[str, dict[str, Any]] = {
    "epyc": {"accelerator": "cpu", "cpu_model": "AMD EPYC 9R14 96-Core Processor",
             "cpu_arch": "Zen 4", "cpu_threads": 2, "hostname": "epyc-1"},
    "xeon": {"accelerator": "cpu", "cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
             "cpu_threads": 8, "hostname": "xeon-1"},
    "arm": {"accelerator": "cpu", "cpu_model": "Neoverse-V1", "cpu_threads": 4,
            "hostname": "graviton-1"},
}
DEVICES = {"epyc": "AMD EPYC 9R14 (Zen 4) ×2", "xeon": "Intel Xeon Platinum 8375C ×8",
           "arm": "Neoverse-V1 ×4"}
MODELS = ("resnet50_v1", "vgg16")
POLICY = ResultPolicy(min_processes=3)
COSTS = {"params": 25_636_712, "macs_per_image": 4.1e9, "flops_per_image": 8.2e9,
         "method": "test"}


def _machine_db(path: Path, machine: str, models: tuple[str, ...] = MODELS, k: int = 3,
                env_id: str | None = None, speed: float = 100.0, result_tag: str = "",
                ) -> str:
    """A database as `machine` would have written it: per model one result of `k` processes
    (label "nightly", sweep "sw1"), the machine's measured peak and the models' costs.
    Returns its db id."""
    env, env_id = MACHINES[machine], env_id or f"env-{machine}"
    with ResultStore(path) as store:
        for model in models:
            result_id = f"r-{result_tag or machine}-{model}"
            records = [make_record(model=model, throughput=speed + 3 * i).replace(
                env=env, env_id=env_id, started_at=f"2026-12-01T00:00:0{i}+00:00",
                process=ProcessInfo(result_id=result_id, index=i, round=i)) for i in range(k)]
            store.save_many(records, sweep_id="sw1", label="nightly")
            store.save_result(combine.combine(records, result_id, POLICY), POLICY, True,
                              sweep_id="sw1", label="nightly")
            store.put_costs(model, 224, COSTS)
        store.put_peaks(env_id, [{"dtype": "fp32", "gflops_s": 50.0 * env["cpu_threads"]}])
        return store.db_id()


def _counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("results", "combined_results", "device_peaks", "model_costs",
                              "merges")}
    finally:
        conn.close()


def _hashes(*paths: Path) -> dict[Path, str | None]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in paths}


def _rows(path: Path, table: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY rowid")]
    finally:
        conn.close()


@pytest.fixture
def two_machines(tmp_path: Path) -> tuple[Path, str, Path, str]:
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    return a, _machine_db(a, "epyc"), b, _machine_db(b, "xeon")


def test_merge_copies_every_row_and_says_where_it_came_from(
    tmp_path: Path, two_machines
) -> None:
    a, id_a, b, id_b = two_machines
    before = _hashes(a, b)
    into = tmp_path / "ALL.db"
    summary = merge_databases([a, b], into)

    assert summary.created and summary.processes == 12 and summary.results == 4
    first, second = summary.sources
    assert (first.db_id, first.path, first.processes, first.results, first.environments,
            first.peaks, first.costs, first.already_present) == (id_a, str(a), 6, 2, 1, 1, 2, 0)
    # the second machine's costs are the same figures: kept once
    assert (second.db_id, second.processes, second.results, second.costs,
            second.costs_present) == (id_b, 6, 2, 0, 2)
    assert _hashes(a, b) == before  # sources are only read

    merged, sources = _rows(into, "results"), _rows(a, "results") + _rows(b, "results")
    assert [r["id"] for r in merged] == list(range(1, 13))  # ids the target assigned
    for row in merged:
        assert row["origin_db"] in (id_a, id_b)
    # every column kept but the id and where it came from
    keep = [c for c in merged[0] if c not in ("id", "origin_db")]
    assert [{c: r[c] for c in keep} for r in merged] == [{c: r[c] for c in keep} for r in sources]
    assert {(r["device"], r["origin_db"]) for r in merged} == {
        (DEVICES["epyc"], id_a), (DEVICES["xeon"], id_b)}
    assert {(r["label"], r["sweep_id"]) for r in merged} == {("nightly", "sw1")}

    combined = _rows(into, "combined_results")
    assert len(combined) == 4
    assert {r["result_id"]: r["origin_db"] for r in combined} == {
        f"r-{m}-{model}": id_ for m, id_ in (("epyc", id_a), ("xeon", id_b)) for model in MODELS}
    assert {(r["label"], r["sweep_id"]) for r in combined} == {("nightly", "sw1")}
    with ResultStore(into) as store:
        assert store.db_id() not in (id_a, id_b)
        rows = store.result_rows()
        assert len(rows) == 4 and {r["processes"] for r in rows} == {3}
        assert {r["device"] for r in rows} == {DEVICES["epyc"], DEVICES["xeon"]}
        assert set(store.all_peaks()) == {"env-epyc", "env-xeon"}
        assert store.get_costs("vgg16", 224)["macs_per_image"] == COSTS["macs_per_image"]
    merges = _rows(into, "merges")
    assert [(m["source_db_id"], m["source_path"], m["processes"], m["results"])
            for m in merges] == [(id_a, str(a.absolute()), 6, 2), (id_b, str(b.absolute()), 6, 2)]
    assert json.loads(merges[0]["summary_json"])["peaks"] == 1


def test_merging_twice_adds_nothing(tmp_path: Path, two_machines) -> None:
    a, _, b, _ = two_machines
    into = tmp_path / "ALL.db"
    merge_databases([a, b], into)
    counts = _counts(into)
    again = merge_databases([a, b], into)
    assert again.processes == again.results == 0
    assert [s.already_present for s in again.sources] == [6 + 2 + 1 + 2] * 2
    assert all(s.peaks == s.costs == s.environments == 0 for s in again.sources)
    assert _counts(into) == {**counts, "merges": 4}  # only the log of the merge grows


def test_the_same_file_twice_in_one_call_is_merged_once(tmp_path: Path, two_machines) -> None:
    a, _, _, _ = two_machines
    into = tmp_path / "ALL.db"
    first, second = merge_databases([a, a], into).sources
    assert (first.processes, second.processes, second.processes_present) == (6, 0, 6)
    assert second.results == 0 and second.results_present == 2
    assert _counts(into)["results"] == 6


def test_three_machines_merged_in_two_steps_keep_their_origin(
    tmp_path: Path, two_machines
) -> None:
    a, id_a, b, id_b = two_machines
    c = tmp_path / "C.db"
    id_c = _machine_db(c, "arm")
    ab, everything = tmp_path / "AB.db", tmp_path / "ALL.db"
    merge_databases([a, b], ab)
    summary = merge_databases([ab, c], everything)
    assert [(s.processes, s.results, s.environments) for s in summary.sources] == [
        (12, 4, 2), (6, 2, 1)]
    with ResultStore(ab) as store:
        id_ab = store.db_id()
    merged = _rows(everything, "results")
    # rows merged into AB earlier keep the database they were measured in, not AB's id
    assert {r["origin_db"] for r in merged} == {id_a, id_b, id_c}
    assert id_ab not in {r["origin_db"] for r in merged}
    assert {r["device"] for r in merged} == set(DEVICES.values())
    # A again, directly: its rows came through AB already
    again = merge_databases([a], everything)
    assert again.processes == again.results == 0
    assert _counts(everything)["results"] == 18 and _counts(everything)["combined_results"] == 6


def test_merging_back_recognises_the_targets_own_rows(tmp_path: Path, two_machines) -> None:
    a, id_a, b, id_b = two_machines
    merge_databases([b], a)  # A has its own rows (origin NULL) and B's
    own = [r for r in _rows(a, "results") if r["origin_db"] is None]
    assert len(own) == 6
    # A's rows travel to ALL with A's id; merging ALL back into A adds nothing
    everything = tmp_path / "ALL.db"
    merge_databases([a], everything)
    assert {r["origin_db"] for r in _rows(everything, "results")} == {id_a, id_b}
    back = merge_databases([everything], a)
    assert back.processes == back.results == 0 and back.sources[0].processes_present == 12
    # a copy of a database (same db id) adds nothing to it either
    copy = tmp_path / "copy.db"
    shutil.copy(a, copy)
    assert merge_databases([copy], a).processes == 0
    assert _counts(a)["results"] == 12


def test_into_an_existing_database_keeps_its_rows_and_costs(tmp_path: Path, two_machines) -> None:
    a, _, _, _ = two_machines
    into = tmp_path / "ALL.db"
    with ResultStore(into) as store:
        store.save(make_record(model="vgg16"))
        store.put_costs("vgg16", 224, {**COSTS, "macs_per_image": 1.5e10})
        store.put_peaks("env-epyc", [{"dtype": "fp32", "gflops_s": 1.0}])
    (summary,) = merge_databases([a], into).sources
    assert (summary.processes, summary.costs, summary.costs_differing) == (6, 1, 1)
    assert (summary.peaks, summary.peaks_present) == (0, 1)
    with ResultStore(into) as store:
        assert store.count() == 7
        assert store.get_costs("vgg16", 224)["macs_per_image"] == 1.5e10  # the target's kept
        assert store.get_peaks("env-epyc")["fp32"]["gflops_s"] == 1.0


def test_one_sweep_on_two_machines_of_one_type_keeps_both_results(tmp_path: Path) -> None:
    # Same machine type and software: the same env id, so the same sweep result ids.
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    _machine_db(a, "epyc", env_id="env-same", result_tag="sweep")
    id_b = _machine_db(b, "epyc", env_id="env-same", result_tag="sweep", speed=90.0)
    into = tmp_path / "ALL.db"
    first, second = merge_databases([a, b], into).sources
    assert (first.processes, first.results, first.results_renamed) == (6, 2, 0)
    assert (second.processes, second.results, second.results_renamed) == (6, 2, 2)
    with ResultStore(into) as store:
        rows = store.result_rows()
        assert len(rows) == 4 and {r["processes"] for r in rows} == {3}
        renamed = {r.result_id for r in store.combined(origin_db=id_b)}
        assert len(renamed) == 2 and not renamed & {f"r-sweep-{m}" for m in MODELS}
        for result_id in renamed:
            assert len(store.processes(result_id)) == 3
        assert renamed == {f"r-sweep-{m}@{id_b[-8:]}" for m in MODELS}
    again = merge_databases([a, b], into)
    assert again.processes == again.results == 0


def test_a_renamed_result_is_recognised_through_another_database(tmp_path: Path) -> None:
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    id_a = _machine_db(a, "epyc", env_id="env-same", result_tag="sweep")
    id_b = _machine_db(b, "epyc", env_id="env-same", result_tag="sweep", speed=90.0)
    assert merge_databases([a], b).sources[0].results_renamed == 2  # A's are renamed in B
    into = tmp_path / "ALL.db"
    merge_databases([a], into)  # A's keep their own ids in ALL
    (via_b,) = merge_databases([b], into).sources
    # B's own results are renamed in ALL; A's (renamed in B) are found under their own ids
    assert (via_b.processes, via_b.results, via_b.results_renamed) == (6, 2, 2)
    assert (via_b.processes_present, via_b.results_present) == (6, 2)
    with ResultStore(into) as store:
        assert {r.result_id for r in store.combined(origin_db=id_a)} == {
            f"r-sweep-{m}" for m in MODELS}
        assert {r.result_id for r in store.combined(origin_db=id_b)} == {
            f"r-sweep-{m}@{id_b[-8:]}" for m in MODELS}
        assert {r["processes"] for r in store.result_rows()} == {3}
    # a renamed result whose plain id is free gets it back: B without its own results
    only_a = tmp_path / "only_a.db"
    shutil.copy(b, only_a)
    conn = sqlite3.connect(only_a)
    conn.execute("DELETE FROM results WHERE origin_db IS NULL")
    conn.execute("DELETE FROM combined_results WHERE origin_db IS NULL")
    conn.commit()
    conn.close()
    other = tmp_path / "OTHER.db"
    assert merge_databases([only_a], other).sources[0].results_renamed == 0
    with ResultStore(other) as store:
        assert {r.result_id for r in store.combined(origin_db=id_a)} == {
            f"r-sweep-{m}" for m in MODELS}
        assert {r["processes"] for r in store.result_rows()} == {3}


def test_a_newer_copy_of_a_result_replaces_the_merged_one(tmp_path: Path) -> None:
    a, into = tmp_path / "A.db", tmp_path / "ALL.db"
    _machine_db(a, "epyc", models=("vgg16",), k=2)
    merge_databases([a], into)
    # the sweep resumes on A: a third process, and the combined figure again
    with ResultStore(a) as store:
        records = store.processes("r-epyc-vgg16")
        third = records[0].replace(started_at="2026-12-02T00:00:00+00:00",
                                   process=ProcessInfo("r-epyc-vgg16", 2, 2))
        store.save(third, sweep_id="sw1", label="nightly")
        result = combine.combine([*records, third], "r-epyc-vgg16", POLICY)
        store.save_result(result, POLICY, True, sweep_id="sw1", label="nightly")
    conn = sqlite3.connect(a)
    conn.execute("UPDATE combined_results SET updated_at = '2099-01-01T00:00:00+00:00'")
    conn.commit()
    conn.close()
    (summary,) = merge_databases([a], into).sources
    assert (summary.processes, summary.results, summary.results_updated) == (1, 0, 1)
    with ResultStore(into) as store:
        (merged,) = store.combined()
        assert merged.k == 3 and len(store.processes("r-epyc-vgg16")) == 3


def test_one_result_id_for_two_results_is_refused(tmp_path: Path, two_machines) -> None:
    a, _, _, _ = two_machines
    into = tmp_path / "ALL.db"
    with ResultStore(into) as store:  # another configuration under A's result id
        record = make_record(model="vgg16", mode="eager").replace(
            process=ProcessInfo("r-epyc-resnet50_v1", 0, 0))
        store.save(record)
        store.save_result(combine.combine([record], "r-epyc-resnet50_v1", POLICY), POLICY, True)
    before = _hashes(a, into)
    with pytest.raises(UserError, match="one id for two results"):
        merge_databases([a], into)
    assert _hashes(a, into) == before


# ------------------------------------------------------------------------- old schemas
def _as_schema_3(path: Path) -> None:
    """Turn a current database into what schema 3 wrote: no v4 or v5 columns, no merges, no
    db id."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "ALTER TABLE results DROP COLUMN scenario; ALTER TABLE results DROP COLUMN "
        "scenario_figure; ALTER TABLE combined_results DROP COLUMN scenario;"
        "DROP INDEX results_label; DROP TABLE merges;"
        "ALTER TABLE results DROP COLUMN device; ALTER TABLE results DROP COLUMN label;"
        "ALTER TABLE results DROP COLUMN origin_db;"
        "ALTER TABLE combined_results DROP COLUMN label;"
        "ALTER TABLE combined_results DROP COLUMN origin_db;"
        "DELETE FROM meta WHERE key = 'db_id';"
        "UPDATE meta SET value = '3' WHERE key = 'schema_version';"
    )
    conn.commit()
    conn.close()


def _schema(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        conn.close()


def test_a_schema_3_source_is_read_as_it_is(tmp_path: Path) -> None:
    old, into = tmp_path / "old.db", tmp_path / "ALL.db"
    _machine_db(old, "xeon")
    _as_schema_3(old)
    before = _hashes(old)
    (summary,) = merge_databases([old], into).sources
    assert _hashes(old) == before and _schema(old) == "3"  # not migrated: only read
    assert summary.schema_version == 3 and summary.db_id.startswith(LEGACY_PREFIX)
    assert (summary.processes, summary.results, summary.peaks) == (6, 2, 1)
    rows = _rows(into, "results")
    assert {(r["device"], r["origin_db"], r["label"]) for r in rows} == {
        (DEVICES["xeon"], summary.db_id, None)}  # device named from the stored environment
    assert merge_databases([old], into).sources[0].db_id == summary.db_id  # the same id
    assert _counts(into)["results"] == 6
    # opened by xlabench since (migrated: the migration gives it the id merge derived), it
    # still adds nothing twice
    with ResultStore(old) as store:
        assert store.db_id() == summary.db_id
    again = merge_databases([old], into)
    assert again.processes == again.results == 0


def test_a_schema_1_source_is_read_as_it_is(tmp_path: Path, record_factory) -> None:
    from tests.unit.test_store import _v1_database

    old, into = tmp_path / "v1.db", tmp_path / "ALL.db"
    _v1_database(old, record_factory)
    before = _hashes(old)
    (summary,) = merge_databases([old], into).sources
    assert _hashes(old) == before and _schema(old) == "1"
    assert (summary.processes, summary.results, summary.schema_version) == (1, 0, 1)
    with ResultStore(into) as store:
        (row,) = store.result_rows()
        assert row["device"] == "a100" and row["processes"] == 1
        assert row["origin_db"] == summary.db_id and row["sweep_id"] == "old-sweep"


# ------------------------------------------------------------------------ the command
def _run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xlabench.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_command_prints_one_line_per_source(tmp_path: Path, two_machines) -> None:
    _, id_a, _, id_b = two_machines
    result = _run_cli(tmp_path, "merge", "A.db", "B.db", "--into", "ALL.db")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"merged A.db (db id {id_a}): 6 processes, 2 results, 1 environment, 1 peak, "
        "2 model costs (0 already present)",
        f"merged B.db (db id {id_b}): 6 processes, 2 results, 1 environment, 1 peak "
        "(2 already present)",
    ]
    again = _run_cli(tmp_path, "merge", "A.db", "--into", "ALL.db")
    assert again.stdout == (f"merged A.db (db id {id_a}): 0 processes, 0 results, "
                            "0 environments, 0 peaks (11 already present)\n")


def _truncated(path: Path) -> None:
    _machine_db(path, "epyc", k=40)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _corrupt_page(path: Path) -> None:
    """Its header and meta table intact, two pages of its rows overwritten."""
    _machine_db(path, "epyc", k=40)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle:middle + 8192] = os.urandom(8192)
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()


def _newer(path: Path) -> None:
    _machine_db(path, "arm")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


BAD = {
    "missing": (lambda p: None, "no database at bad.db"),
    "empty": (lambda p: p.write_bytes(b""), "is empty, not an xlabench database"),
    "random bytes": (lambda p: p.write_bytes(os.urandom(8192)), "not an xlabench database"),
    "truncated": (_truncated, "bad.db is not an xlabench database (database disk image"),
    "corrupt page": (_corrupt_page, "bad.db is damaged (Page "),
    "foreign sqlite": (_foreign, "not an xlabench database"),
    "newer schema": (_newer, "newer xlabench (schema 99 > 5)"),
}


@pytest.mark.parametrize("new_target", [False, True], ids=["existing target", "new target"])
@pytest.mark.parametrize("kind", list(BAD))
def test_bad_input_is_one_line_and_changes_no_file(
    tmp_path: Path, two_machines, kind: str, new_target: bool
) -> None:
    a, _, b, _ = two_machines
    into, bad = tmp_path / "ALL.db", tmp_path / "bad.db"
    if not new_target:
        merge_databases([b], into)
    make, fragment = BAD[kind]
    make(bad)
    before = _hashes(a, b, into, bad)
    result = _run_cli(tmp_path, "merge", "A.db", "bad.db", "--into", "ALL.db")
    _assert_one_clear_line(result, fragment)
    assert _hashes(a, b, into, bad) == before
    assert into.exists() != new_target  # a new target is not left behind


def test_into_one_of_the_sources_is_refused(tmp_path: Path, two_machines) -> None:
    a, _, b, _ = two_machines
    before = _hashes(a, b)
    result = _run_cli(tmp_path, "merge", "A.db", "B.db", "--into", "./A.db")
    _assert_one_clear_line(result, "cannot be merged into itself")
    assert _hashes(a, b) == before


def test_a_foreign_target_is_refused_untouched(tmp_path: Path, two_machines) -> None:
    into = tmp_path / "notes.db"
    into.write_text("my notes\n")
    result = _run_cli(tmp_path, "merge", "A.db", "--into", "notes.db")
    _assert_one_clear_line(result, "not an xlabench database")
    assert into.read_text() == "my notes\n"


def test_into_is_required(tmp_path: Path) -> None:
    _assert_one_clear_line(_run_cli(tmp_path, "merge", "A.db"), "--into")


def _assert_one_clear_line(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("xlabench: error:")
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


# ---------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_two_real_machines_merge_into_one_report(tmp_path: Path) -> None:
    """Two real runs, one pinned to one core (another device), merged and read back. They run
    side by side to keep the test short: their processes may be flagged as measured under
    interference, which a merge keeps as it is."""
    if len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None:
        pytest.skip("needs two cores and taskset: one core count per database")
    from tests.sweep.conftest import MOBILENET_COSTS
    from xlabench.analysis import load_results

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "JAX_PLATFORMS": "cpu"}
    cli = [sys.executable, "-m", "xlabench.cli.main"]
    runs = []
    for name, pin, processes in (("A.db", ["taskset", "-c", "0"], "1"), ("B.db", [], "2")):
        with ResultStore(tmp_path / name) as store:  # no worker spends time counting costs
            store.put_costs("mobilenet_v3_small", 32, MOBILENET_COSTS)
        runs.append(subprocess.Popen(
            [*pin, *cli, "run", "mobilenet_v3_small", "--backend", "tensorflow", "--mode",
             "graph", "--resolution", "32", "--batch-size", "1", "--processes", processes,
             "--max-processes", processes, "--rerun-flagged", "0", "--budget", "1",
             "--min-sample-time", "0.02", "--db", name],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert "samples/s" in out, err
    merged = subprocess.run([*cli, "merge", "A.db", "B.db", "--into", "ALL.db"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0, merged.stderr
    assert [line.split(": ")[1].split(",")[:2] for line in merged.stdout.splitlines()] == [
        ["1 process", " 1 result"], ["2 processes", " 1 result"]]
    shown = subprocess.run([*cli, "results", "--db", "ALL.db"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert sum("mobilenet_v3_small" in line for line in shown.stdout.splitlines()) == 2
    with ResultStore(tmp_path / "ALL.db") as store:
        devices = {row["device"] for row in store.rows()}
        assert len(store.result_rows()) == 2
    assert len(devices) == 2 and any(d.endswith("×1") for d in devices), devices
    frame = load_results(tmp_path / "ALL.db")
    assert frame["device"].nunique() == 2, frame["device"].tolist()
