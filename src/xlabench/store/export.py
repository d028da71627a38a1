"""Exports of stored results: the study's CSV schema, and every stored field."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from xlabench.store.scenario_rows import SCENARIO_ROW_KEYS

#: The 2023 study's CSV columns, in its order.
STUDY_COLUMNS = (
    "model_family",
    "model_variant",
    "resolution",
    "xla",
    "accelerator",
    "flop (giga)",
    "params (million)",
    "throughput (samples/sec)",
)


def study_row(row: dict[str, Any]) -> dict[str, Any]:
    """One successful result in the study's schema: `flop (giga)` is GMACs per image, as the
    study computed it (half of TensorFlow's float-op count), and `xla` means a compiled mode."""
    macs = row.get("macs_per_image")
    params = row.get("params")
    return {
        "model_family": row["family"],
        "model_variant": row["model"],
        "resolution": row["resolution"],
        "xla": bool(row["compiled"]),
        "accelerator": row.get("device") or row["accelerator"],  # a CPU named by what it is
        "flop (giga)": "" if macs is None else round(macs / 1e9, 2),
        "params (million)": "" if params is None else round(params / 1e6, 2),
        "throughput (samples/sec)": round(row["throughput_sps"], 2),
    }


def study_csv(rows: Iterable[dict[str, Any]]) -> str:
    """Successful timed-loop results as the study's CSV (a LoadGen scenario's figure is not
    the study's throughput: left out)."""
    ok_rows = [study_row(r) for r in rows
               if r["status"] == "ok" and r["throughput_sps"] and not r.get("scenario")]
    return _csv(STUDY_COLUMNS, ok_rows)


RESULT_CSV_COLUMNS = (
    "id", "result_id", "spec_id", "env_id", "model", "family", "kind", "backend", "mode",
    "resolution", "batch_size", "precision", "accelerator", "device", "label", "origin_db",
    "status", "error", "processes", "processes_total", "complete",
    "throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high", "ci_confidence",
    "ci_method", "precision_target_met", "interference", "latency_ms_p50", "latency_ms_p99",
    "compile_s", "parity_passed", "params", "macs_per_image", "source",
    # a LoadGen scenario result (empty for the timed loop): its figure in its unit with the
    # interval, LoadGen's verdict, the Server latency bound, the shortfall against MLPerf's
    *SCENARIO_ROW_KEYS,
)


def results_csv(result_rows: Iterable[dict[str, Any]]) -> str:
    """One row per result (`ResultStore.result_rows`): the combined figure and its interval,
    its confidence and method, how many processes made it of how many run
    (`processes`, `processes_total`), whether it is `complete` (a killed sweep's is not), and
    why it is flagged (`interference`).
    A scenario result's figure is in `figure` (in `unit`), its throughput columns empty."""
    rows = [{c: r.get(c) for c in RESULT_CSV_COLUMNS} for r in result_rows]
    return _csv(RESULT_CSV_COLUMNS, rows)


def full_csv(rows_with_records: Iterable[dict[str, Any]]) -> str:
    """Every stored column, plus the spec, raw samples, environment and error detail."""
    rows = []
    for row in rows_with_records:
        record = json.loads(row.pop("record_json"))
        throughput = record.get("throughput") or {}
        latency = record.get("latency") or {}
        rows.append({
            **row,
            "spec_json": json.dumps(record["spec"], sort_keys=True),
            "sample_s": json.dumps(throughput.get("sample_s", [])),
            "steps_per_sample": throughput.get("steps_per_sample"),
            "latency_step_s": json.dumps(latency.get("step_s", [])),
            "warmup_json": json.dumps(record.get("warmup"), sort_keys=True),
            "parity_json": json.dumps(record.get("parity"), sort_keys=True),
            "costs_method": (record.get("costs") or {}).get("method", ""),
            "env_json": json.dumps(record.get("env", {}), sort_keys=True),
            "backend_info_json": json.dumps(record.get("backend_info", {}), sort_keys=True),
            "sync": record.get("sync", ""),
            "beside": json.dumps(record.get("beside", [])),
            "duration_s": record.get("duration_s"),
            "provenance_json": json.dumps(record.get("provenance", {}), sort_keys=True),
            "error_detail": record.get("error_detail") or "",
            # a LoadGen scenario's outcome with LoadGen's whole summary ("null": timed loop)
            "scenario_json": json.dumps(record.get("scenario"), sort_keys=True),
            # the machine's speed just before/after the timed phases (measure.probe)
            "probe_before_gflops": (record.get("probe_before") or {}).get("gflops"),
            "probe_after_gflops": (record.get("probe_after") or {}).get("gflops"),
        })
    columns = list(rows[0]) if rows else ["id"]
    return _csv(columns, rows)


def _csv(columns: Iterable[str], rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
