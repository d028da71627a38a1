"""The sweep: expand the grid, skip what is done, dispatch processes, store each as it finishes.

A configuration's result is several worker processes (see `schedule`). Resumability comes from
four rules: a process record is written (one transaction) only once its worker has finished; a
result's id is stable for the same sweep, spec and environment, so a resumed sweep continues
the result with the processes it already has; a spec counts as done only when its combined
result is complete with at least the processes this sweep asks for (or it has a successful
one-process result from before results had processes), so asking for more processes adds
rounds to the same result; this process is the only writer. Killed at any moment, a sweep has
lost at most the processes that were running.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from xlabench.core import Record, Spec
from xlabench.core.result import Result, ResultPolicy
from xlabench.measure import combine
from xlabench.runner import current_env_id, ensure_costs, ensure_peaks, with_costs
from xlabench.runner.costs import CostCounter, cost_key, count_costs
from xlabench.store import ResultStore
from xlabench.sweep.config import SweepConfig
from xlabench.sweep.executors import (
    Executor,
    LocalExecutor,
    RayExecutor,
    local_slots,
)
from xlabench.sweep.expand import Grid, expand
from xlabench.sweep.pace import Pace, measure_pace
from xlabench.sweep.plan import Plan, make_plan, needs_pace, read_elsewhere
from xlabench.sweep.progress import PlannedProcesses, Progress, SweepSummary
from xlabench.sweep.schedule import (
    ResultProcesses,
    Scheduler,
    fresh_result_id,
    sweep_result_id,
)
from xlabench.sweep.trackers import Trackers


class _Hooks:
    def __init__(self, progress: Progress, scheduler: Scheduler) -> None:
        self.progress = progress
        self.scheduler = scheduler

    def started(self, spec: Spec) -> None:
        self.progress.started(spec)

    def sampling_target(self, spec: Spec) -> float | None:
        return self.scheduler.info_for(spec).sampling_target_rel_ci


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
        history_from: other machines' databases whose durations estimate what this one has
            not run (`sweep.plan.Elsewhere`); `config.db` itself among them is left out.
    """

    def __init__(
        self, config: SweepConfig, executor: Executor | None = None, dry_run: bool = False,
        history_from: Sequence[str] = (),
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
            self._done = (self.store.completed_spec_ids(self.env_ids, config.label,
                                                        config.policy.min_processes)
                          if self.store else set())
            self.elsewhere = read_elsewhere(history_from, config.db)
            # read once: the plan counts them, `run` resumes each result with them
            self._stored = {spec.spec_id(): self._stored_processes(spec)
                            for spec in self.grid.specs if spec.spec_id() not in self._done}
            self.plan: Plan = self.plan_at(None)
        except BaseException:
            self.close()
            raise

    def ensure_pace(self, note: Callable[[str], None]) -> None:
        """On a machine with no history of its own, measure its pace (`sweep.pace`: about a
        minute of pilot processes) and re-plan with it, where the plan is long enough for that
        to matter. Not on Ray: a node's pace is its own, and the history its records bring."""
        if not isinstance(self.executor, RayExecutor) and needs_pace(self.plan):
            self.plan = self.plan_at(measure_pace(self.executor, note))

    def plan_at(self, pace: Pace | None) -> Plan:
        """The plan again, its cost-line estimates at `pace`."""
        return make_plan(self.grid, self._done, self.executor.workers, self.store,
                         self.config.policy.min_processes, pace, self.elsewhere,
                         {k: len(v) for k, v in self._stored.items()})

    def run(self, stream: TextIO, tty: bool | None = None) -> SweepSummary:
        """Run the plan, writing each process record as it finishes and each configuration's
        combined result when its processes are done; progress goes to `stream`."""
        if self.store is None:
            raise RuntimeError("a dry-run sweep cannot run")
        plan, store = self.plan, self.store
        scheduler = Scheduler(self._results(plan.todo))
        progress = Progress(stream, sum(plan.processes_left.values()), self.executor.workers,
                            plan.estimated_total_s, tty,
                            planned=PlannedProcesses(plan.process_s, plan.processes_left))
        summary = SweepSummary(self.sweep_id, len(self.grid.specs), plan.done)
        trackers = Trackers.open(self.sweep_id, self.config.log_wandb, self.config.log_mlflow,
                                 progress.note)
        start_s = time.perf_counter()
        try:
            if plan.todo:
                measure_local_peaks(store, self.executor, progress.note)
            # a result is complete once it wants no more processes, so a sweep killed later
            # (or one resumed after such a kill) keeps it: the end of the sweep saves it again
            self._save_as_they_stand(scheduler.results)
            for batch, records in run_batches(self.executor, scheduler, store, progress,
                                              self.sweep_id, self.config.label):
                for record in records:
                    summary.add(record)
                self._save_as_they_stand(scheduler.processes_of(spec) for spec in batch)
            for processes in scheduler.results:
                result = self._save(processes, complete=True)
                summary.add_result(result)
                for row in store.result_rows(result_id=result.result_id) if result else []:
                    trackers.log(row)  # the result as the store reads it
        finally:
            summary.wall_s = time.perf_counter() - start_s
            summary.tracker_failures = dict(trackers.failures)
            trackers.close()
            progress.close()
        return summary

    def count_costs(self, note: Callable[[str], None] | None = None,
                    counter: CostCounter = count_costs) -> None:
        """Count the model costs the store lacks for the configurations to run (each model
        and resolution once, each in its own process), before any benchmark; `run` attaches
        them to every record it stores."""
        if self.store is None:
            raise RuntimeError("a dry-run sweep counts no costs")
        ensure_costs(self.store, self.plan.todo, note, counter)

    def _results(self, specs: Iterable[Spec]) -> list[ResultProcesses]:
        """The processes of each spec's result, holding the successful ones a killed or failed
        run already stored (a failed process stays stored, but the retried result goes on)."""
        found = []
        for spec in specs:
            processes = ResultProcesses(spec, self._result_id(spec), self.config.policy)
            processes.records.extend(self._stored.get(spec.spec_id(), []))
            found.append(processes)
        return found

    def _stored_processes(self, spec: Spec) -> list[Record]:
        """The successful processes of the spec's result in this sweep the store holds."""
        if self.store is None:
            return []
        return [r for r in self.store.processes(self._result_id(spec)) if r.ok]

    def _result_id(self, spec: Spec) -> str:
        return sweep_result_id(self.sweep_id, spec, self.env_ids[0] if self.env_ids else "")

    def _save_as_they_stand(self, results: Iterable[ResultProcesses]) -> None:
        """Each result with the processes it has: complete once it wants no more."""
        for processes in results:
            self._save(processes, complete=processes.final())

    def _save(self, processes: ResultProcesses, complete: bool) -> Result | None:
        if not processes.records:
            return None
        assert self.store is not None
        result = processes.result(environment_drift(self.store, processes))
        self.store.save_result(result, processes.policy, complete, self.sweep_id,
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


def run_batches(
    executor: Executor, scheduler: Scheduler, store: ResultStore, progress: Progress,
    sweep_id: str, label: str | None,
) -> Iterator[tuple[list[Spec], list[Record]]]:
    """The dispatch loop of a sweep and of `run`: each batch the scheduler hands out runs on
    the executor; every process is stamped, stored as it finishes and joins its result; each
    batch is yielded with its stored records once all of them are in."""
    hooks = _Hooks(progress, scheduler)
    for batch in scheduler.batches():
        progress.expect(len(batch))
        records = []
        for done in executor.run(batch, hooks):
            record = save_record(store, scheduler.stamp(done.record), sweep_id, label)
            scheduler.keep(record)
            progress.record(record)
            records.append(record)
        yield batch, records


def save_record(store: ResultStore, record: Record, sweep_id: str,
                label: str | None = None) -> Record:
    """Attach the model's stored costs (counted before the run: `runner.ensure_costs`), then
    store the record (with the run's `label`, if any)."""
    record = with_costs(record, store.get_costs(*cost_key(record.spec)))
    store.save(record, sweep_id, label)
    return record


def run_sweep(
    config: SweepConfig, stream: TextIO, executor: Executor | None = None,
    tty: bool | None = None,
) -> SweepSummary:
    """Plan and run `config` (the API behind `xlabench sweep`); progress goes to `stream`.
    Model costs are the store's: `xlabench sweep` counts the missing ones first
    (`Sweep.count_costs`)."""
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

    The same scheduler and dispatch loop as a sweep: the minimum number of processes, more
    while the interval is too wide and the budget allows, re-runs for processes measured under
    interference. Every process is stored as it finishes (with the model's stored costs:
    `runner.ensure_costs` counts them first), then the combined result, both with `label` (if
    any). Progress goes to `stream`.
    """
    executor = executor or LocalExecutor(timeout_s, local_slots(1))
    processes = ResultProcesses(spec, fresh_result_id(), policy)
    scheduler = Scheduler([processes])
    progress = Progress(stream, policy.min_processes, 1, None, tty=False)
    sweep_id = processes.result_id
    measure_local_peaks(store, executor, progress.note)
    for _ in run_batches(executor, scheduler, store, progress, sweep_id, label):
        pass
    result = processes.result(environment_drift(store, processes))
    store.save_result(result, policy, complete=True, sweep_id=sweep_id, label=label)
    return result, processes.records


def environment_drift(store: ResultStore, processes: ResultProcesses
                      ) -> combine.RunDrift | None:
    """The between-run variation for the result's configuration (None until something was
    re-run): the machine's, from the re-runs stored there of *other* configurations, as a
    prior that the configuration's own earlier results update (`combine.config_drift`).
    Configurations drift very differently on one machine, so once a configuration has been
    re-run its own history counts; the earlier results are re-runs the user already has, and
    the new result is never part of its own estimate."""
    env_ids = {r.env_id for r in processes.records if r.ok}
    if len(env_ids) != 1:
        return None  # no process yet, or processes from several machines: nothing to pool
    return stored_drift(store, env_ids.pop(), processes.spec.spec_id(), processes.result_id)


def stored_drift(store: ResultStore, env_id: str, spec_id: str, result_id: str
                 ) -> combine.RunDrift | None:
    """`environment_drift` from what the store holds now for one result of `spec_id` measured
    in `env_id`."""
    others, own = store.drift_history(env_id, spec_id, result_id)
    return combine.config_drift(own, combine.run_drift(others))
