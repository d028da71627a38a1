"""The one SQLite schema, with its version and the migrations that reach it.

`results` keeps one row per run: the columns analysis needs, flat and typed, plus the whole
Record as JSON (raw samples, environment) so nothing measured is ever lost.
"""

from __future__ import annotations

SCHEMA_VERSION = 5
APPLICATION = "xlabench"

#: Flat columns of `results` derived from a Record, in order, with their SQL types.
RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("spec_id", "TEXT NOT NULL"),
    ("env_id", "TEXT NOT NULL"),
    ("source", "TEXT NOT NULL"),
    ("created_at", "TEXT NOT NULL"),
    ("model", "TEXT NOT NULL"),
    ("family", "TEXT NOT NULL"),
    ("kind", "TEXT NOT NULL"),
    ("backend", "TEXT NOT NULL"),
    ("mode", "TEXT NOT NULL"),
    ("compiled", "INTEGER NOT NULL"),
    ("resolution", "INTEGER NOT NULL"),
    ("batch_size", "INTEGER NOT NULL"),
    ("precision", "TEXT NOT NULL"),
    ("weights", "TEXT NOT NULL"),
    ("tf32", "INTEGER NOT NULL"),
    ("repeat", "INTEGER NOT NULL"),
    ("accelerator", "TEXT NOT NULL"),
    ("status", "TEXT NOT NULL"),
    ("error", "TEXT"),
    ("throughput_sps", "REAL"),
    ("throughput_sps_ci_low", "REAL"),
    ("throughput_sps_ci_high", "REAL"),
    ("rel_ci_halfwidth", "REAL"),
    ("precision_target_met", "INTEGER"),
    ("n_samples", "INTEGER"),
    ("batch_time_ms", "REAL"),
    ("latency_ms_p50", "REAL"),
    ("latency_ms_p90", "REAL"),
    ("latency_ms_p99", "REAL"),
    ("first_call_s", "REAL"),
    ("compile_s", "REAL"),
    ("peak_host_mem_mb", "REAL"),
    ("peak_device_mem_mb", "REAL"),
    ("params", "INTEGER"),
    ("macs_per_image", "REAL"),
    ("flops_per_image", "REAL"),
    ("parity_passed", "INTEGER"),
    ("parity_max_abs_diff", "REAL"),
    ("parity_max_rel_diff", "REAL"),
    ("synced", "INTEGER NOT NULL"),
    ("sweep_id", "TEXT"),
    ("record_json", "TEXT NOT NULL"),
    # v2: a result is several processes. NULL result_id: a v1 row, a result of its own (k = 1).
    ("result_id", "TEXT"),
    ("process_index", "INTEGER"),
    ("process_round", "INTEGER"),
    ("interference_other_pct", "REAL"),
    ("interference_steal_pct", "REAL"),
    ("interference_flagged", "INTEGER"),
    # v4: the device named for people (`core.device.device_name`: a GPU's short name, a CPU's
    # model, microarchitecture and cores), the run's label (`--label`), and the database a
    # merged row was measured into (NULL: this one; `store.merge`).
    ("device", "TEXT"),
    ("label", "TEXT"),
    ("origin_db", "TEXT"),
    # v5: the LoadGen scenario a process ran ('' for the timed loop: `Spec.scenario`) and its
    # figure in the scenario's unit (`core.scenario.FIGURES`; NULL for the timed loop), so
    # readers select scenario results without parsing every record's JSON.
    ("scenario", "TEXT NOT NULL DEFAULT ''"),
    ("scenario_figure", "REAL"),
)
#: Columns of a v1 table, and those v2, v4 and v5 added (the migrations add them).
V1_RESULT_COLUMNS = RESULT_COLUMNS[:-11]
V2_RESULT_COLUMNS = RESULT_COLUMNS[-11:-5]
V4_RESULT_COLUMNS = RESULT_COLUMNS[-5:-2]
V5_RESULT_COLUMNS = RESULT_COLUMNS[-2:]

#: One row per result: the combined figure of its processes (the Result as JSON beside it).
COMBINED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("result_id", "TEXT PRIMARY KEY"),
    ("spec_id", "TEXT NOT NULL"),
    ("env_id", "TEXT NOT NULL"),
    ("sweep_id", "TEXT"),
    ("updated_at", "TEXT NOT NULL"),
    ("status", "TEXT NOT NULL"),
    ("complete", "INTEGER NOT NULL"),
    ("k", "INTEGER NOT NULL"),
    ("k_total", "INTEGER NOT NULL"),
    ("k_flagged", "INTEGER NOT NULL"),
    ("throughput_sps", "REAL"),
    ("throughput_sps_ci_low", "REAL"),
    ("throughput_sps_ci_high", "REAL"),
    ("ci_confidence", "REAL"),
    ("ci_method", "TEXT NOT NULL"),
    ("target_met", "INTEGER NOT NULL"),
    ("flagged", "INTEGER NOT NULL"),
    ("flag_reason", "TEXT NOT NULL"),
    ("policy_json", "TEXT NOT NULL"),
    ("result_json", "TEXT NOT NULL"),
    # v4: as in `results`
    ("label", "TEXT"),
    ("origin_db", "TEXT"),
    # v5: as in `results`. A scenario result's throughput_sps (and interval) is its figure as
    # a rate, higher is faster (`core.scenario.figure_to_rate`): single-stream 1000 / p90 ms.
    ("scenario", "TEXT NOT NULL DEFAULT ''"),
)
V4_COMBINED_COLUMNS = COMBINED_COLUMNS[-3:-1]
V5_COMBINED_COLUMNS = COMBINED_COLUMNS[-1:]
_COMBINED_TABLE = ("CREATE TABLE combined_results ("
                   + ", ".join(f"{name} {kind}" for name, kind in COMBINED_COLUMNS) + ")")
