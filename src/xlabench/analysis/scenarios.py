"""How a model behaves when deployed: LoadGen's scenarios and bf16 against fp32.

Per model and device: the highest Server rate whose p99 stayed within the bound, the
single-stream p90, the offline samples/s, each way's gain from batching and concurrency
(offline samples/s over its one-request figure), and fp32 beside bf16 with the speedup and
both parity checks.

Every figure is the stored combined `Result` of its result (`load.load_results`, column
`figure`), never recombined here: a scenario result's `median_sps` and interval are its figure
as a rate (`core.scenario`), shown in the scenario's unit by `store.scenario_rows`. Ratios
take their interval from `measure.combine.result_ratio`, the one method `compare` uses too.
Only local results count, as for the rest of the deployment advice.
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Any

import pandas as pd

from xlabench.analysis.deploy import passed_parity
from xlabench.analysis.intervals import Spans, result_spans
from xlabench.analysis.result_rows import latest_per_config, result_frame
from xlabench.core.result import Result
from xlabench.core.scenario import FIGURES, Scenario, figure_to_rate
from xlabench.measure.combine import RunTimes, interleaved, result_ratio
from xlabench.store.scenario_rows import figure_interval, loadgen_valid
from xlabench.store.view import latest_complete

#: One deployment question of the scenarios: this model on this device at this input size.
MODEL_KEYS = ("device", "model", "resolution")
#: The way a model is run (as the rest of the deployment advice names it).
WAY_KEYS = ("backend", "mode", "precision", "runner")
#: What makes two results alike but for their precision (`pair_precisions`).
PAIR_KEYS = ("device", "model", "resolution", "batch_size", "weights", "tf32", "backend",
             "mode", "runner", "scenario", "scenario_settings")
TIMED_LOOP = "timed loop"
#: How a gain or speedup without an interval says why.
NO_INTERVAL = "no interval: a side has fewer than two processes"
#: What the one-request figure of a batching gain is.
FROM_SINGLE_STREAM = "single-stream: 1000 / p90"
FROM_BATCH_1 = "timed loop at batch 1"

SCENARIO_COLUMNS = (
    *MODEL_KEYS, "batch_size", "weights", "tf32", *WAY_KEYS, "way", "scenario",
    "scenario_settings", "unit",
    "figure_value", "figure_ci_low", "figure_ci_high", "rate_per_s", "rate_ci_low",
    "rate_ci_high", "result", "processes", "sweep_id", "loadgen_valid", "latency_bound_ms",
    "max_batch", "concurrency", "batch_wait_ms", "sut", "shortfall", "p50_ms", "p90_ms",
    "p99_ms", "failing_rate_per_s", "parity_passed", "parity_max_rel_diff", "parity_rtol",
    "passed_parity", "executed_precision", "provenance", "id",
)


def way_of(row: dict[str, Any]) -> str:
    """``backend/mode precision`` (plus `` native``), as the deployment tables name a way."""
    native = " native" if row.get("runner") == "native" else ""
    return f"{row['backend']}/{row['mode']} {row['precision']}{native}"


def scenario_results(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration (device and spec) run under a LoadGen scenario: its latest
    complete ok local result (the store's row of it, `result_rows.result_frame`; the latest by
    `store.view.latest_complete`, as everywhere), with the figure in its unit (`figure_value`
    and interval), the rate it was combined as, the stored `result`, LoadGen's verdict and
    summary figures, how the system under test took queries, and whether the result passed
    parity."""
    rows = result_frame(results)
    local = rows[(rows["origin"] == "local") & (rows["status"] == "ok")
                 & (rows["scenario"].fillna("") != "")]
    if local.empty:
        return pd.DataFrame(columns=list(SCENARIO_COLUMNS))
    local = local.assign(passed_parity=passed_parity(local))
    latest = latest_complete(local.to_dict("records"), key=itemgetter("device", "spec_id"),
                             complete=lambda row: bool(row["complete"]))
    frame = pd.DataFrame([_scenario_row(row) for row in latest.values()],
                         columns=list(SCENARIO_COLUMNS))
    return frame.sort_values([*MODEL_KEYS, "scenario", "way"]).reset_index(drop=True)


