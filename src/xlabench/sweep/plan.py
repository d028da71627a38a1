"""The plan of a sweep: what will run, what is skipped, and how long it may take."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xlabench.core import Spec
from xlabench.measure import stats
from xlabench.store import ResultStore
from xlabench.sweep.expand import Grid

#: (model, backend, mode) -> past worker wall times; the exact configuration is tried first.
HistoryKey = tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """A grid after the resume filter, with an estimate of its duration."""

    grid: Grid
    todo: tuple[Spec, ...]
    done: int  # configurations with a successful result in this environment
    workers: int
    estimate_s: dict[str, float]  # spec_id -> estimated seconds of its result's processes
    processes: int = 1  # the fewest processes each result runs

    @property
    def estimated_total_s(self) -> float | None:
        """Wall-time estimate for the specs with history, spread over the workers."""
        if not self.estimate_s:
            return None
        return sum(self.estimate_s.values()) / self.workers

    def by_backend_mode(self) -> Counter[str]:
        return Counter(f"{s.backend}/{s.mode}" for s in self.todo)


def make_plan(
    grid: Grid, done_ids: set[str], workers: int, store: ResultStore | None, processes: int = 1
) -> Plan:
    """The plan: `grid` minus specs in `done_ids`, with estimates from `store`'s history (past
    worker durations are per process; a result runs at least `processes` of them)."""
    todo = tuple(s for s in grid.specs if s.spec_id() not in done_ids)
    per_process = estimate_durations(store, todo) if store is not None else {}
    estimates = {k: v * processes for k, v in per_process.items()}
    return Plan(grid=grid, todo=todo, done=len(grid.specs) - len(todo), workers=workers,
                estimate_s=estimates, processes=processes)


def estimate_durations(store: ResultStore, specs: Iterable[Spec]) -> dict[str, float]:
    """Median past worker wall time (`Record.duration_s`) for each spec that has history.

    The same model/resolution/batch/backend/mode/precision is preferred; otherwise any past run
    of the same model on the same backend and mode. Failures count too: a configuration that
    timed out before will likely take its timeout again.
    """
    history: dict[tuple[str, str, str], list[tuple[HistoryKey, float]]] = {}
    estimates = {}
    for spec in specs:
        coarse = (spec.model, spec.backend, spec.mode)
        if coarse not in history:
            history[coarse] = _durations(store, *coarse)
        exact = [d for key, d in history[coarse] if key == _exact_key(spec)]
        pool = exact or [d for _, d in history[coarse]]
        if pool:
            estimates[spec.spec_id()] = stats.median(pool)
    return estimates


def _durations(store: ResultStore, model: str, backend: str, mode: str) -> list[tuple]:
    found = []
    for row in store.rows_with_records(model=model, backend=backend, mode=mode, source="local"):
        duration = json.loads(row["record_json"]).get("duration_s")
        if duration:
            key = (str(row["resolution"]), str(row["batch_size"]), row["precision"])
            found.append((key, float(duration)))
    return found


def _exact_key(spec: Spec) -> HistoryKey:
    return (str(spec.resolution), str(spec.batch_size), spec.precision)


def format_duration(seconds: float | None) -> str:
    """'1 h 05 min', '12 min', '40 s'; '?' when unknown."""
    if seconds is None:
        return "?"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def format_plan(plan: Plan, db: str, env_ids: Iterable[str] = ()) -> str:
    """The plan for people: counts by backend/mode, skips, what is done, the estimate."""
    grid = plan.grid
    lines = [f"sweep {grid.sweep_id()}: {len(grid.specs)} configurations in the grid, "
             f"{len(plan.todo)} to run, {plan.done} already done in {db}"
             + (f" (environment {', '.join(env_ids)})" if env_ids else "")]
    counts = plan.by_backend_mode()
    width = max((len(k) for k in counts), default=0)
    lines += [f"  {key.ljust(width)}  {n}" for key, n in sorted(counts.items())]
    lines += _skipped_lines(grid.skipped)
    lines.append(_estimate_line(plan))
    lines += _tier_lines(plan)
    return "\n".join(lines)


def _tier_lines(plan: Plan) -> list[str]:
    """A tiered preset's plan per tier: configurations to run and their estimate, so each
    sitting can be sized from its tier's own ETA."""
    tiers = plan.grid.tiers
    lines = []
    for tier in sorted(set(tiers.values())):
        todo = [s.spec_id() for s in plan.todo if tiers.get(s.spec_id()) == tier]
        in_grid = sum(1 for key in tiers.values() if key == tier)
        known = [plan.estimate_s[key] for key in todo if key in plan.estimate_s]
        estimate = format_duration(sum(known) / plan.workers) if known else "?"
        rest = len(todo) - len(known)
        extra = f" ({rest} without history, not counted)" if known and rest else ""
        lines.append(f"  tier {tier}: {len(todo)} of {in_grid} configurations to run, "
                     f"estimate {estimate}{extra}")
    return lines


def _skipped_lines(skipped: Mapping[str, int]) -> list[str]:
    if not skipped:
        return []
    total = sum(skipped.values())
    lines = [f"  left out of the grid: {total}"]
    lines += [f"    {n:>5}  {reason}" for reason, n in sorted(skipped.items(), key=lambda i: -i[1])]
    return lines


def _estimate_line(plan: Plan) -> str:
    if not plan.todo:
        return "nothing to run"
    known = len(plan.estimate_s)
    if known == 0:
        return "estimate: none yet (no past results for these configurations in the db)"
    workers = f" on {plan.workers} workers" if plan.workers > 1 else ""
    rest = len(plan.todo) - known
    extra = f"; {rest} configurations have no history and are not counted" if rest else ""
    return (f"estimate: {format_duration(plan.estimated_total_s)}{workers} for {known} "
            f"configurations, at least {plan.processes} processes each (median past process "
            f"duration of the same model/backend/mode){extra}")