#: The table as v2 made it: the v1 -> v2 migration must not add v4's or v5's columns.
_COMBINED_TABLE_V2 = ("CREATE TABLE combined_results ("
                      + ", ".join(f"{name} {kind}" for name, kind in COMBINED_COLUMNS[:-3]) + ")")
_COMBINED_INDEX = "CREATE INDEX combined_spec ON combined_results (spec_id, env_id)"
_RESULT_INDEX = "CREATE INDEX results_result ON results (result_id)"
# v3: the device's measured peak (matmul GFLOP/s per dtype), once per environment: every
# record of that environment is read against it. `method_json` says how it was measured.
_PEAKS_TABLE = ("CREATE TABLE device_peaks (env_id TEXT NOT NULL, dtype TEXT NOT NULL, "
                "gflops_s REAL NOT NULL, method_json TEXT NOT NULL, created_at TEXT NOT NULL, "
                "PRIMARY KEY (env_id, dtype))")

# v4: every database has an id (meta `db_id`), so rows merged from it keep where they came
# from and merging it twice is recognised; `merges` lists what was merged in, when.
_MERGES_TABLE = ("CREATE TABLE merges (source_db_id TEXT NOT NULL, source_path TEXT NOT NULL, "
                 "merged_at TEXT NOT NULL, processes INTEGER NOT NULL, results INTEGER NOT NULL, "
                 "summary_json TEXT NOT NULL)")
_LABEL_INDEX = "CREATE INDEX results_label ON results (label)"
_SCENARIO_FROM_JSON = (
    "UPDATE results SET scenario = json_extract(record_json, '$.spec.scenario'), "
    "scenario_figure = json_extract(record_json, '$.scenario.figure') "
    "WHERE coalesce(json_extract(record_json, '$.spec.scenario'), '') != ''")
#: A spec id fixes the scenario (it is part of the spec), so a result takes its processes'.
_COMBINED_SCENARIO_FROM_RESULTS = (
    "UPDATE combined_results SET scenario = (SELECT r.scenario FROM results r "
    "WHERE r.spec_id = combined_results.spec_id AND r.scenario != '' LIMIT 1) "
    "WHERE spec_id IN (SELECT spec_id FROM results WHERE scenario != '')")

CREATE_STATEMENTS: tuple[str, ...] = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    + ", ".join(f"{name} {kind}" for name, kind in RESULT_COLUMNS)
    + ")",
    "CREATE INDEX results_spec ON results (spec_id, env_id, status)",
    "CREATE INDEX results_model ON results (model, backend, mode, resolution)",
    # Cost of a model at a resolution does not depend on the backend: computed once, reused.
    "CREATE TABLE model_costs (model TEXT NOT NULL, resolution INTEGER NOT NULL, "
    "params INTEGER, macs_per_image REAL, flops_per_image REAL, method TEXT NOT NULL, "
    "created_at TEXT NOT NULL, PRIMARY KEY (model, resolution))",
    _COMBINED_TABLE,
    _COMBINED_INDEX,
    _RESULT_INDEX,
    _PEAKS_TABLE,
    _MERGES_TABLE,
    _LABEL_INDEX,
)

#: MIGRATIONS[v] upgrades a database at version v to v + 1.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        *(f"ALTER TABLE results ADD COLUMN {name} {kind}" for name, kind in V2_RESULT_COLUMNS),
        _COMBINED_TABLE_V2,
        _COMBINED_INDEX,
        _RESULT_INDEX,
    ),
    2: (_PEAKS_TABLE,),
    # `xlabench_device` is registered on the connection by the store (`core.device`): old
    # rows get the name their stored environment gives.
    3: (
        *(f"ALTER TABLE results ADD COLUMN {name} {kind}" for name, kind in V4_RESULT_COLUMNS),
        *(f"ALTER TABLE combined_results ADD COLUMN {name} {kind}"
          for name, kind in V4_COMBINED_COLUMNS),
        "UPDATE results SET device = xlabench_device(json_extract(record_json, '$.env'))",
        _MERGES_TABLE,
        _LABEL_INDEX,
    ),
    # Scenario results were first stored by schema 5; a record that has one anyway (written
    # by a development build) is given its columns from its JSON, its result from its spec.
    4: (
        *(f"ALTER TABLE results ADD COLUMN {name} {kind}" for name, kind in V5_RESULT_COLUMNS),
        *(f"ALTER TABLE combined_results ADD COLUMN {name} {kind}"
          for name, kind in V5_COMBINED_COLUMNS),
        _SCENARIO_FROM_JSON,
        _COMBINED_SCENARIO_FROM_RESULTS,
    ),
}