def _scenario_row(row: dict[str, Any]) -> dict[str, Any]:
    outcome = row["scenario_outcome"] or {}
    scenario = str(row["scenario"])
    result = row.get("figure")
    if isinstance(result, Result) and result.status == "ok" and result.median_sps:
        rate, low, high = result.median_sps, result.ci_low_sps, result.ci_high_sps
    else:  # a process whose result was never combined: its own figure, no interval
        result = None
        rate, low, high = figure_to_rate(scenario, float(row["scenario_figure"])), None, None
    value, value_low, value_high = figure_interval(scenario, rate, low, high)
    loadgen = outcome.get("loadgen") or {}
    summary = _summary_of(scenario, loadgen)
    return {
        **{key: row[key] for key in (*MODEL_KEYS, "batch_size", "weights", "tf32", *WAY_KEYS,
                                     "scenario",
                                     "scenario_settings", "sweep_id", "parity_passed",
                                     "parity_max_rel_diff", "parity_rtol", "passed_parity",
                                     "id", "processes", "provenance")},
        "executed_precision": row.get("executed_precision") or row.get("precision"),
        "way": way_of(row), "unit": FIGURES[Scenario(scenario)].unit,
        "figure_value": value, "figure_ci_low": value_low, "figure_ci_high": value_high,
        "rate_per_s": rate, "rate_ci_low": low, "rate_ci_high": high, "result": result,
        "loadgen_valid": loadgen_valid(scenario, loadgen),
        "latency_bound_ms": loadgen.get("latency_bound_ms"),
        "max_batch": outcome.get("max_batch"), "concurrency": outcome.get("concurrency"),
        "batch_wait_ms": outcome.get("batch_wait_ms"), "sut": outcome.get("sut", ""),
        "shortfall": outcome.get("shortfall", ""),
        "p50_ms": summary.get("p50_ms"), "p90_ms": summary.get("p90_ms"),
        "p99_ms": summary.get("p99_ms"),
        "failing_rate_per_s": loadgen.get("failing_rate_per_s"),
    }


def _summary_of(scenario: str, loadgen: dict[str, Any]) -> dict[str, Any]:
    """The LoadGen run the figure comes from: the run itself, or the Server search's highest
    rate that passed (its p99 is the one within the bound)."""
    if scenario != Scenario.SERVER:
        return loadgen
    peak = loadgen.get("peak_rate_per_s")
    for trial in loadgen.get("trials") or []:
        if trial.get("rate_per_s") == peak and trial.get("passed"):
            return trial.get("result") or {}
    return {}


def _of(frame: pd.DataFrame, scenario: Scenario, descending: bool) -> pd.DataFrame:
    """The rows of one scenario that passed parity, each model's best first, ranked."""
    chosen = frame[(frame["scenario"] == scenario.value) & frame["passed_parity"].astype(bool)]
    group = [*MODEL_KEYS] + (["latency_bound_ms"] if scenario is Scenario.SERVER else [])
    chosen = chosen.sort_values([*group, "figure_value", "way"],
                                ascending=[*(True for _ in group), not descending, True])
    rank = chosen.groupby(group, dropna=False).cumcount() + 1
    return chosen.assign(rank=rank).reset_index(drop=True)


def server_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """Server results (the highest rate whose p99 stayed within the bound) per device, model,
    resolution and latency bound, highest rate first."""
    return _of(frame, Scenario.SERVER, descending=True)


def single_stream_latencies(frame: pd.DataFrame) -> pd.DataFrame:
    """Single-stream p90s per device, model and resolution, lowest first."""
    return _of(frame, Scenario.SINGLE_STREAM, descending=False)


def offline_throughputs(frame: pd.DataFrame) -> pd.DataFrame:
    """Offline samples/s per device, model and resolution, highest first."""
    return _of(frame, Scenario.OFFLINE, descending=True)


