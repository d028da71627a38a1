"""The sweep: expand the grid, skip what is done, dispatch processes, store each as it finishes.

A configuration's result is several worker processes (see `schedule`). Resumability comes from
four rules: a process record is written (one transaction) only once its worker has finished; a
result's id is stable for the same sweep, spec and environment, so a resumed sweep continues
the result with the processes it already has; a spec counts as done only when its combined
result is complete (or it has a successful one-process result from before results had
processes); this process is the only writer. Killed at any moment, a sweep has lost at most the
processes that were running.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from xlabench.core import Record, Spec
from xlabench.core.result import SAMPLING_TARGET_ENV, Result, ResultPolicy
from xlabench.measure import combine
from xlabench.runner import current_env_id, ensure_peaks, with_costs
from xlabench.runner.execute import remember_costs
from xlabench.store import ResultStore
from xlabench.sweep.executors import (
    Executor,
    Finished,
    LocalExecutor,
    RayExecutor,
    local_slots,
)
from xlabench.sweep.grid import Grid, SweepConfig, expand
from xlabench.sweep.plan import Plan, make_plan
from xlabench.sweep.progress import Progress, SweepSummary
from xlabench.sweep.schedule import Scheduler, Tracker, fresh_result_id, sweep_result_id
from xlabench.sweep.trackers import Trackers

CostKey = tuple[str, int]


class CostPlanner:
    """Decides, when a spec is dispatched, whether its worker should count the model's costs.

    Costs (params, MACs, FLOPs) depend on model and resolution only, so each is counted once:
    not when the store already has them, not twice in one sweep, and preferably by a JAX spec
    (which counts them in its own worker; any other backend needs an extra JAX process).
    """

    def __init__(self, store: ResultStore, specs: Iterable[Spec]) -> None:
        self._store = store
        self._requested: set[CostKey] = set()
        self._jax_left: Counter[CostKey] = Counter(
            (s.model, s.resolution) for s in specs if s.backend == "jax"
        )

    def want_costs(self, spec: Spec) -> bool:
        key = (spec.model, spec.resolution)
        if spec.backend == "jax":
            self._jax_left[key] -= 1
        elif self._jax_left[key] > 0:
            return False  # a JAX spec of this model will count them for free
        if key in self._requested or self._store.get_costs(*key) is not None:
            return False
        self._requested.add(key)
        return True

    def finished(self, done: Finished) -> None:
        """A spec that was asked for costs came back without them: let the next one try."""
        if done.wanted_costs and done.record.costs.macs_per_image is None:
            self._requested.discard((done.spec.model, done.spec.resolution))


class _Hooks:
    def __init__(self, costs: CostPlanner, progress: Progress, scheduler: Scheduler) -> None:
        self.costs = costs
        self.progress = progress
        self.scheduler = scheduler

    def want_costs(self, spec: Spec) -> bool:
        return self.costs.want_costs(spec)

    def started(self, spec: Spec) -> None:
        self.progress.started(spec)

    def process_env(self, spec: Spec) -> dict[str, str]:
        target = self.scheduler.info_for(spec).sampling_target_rel_ci
        return {SAMPLING_TARGET_ENV: f"{target:.6f}"} if target else {}


def make_executor(config: SweepConfig) -> Executor:
    """The executor the configuration asks for (connects to Ray for `ray`)."""
    if config.executor == "ray":
        return RayExecutor(config.timeout_s, config.ray_address, config.workers)
    return LocalExecutor(config.timeout_s, local_slots(config.workers or 1))


class Sweep:
    """One sweep invocation: validated and planned on creation, run with `run()`.

    Everything that can be wrong with the input (models, families, presets, an empty grid,
    too many workers, a foreign db) raises UserError here, before any worker starts.

    Args:
        config: what to run.
        executor: where to run it (default: from `config`); tests pass their own.
        dry_run: plan only: an absent db is not created.
    """

    def __init__(
        self, config: SweepConfig, executor: Executor | None = None, dry_run: bool = False
    ) -> None:
        self.config = config
        self.grid: Grid = expand(config)
        self.sweep_id = self.grid.sweep_id(config.label)
        self.executor = executor or make_executor(config)
        exists = Path(config.db).exists()
        self.store: ResultStore | None = None
        try:
            if exists or not dry_run:
                self.store = ResultStore(config.db)
            self.env_ids = self.executor.env_ids()
            done = (self.store.completed_spec_ids(self.env_ids, config.label) if self.store
                    else set())
            self.plan: Plan = make_plan(self.grid, done, self.executor.workers, self.store,
                                        config.policy.min_processes)
        except BaseException:
            self.close()
            raise

    def run(self, stream: TextIO, tty: bool | None = None) -> SweepSummary:
        """Run the plan, writing each process record as it finishes and each configuration's
        combined result when its processes are done; progress goes to `stream`."""
        if self.store is None:
            raise RuntimeError("a dry-run sweep cannot run")
        plan, store, policy = self.plan, self.store, self.config.policy
        scheduler = Scheduler(self._trackers(plan.todo))
        expected = sum(max(0, policy.min_processes - len(t.records)) for t in scheduler.trackers)
        progress = Progress(stream, expected, self.executor.workers, plan.estimated_total_s, tty)
        summary = SweepSummary(self.sweep_id, len(self.grid.specs), plan.done)
        trackers = Trackers.open(self.sweep_id, self.config.log_wandb, self.config.log_mlflow,
                                 progress.note)
        costs = CostPlanner(store, plan.todo)
        hooks = _Hooks(costs, progress, scheduler)
        start_s = time.perf_counter()
        try:
            if plan.todo:
                measure_local_peaks(store, self.executor, progress.note)
            for batch in scheduler.batches():
                progress.expect(len(batch))
                for done in self.executor.run(batch, hooks):
                    record = save_record(store, scheduler.stamp(done.record), self.sweep_id,
                                         self.config.label)
                    scheduler.keep(record)
                    costs.finished(done)
                    summary.add(record)
                    progress.record(record)
                self._save_results(scheduler, batch, complete=False)
            for tracker in scheduler.trackers:
                result = self._save(tracker, complete=True)
                summary.add_result(result)
                stand_in = tracker.summary_record(result) if result else None
                if stand_in is not None:
                    trackers.log(stand_in)
        finally:
            summary.wall_s = time.perf_counter() - start_s
            summary.tracker_failures = dict(trackers.failures)
            trackers.close()
            progress.close()
        return summary

    def _trackers(self, specs: Iterable[Spec]) -> list[Tracker]:
        """One tracker per spec to run, holding the successful processes a killed or failed
        run already stored (a failed process stays stored, but the retried result goes on)."""
        assert self.store is not None
        env_id = self.env_ids[0] if self.env_ids else ""
        found = []
        for spec in specs:
            result_id = sweep_result_id(self.sweep_id, spec, env_id)
            tracker = Tracker(spec, result_id, self.config.policy)
            tracker.records.extend(r for r in self.store.processes(result_id) if r.ok)
            found.append(tracker)
        return found

    def _save_results(self, scheduler: Scheduler, batch: list[Spec], complete: bool) -> None:
        for spec in batch:
            self._save(scheduler.tracker(spec), complete)

    def _save(self, tracker: Tracker, complete: bool) -> Result | None:
        if not tracker.records:
            return None
        assert self.store is not None
        result = tracker.result(environment_drift(self.store, tracker))
        self.store.save_result(result, tracker.policy, complete, self.sweep_id,
                               self.config.label)
        return result

    def close(self) -> None:
        self.executor.close()
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> Sweep:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def measure_local_peaks(
    store: ResultStore, executor: Executor, note: Callable[[str], None]
) -> None:
    """The device's matmul peak, once per environment, before the first benchmark: a few
    seconds, on the idle machine. Local executors only: the records of a Ray node carry that
    node's environment, which this machine cannot measure (test executors run nothing)."""
    if isinstance(executor, LocalExecutor):
        ensure_peaks(store, current_env_id(), note=note)


