"""Which worker process runs next: a result is several processes, interleaved across modes.

The configurations of one model that differ only in backend/mode (the pairs a speedup compares)
form a group. The group runs in rounds, A B C, A B C, ..., so a slow drift of the machine hits
every mode alike and processes of the same round can be paired. Each configuration runs
`min_processes`, then more while its combined interval is wider than the target, its time
budget allows and it is under `max_processes`. After the whole grid, configurations left with
too few clean processes (the others measured under interference) get a bounded number of
re-run rounds. A failed process ends its configuration: failure is data, not something to retry
until it passes.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from xlabench.core import Record, Spec
from xlabench.core.record import ProcessInfo
from xlabench.core.result import Result, ResultPolicy
from xlabench.measure import combine, stats

#: Sampling in one process stops once its own interval is this share of the between-process
#: spread: the process median's variance is then within ~6% of the between-process variance
#: ((1/2)^2 / 1.96^2 of it), so longer sampling would buy nothing a re-run keeps.
SAMPLING_SHARE_OF_SPREAD = 0.5


def group_key(spec: Spec) -> tuple[object, ...]:
    """Configurations that differ only in backend and mode run interleaved."""
    return (spec.model, spec.resolution, spec.batch_size, spec.precision, spec.weights,
            spec.tf32, spec.seed, spec.repeat, spec.measure)


def sweep_result_id(sweep_id: str, spec: Spec, env_id: str) -> str:
    """A sweep's result of one spec in one environment: stable, so a resumed sweep continues it."""
    text = f"{sweep_id}|{spec.spec_id()}|{env_id}"
    return "s" + hashlib.sha256(text.encode()).hexdigest()[:15]


def fresh_result_id() -> str:
    """A result of its own (`xlabench run`): every invocation is a new result."""
    return "r" + uuid.uuid4().hex[:15]


@dataclass
class ResultProcesses:
    """The processes of one configuration's result, and whether it wants another (not an
    experiment tracker: those are `sweep.trackers`)."""

    spec: Spec
    result_id: str
    policy: ResultPolicy
    records: list[Record] = field(default_factory=list)
    reruns_left: int = 0

    def __post_init__(self) -> None:
        self.reruns_left = self.policy.rerun_flagged

    @property
    def stopped(self) -> bool:
        """A process failed: no more processes for this configuration."""
        return any(not r.ok for r in self.records)

    def clean(self) -> list[Record]:
        return combine.clean_processes(self.records)[0]

    def wants_main(self) -> bool:
        """In the main pass: the minimum, then more while the interval is too wide."""
        n = len(self.records)
        if self.stopped or n >= self.policy.max_processes:
            return False
        if n < self.policy.min_processes:
            return True
        clean = self.clean()
        if len(clean) < 2:
            return False  # nothing to narrow; flagged ones are re-run at the end
        interval = combine.log_t_interval([r.rate_per_s for r in clean])  # type: ignore[misc]
        return interval.rel_halfwidth > self.policy.target_rel_ci and self._budget_allows()

    def wants_rerun(self) -> bool:
        """After the grid: replace processes measured under interference."""
        short = len(self.clean()) < self.policy.min_processes
        return short and not self.stopped and self.reruns_left > 0 and \
            len(combine.clean_processes(self.records)[1]) > 0

    def final(self) -> bool:
        """Wants neither another main-pass process nor a re-run: its processes are all it will
        have (both wants read its own processes alone, which change only when it runs)."""
        return bool(self.records) and not self.wants_main() and not self.wants_rerun()

    def _budget_allows(self) -> bool:
        durations = [r.duration_s or 0.0 for r in self.records]
        return sum(durations) + stats.median(durations) <= self.policy.budget_s

    def sampling_target(self) -> tuple[float | None, str]:
        """A relaxed per-process sampling target once the between-process spread is known."""
        clean = self.clean()
        if len(clean) < 2:
            return None, ""
        spread = combine.log_spread([r.rate_per_s for r in clean])  # type: ignore[misc]
        target = SAMPLING_SHARE_OF_SPREAD * spread
        if target <= self.spec.measure.target_rel_ci:
            return None, ""
        return target, (f"between-process spread {100 * spread:.1f}%: sampling stops at "
                        f"±{100 * target:.1f}% (half of it)")

    def process_info(self, round_index: int) -> ProcessInfo:
        target, reason = self.sampling_target()
        return ProcessInfo(result_id=self.result_id, index=len(self.records), round=round_index,
                           sampling_target_rel_ci=target, sampling_reason=reason)

    def result(self, drift: combine.RunDrift | None = None) -> Result:
        return combine.combine(self.records, self.result_id, self.policy, drift=drift)

    def next_round(self) -> int:
        return 1 + max((r.process.round for r in self.records), default=-1)


class Scheduler:
    """Hands out batches of specs (one round of one group) and keeps each result's processes.

    The batches are produced lazily: the caller runs a batch to completion (adding every record
    with `add`) before it asks for the next one, so each decision sees every finished process.
    """

    def __init__(self, results: Sequence[ResultProcesses]) -> None:
        self.results = list(results)
        self._by_spec = {t.spec.spec_id(): t for t in self.results}
        self._pending: dict[str, ProcessInfo] = {}
        self.groups: list[list[ResultProcesses]] = _groups(self.results)

    def batches(self) -> Iterator[list[Spec]]:
        for group in self.groups:
            yield from self._rounds(group, ResultProcesses.wants_main)
        for _ in range(max((t.policy.rerun_flagged for t in self.results), default=0)):
            for group in self.groups:
                batch = self._batch(group, ResultProcesses.wants_rerun)
                if batch:
                    for processes in group:
                        if processes.spec in batch:
                            processes.reruns_left -= 1
                    yield batch

    def _rounds(self, group: list[ResultProcesses], wants: object) -> Iterator[list[Spec]]:
        while True:
            batch = self._batch(group, wants)
            if not batch:
                return
            yield batch

    def _batch(self, group: list[ResultProcesses], wants: object) -> list[Spec]:
        chosen = [t for t in group if wants(t)]  # type: ignore[operator]
        round_index = max((t.next_round() for t in group), default=0)
        for processes in chosen:
            self._pending[processes.spec.spec_id()] = processes.process_info(round_index)
        return [t.spec for t in chosen]

    def info_for(self, spec: Spec) -> ProcessInfo:
        """Where the next process of `spec` sits in its result (set when it was batched)."""
        return self._pending.get(spec.spec_id()) or self._by_spec[spec.spec_id()].process_info(0)

    def stamp(self, record: Record) -> Record:
        """A finished process, stamped with its place in its result."""
        info = self._pending.pop(record.spec_id, None) or self.info_for(record.spec)
        return record.replace(process=info)

    def keep(self, record: Record) -> None:
        """A stamped (and stored) process joins its result."""
        self._by_spec[record.spec_id].records.append(record)

    def processes_of(self, spec: Spec) -> ResultProcesses:
        return self._by_spec[spec.spec_id()]


def _groups(results: Iterable[ResultProcesses]) -> list[list[ResultProcesses]]:
    groups: dict[tuple[object, ...], list[ResultProcesses]] = {}
    for processes in results:
        groups.setdefault(group_key(processes.spec), []).append(processes)
    return list(groups.values())