# --------------------------------------------------------------------------- ratios
def ratio_of(
    new: dict[str, Any], base: dict[str, Any], spans: Spans
) -> tuple[float, float, float, str]:
    """new / base of two rows' rates: the point ratio of the stored figures, with the interval
    and method of `measure.combine.result_ratio` (paired when both ran `interleaved` in one
    sweep; `spans`: `intervals.result_spans` of the results)."""
    point = new["rate_per_s"] / base["rate_per_s"]
    a, b = new.get("result"), base.get("result")
    if not (isinstance(a, Result) and isinstance(b, Result)):
        return point, math.nan, math.nan, NO_INTERVAL
    together = interleaved(RunTimes(new.get("sweep_id"), spans.get(a.result_id)),
                           RunTimes(base.get("sweep_id"), spans.get(b.result_id)))
    interval = result_ratio(a, b, together)
    if interval is None:
        return point, math.nan, math.nan, NO_INTERVAL
    return interval.ratio, interval.ratio_low, interval.ratio_high, interval.method


def timed_loop_figures(results: pd.DataFrame) -> pd.DataFrame:
    """Latest local timed-loop results as `scenario_results` rows (figure: samples/s)."""
    latest = latest_per_config(results)
    local = latest[latest["origin"] == "local"] if not latest.empty else latest
    if local.empty:
        return pd.DataFrame(columns=list(SCENARIO_COLUMNS))
    rows = []
    for row in local.assign(passed_parity=passed_parity(local)).to_dict("records"):
        result = row.get("figure")
        rows.append({
            **{key: row.get(key) for key in SCENARIO_COLUMNS},
            "way": way_of(row), "scenario": "", "scenario_settings": "", "unit": "samples/s",
            "figure_value": row["throughput_sps"],
            "figure_ci_low": row["throughput_sps_ci_low"],
            "figure_ci_high": row["throughput_sps_ci_high"],
            "rate_per_s": row["throughput_sps"], "rate_ci_low": row["throughput_sps_ci_low"],
            "rate_ci_high": row["throughput_sps_ci_high"],
            "result": result if isinstance(result, Result) else None,
        })
    return pd.DataFrame(rows, columns=list(SCENARIO_COLUMNS))


GAIN_COLUMNS = (*MODEL_KEYS, *WAY_KEYS, "way", "offline_sps", "offline_ci_low",
                "offline_ci_high", "max_batch", "concurrency", "one_request_sps",
                "one_request_ci_low", "one_request_ci_high", "one_request_from", "gain",
                "gain_ci_low", "gain_ci_high", "gain_ci")


