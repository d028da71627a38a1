"""One row per result: the one reading of a stored result that every reader takes (`results`,
`export`, the report's frame, the trackers, `compare`).

A row is display-neutral (numbers and identifiers; the table's text is `cli.tables`'s): its
latest successful process's columns (its latest process's where none succeeded) with the
figure stored for the result (`combined_results`) in place of that process's own, and

    result: the stored `Result` itself (None for a result of one process without one);
    processes, processes_total, processes_flagged: the result's k, k_total and k_flagged;
    processes_used: which processes its figure combined (their indices in the result, as
        combine decided; () where not stored: a result stored before they were kept, a row
        from before results had processes);
    complete: whether the result has every process it was scheduled for (the sweep's stored
        decision, `combined_results.complete`). A killed sweep's result is incomplete, and so
        is a process whose result was never written; a row from before results had
        processes (or an imported one) is a complete result of one process;
    ci_confidence, ci_method, interference (why the result is flagged, "" if it is not),
    flagged (whether it is);
    run_ci_low, run_ci_high: the interval of this result's processes alone (the figure's
        interval without the between-run variation; the same where none was added);
    drift_rel_sd: the between-run variation added to the interval (None where none was);
    between_processes: whether the interval is of several processes' figures;
    process_sps, process_rounds: the combined processes' medians and their rounds as
        ``sweep:round`` (a round pairs only with rounds of the same sweep; a result of one
        process is round ``row{id}:0``, which pairs with nothing);
    n_samples, sample_sps: the samples of the processes the figure combined: how many, and
        their throughputs where the process rows carry them (the analysis frame's do,
        `analysis.load`), else [];
    runner (python or native), seed, duration_s (the latest process's), and
    `store.scenario_rows.SCENARIO_ROW_KEYS`.

The rows are made from process rows (`process_row`: a stored row with what of its record is
no column), so the store's rows and the report's frame, which has more columns per process,
are the same construction.

"The latest result" of a configuration is its latest *complete* one (`latest_complete`): an
incomplete result is listed but never the figure a configuration is shown or compared with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from xlabench.core.record import Interference
from xlabench.core.result import ONE_PROCESS_METHOD, Result, interference_reason
from xlabench.store.scenario_rows import SCENARIO_ROW_KEYS, scenario_fields

Row = TypeVar("Row")
#: What a result's row has beside its process's columns (the module's docstring).
RESULT_ROW_KEYS = (
    "result", "processes", "processes_total", "processes_flagged", "processes_used",
    "complete", "ci_confidence", "ci_method", "interference", "flagged", "run_ci_low",
    "run_ci_high", "drift_rel_sd", "between_processes", "process_sps", "process_rounds",
    "n_samples", "sample_sps", "runner", "seed", "duration_s", *SCENARIO_ROW_KEYS,
)
#: The throughput columns a LoadGen scenario result leaves empty (its figure is in its unit).
_TIMED_LOOP_ONLY = ("throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high",
                    "batch_time_ms")


def batch_time_ms(batch_size: float, throughput_sps: float) -> float:
    """The time of one batch at a throughput: what a result's figure gives per batch."""
    return 1000 * batch_size / throughput_sps


def figure_columns(result: Result, batch_size: int) -> dict[str, Any]:
    """A stored figure as a row's columns, in place of its latest process's own."""
    return {
        "throughput_sps": result.median_sps, "throughput_sps_ci_low": result.ci_low_sps,
        "throughput_sps_ci_high": result.ci_high_sps, "rel_ci_halfwidth": result.rel_ci_halfwidth,
        "ci_confidence": result.ci_confidence, "ci_method": result.ci_method,
        "batch_time_ms": (None if not result.median_sps
                          else batch_time_ms(batch_size, result.median_sps)),
        "processes": result.k, "processes_total": result.k_total,
        "processes_flagged": result.k_flagged,
    }


