"""Stored results as one pandas DataFrame: flat columns, plus what analysis needs from the JSON.

Derived columns (beside every flat column of `results` and its `id`):
    device: what the run used, named by `core.device.device_name` when it was stored (a GPU's
        short name, ``a100``; a CPU's model, microarchitecture and cores,
        ``AMD EPYC (Zen 4) ×2``): the report's per-device findings group by it.
    figure: the Result the run's result was stored with (`combined_results`), None where
        none was: the one figure of a result that every reader shows (`store.view`).
    complete: whether the run's result is complete (`store.view`: the sweep's stored decision;
        a row from before results had processes, or an imported one, is): an incomplete one
        is never a configuration's latest (`result_rows.latest_per_config`).
    origin: ``local`` (measured by xlabench) or ``published`` (imported from a CSV).
    provenance: a short text for tables, e.g. ``published (study.csv; unsynced, no CI)``.
    gmacs_per_image / gflops_per_image / params_m: costs in the units tables show.
    sample_sps: the raw per-sample throughputs (samples/s), for bootstrap intervals.
    ci_confidence, runner, seed, duration_s, scenario_outcome, interference_reason: what of
        the record the store's view reads (`store.view.process_row`): the confidence one
        process's own interval achieves; python, or native (timed by xlabench-native): part
        of what a configuration is; the seed; how long the process ran; a LoadGen scenario's
        outcome as stored; why it counts as measured under interference (None if it does not).
    measured_peak_fp32_gflops_s / measured_peak_bf16_gflops_s: the matmul peak measured once
        for the row's environment (`measure.peak`, table `device_peaks`): the best GEMM
        library's; NaN if none. peak_fp32_library / peak_bf16_library: which library that
        was ("" if none); theoretical_peak_fp32_gflops_s / theoretical_peak_bf16_gflops_s:
        the CPU's theoretical peak stored with it (`core.cpu`), NaN if none.
    cpu_threads: the CPUs the worker could use (its record's environment), NaN if unknown.
    compile_stages_s: the record's named compile stages in seconds (a dict; native records:
        export, package, native_load, native_prepare), {} where none were stored.
    same_compiler: native records: whether xlabench-native runs the compiler the Python
        runner of the same configuration runs (True, False), None where not recorded.
    scenario_settings: a LoadGen scenario record's spec's scenario settings as canonical
        JSON ("" for the timed loop): with `scenario`, what besides the precision makes two
        results alike. (Its `scenario_outcome` is the stored `core.scenario.ScenarioOutcome`
        as a dict: figure, batching, LoadGen's summary; None for the timed loop.)
    parity_rtol: the tolerance the parity check judged against (bf16 has a wider one).
    parity_own_spread_rel: the parity reference's difference from itself
        (`core.record.Parity.own_spread_rel`), NaN where not measured.
    xla_flags: the XLA_FLAGS the worker ran with (its record's environment flags; an `xlabench
        ab` side's variables are among them), "" where unset.
Each row is one worker process; a result's row is the store's (`store.view.result_view`, read
from these rows by `result_rows.every_result`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from xlabench.core.result import Result, machine_id, software_id
from xlabench.measure.summarize import per_sample_sps
from xlabench.store import ResultStore
from xlabench.store.schema import RESULT_COLUMNS
from xlabench.store.view import is_complete, process_row

#: The dimensions the report filters on.
FILTER_COLUMNS = ("device", "resolution", "backend", "mode", "precision")
IMPORT_PREFIX = "import:"
DERIVED_COLUMNS = (
    "device", "origin", "provenance", "gmacs_per_image", "gflops_per_image", "params_m",
    "steps_per_sample", "sample_sps", "measured_peak_fp32_gflops_s",
    "measured_peak_bf16_gflops_s", "peak_fp32_library", "peak_bf16_library",
    "theoretical_peak_fp32_gflops_s", "theoretical_peak_bf16_gflops_s", "cpu_threads",
)
#: Measured peaks by environment id, then dtype: `ResultStore.all_peaks()`.
Peaks = dict[str, dict[str, dict[str, Any]]]
PEAK_DTYPES = ("fp32", "bf16")
_FLAT = tuple((name, kind) for name, kind in RESULT_COLUMNS if name != "record_json")


def load_results(db_path: str | os.PathLike[str]) -> pd.DataFrame:
    """Every stored result of an xlabench database, one row per run.

    Args:
        db_path: an existing xlabench SQLite file.

    Returns:
        The frame described in this module's docstring.
    """
    with ResultStore(db_path) as store:
        rows = store.rows_with_records()
        peaks = store.all_peaks()
        stored = store.stored_results()
    return results_frame(rows, peaks, stored)


def results_frame(rows: Iterable[dict[str, Any]], peaks: Peaks | None = None,
                  stored: Mapping[str, tuple[Result, bool]] | None = None) -> pd.DataFrame:
    """The analysis frame from `ResultStore.rows_with_records()`-style dicts, with the
    measured peaks of each row's environment from `peaks` (`ResultStore.all_peaks()`) and
    each result's stored figure and completeness from `stored`
    (`ResultStore.stored_results()`)."""
    stored = stored or {}
    flat_rows = [_flatten(row) for row in rows]
    for row in flat_rows:
        result_id = row.get("result_id")
        row["figure"] = stored[result_id][0] if result_id in stored else None
        row["complete"] = is_complete(result_id, stored)
    columns = ["id", *(name for name, _ in _FLAT), "steps_per_sample", "sample_s", "misbuilt",
               "ci_confidence", "runner", "seed", "duration_s", "interference_reason",
               "compile_stages_s", "machine_id", "software_id", "same_compiler", "figure",
               "complete", "cpu_threads", "scenario_outcome", "scenario_settings", "parity_rtol",
               "parity_own_spread_rel", "xla_flags"]
    frame = pd.DataFrame(flat_rows, columns=columns)
    frame = _typed(frame)
    return _with_peaks(_derive(frame), peaks or {})


def _with_peaks(frame: pd.DataFrame, peaks: Peaks) -> pd.DataFrame:
    def method(dtype: str, key: str, default: Any) -> pd.Series:
        def one(env: Any) -> Any:
            value = (peaks.get(str(env), {}).get(dtype) or {}).get(key)
            return default if value is None else value

        return frame["env_id"].map(one)

    columns: dict[str, pd.Series] = {}
    for dtype in PEAK_DTYPES:
        columns[f"measured_peak_{dtype}_gflops_s"] = method(
            dtype, "gflops_s", float("nan")).astype("float64")
        # Peaks stored before libraries were compared are torch's (`MatmulPeak.from_dict`).
        library = method(dtype, "library", "torch").astype(object)
        columns[f"peak_{dtype}_library"] = library.where(
            columns[f"measured_peak_{dtype}_gflops_s"].notna(), "")
        columns[f"theoretical_peak_{dtype}_gflops_s"] = method(
            dtype, "theoretical_gflops_s", float("nan")).astype("float64")
    return frame.assign(**columns)


def _flatten(row: dict[str, Any]) -> dict[str, Any]:
    """A process row as the store's view reads it (`store.view.process_row`), with what the
    analysis needs beside it from the record."""
    record = json.loads(row["record_json"]) if row.get("record_json") else {}
    flat = process_row(row, record)
    throughput = record.get("throughput") or {}
    flat["steps_per_sample"] = throughput.get("steps_per_sample")
    flat["sample_s"] = list(throughput.get("sample_s") or [])
    flat["misbuilt"] = (record.get("provenance") or {}).get("misbuilt", "")
    flat["machine_id"] = machine_id(record.get("env") or {})
    flat["software_id"] = software_id(record.get("env") or {}, str(row.get("backend", "")))
    stages = (record.get("warmup") or {}).get("compile_stages_s") or {}
    flat["compile_stages_s"] = {str(k): float(v) for k, v in stages.items()}
    info = record.get("backend_info") or {}
    flat["same_compiler"] = info.get("same_compiler")
    # What the runtime says it computed in (OpenVINO's compiled model); a framework computes
    # in the dtype policy of the spec's precision (the worker checks own models' layers).
    flat["executed_precision"] = info.get("executed_precision") or row.get("precision")
    threads = (record.get("env") or {}).get("cpu_threads")
    flat["cpu_threads"] = threads if isinstance(threads, int | float) and threads else None
    spec = record.get("spec") or {}
    flat["scenario_settings"] = (json.dumps(spec.get("scenario_settings") or {}, sort_keys=True)
                                 if spec.get("scenario") else "")
    parity = record.get("parity") or {}
    flat["parity_rtol"] = parity.get("rtol")
    flat["parity_own_spread_rel"] = parity.get("own_spread_rel")
    flat["xla_flags"] = str(((record.get("env") or {}).get("flags") or {}).get("XLA_FLAGS")
                            or "")
    return flat


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """SQL types to pandas ones, so an empty db gives the same dtypes as a full one."""
    types: dict[str, Any] = {"id": "int64", "steps_per_sample": "float64",
                             "ci_confidence": "float64", "cpu_threads": "float64",
                             "parity_rtol": "float64", "parity_own_spread_rel": "float64",
                             "duration_s": "float64"}
    for name, kind in _FLAT:
        if kind.startswith("REAL") or kind == "INTEGER":
            types[name] = "float64"  # nullable numbers: NaN marks "not measured"
        elif kind.startswith("INTEGER"):
            types[name] = "int64"
        else:
            types[name] = "object"
    for name, dtype in types.items():
        values = frame[name]
        frame[name] = pd.to_numeric(values) if dtype != "object" else values.astype(object)
        frame[name] = frame[name].astype(dtype)
    return frame


def _derive(frame: pd.DataFrame) -> pd.DataFrame:
    published = frame["source"].astype(str).str.startswith(IMPORT_PREFIX)
    gmacs = frame["macs_per_image"] / 1e9
    # XLA's cost analysis counts every op; without it, 2 FLOPs per multiply-accumulate.
    flops = frame["flops_per_image"].fillna(2 * frame["macs_per_image"])
    return frame.assign(
        device=frame["device"].where(frame["device"].notna(), frame["accelerator"]),
        origin=published.map({True: "published", False: "local"}).astype(object),
        provenance=[_provenance(s, m) for s, m in zip(frame["source"], frame["misbuilt"],
                                                      strict=True)],
        gmacs_per_image=gmacs,
        gflops_per_image=flops / 1e9,
        params_m=frame["params"] / 1e6,
        sample_sps=[_per_sample_sps(r) for r in frame.itertuples()],
    ).drop(columns=["sample_s", "misbuilt"])


def _provenance(source: str, misbuilt: str) -> str:
    if str(source).startswith(IMPORT_PREFIX):
        note = f"; {misbuilt}" if misbuilt else ""
        return f"published ({source[len(IMPORT_PREFIX):]}; unsynced, no CI{note})"
    return str(source)


def _per_sample_sps(row: Any) -> list[float]:
    """Throughput of each raw sample (`measure.summarize.per_sample_sps`)."""
    if not row.sample_s or not row.steps_per_sample or pd.isna(row.steps_per_sample):
        return []
    return per_sample_sps(row.batch_size, row.steps_per_sample, row.sample_s)
