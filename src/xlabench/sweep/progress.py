"""Progress on stderr: a redrawn bar on a terminal, one line per configuration otherwise."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from xlabench.core import Record, Spec
from xlabench.core.result import Result, interference_reason
from xlabench.core.scenario import describe_figure
from xlabench.sweep.plan import format_duration

BAR_WIDTH = 24


@dataclass
class SweepSummary:
    """What a sweep did: configurations ok and failed (by (status, reason)), processes run."""

    sweep_id: str
    grid: int
    done_before: int
    ran: int = 0  # worker processes
    ok: int = 0  # configurations with a result
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)
    flagged: int = 0  # results left with too few processes clear of interference
    flagged_processes: int = 0
    wall_s: float = 0.0
    worker_s: float = 0.0  # sum of Record.duration_s: time spent inside workers
    tracker_failures: dict[str, int] = field(default_factory=dict)

    def add(self, record: Record) -> None:
        """One finished worker process."""
        self.ran += 1
        self.worker_s += record.duration_s or 0.0
        if interference_reason(record.interference):
            self.flagged_processes += 1

    def add_result(self, result: Result | None) -> None:
        """One configuration's combined result."""
        if result is None:
            return
        if result.status == "ok":
            self.ok += 1
            self.flagged += int(result.flagged)
        else:
            self.failed[(result.status, result.error or "")] += 1


@dataclass(frozen=True)
class PlannedProcesses:
    """What the plan expects of the processes still to run: per configuration (spec id) the
    estimated seconds of one process and how many processes it still needs."""

    per_process_s: dict[str, float]
    processes_left: dict[str, int]

    def left_s(self) -> dict[str, float]:
        """Estimated seconds still to run, per configuration."""
        return {k: self.per_process_s.get(k, 0.0) * n for k, n in self.processes_left.items()}


