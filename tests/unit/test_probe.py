"""The machine's state: the reference probe, the spread of a result's probes, and where they
are kept (record JSON, the store, the combined result) and shown (`run`'s output, the per
process CSV, the report's quality section)."""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import make_record
from tests.report.test_analysis import frame
from xlabench.cli.tables import format_result
from xlabench.core import Record
from xlabench.core.record import Probe, ProcessInfo
from xlabench.core.result import Result, ResultPolicy
from xlabench.measure import combine
from xlabench.measure.probe import (
    PROBE_CALLS,
    PROBE_N,
    SPANS_STATES_REL,
    machine_states,
    readings,
    run_probe,
    settle,
    spans_states,
)
from xlabench.report import ReportOptions, build_findings
from xlabench.store import ResultStore
from xlabench.store.export import full_csv


def probe(gflops: float) -> Probe:
    return Probe(gflops=gflops, seconds=0.04, n=PROBE_N, calls=PROBE_CALLS)


def processes(*probes: tuple[float, float], result_id: str = "r1",
              model: str = "resnet50_v1") -> list[Record]:
    """One result's processes, each with its (before, after) probe rates."""
    return [make_record(model=model, throughput=100.0 + index).replace(
                process=ProcessInfo(result_id=result_id, index=index, round=index),
                probe_before=probe(before), probe_after=probe(after))
            for index, (before, after) in enumerate(probes)]


def test_the_probe_is_a_fixed_gemm_and_gives_a_sane_rate() -> None:
    first, second = run_probe(), run_probe()
    for reading in (first, second):
        assert (reading.n, reading.calls) == (PROBE_N, PROBE_CALLS)
        assert reading.seconds > 0
        # 2 n^3 flops per call: positive, and below 1 TFLOP/s per CPU it may use
        assert 0.01 < reading.gflops < 1000 * len(os.sched_getaffinity(0))
    # one workload for every record: a new size would make stored probes incomparable
    assert (PROBE_N, PROBE_CALLS) == (640, 12)
    small = run_probe(n=64, calls=3)
    assert (small.n, small.calls) == (64, 3)


def _spin_for(seconds: float) -> threading.Thread:
    """A thread of this process that keeps a CPU busy for `seconds`, as a runtime's pool that
    spins after its last call does."""
    def spin() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return thread


def test_the_probe_waits_for_the_workers_own_threads_to_go_idle() -> None:
    waited_s, settled = settle()
    assert settled and waited_s < 0.1  # nothing else runs in this process
    thread = _spin_for(0.15)
    waited_s, settled = settle()
    assert settled and waited_s >= 0.1  # it waited for the spinning thread to stop
    thread.join()
    thread = _spin_for(1.0)
    waited_s, settled = settle(max_s=0.2)
    assert not settled and 0.2 <= waited_s < 0.5  # a pool that never stops: bounded wait
    thread.join()


def test_a_probe_taken_while_the_worker_was_busy_is_no_machine_reading() -> None:
    busy = dataclasses.replace(probe(80.0), settled=False)
    record = make_record().replace(probe_before=busy, probe_after=probe(200.0))
    assert readings(record) == (None, 200.0)
    other = make_record().replace(probe_before=probe(205.0), probe_after=probe(201.0))
    spread = machine_states([record, other])
    assert spread is not None and spread.probes == 3 and not spread.spans_states


def test_the_spread_is_highest_over_lowest_of_every_reading() -> None:
    spread = machine_states(processes((100.0, 98.0), (120.0, 110.0), (101.0, 99.0)))
    assert spread is not None and spread.probes == 6
    assert (spread.low_gflops, spread.high_gflops) == (98.0, 120.0)
    assert spread.rel == pytest.approx(120 / 98 - 1) and spread.spans_states
    quiet = machine_states(processes((100.0, 99.0), (104.0, 101.0)))
    assert quiet is not None and quiet.rel == pytest.approx(104 / 99 - 1) and not quiet.spans_states


def test_too_few_readings_say_nothing() -> None:
    assert machine_states([make_record()]) is None
    one = make_record().replace(probe_before=probe(100.0))
    assert machine_states([one, make_record()]) is None
    assert not spans_states(None)
    assert spans_states(SPANS_STATES_REL + 0.01) and not spans_states(SPANS_STATES_REL)


def test_combine_keeps_the_spread_of_the_processes_it_combined() -> None:
    records = processes((100.0, 100.0), (130.0, 128.0), (101.0, 102.0))
    result = combine.combine(records, "r1", ResultPolicy())
    assert result.probe_spread_rel == pytest.approx(0.30)
    assert result.median_sps == combine.combine(
        [r.replace(probe_before=None, probe_after=None) for r in records], "r1",
        ResultPolicy()).median_sps  # the probe explains, it never rescales
    assert combine.combine([make_record(), make_record()], "r1",
                           ResultPolicy()).probe_spread_rel is None


def test_probes_survive_json_and_the_store(tmp_path: Path) -> None:
    records = processes((100.0, 90.0), (110.0, 95.0))
    assert Record.from_json(records[0].to_json()) == records[0]
    result = combine.combine(records, "r1", ResultPolicy())
    assert Result.from_json(result.to_json()) == result
    with ResultStore(tmp_path / "p.db") as store:
        store.save_many(records)
        store.save_result(result, ResultPolicy(), complete=True)
        assert store.processes("r1") == records
        (stored,) = store.combined()
        assert stored.probe_spread_rel == pytest.approx(110 / 90 - 1)
        rows = list(csv.DictReader(io.StringIO(full_csv(store.rows_with_records()))))
    assert [(float(r["probe_before_gflops"]), float(r["probe_after_gflops"]))
            for r in rows] == [(100.0, 90.0), (110.0, 95.0)]


def test_run_output_shows_each_process_probe_and_the_spread() -> None:
    records = processes((100.0, 90.0), (130.0, 128.0))
    text = format_result(combine.combine(records, "r1", ResultPolicy()), records)
    assert "machine 100/90 GFLOP/s before/after" in text
    assert "machine 130/128 GFLOP/s before/after" in text
    assert "varied 44% over its processes: SPANS MACHINE STATES" in text
    quiet = processes((100.0, 99.0), (101.0, 100.0))
    text = format_result(combine.combine(quiet, "r1", ResultPolicy()), quiet)
    assert "varied 2% over its processes: one machine state" in text


def test_the_report_says_which_results_span_machine_states() -> None:
    rows = frame(processes((100.0, 98.0), (140.0, 139.0))
                 + processes((100.0, 99.0), (101.0, 100.0), result_id="r2",
                             model="mobilenet_v3_small"))
    quality = next(f for f in build_findings(rows, ReportOptions()) if f.key == "quality")
    assert any("1 of 2 results with the machine's reference probe SPAN MACHINE STATES" in s
               and "(resnet50_v1 tensorflow/xla)" in s for s in quality.summary), quality.summary
    (table,) = [t for t in quality.tables if t.title == "Results"]
    spread = dict(zip(table.frame["model"], table.frame["probe_spread_pct"], strict=True))
    assert spread["resnet50_v1"] == pytest.approx(100 * (140 / 98 - 1))
    assert spread["mobilenet_v3_small"] == pytest.approx(100 * (101 / 99 - 1))
    unprobed = frame([make_record()])
    lone = next(f for f in build_findings(unprobed, ReportOptions()) if f.key == "quality")
    assert any("No result has the machine's reference probe" in s for s in lone.summary)
