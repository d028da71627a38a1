"""What a LoadGen scenario result shows beside its figure, for every reader of the store
(`results`, `export`, the report): the figure in its own unit with its interval, LoadGen's
verdict on the run, the Server latency bound and how the run fell short of MLPerf's own.

A result combines its processes as rates, higher is faster (`core.scenario`): the stored
`Result.median_sps` of a single-stream result is 1000 / p90 ms. `figure_interval` turns a rate
and its interval back into the figure's unit; for a lower-is-better figure (a latency) the
interval's ends swap, the rate's upper end being the latency's lower one.
"""

from __future__ import annotations

import math
from typing import Any

from xlabench.core.scenario import FIGURES, Scenario, rate_to_figure

#: The keys `scenario_fields` gives a result row (all None for the timed loop, scenario "").
SCENARIO_ROW_KEYS = ("scenario", "figure", "figure_ci_low", "figure_ci_high", "unit",
                     "loadgen_valid", "latency_bound_ms", "shortfall")


def figure_interval(scenario: str, rate: float | None, low: float | None,
                    high: float | None) -> tuple[float | None, float | None, float | None]:
    """A combined rate and its interval in the scenario's unit: (figure, low, high)."""
    def one(value: float | None) -> float | None:
        if value is None or not math.isfinite(value) or value <= 0:
            return None
        return rate_to_figure(scenario, value)

    figure, at_low, at_high = one(rate), one(low), one(high)
    if not FIGURES[Scenario(scenario)].higher_is_better:
        at_low, at_high = at_high, at_low
    return figure, at_low, at_high


def loadgen_valid(scenario: str, loadgen: dict[str, Any]) -> bool | None:
    """LoadGen's verdict on the run the figure comes from: the run itself (single-stream,
    offline), the highest Server rate that passed (server: valid, p99 within the bound). None
    when the summary does not say."""
    if scenario == Scenario.SERVER:
        peak = loadgen.get("peak_rate_per_s")
        trials = [t for t in loadgen.get("trials") or [] if t.get("rate_per_s") == peak]
        if peak is None or not trials:
            return False if "trials" in loadgen else None
        return bool(trials[0].get("passed")) and bool((trials[0].get("result") or {})
                                                      .get("valid"))
    valid = loadgen.get("valid")
    return None if valid is None else bool(valid)


def scenario_fields(scenario: str, outcome: dict[str, Any] | None, rate: float | None = None,
                    low: float | None = None, high: float | None = None) -> dict[str, Any]:
    """`SCENARIO_ROW_KEYS` of a row: from its spec's scenario ("" for the timed loop), the
    record's stored outcome (a `ScenarioOutcome` as a dict; None for the timed loop and for a
    process that failed) and the result's combined rate with its interval (the process's own
    figure when there is none)."""
    if not scenario:
        return {**dict.fromkeys(SCENARIO_ROW_KEYS), "scenario": ""}
    outcome = outcome or {}  # a failed process: no figure of its own, no LoadGen verdict
    if rate is None:
        figure, at_low, at_high = outcome.get("figure"), None, None
    else:
        figure, at_low, at_high = figure_interval(scenario, rate, low, high)
    loadgen = outcome.get("loadgen") or {}
    return {
        "scenario": scenario, "figure": figure, "figure_ci_low": at_low,
        "figure_ci_high": at_high, "unit": FIGURES[Scenario(scenario)].unit,
        "loadgen_valid": loadgen_valid(scenario, loadgen) if loadgen else None,
        "latency_bound_ms": loadgen.get("latency_bound_ms"),
        "shortfall": outcome.get("shortfall") or "",
    }