class Progress:
    """Tracks the running configurations and shows how far the sweep is.

    Args:
        stream: where to write (stderr).
        total: configurations to run.
        workers: how many run at once (for the ETA).
        estimate_s: a first ETA from past results, used until something finishes.
        tty: redraw one bar in place; None asks the stream.
        total counts worker processes (a result is several; see `expect`).
        columns: width of the bar line; None asks the terminal.
        planned: each configuration's estimated seconds a process and processes still to
            run (the plan's); with it the ETA is what is left of the plan, scaled by how this
            sitting runs against it, not the mean process so far times the processes left
            (wrong by far when the slow models come last).
    """

    def __init__(
        self, stream: TextIO, total: int, workers: int = 1, estimate_s: float | None = None,
        tty: bool | None = None, columns: int | None = None,
        planned: PlannedProcesses | None = None,
    ) -> None:
        self.stream = stream
        self.total = total
        self.workers = max(1, workers)
        self.estimate_s = estimate_s
        self.tty = stream.isatty() if tty is None else tty
        self.columns = columns
        self.finished = 0
        self.running: list[str] = []
        self._durations: list[float] = []
        self._dispatched = 0
        self.planned = planned
        self._left_s = dict(planned.left_s()) if planned else {}
        self._planned_done_s = 0.0  # the plan's estimate of the processes finished so far
        self._actual_done_s = 0.0  # their actual worker time

    def started(self, spec: Spec) -> None:
        self.running.append(spec.label())
        self._draw()

    def expect(self, processes: int) -> None:
        """`processes` more are being dispatched; the total grows when a result needs more."""
        self._dispatched += processes
        self.total = max(self.total, self._dispatched)

    def record(self, record: Record) -> None:
        """A configuration finished (whatever its status)."""
        label = record.spec.label()
        if label in self.running:
            self.running.remove(label)
        self.finished += 1
        if record.duration_s:
            self._durations.append(record.duration_s)
        self._count_planned(record)
        if self.tty:
            if not record.ok:
                self.note(self._result_line(record))
            self._draw()
        else:
            self._write(self._result_line(record) + "\n")

    def note(self, line: str) -> None:
        """A message (a warning) that must not be overwritten by the bar."""
        if self.tty:
            self._write("\r\x1b[K" + line + "\n")
            self._draw()
        else:
            self._write(line + "\n")

    def close(self) -> None:
        if self.tty:
            self._write("\r\x1b[K")

    def eta_s(self) -> float | None:
        """Remaining time. With a plan: the plan's estimate of the processes left, times how
        long the finished ones took against their estimate, over the workers. Without one:
        the mean worker time so far times the processes left, over the workers."""
        if self._planned_done_s > 0:
            pace = self._actual_done_s / self._planned_done_s
            return sum(self._left_s.values()) * pace / self.workers
        left = self.total - self.finished
        if self._durations:
            mean = sum(self._durations) / len(self._durations)
            return mean * left / self.workers
        return self.estimate_s

    def _count_planned(self, record: Record) -> None:
        if self.planned is None or not record.duration_s:
            return
        spec_id = record.spec.spec_id()
        per_process_s = self.planned.per_process_s.get(spec_id)
        if not per_process_s:  # no estimate, or ruled out at 0 s: no pace to learn
            return
        self._planned_done_s += per_process_s
        self._actual_done_s += record.duration_s
        self._left_s[spec_id] = max(0.0, self._left_s.get(spec_id, 0.0) - per_process_s)

    def _result_line(self, record: Record) -> str:
        spec, where = record.spec, f"[{self.finished}/{self.total}]"
        took = f"{record.duration_s:.0f} s" if record.duration_s else "-"
        if record.ok and (record.throughput is not None or record.scenario is not None):
            outcome = f"ok  {_figure_text(record)}"
            why = interference_reason(record.interference)
            outcome += f"  INTERFERENCE: {why}" if why else ""
        else:
            outcome = f"{record.status.value.upper()}  {record.error or ''}"
        process = f" #{record.process.index + 1}" if record.process.result_id else ""
        return (f"{where} {spec.label()}{process}: {outcome} "
                f"({took}; ETA {format_duration(self.eta_s())})")

    def _draw(self) -> None:
        if not self.tty:
            return
        done = self.finished / self.total if self.total else 1.0
        filled = int(BAR_WIDTH * done)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        now = self.running[0] if self.running else "-"
        more = f" (+{len(self.running) - 1})" if len(self.running) > 1 else ""
        line = (f"[{bar}] {self.finished}/{self.total} {100 * done:3.0f}%  "
                f"ETA {format_duration(self.eta_s())}  running: {now}{more}")
        width = (self.columns or shutil.get_terminal_size((100, 20)).columns) - 1
        self._write("\r\x1b[K" + line[:width])

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _figure_text(record: Record) -> str:
    """An ok process's figure with its unit: samples/s of the timed loop, or a LoadGen
    scenario's ("p90 12.3 ms", "41.2 samples/s", "18.5 q/s within p99 50 ms") and how its
    runs were shortened against MLPerf's."""
    outcome = record.scenario
    if outcome is None:
        assert record.throughput is not None
        return f"{record.throughput.median_sps:.4g} samples/s"
    bound = record.spec.scenario_settings.latency_bound_ms
    text = f"{outcome.scenario} {describe_figure(outcome.scenario, outcome.figure, bound)}"
    return f"{text} [{outcome.shortfall}]" if outcome.shortfall else text


def format_summary(summary: SweepSummary) -> str:
    """The end-of-sweep summary: done, skipped, failed by status and reason."""
    failed = sum(summary.failed.values())
    lines = [
        f"sweep {summary.sweep_id}: {summary.grid} configurations: {summary.ok} done now, "
        f"{summary.done_before} skipped (already done), {failed} failed; {summary.ran} worker "
        f"processes [{format_duration(summary.wall_s)} wall, "
        f"{format_duration(summary.worker_s)} in workers]"
    ]
    if summary.flagged_processes:
        lines.append(f"  {summary.flagged_processes} processes were measured under interference "
                     f"(kept, flagged, re-run); {summary.flagged} results are still flagged")
    by_status: Counter[str] = Counter()
    for (status, _), n in summary.failed.items():
        by_status[status] += n
    for status, n in by_status.most_common():
        lines.append(f"  {status}: {n}")
        reasons = [(r, k) for (s, r), k in summary.failed.items() if s == status]
        for reason, k in sorted(reasons, key=lambda item: -item[1])[:5]:
            lines.append(f"    {k} x {reason[:160] or '(no reason)'}")
    for name, n in sorted(summary.tracker_failures.items()):
        lines.append(f"  {name}: {n} results could not be logged")
    if failed:
        lines.append("  failed configurations are retried when the same sweep runs again")
    return "\n".join(lines)

