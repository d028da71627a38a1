"""The interval of a ratio of two rows of the report's tables: `measure.combine.result_ratio`,
the one ratio method of every ratio the product prints, read from the rows.

A row is one result (`result_rows.latest_per_config`): its stored `Result` (`figure`) where
the sweep stored one, else a one-process result made from the row's own columns (an older
database, an imported row). `result_ratio` then chooses, best first: paired t by round where
both ran interleaved in one sweep (`combine.interleaved`: the same sweep id and overlapping
process times, read from the `results` frame), Welch t of log process medians with each run's
between-run variation, and for a side of one process the bootstrap of the raw samples or the
ends of the stored intervals. ``none``: a side has no interval at all (published numbers).
Each interval's `method` names which one made it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from xlabench.core.result import ONE_PROCESS_METHOD, Result
from xlabench.measure import combine
from xlabench.measure.combine import RatioInterval, RunTimes

NO_INTERVAL_METHOD = "none"
#: What a ratio's interval says (`ratio_verdict`); the first two are `significant`.
FASTER, SLOWER, WITHIN_NOISE, NO_VERDICT = "faster", "slower", "within noise", "no interval"
NO_INTERVAL = RatioInterval(math.nan, math.nan, math.nan, math.nan, math.nan,
                            NO_INTERVAL_METHOD, 0, between_processes=False)
#: What a ratio reads of each side's row (`latest_per_config` columns).
RATIO_COLUMNS = ("id", "result_id", "sweep_id", "figure", "throughput_sps",
                 "throughput_sps_ci_low", "throughput_sps_ci_high", "ci_confidence",
                 "sample_sps")
#: A process's start time (`Record.started_at`), by which results' times are known.
_STARTED = "created_at"

Spans = Mapping[str, tuple[Any, Any]]


def result_spans(results: pd.DataFrame) -> dict[str, tuple[Any, Any]]:
    """Each result's first and last process start, by result id (the `results` frame of
    `load.load_results`: one row per process): what `combine.interleaved` compares."""
    if results.empty or "result_id" not in results or _STARTED not in results:
        return {}
    started = pd.to_datetime(results[_STARTED], utc=True, errors="coerce", format="ISO8601")
    frame = pd.DataFrame({"result_id": results["result_id"], "started": started}).dropna()
    spans = frame.groupby("result_id")["started"].agg(["min", "max"])
    return {str(r): (low, high) for r, low, high in spans.itertuples()}


def row_result(row: Mapping[str, Any]) -> Result:
    """The row's stored Result, or a one-process one made from its columns."""
    figure = row.get("figure")
    if isinstance(figure, Result) and figure.status == "ok" and figure.median_sps:
        return figure
    sps = _number(row.get("throughput_sps"))
    confidence = _number(row.get("ci_confidence"))
    return Result(
        result_id=str(row.get("result_id") or f"row{row.get('id')}"), spec_id="", env_id="",
        status="ok" if sps and sps > 0 else "failed", k=1, k_total=1, k_flagged=0,
        median_sps=sps, ci_low_sps=_number(row.get("throughput_sps_ci_low")),
        ci_high_sps=_number(row.get("throughput_sps_ci_high")),
        ci_confidence=confidence if confidence else None, ci_method=ONE_PROCESS_METHOD,
        between_processes=False, target_rel_ci=None, target_met=False, flagged=False,
        flag_reason="", process_medians_sps=(sps,) if sps else (),
        process_rounds=(0,) if sps else (),
    )


def row_ratio(top: Mapping[str, Any], bottom: Mapping[str, Any], spans: Spans) -> RatioInterval:
    """top / bottom of two result rows (RATIO_COLUMNS) by `combine.result_ratio`;
    NO_INTERVAL where it gives none."""
    together = combine.interleaved(_run_times(top, spans), _run_times(bottom, spans))
    samples = (_samples(top), _samples(bottom))
    found = combine.result_ratio(row_result(top), row_result(bottom), together, samples=samples)
    return found if found is not None else NO_INTERVAL


def ratio_verdict(low: Any, high: Any) -> str:
    """What a ratio's 95% interval says: above 1 faster, below 1 slower, across 1 within
    noise; no interval where an end is missing. The one rule behind `significant`."""
    if pd.isna(low) or pd.isna(high):
        return NO_VERDICT
    if low > 1:
        return FASTER
    return SLOWER if high < 1 else WITHIN_NOISE


def ratio_intervals(
    table: pd.DataFrame, top: str, bottom: str, spans: Spans
) -> tuple[list[RatioInterval], pd.Series, pd.Series, pd.Series]:
    """`row_ratio` of every row of a table of pairs whose sides' RATIO_COLUMNS are suffixed
    `top` and `bottom`: the intervals, their low and high ends, and `significant` (the
    interval excludes 1: `ratio_verdict` faster or slower; NA without an interval)."""
    intervals = [row_ratio(_side(row, top), _side(row, bottom), spans)
                 for row in table.to_dict("records")]
    low = pd.Series([i.ratio_low for i in intervals], index=table.index, dtype="float64")
    high = pd.Series([i.ratio_high for i in intervals], index=table.index, dtype="float64")
    verdicts = [ratio_verdict(i.ratio_low, i.ratio_high) for i in intervals]
    significant = pd.Series([pd.NA if v == NO_VERDICT else v in (FASTER, SLOWER)
                             for v in verdicts], index=table.index, dtype="boolean")
    return intervals, low, high, significant


def _side(row: Mapping[str, Any], suffix: str) -> dict[str, Any]:
    return {column: row.get(column + suffix) for column in RATIO_COLUMNS}


def _run_times(row: Mapping[str, Any], spans: Spans) -> RunTimes:
    sweep_id = row.get("sweep_id")
    result_id = row.get("result_id")
    return RunTimes(sweep_id if isinstance(sweep_id, str) else None,
                    spans.get(result_id) if isinstance(result_id, str) else None)


def _samples(row: Mapping[str, Any]) -> list[float]:
    samples = row.get("sample_sps")
    return list(samples) if isinstance(samples, list | tuple) else []


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