def save_record(store: ResultStore, record: Record, sweep_id: str,
                label: str | None = None) -> Record:
    """Attach the model's costs (cached, or counted by this worker), then store the record
    (with the run's `label`, if any)."""
    spec = record.spec
    cached = store.get_costs(spec.model, spec.resolution)
    record = with_costs(record, cached)
    remember_costs(store, record, cached)
    store.save(record, sweep_id, label)
    return record


def run_sweep(
    config: SweepConfig, stream: TextIO, executor: Executor | None = None,
    tty: bool | None = None,
) -> SweepSummary:
    """Plan and run `config` (the API behind `xlabench sweep`); progress goes to `stream`."""
    with Sweep(config, executor) as sweep:
        return sweep.run(stream, tty)


def run_result(
    spec: Spec,
    store: ResultStore,
    policy: ResultPolicy,
    stream: TextIO,
    timeout_s: float,
    executor: Executor | None = None,
    label: str | None = None,
) -> tuple[Result, list[Record]]:
    """One configuration as one result of several fresh processes (the API behind `run`).

    The same scheduler as a sweep: the minimum number of processes, more while the interval is
    too wide and the budget allows, re-runs for processes measured under interference. Every
    process is stored as it finishes, then the combined result, both with `label` (if any).
    Progress goes to `stream`.
    """
    executor = executor or LocalExecutor(timeout_s, local_slots(1))
    tracker = Tracker(spec, fresh_result_id(), policy)
    scheduler = Scheduler([tracker])
    progress = Progress(stream, policy.min_processes, 1, None, tty=False)
    costs = CostPlanner(store, [spec])
    hooks = _Hooks(costs, progress, scheduler)
    sweep_id = tracker.result_id
    measure_local_peaks(store, executor, progress.note)
    for batch in scheduler.batches():
        progress.expect(len(batch))
        for done in executor.run(batch, hooks):
            record = save_record(store, scheduler.stamp(done.record), sweep_id, label)
            scheduler.keep(record)
            costs.finished(done)
            progress.record(record)
    result = tracker.result(environment_drift(store, tracker))
    store.save_result(result, policy, complete=True, sweep_id=sweep_id, label=label)
    return result, tracker.records


def environment_drift(store: ResultStore, tracker: Tracker) -> combine.RunDrift | None:
    """The between-run variation for the result's configuration (None until something was
    re-run): the machine's, from the re-runs stored there of *other* configurations, as a
    prior that the configuration's own earlier results update (`combine.config_drift`).
    Configurations drift very differently on one machine, so once a configuration has been
    re-run its own history counts; the earlier results are re-runs the user already has, and
    the new result is never part of its own estimate."""
    env_ids = {r.env_id for r in tracker.records if r.ok}
    if len(env_ids) != 1:
        return None  # no process yet, or processes from several machines: nothing to pool
    return stored_drift(store, env_ids.pop(), tracker.spec.spec_id(), tracker.result_id)


def stored_drift(store: ResultStore, env_id: str, spec_id: str, result_id: str
                 ) -> combine.RunDrift | None:
    """`environment_drift` from what the store holds now for one result of `spec_id` measured
    in `env_id`."""
    others, own = store.drift_history(env_id, spec_id, result_id)
    return combine.config_drift(own, combine.run_drift(others))