def process_row(stored: Mapping[str, Any], record: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """A stored process row (`ResultStore.rows_with_records`) as the view reads it: its
    columns but `record_json`, and what of its record (`record`: its `record_json` parsed,
    where the caller has parsed it already) is no column: the runner (python or native: part
    of the configuration), the seed, how long the process ran, its own interval's
    confidence, its LoadGen scenario's outcome (None for the timed loop) and why it counts as
    measured under interference (None if it does not, or was not measured)."""
    if record is None:
        text = stored.get("record_json")
        record = json.loads(text) if text else {}
    spec = record.get("spec") or {}
    figures = record.get("interference")
    return {**{k: v for k, v in stored.items() if k != "record_json"},
            "runner": spec.get("runner", "python"), "seed": spec.get("seed"),
            "duration_s": record.get("duration_s"),
            "ci_confidence": (record.get("throughput") or {}).get("ci_confidence"),
            "scenario_outcome": record.get("scenario"),
            "interference_reason": interference_reason(_interference(figures))}


def result_view(processes: Iterable[Mapping[str, Any]],
                stored: Mapping[str, tuple[Result, bool]]) -> list[dict[str, Any]]:
    """One row per result, oldest first (by its latest process), from `process_row`s (oldest
    first; the analysis frame's rows are such rows with more columns) and the stored results
    by id (with `complete`)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    for row in processes:
        result_id = _text(row.get("result_id"))
        if result_id:
            groups.setdefault(result_id, []).append(row)
        else:  # from before results had processes, or imported: a result of its own
            out.append(_one_process_row(row, complete=True))
    for result_id, rows in groups.items():
        found = stored.get(result_id)
        out.append(_result_row(rows, *found) if found
                   else _one_process_row(_latest(rows), is_complete(result_id, stored)))
    out.sort(key=lambda r: r["id"])
    return out


def is_complete(result_id: str | None, stored: Mapping[str, tuple[Result, bool]]) -> bool:
    """Whether the result a process belongs to is complete (the module's docstring)."""
    if not result_id:
        return True  # from before results had processes, or imported: a result of its own
    found = stored.get(result_id)
    return found is not None and found[1]


def latest_complete(rows: Iterable[Row], key: Callable[[Row], Hashable],
                    complete: Callable[[Row], bool]) -> dict[Hashable, Row]:
    """The latest complete row of each configuration (`key`), from rows oldest first:
    the one definition of "the latest result" (an incomplete one never is)."""
    found: dict[Hashable, Row] = {}
    for row in rows:
        if complete(row):
            found[key(row)] = row
    return found


def _latest(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """A result's latest successful process, or its latest one where none succeeded: whose
    columns (latency, compile time, parity...) the result's row shows."""
    ok = [row for row in rows if row.get("status") == "ok"]
    return (ok or rows)[-1]


def _one_process_row(row: Mapping[str, Any], complete: bool) -> dict[str, Any]:
    """A result of one process: a row from before results had processes, an imported one,
    or a process whose result was never written (a killed sweep's: incomplete)."""
    result_id = _text(row.get("result_id"))
    why = _text(row.get("interference_reason")) if result_id else ""
    sps = _number(row.get("throughput_sps"))
    return {**row, "result": None, "processes": 1, "processes_total": 1,
            "processes_flagged": int(bool(why)), "complete": complete,
            "processes_used": (int(row["process_index"]),) if result_id else (),
            "ci_method": ONE_PROCESS_METHOD, "interference": why, "flagged": bool(why),
            "run_ci_low": row.get("throughput_sps_ci_low"),
            "run_ci_high": row.get("throughput_sps_ci_high"), "drift_rel_sd": None,
            "between_processes": False, "process_sps": [sps] if sps else [],
            "process_rounds": [f"row{row['id']}:0"], "n_samples": row.get("n_samples"),
            "sample_sps": _samples([row]),
            **scenario_fields(_text(row.get("scenario")), _outcome(row))}


def _result_row(rows: Sequence[Mapping[str, Any]], result: Result, complete: bool
                ) -> dict[str, Any]:
    """A result with a stored figure: its latest successful process's columns, the figure's
    in their place."""
    row = _latest(rows)
    used = _used(rows, result)
    shared = {**row, "result": result, "processes": result.k,
              "processes_total": result.k_total, "processes_flagged": result.k_flagged,
              "complete": complete, "processes_used": result.process_indices,
              "interference": result.flag_reason, "flagged": result.flagged,
              "between_processes": result.between_processes,
              "drift_rel_sd": result.drift_rel_sd,
              "process_sps": list(result.process_medians_sps),
              "process_rounds": [f"{row.get('sweep_id')}:{r}" for r in result.process_rounds],
              "n_samples": sum(_number(r.get("n_samples")) or 0 for r in used) or None,
              "sample_sps": _samples(used)}
    scenario, outcome = _text(row.get("scenario")), _outcome(row)
    if result.status != "ok":
        return {**shared, "status": result.status, "error": result.error,
                "ci_confidence": None, "ci_method": "", "run_ci_low": None,
                "run_ci_high": None, **scenario_fields(scenario, outcome)}
    combined = {
        **shared, "status": "ok", "error": None, **figure_columns(result, row["batch_size"]),
        "precision_target_met": int(result.target_met),
        "run_ci_low": _first(result.run_ci_low_sps, result.ci_low_sps),
        "run_ci_high": _first(result.run_ci_high_sps, result.ci_high_sps),
    }
    if not scenario:
        return {**combined, **scenario_fields("", None)}
    # A scenario's combined rate is no timed-loop throughput (single-stream: 1000 / p90): it
    # is shown as the figure, in the scenario's unit, and the throughput columns stay empty.
    figures = scenario_fields(scenario, outcome, result.median_sps, result.ci_low_sps,
                              result.ci_high_sps)
    return {**combined, **dict.fromkeys(_TIMED_LOOP_ONLY), **figures}


def _used(rows: Sequence[Mapping[str, Any]], result: Result) -> list[Mapping[str, Any]]:
    """The (successful) processes the stored figure combined: combine's decision, stored with
    it (`Result.process_indices`). A result stored before that was kept combined the clean
    ones, or every one when all were flagged."""
    ok = [row for row in rows if row.get("status") == "ok"]
    if result.process_indices:
        return [row for row in ok if row.get("process_index") in result.process_indices]
    clean = [row for row in ok if not _text(row.get("interference_reason"))]
    return clean or ok


def _samples(rows: Iterable[Mapping[str, Any]]) -> list[float]:
    """The per-sample throughputs of `rows`, where they carry them (`sample_sps`)."""
    found: list[float] = []
    for row in rows:
        samples = row.get("sample_sps")
        if isinstance(samples, list | tuple):
            found.extend(samples)
    return found


def _interference(figures: Mapping[str, Any] | None) -> Interference | None:
    """A record's stored interference figures (None where none were measured)."""
    if not figures:
        return None
    return Interference(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in figures.items()})


def _outcome(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A LoadGen scenario process's stored outcome (None for the timed loop, or a failure)."""
    outcome = row.get("scenario_outcome")
    return outcome if isinstance(outcome, dict) else None


def _text(value: Any) -> str:
    """A text column's value ("" where it is empty: None, or NaN in a frame)."""
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    """A number column's value (None where it is empty: None, or NaN in a frame)."""
    if value is None or isinstance(value, str):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)