def batching_gains(frame: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """Per device, model, resolution and way: its best offline samples/s over its one-request
    figure, the single-stream rate (1000 / p90) where it has one, else its timed-loop
    throughput at batch 1; `one_request_from` says which. Ways that passed parity only."""
    offline = offline_throughputs(frame)
    if offline.empty:
        return pd.DataFrame(columns=list(GAIN_COLUMNS))
    best = offline.drop_duplicates([*MODEL_KEYS, "way"], keep="first")
    single = single_stream_latencies(frame)
    loop = timed_loop_figures(results)
    loop = loop[(loop["batch_size"] == 1) & loop["passed_parity"].astype(bool)]
    rows, spans = [], result_spans(results)
    for row in best.to_dict("records"):
        base, source = _one_request(row, single, FROM_SINGLE_STREAM)
        if base is None:
            base, source = _one_request(row, loop, FROM_BATCH_1)
        if base is None:
            continue
        gain, low, high, how = ratio_of(row, base, spans)
        rows.append({
            **{key: row[key] for key in (*MODEL_KEYS, *WAY_KEYS, "way", "max_batch",
                                         "concurrency")},
            "offline_sps": row["rate_per_s"], "offline_ci_low": row["rate_ci_low"],
            "offline_ci_high": row["rate_ci_high"], "one_request_sps": base["rate_per_s"],
            "one_request_ci_low": base["rate_ci_low"],
            "one_request_ci_high": base["rate_ci_high"], "one_request_from": source,
            "gain": gain, "gain_ci_low": low, "gain_ci_high": high, "gain_ci": how,
        })
    return pd.DataFrame(rows, columns=list(GAIN_COLUMNS))


def _one_request(row: dict[str, Any], candidates: pd.DataFrame,
                 source: str) -> tuple[dict[str, Any] | None, str]:
    same = candidates
    for key in (*MODEL_KEYS, *WAY_KEYS):
        same = same[same[key] == row[key]]
    if same.empty:
        return None, source
    return same.sort_values("id").iloc[-1].to_dict(), source


PRECISION_COLUMNS = (
    *MODEL_KEYS, "batch_size", "backend", "mode", "runner", "way", "measured", "unit",
    "fp32_value", "fp32_ci_low", "fp32_ci_high", "bf16_value", "bf16_ci_low", "bf16_ci_high",
    "speedup", "speedup_ci_low", "speedup_ci_high", "speedup_ci", "fp32_max_rel_diff",
    "fp32_rtol", "fp32_parity", "bf16_max_rel_diff", "bf16_rtol", "bf16_parity",
    "fp32_executed", "bf16_executed",
)


def precision_pairs(frame: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """fp32 beside bf16, per way (backend/mode runner) and configuration (device, model,
    resolution, batch, and the scenario with its settings, or the timed loop): both figures in
    their unit, bf16's speedup (its rate over fp32's: for a latency, fp32's p90 over bf16's)
    with its interval, and each side's parity figures (max relative difference, tolerance,
    verdict). Parity failures are kept: they are the accuracy cost of the choice."""
    every = pd.concat([frame, timed_loop_figures(results)], ignore_index=True)
    if every.empty:
        return pd.DataFrame(columns=list(PRECISION_COLUMNS))
    every = every.assign(**{k: every[k].astype(object).where(every[k].notna(), None)
                            for k in PAIR_KEYS})
    by_key: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for row in every.sort_values("id").to_dict("records"):
        by_key.setdefault(tuple(row[k] for k in PAIR_KEYS), {})[row["precision"]] = row
    spans = result_spans(results)
    rows = [_precision_row(sides["fp32"], sides["bf16"], spans) for sides in by_key.values()
            if "fp32" in sides and "bf16" in sides]
    table = pd.DataFrame(rows, columns=list(PRECISION_COLUMNS))
    return table.sort_values([*MODEL_KEYS, "measured", "way"]).reset_index(drop=True)


def _precision_row(fp32: dict[str, Any], bf16: dict[str, Any], spans: Spans) -> dict[str, Any]:
    speedup, low, high, how = ratio_of(bf16, fp32, spans)
    native = " native" if fp32["runner"] == "native" else ""
    sides = {}
    for name, row in (("fp32", fp32), ("bf16", bf16)):
        sides.update({
            f"{name}_value": row["figure_value"], f"{name}_ci_low": row["figure_ci_low"],
            f"{name}_ci_high": row["figure_ci_high"],
            f"{name}_max_rel_diff": row["parity_max_rel_diff"],
            f"{name}_rtol": row["parity_rtol"], f"{name}_parity": row["parity_passed"],
            f"{name}_executed": row.get("executed_precision"),
        })
    return {
        **{key: fp32[key] for key in (*MODEL_KEYS, "batch_size", "backend", "mode", "runner")},
        "way": f"{fp32['backend']}/{fp32['mode']}{native}",
        "measured": _measured(fp32), "unit": fp32["unit"], **sides,
        "speedup": speedup, "speedup_ci_low": low, "speedup_ci_high": high, "speedup_ci": how,
    }


def _measured(row: dict[str, Any]) -> str:
    """What the figure is: the timed loop, or a scenario (a Server bound named)."""
    scenario = row["scenario"]
    if not scenario:
        return TIMED_LOOP
    bound = row.get("latency_bound_ms")
    if scenario == Scenario.SERVER and bound is not None and not pd.isna(bound):
        return f"{scenario} (p99 ≤ {float(bound):g} ms)"
    return str(scenario)
