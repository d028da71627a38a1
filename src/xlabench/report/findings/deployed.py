"""How it behaves when deployed: the LoadGen scenarios and bf16 against fp32, the tables and
opening lines that lead the deployment section (`findings.deploy`) when results exist.

Server first (the issue's question: at how many requests per second does each runtime keep
its p99 under the bound?), then single-stream p90, offline samples/s, each way's gain from
batching and concurrency, and fp32 beside bf16. Every figure is the stored combined result's
(`analysis.scenarios`), shown in its scenario's unit.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlabench.analysis.scenarios import (
    FROM_BATCH_1,
    FROM_SINGLE_STREAM,
    MODEL_KEYS,
    batching_gains,
    offline_throughputs,
    precision_pairs,
    scenario_results,
    server_rates,
    single_stream_latencies,
)
from xlabench.report.model import PROVENANCE
from xlabench.report.tables import Column, Table, fmt_value

MODEL = (Column("device", "device"), Column("model", "model"),
         Column("resolution", "res", "int"))
WAY = Column("way", "way (backend/mode precision)", "text")
BATCHING = (Column("max_batch", "max batch", "int"), Column("concurrency", "concurrent", "int"))
LOADGEN = (Column("loadgen", "LoadGen", "text"), Column("shortfall", "vs MLPerf", "text"))
RANK = Column("rank", "rank", "int")
#: How many opening lines name a Server pick before the table takes over.
MAX_SERVER_LINES = 4
SCENARIO_NOTE = (
    "MLPerf LoadGen issued the queries (xlabench run --scenario). Each figure is the result's "
    "combined figure over its processes with its 95% interval; 'LoadGen': its verdict on the "
    "run the figure comes from; 'vs MLPerf': how the run was shortened against MLPerf's own "
    "minimums (600 s; Offline 24,576 samples). Ways that passed parity only; rank 1 is the "
    "best of its {group}."
)


def deployed_tables(results: pd.DataFrame) -> tuple[list[str], list[Table]]:
    """The section's opening lines and tables from the scenario and bf16 results; each table
    only when it has rows (([], []) when there are none)."""
    frame = scenario_results(results).assign(loadgen=_loadgen_text)
    server = server_rates(frame)
    gains = batching_gains(frame, results)
    pairs = precision_pairs(frame, results)
    tables = [
        _server_table(server), _single_stream_table(single_stream_latencies(frame)),
        _offline_table(offline_throughputs(frame)), _gain_table(gains),
        _precision_table(pairs),
    ]
    return (server_lines(server) + precision_lines(pairs),
            [t for t in tables if not t.frame.empty])


def _loadgen_text(frame: pd.DataFrame) -> list[str]:
    return ["–" if v is None or pd.isna(v) else ("valid" if v else "INVALID")
            for v in frame["loadgen_valid"]]


def server_lines(server: pd.DataFrame) -> list[str]:
    """Per device, model, resolution and bound, the highest Server rate and its way."""
    best = server[server["rank"] == 1]
    lines = [
        f"Server (MLPerf LoadGen), p99 within {row['latency_bound_ms']:g} ms: "
        f"{row['model']}@{row['resolution']} on {row['device']} sustains "
        f"{_with_interval('sps', row, 'figure_value')} queries/s with {row['way']} "
        f"(LoadGen: {row['loadgen']}; {_others(server, row)})."
        for row in best.head(MAX_SERVER_LINES).to_dict("records")
    ]
    if len(best) > MAX_SERVER_LINES:
        lines.append(f"… and {len(best) - MAX_SERVER_LINES} more Server picks in the table.")
    return lines


def _others(server: pd.DataFrame, pick: dict[str, Any]) -> str:
    same = server
    for key in (*MODEL_KEYS, "latency_bound_ms"):
        same = same[same[key] == pick[key]]
    return f"{len(same)} way{'s' * (len(same) != 1)} measured"


def precision_lines(pairs: pd.DataFrame) -> list[str]:
    """One line on bf16 against fp32: how many pairs, the speedups, parity."""
    if pairs.empty:
        return []
    kept = int((pairs["bf16_parity"] == 1).sum())
    return [f"bf16 against fp32: {len(pairs)} pair(s) of the same way and configuration; bf16's "
            f"speedup {pairs['speedup'].min():.2f}x to {pairs['speedup'].max():.2f}x; bf16 "
            f"passed parity at its tolerance in {kept} of them."]


def _with_interval(fmt: str, row: dict[str, Any], key: str) -> str:
    text = fmt_value(fmt, row[key])
    low, high = row.get("figure_ci_low"), row.get("figure_ci_high")
    if low is not None and high is not None and not (pd.isna(low) or pd.isna(high)):
        text += f" [{fmt_value(fmt, low)}, {fmt_value(fmt, high)}]"
    return text


def _figure(header: str, fmt: str) -> Column:
    return Column("figure_value", header, fmt, ci=("figure_ci_low", "figure_ci_high"))


def _server_table(server: pd.DataFrame) -> Table:
    columns = (
        *MODEL, Column("latency_bound_ms", "p99 bound ms", "g"), WAY,
        _figure("queries/s within the bound [CI]", "sps"),
        Column("p99_ms", "p99 ms at that rate", "ms"),
        Column("failing_rate_per_s", "next rate tried (failed), /s", "sps"), *BATCHING,
        Column("batch_wait_ms", "batch wait ms", "g"), *LOADGEN, RANK, PROVENANCE,
    )
    return Table("Highest Server rate with p99 within the bound", server, columns,
                 note=SCENARIO_NOTE.format(group="device, model, resolution and bound") + (
                     " Poisson arrivals; each tried rate a full LoadGen run; the next rate "
                     "tried above it failed (LoadGen invalid or p99 over the bound)."))


def _single_stream_table(single: pd.DataFrame) -> Table:
    columns = (*MODEL, WAY, _figure("p90 ms [CI]", "ms"), Column("p50_ms", "p50 ms", "ms"),
               Column("p99_ms", "p99 ms", "ms"), *LOADGEN, RANK, PROVENANCE)
    return Table("Single-stream p90 latency (one query at a time, batch 1)", single, columns,
                 note=SCENARIO_NOTE.format(group="device, model and resolution") + (
                     " The p90 is LoadGen's early-stopping estimate where it gives one; "
                     "p50/p99: the last process's run."))


def _offline_table(offline: pd.DataFrame) -> Table:
    columns = (*MODEL, WAY, *BATCHING, _figure("samples/s [CI]", "sps"),
               Column("sut", "how it batches and runs concurrently", "text"), *LOADGEN, RANK,
               PROVENANCE)
    return Table("Offline samples/s (every query at once)", offline, columns,
                 note=SCENARIO_NOTE.format(group="device, model and resolution"))


def _gain_table(gains: pd.DataFrame) -> Table:
    columns = (
        *MODEL, WAY,
        Column("offline_sps", "offline samples/s [CI]", "sps",
               ci=("offline_ci_low", "offline_ci_high")), *BATCHING,
        Column("one_request_sps", "one request samples/s [CI]", "sps",
               ci=("one_request_ci_low", "one_request_ci_high")),
        Column("one_request_from", "one request from", "text"),
        Column("gain", "gain from batching [CI]", "ratio", ci=("gain_ci_low", "gain_ci_high")),
        Column("gain_ci", "interval", "text"),
    )
    return Table(
        "Gain from batching and concurrency: offline over one request", gains, columns,
        note=f"Per way: its best offline samples/s over its one-request figure, which is "
             f"'{FROM_SINGLE_STREAM}' (single-stream's p90 as a rate) where the way has a "
             f"single-stream result, else '{FROM_BATCH_1}' (its timed-loop throughput at "
             "batch 1). The interval is that of the ratio of the two stored results "
             "(measure.combine.result_ratio: paired by round where both ran interleaved in "
             "one sweep, else Welch on log process medians, else the ends of one-process "
             "intervals), or says why there is none.")


def _precision_table(pairs: pd.DataFrame) -> Table:
    def side(name: str) -> tuple[Column, ...]:
        return (Column(f"{name}_value", f"{name} [CI]", "auto",
                       ci=(f"{name}_ci_low", f"{name}_ci_high")),
                Column(f"{name}_executed", f"{name} executed as", "text"))

    def parity(name: str) -> tuple[Column, ...]:
        return (Column(f"{name}_max_rel_diff", f"{name} max rel diff", "g"),
                Column(f"{name}_rtol", f"{name} rtol", "g"),
                Column(f"{name}_parity", f"{name} parity", "parity"))

    columns = (
        *MODEL, Column("batch_size", "batch", "int"),
        Column("way", "way (backend/mode)", "text"), Column("measured", "measured", "text"),
        Column("unit", "unit", "text"), *side("fp32"), *side("bf16"),
        Column("speedup", "bf16 speedup [CI]", "ratio",
               ci=("speedup_ci_low", "speedup_ci_high")),
        Column("speedup_ci", "interval", "text"), *parity("fp32"), *parity("bf16"),
    )
    return Table(
        "fp32 and bf16 side by side", pairs, columns,
        note="Per way and configuration measured at both precisions (the timed loop, or one "
             "scenario with the same settings): both figures in their unit, bf16's speedup "
             "(its rate over fp32's; for a p90, fp32's p90 over bf16's) with the interval of "
             "measure.combine.result_ratio, and each side's parity against its reference "
             "(max relative difference and the tolerance it was judged at). 'executed as' is "
             "the precision the runtime reports it computed in (OpenVINO's compiled model), "
             "else the spec's. bf16 results that "
             "failed parity are kept here: they are the accuracy cost of the choice.")
