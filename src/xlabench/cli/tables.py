"""Text formatting for the terminal."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from xlabench.core import Record
from xlabench.core.device import device_name
from xlabench.core.result import Result, interference_reason
from xlabench.core.scenario import FIGURES, Scenario, ScenarioOutcome
from xlabench.measure.probe import SPANS_STATES_REL, spans_states
from xlabench.report.tables import fmt_value
from xlabench.store import ResultStore
from xlabench.store.scenario_rows import figure_interval, loadgen_valid


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "rel_ci_halfwidth":
        return f"{100 * value:.1f}%"
    if key == "parity_passed":
        return "pass" if value else "FAIL"
    if key == "ci_confidence":
        return f"{100 * value:.0f}%"
    if key == "interference":
        return "FLAGGED" if value else ""
    if key == "interference_flagged":
        return "BUSY" if value else ""
    if key == "error":
        text = str(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain aligned table of `rows`, showing (key, header) `columns`."""
    cells = [[header for _, header in columns]]
    cells += [[_cell(key, row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def result_rows(store: ResultStore, **filters: Any) -> list[dict[str, Any]]:
    """One row per result (see `ResultStore.result_rows`), with the table's text beside the
    data: how many processes made it (`processes_shown`: "3", "3 of 4", "1, incomplete")
    and a scenario result's figure with its unit and interval (`figure_shown`)."""
    return [{**row, "processes_shown": _processes_text(row), "figure_shown": _figure_text(row),
             "throughput_shown": _interval_text(row.get("throughput_sps"),
                                                row.get("throughput_sps_ci_low"),
                                                row.get("throughput_sps_ci_high"))}
            for row in store.result_rows(**filters)]


def _interval_text(value: float | None, low: float | None, high: float | None) -> str | None:
    """A stored figure with its interval, written as the report writes it (its "sps" format):
    the same result reads the same in `results`, findings.md and index.html."""
    if value is None:
        return None
    text = fmt_value("sps", value)
    if low is not None and high is not None:
        text += f" [{fmt_value('sps', low)}, {fmt_value('sps', high)}]"
    return text


def _processes_text(row: dict[str, Any]) -> str:
    k, total = row["processes"], row["processes_total"]
    text = str(k) if k == total else f"{k} of {total}"
    # a killed sweep's result: listed, but never the figure its configuration is shown with
    return text if row["complete"] else f"{text}, incomplete"


def _figure_text(row: dict[str, Any]) -> str | None:
    # a failed result has no figure: its process's 0 (no Server rate passed) is no measurement
    if row.get("figure") is None or row.get("status") != "ok":
        return None
    text = f"{_cell('figure', row['figure'])} {row['unit']}"
    low, high = row.get("figure_ci_low"), row.get("figure_ci_high")
    if low is not None and high is not None:
        text += f" [{_cell('figure', low)}, {_cell('figure', high)}]"
    return text


#: What `with_scenario_columns` adds after the status of a results table.
SCENARIO_COLUMNS = {"result": (("scenario", "scenario"), ("figure_shown", "figure [CI]")),
                    "process": (("scenario", "scenario"), ("scenario_figure", "figure"))}


def with_scenario_columns(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]
                          ) -> tuple[tuple[str, str], ...]:
    """`columns` with the scenario and its figure after the status when some row ran a LoadGen
    scenario (its throughput columns are empty: its figure is in its own unit)."""
    if not any(row.get("scenario") for row in rows):
        return tuple(columns)
    kind = "result" if any("figure_shown" in row for row in rows) else "process"
    keys = [key for key, _ in columns]
    at = keys.index("status") + 1 if "status" in keys else len(keys)
    return (*columns[:at], *SCENARIO_COLUMNS[kind], *columns[at:])


def format_result(result: Result, records: Sequence[Record], db: str | None = None) -> str:
    """The combined result, then one line per process."""
    lines = []
    spec = records[-1].spec if records else None
    head = spec.label() if spec else result.spec_id
    if result.median_sps is None:
        lines.append(f"{head}: {result.status} ({result.error})")
    elif spec is not None and spec.scenario:
        lines += _scenario_result_lines(head, spec.scenario, result)
    else:
        conf = f"{100 * (result.ci_confidence or 0):.0f}%"
        target = "target met" if result.target_met else "target NOT met"
        shown = _interval_text(result.median_sps, result.ci_low_sps, result.ci_high_sps)
        lines.append(
            f"{head}: {shown} samples/s  ({conf} interval, "
            f"±{100 * (result.rel_ci_halfwidth or 0):.1f}%, {target})")
        lines.append(f"  from {result.k} of {result.k_total} processes: {result.ci_method}")
        if result.drift_rel_sd is not None and result.run_ci_low_sps is not None:
            lines.append(f"  this run's processes alone: {result.run_ci_low_sps:.2f}-"
                         f"{result.run_ci_high_sps:.2f} (the target is judged on this one)")
        elif result.between_processes:
            lines.append("  no re-runs on this machine yet: the interval "
                         "cannot include how runs at other times differ")
    if result.flagged:
        lines.append(f"  FLAGGED: {result.flag_reason}")
    if result.probe_spread_rel is not None:
        lines.append(_probe_spread_line(result.probe_spread_rel))
    for record in records:
        lines.append(_process_line(record))
    if records and records[-1].ok:
        lines.append(format_record(records[-1]).split("\n", 1)[-1].replace(
            "  throughput", "  last process: throughput", 1))
    if db:
        lines.append(f"  stored in {db} (result {result.result_id})")
    return "\n".join(lines)


def _scenario_result_lines(head: str, scenario: str, result: Result) -> list[str]:
    """A scenario result's figure in its unit: its rate combined, turned back
    (`store.scenario_rows.figure_interval`; a latency's interval ends swap)."""
    kind = FIGURES[Scenario(scenario)]
    figure, low, high = figure_interval(scenario, result.median_sps, result.ci_low_sps,
                                        result.ci_high_sps)
    conf = f"{100 * (result.ci_confidence or 0):.0f}%"
    shown = "-" if low is None or high is None else f"{low:.4g}-{high:.4g}"
    return [f"{head}: {kind.name} {figure:.4g} {kind.unit}  ({conf} interval {shown}, "
            f"±{100 * (result.rel_ci_halfwidth or 0):.1f}%)",
            f"  from {result.k} of {result.k_total} processes: {result.ci_method}"]


def _probe_spread_line(spread_rel: float) -> str:
    """Whether the result's processes ran in one machine state (`measure.probe`)."""
    verdict = (f"SPANS MACHINE STATES (over {100 * SPANS_STATES_REL:.0f}%): the machine's speed "
               "changed between or during its processes" if spans_states(spread_rel)
               else f"one machine state (within {100 * SPANS_STATES_REL:.0f}%)")
    return (f"  machine's speed (reference GEMM) varied {100 * spread_rel:.0f}% over its "
            f"processes: {verdict}; the figure is not rescaled")


def _probe_text(record: Record) -> str:
    """The process's reference-GEMM rate before/after its timed phases ("" if not measured)."""
    before, after = record.probe_before, record.probe_after
    if before is None or after is None:
        return ""
    return f", machine {before.gflops:.0f}/{after.gflops:.0f} GFLOP/s before/after"


def _process_line(record: Record) -> str:
    number = f"process {record.process.index + 1} (round {record.process.round})"
    if record.ok and record.scenario is not None:
        why = interference_reason(record.interference)
        return (f"  {number}: {_scenario_text(record.scenario)}{_probe_text(record)}"
                + (f"  FLAGGED: {why}" if why else ""))
    if not record.ok or record.throughput is None:
        return f"  {number}: {record.status.value}: {record.error}"
    tp, figures = record.throughput, record.interference
    others = "" if figures is None else f", others used {100 * figures.other_frac:.0f}% of its CPUs"
    why = interference_reason(figures)
    mark = f"  FLAGGED: {why}" if why else ""
    relaxed = record.process.sampling_target_rel_ci
    sampling = f", sampled to ±{100 * relaxed:.1f}%" if relaxed else ""
    return (f"  {number}: {tp.median_sps:.2f} samples/s ±{100 * (tp.rel_ci_halfwidth or 0):.1f}%"
            f" ({len(tp.sample_s)} samples{sampling}{others}{_probe_text(record)}){mark}")


def _scenario_text(outcome: ScenarioOutcome) -> str:
    """One process's scenario figure, with LoadGen's verdict and how the run was shortened."""
    kind = outcome.kind
    valid = loadgen_valid(outcome.scenario, outcome.loadgen)
    verdict = {True: "LoadGen: valid", False: "LoadGen: INVALID", None: "LoadGen: no verdict"}
    parts = [verdict[valid]]
    if outcome.scenario == Scenario.SERVER:
        parts.append(f"p99 bound {outcome.loadgen.get('latency_bound_ms')} ms")
        failing = outcome.loadgen.get("failing_rate_per_s")
        if failing is not None:
            parts.append(f"{failing:.4g}/s failed")
    if outcome.max_batch > 1 or outcome.concurrency > 1:
        parts.append(f"max batch {outcome.max_batch}, {outcome.concurrency} at once")
    if outcome.shortfall:
        parts.append(outcome.shortfall)
    return f"{kind.name} {outcome.figure:.4g} {kind.unit} ({'; '.join(parts)})"


def format_record(record: Record, db: str | None = None) -> str:
    """A short human summary of one record."""
    spec = record.spec
    reason = f" ({record.error})" if record.error else ""
    lines = [f"{spec.label()}: {record.status.value}{reason}"]
    if record.scenario is not None:
        lines.append(f"  {record.scenario.scenario}: {_scenario_text(record.scenario)}")
    tp, lat, warm = record.throughput, record.latency, record.warmup
    if tp:
        target = "target met" if tp.target_met else "target NOT met"
        conf = f"{100 * tp.ci_confidence:.0f}%" if tp.ci_confidence is not None else "no"
        lines.append(
            f"  throughput {tp.median_sps:.2f} samples/s  ({conf} CI {tp.ci_low_sps:.2f}-"
            f"{tp.ci_high_sps:.2f}, ±{100 * tp.rel_ci_halfwidth:.1f}%, {len(tp.sample_s)} samples "
            f"of {tp.steps_per_sample} batches, {target})"
        )
    if lat:
        lines.append(f"  latency per batch p50 {lat.p50_ms:.2f} ms  p90 {lat.p90_ms:.2f} ms  "
                     f"p99 {lat.p99_ms:.2f} ms")
    if warm:
        lines.append(f"  first call {warm.first_call_s:.2f} s (compile/trace ≈ "
                     f"{warm.compile_s:.2f} s), warm-up {warm.steps} steps")
    if record.parity:
        p = record.parity
        within = p.passed and p.own_spread_rel is not None  # measure.parity.compare
        verdict = f"pass ({p.reason})" if within else "pass" if p.passed else f"FAIL: {p.reason}"
        lines.append(f"  parity vs {p.reference_mode}: max abs diff {p.max_abs_diff:.3g}, "
                     f"max rel diff {p.max_rel_diff:.3g} (tol {p.rtol:g}): {verdict}")
    costs, mem = record.costs, record.memory
    if costs.params:
        macs = f", {costs.macs_per_image / 1e9:.3f} GMACs/image" if costs.macs_per_image else ""
        lines.append(f"  params {costs.params / 1e6:.2f} M{macs}")
    if mem.peak_host_mb:
        device = f", device {mem.peak_device_mb:.0f} MB" if mem.peak_device_mb else ""
        lines.append(f"  peak memory: host {mem.peak_host_mb:.0f} MB{device}")
    if record.env:
        env = record.env
        host = "" if env.get("accelerator") == "cpu" else f" ({env.get('cpu_model', '?')})"
        lines.append(f"  on {device_name(env)}{host}")
    if db:
        lines.append(f"  stored in {db}")
    return "\n".join(lines)


MODEL_COLUMNS = (
    ("name", "name"), ("family", "family"), ("kind", "kind"), ("source", "source"),
    ("default_resolution", "res"), ("min_resolution", "min res"), ("params", "params"),
    ("macs_g", "GMACs"), ("aliases", "aliases"),
)


def models_output(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["name"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    shown = [{**r, "params": f"{r['params'] / 1e6:.2f}M"} for r in rows]
    return format_table(shown, MODEL_COLUMNS) + f"\n{len(rows)} models\n"
