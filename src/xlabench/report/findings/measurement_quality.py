"""How each local number was measured: processes, interval confidence, interference, and
whether re-runs of a configuration agree with its intervals."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis import measurement_quality, rerun_agreement
from xlabench.core.result import Result
from xlabench.measure.probe import SPANS_STATES_REL, spans_states
from xlabench.report.model import PAIR_COLUMNS, SPS, Context, Finding
from xlabench.report.tables import Column, Table


def measurement_quality_finding(ctx: Context) -> Finding:
    """How each local number was measured: processes, interval confidence, interference."""
    title = "How each number was measured: processes, confidence, interference"
    frame = measurement_quality(ctx.results)
    if frame.empty:
        return Finding("quality", title, part="beyond", empty="No local results.")
    frame = frame.assign(probe_spread_pct=[_probe_spread_pct(f) for f in frame["figure"]])
    flagged = int(frame["flagged"].sum())
    single = int((~frame["between_processes"].astype(bool)).sum())
    summary = [
        f"{len(frame)} local results: {len(frame) - single} combine two or more fresh worker "
        f"processes (interval between processes, 95%), {single} come from one process (its "
        "interval describes that process only, with the confidence its samples allow).",
        f"{flagged} results are FLAGGED: too few of their processes ran on a quiet machine "
        "(another process used their CPUs during timing). Their numbers are shown, marked, "
        "and should not be trusted." if flagged else
        "No result is flagged for interference.",
        _drift_summary(frame),
        _machine_states_summary(frame),
    ]
    columns = (
        *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"),
        Column("runner", "runner"), SPS, Column("ci_confidence_pct", "confidence", "share"),
        Column("processes", "processes", "int"),
        Column("processes_total", "of", "int"), Column("processes_flagged", "flagged", "int"),
        Column("ci_method", "interval", "text"), Column("flag_reason", "interference", "text"),
        Column("probe_spread_pct", "machine's speed varied", "share"),
    )
    reruns = rerun_agreement(ctx.results)
    tables = [Table("Results", frame, columns)]
    if not reruns.empty:
        summary.append(_rerun_summary(reruns))
        tables.append(Table("Re-runs of one configuration: do the intervals hold?", reruns,
                            RERUN_TABLE_COLUMNS))
    return Finding("quality", title, summary, [], tables, part="beyond")


def _probe_spread_pct(figure: object) -> float | None:
    """How far the machine's speed (the reference probe) varied over a result's processes."""
    spread = figure.probe_spread_rel if isinstance(figure, Result) else None
    return None if spread is None else 100 * spread


def _machine_states_summary(frame: pd.DataFrame) -> str:
    """Which results' processes ran in different machine states (`measure.probe`)."""
    measured = frame.dropna(subset=["probe_spread_pct"])
    if measured.empty:
        return ("No result has the machine's reference probe (a short GEMM each process times "
                "before and after its samples): whether its processes ran in one machine "
                "state is not known.")
    spanning = measured[[spans_states(p / 100) for p in measured["probe_spread_pct"]]]
    limit = f"{100 * SPANS_STATES_REL:.0f}%"
    if spanning.empty:
        return (f"All {len(measured)} results with the machine's reference probe ran in one "
                f"machine state (its speed varied by at most {limit} over their processes).")
    names = ", ".join(f"{r.model} {r.backend}/{r.mode}" for r in spanning.itertuples())
    return (f"{len(spanning)} of {len(measured)} results with the machine's reference probe "
            f"SPAN MACHINE STATES: its speed varied by more than {limit} over their processes "
            f"({names}). Part of their spread between processes is the machine's; the figures "
            "are not rescaled.")


def _drift_summary(frame: pd.DataFrame) -> str:
    between = frame[frame["between_processes"].astype(bool)]
    drift = pd.to_numeric(between.get("drift_rel_sd", pd.Series(dtype=float)),
                          errors="coerce").dropna()
    if drift.empty:
        return ("No configuration has been re-run on this machine: the intervals hold for the "
                "processes of each run, not for how runs at other times differ (often by more). "
                "Re-run a few configurations to measure that; later results then include it.")
    return (f"{len(drift)} of {len(between)} multi-process intervals also include the "
            f"between-run variation of this machine (σ {100 * drift.min():.1f}-"
            f"{100 * drift.max():.1f}%, measured from re-runs: the machine's other "
            "configurations as a prior, each configuration's own earlier results on top): "
            "processes of one run share the machine's state of that hour; re-runs show it.")


RERUN_TABLE_COLUMNS = (
    *PAIR_COLUMNS, Column("backend", "backend"), Column("mode", "mode"),
    Column("runner", "runner"), Column("results", "results", "int"),
    Column("low_sps", "lowest samples/s", "sps"), Column("high_sps", "highest samples/s", "sps"),
    Column("spread_pct", "spread", "share"),
    Column("median_halfwidth_pct", "typical interval ±", "share"),
    Column("pairs_held", "pairs held", "int"), Column("pairs", "of", "int"),
    Column("agreement", "agreement", "ratio"),
)


def _rerun_summary(reruns: pd.DataFrame) -> str:
    held, pairs = int(reruns["pairs_held"].sum()), int(reruns["pairs"].sum())
    return (f"{len(reruns)} configurations were measured by two or more results here: one "
            f"result's interval held another's figure in {held} of {pairs} ordered pairs "
            f"({held / pairs:.2f}; an honest 95% interval scores about 0.83, both sides "
            "varying). Far below that, re-runs differ by more than the processes of one run "
            "do: the machine changed between them.")
