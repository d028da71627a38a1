"""One row per result: the one reading of a stored result that every reader takes (`results`,
`export`, the report's frame, `compare`).

A row is display-neutral (numbers and identifiers; the table's text is `cli.tables`'s): its
latest process's columns with the figure stored for the result (`combined_results`) in place
of that process's own, and

    processes, processes_total, processes_flagged: the result's k, k_total and k_flagged;
    processes_used: which processes its figure combined (their indices in the result, as
        combine decided; () where not stored: a result stored before they were kept, a row
        from before results had processes);
    complete: whether the result has every process it was scheduled for (the sweep's stored
        decision, `combined_results.complete`). A killed sweep's result is incomplete, and so
        is a process whose result was never written; a row from before results had
        processes (or an imported one) is a complete result of one process;
    ci_confidence, ci_method, interference (why the result is flagged, "" if it is not);
    runner (python or native), seed, duration_s (the latest process's), and
    `store.scenario_rows.SCENARIO_ROW_KEYS`.

"The latest result" of a configuration is its latest *complete* one (`latest_complete`): an
incomplete result is listed but never the figure a configuration is shown or compared with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from xlabench.core import Record
from xlabench.core.result import ONE_PROCESS_METHOD, Result, interference_reason
from xlabench.store.scenario_rows import scenario_fields

Row = TypeVar("Row")
#: The throughput columns a LoadGen scenario result leaves empty (its figure is in its unit).
_TIMED_LOOP_ONLY = ("throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high",
                    "batch_time_ms")


def batch_time_ms(batch_size: float, throughput_sps: float) -> float:
    """The time of one batch at a throughput: what a result's figure gives per batch."""
    return 1000 * batch_size / throughput_sps


def figure_columns(result: Result, batch_size: int) -> dict[str, Any]:
    """A stored figure as a row's columns, in place of its latest process's own: the one
    construction of them (this view's rows, the report's `analysis.result_rows`)."""
    return {
        "throughput_sps": result.median_sps, "throughput_sps_ci_low": result.ci_low_sps,
        "throughput_sps_ci_high": result.ci_high_sps, "rel_ci_halfwidth": result.rel_ci_halfwidth,
        "ci_confidence": result.ci_confidence, "ci_method": result.ci_method,
        "batch_time_ms": (None if not result.median_sps
                          else batch_time_ms(batch_size, result.median_sps)),
        "processes": result.k, "processes_total": result.k_total,
        "processes_flagged": result.k_flagged,
    }


def result_view(processes: Sequence[dict[str, Any]],
                stored: Mapping[str, tuple[Result, bool]]) -> list[dict[str, Any]]:
    """One row per result, oldest first (by its latest process), from process rows with
    their `record_json` (oldest first) and the stored results by id (with `complete`)."""
    latest: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row in processes:
        if row["result_id"] is None:
            out.append(_one_process_row(row, complete=True))
        else:
            latest[row["result_id"]] = row  # rows come oldest first: the last one wins
    for result_id, row in latest.items():
        found = stored.get(result_id)
        out.append(_result_row(row, *found) if found
                   else _one_process_row(row, is_complete(result_id, stored)))
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


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """The latest process's columns, and what of its record is no column: the runner (python
    or native: part of the configuration), the seed, how long the process ran."""
    record = json.loads(row["record_json"])
    spec = record.get("spec") or {}
    return {**{k: v for k, v in row.items() if k != "record_json"},
            "runner": spec.get("runner", "python"), "seed": spec.get("seed"),
            "duration_s": record.get("duration_s")}


def _one_process_row(row: dict[str, Any], complete: bool) -> dict[str, Any]:
    """A result of one process: a row from before results had processes, an imported one,
    or a process whose result was never written (a killed sweep's: incomplete)."""
    record = json.loads(row["record_json"])
    throughput = record.get("throughput") or {}
    why = interference_reason(Record.from_dict(record).interference) if row["result_id"] else None
    return {**_flat(row), "processes": 1, "processes_total": 1,
            "processes_flagged": int(why is not None), "complete": complete,
            "processes_used": (row["process_index"],) if row["result_id"] else (),
            "ci_confidence": throughput.get("ci_confidence"), "ci_method": ONE_PROCESS_METHOD,
            "interference": why or "",
            **scenario_fields(row.get("scenario") or "", record.get("scenario"))}


def _result_row(row: dict[str, Any], result: Result, complete: bool) -> dict[str, Any]:
    counts = {"processes": result.k, "processes_total": result.k_total,
              "processes_flagged": result.k_flagged, "complete": complete,
              "processes_used": result.process_indices}
    scenario = row.get("scenario") or ""
    outcome = json.loads(row["record_json"]).get("scenario")
    if result.status != "ok":
        return {**_flat(row), **counts, "status": result.status, "error": result.error,
                "ci_confidence": None, "ci_method": "", "interference": result.flag_reason,
                **scenario_fields(scenario, outcome)}
    combined = {
        **_flat(row), **counts, "status": "ok", "error": None,
        **figure_columns(result, row["batch_size"]),
        "precision_target_met": int(result.target_met), "interference": result.flag_reason,
    }
    if not scenario:
        return {**combined, **scenario_fields("", None)}
    # A scenario's combined rate is no timed-loop throughput (single-stream: 1000 / p90): it
    # is shown as the figure, in the scenario's unit, and the throughput columns stay empty.
    figures = scenario_fields(scenario, outcome, result.median_sps, result.ci_low_sps,
                              result.ci_high_sps)
    return {**combined, **dict.fromkeys(_TIMED_LOOP_ONLY), **figures}
