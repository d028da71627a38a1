"""The plan of a sweep: what will run, what is skipped, and how long it may take."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from xlabench.core import Spec
from xlabench.measure import stats
from xlabench.store import ResultStore
from xlabench.store.reader import StoreReader
from xlabench.sweep import cost
from xlabench.sweep.expand import Grid
from xlabench.sweep.pace import MIN_MODELLED_S, REFERENCE_MACHINE, Pace
from xlabench.zoo import entry_for

#: (resolution, batch size, precision) of a past process; the exact configuration is tried first.
HistoryKey = tuple[str, ...]
#: A backend and mode.
Engine = tuple[str, str]
T = TypeVar("T")

#: The fewest configurations one backend and mode must share with another machine for their
#: own ratio to scale its durations; with fewer, the ratio over every engine they share.
MIN_SHARED = 3


@dataclass(frozen=True)
class Plan:
    """A grid after the resume filter, with an estimate of its duration."""

    grid: Grid
    todo: tuple[Spec, ...]
    done: int  # configurations with a successful result in this environment
    workers: int
    process_s: dict[str, float]  # spec_id -> estimated seconds a process (those with one)
    processes_left: dict[str, int]  # spec_id -> processes it has to run
    processes: int = 1  # the fewest processes each result runs
    #: processes a result ran beyond `processes` on this machine before (_History.extra)
    extra_processes: float = 0.0
    modelled: frozenset[str] = frozenset()  # spec ids estimated by the cost line, not history
    borrowed: frozenset[str] = frozenset()  # spec ids estimated from another machine's history
    pace: Pace | None = None  # this machine's measured pace, where it has no history
    fresh: bool = False  # no past process on this machine: the line is at the line's pace

    @property
    def estimate_s(self) -> dict[str, float]:
        """spec_id -> estimated seconds of the processes it has to run, and of the processes
        results ran beyond their minimum here before."""
        return {k: s * (self.processes_left[k] + self.extra_processes)
                for k, s in self.process_s.items()}

    @property
    def estimated_total_s(self) -> float | None:
        """Wall-time estimate for the specs with history, spread over the workers."""
        if not self.estimate_s:
            return None
        return sum(self.estimate_s.values()) / self.workers

    def by_backend_mode(self) -> Counter[str]:
        return Counter(f"{s.backend}/{s.mode}" for s in self.todo)


def make_plan(
    grid: Grid, done_ids: set[str], workers: int, store: ResultStore | None, processes: int = 1,
    pace: Pace | None = None, elsewhere: Sequence[Elsewhere] = (),
    stored: Mapping[str, int] | None = None,
) -> Plan:
    """The plan: `grid` minus specs in `done_ids`, with estimates from `store`'s history (past
    worker durations are per process; a result runs at least `processes` of them, less the
    successful ones `stored` says a killed run of the sweep left it), else from another
    machine's (`elsewhere`) scaled to this one, else from the cost line at `pace`."""
    todo = tuple(s for s in grid.specs if s.spec_id() not in done_ids)
    history = _History(store, pace.factor if pace else 1.0, elsewhere)
    per_process = estimate_durations(history, todo)
    left = {s.spec_id(): max(0, processes - (stored or {}).get(s.spec_id(), 0)) for s in todo}
    return Plan(grid=grid, todo=todo, done=len(grid.specs) - len(todo), workers=workers,
                process_s=per_process.seconds, processes_left=left, processes=processes,
                extra_processes=history.extra_processes(processes),
                modelled=per_process.modelled,
                borrowed=per_process.borrowed, pace=pace, fresh=not history.has_any())


def needs_pace(plan: Plan) -> bool:
    """Whether the plan leans on the cost line alone (no past process on this machine) for
    long enough that measuring the machine's pace first is worth it (`sweep.pace`)."""
    if plan.pace is not None or not plan.fresh:
        return False
    modelled_s = sum(plan.estimate_s[k] for k in plan.modelled) / plan.workers
    return modelled_s >= MIN_MODELLED_S


@dataclass(frozen=True)
class Estimates:
    """Each spec's estimated seconds a process, and where the estimate came from."""

    seconds: dict[str, float]
    modelled: frozenset[str]  # by the cost line
    borrowed: frozenset[str]  # by another machine's history, scaled to this one


def estimate_durations(history: _History, specs: Iterable[Spec]) -> Estimates:
    """Each spec's estimated seconds a process.

    With history: the median past worker wall time (`Record.duration_s`) of the same
    model/resolution/batch/precision on the same backend and mode, else of any past run of
    that model there. Failures count too: a configuration that timed out before will likely
    take its timeout again. Else, the same configuration's median on another machine
    (`Elsewhere`), times how this machine's durations compare with that one's on what both
    ran (`_History.borrowed`). Else: the cost line (`sweep.cost`) times this machine's
    `_History.factor` for the model's family (a family's networks share how far they stray
    from the line: EfficientNets' depthwise layers run fewer MACs a second, and further the
    larger they are), or its measured
    pace where it has no history at all. A model file
    with no history has no estimate. A registry model known not to run on the spec's backend
    takes no time: its worker refuses it before building.
    """
    estimates: dict[str, float] = {}
    modelled: set[str] = set()
    borrowed: set[str] = set()
    for spec in specs:
        if known_unsupported(spec):
            estimates[spec.spec_id()] = 0.0
            continue
        past = history.durations(spec)
        line_s = cost.spec_process_s(spec)
        if past:
            estimates[spec.spec_id()] = stats.median(past)
        elif (elsewhere_s := history.borrowed(spec)) is not None:
            estimates[spec.spec_id()] = elsewhere_s
            borrowed.add(spec.spec_id())
        elif line_s is not None:
            family = entry_for(spec).family
            estimates[spec.spec_id()] = line_s * history.factor(spec.backend, spec.mode, family,
                                                                line_s)
            modelled.add(spec.spec_id())
    return Estimates(estimates, frozenset(modelled), frozenset(borrowed))


def known_unsupported(spec: Spec) -> bool:
    """Whether the registry says the spec's model cannot run on its backend (the worker's
    first check: it stores the reason as an unsupported result without building the model)."""
    return entry_for(spec).unsupported_reason(spec.backend) is not None


@dataclass(frozen=True)
class _Past:
    """One past process of a backend and mode: what ran and how long its worker took."""

    model: str
    family: str
    key: HistoryKey
    duration_s: float
    line_s: float | None  # the cost line's estimate for it
    result_id: str | None


@dataclass(frozen=True)
class Elsewhere:
    """Another machine's past processes, read once from its database (another CPU kind's
    `results/cpu/<device>/study.db`): one database, one machine."""

    path: str
    by_engine: Mapping[Engine, Mapping[tuple[str, HistoryKey], float]]  # median s a process

    @classmethod
    def read(cls, path: str | Path) -> Elsewhere:
        """The median duration of each configuration in the database at `path`.

        Raises:
            UserError: no database there, or not one this xlabench reads (one line).
        """
        durations: dict[Engine, dict[tuple[str, HistoryKey], list[float]]] = defaultdict(
            lambda: defaultdict(list))
        with StoreReader(Path(path)) as reader:
            for row in reader.process_rows():
                if row.duration_s:
                    key = (str(row.resolution), str(row.batch_size), row.precision)
                    durations[row.backend, row.mode][row.model, key].append(row.duration_s)
        return cls(str(path), {engine: {config: stats.median(seconds)
                                        for config, seconds in configs.items()}
                               for engine, configs in durations.items()})


def read_elsewhere(paths: Iterable[str], own_db: str) -> tuple[Elsewhere, ...]:
    """The databases at `paths` as other machines' history, but `own_db` (a glob such as
    `results/cpu/*/study.db` names this machine's own as well) and any named twice."""
    own = Path(own_db).resolve()
    unique = dict.fromkeys(Path(path).resolve() for path in paths)
    return tuple(Elsewhere.read(path) for path in unique if path != own)


class _History:
    """A store's past process durations, read once per backend and mode."""

    def __init__(self, store: ResultStore | None, pace: float = 1.0,
                 elsewhere: Sequence[Elsewhere] = ()) -> None:
        self.store = store
        self.pace = pace  # the factor where nothing has run here
        self.elsewhere = tuple(elsewhere)
        self._by_engine: dict[tuple[str, str], list[_Past]] = {}
        self._factors: dict[tuple[str, str, str, float | None], float] = {}
        self._all: list[_Past] | None = None
        self._ratios: dict[tuple[str, Engine], tuple[int, float] | None] = {}

    def durations(self, spec: Spec) -> list[float]:
        past = [p for p in self._engine(spec.backend, spec.mode) if p.model == spec.model]
        exact = [p.duration_s for p in past if p.key == _exact_key(spec)]
        return exact or [p.duration_s for p in past]

    def borrowed(self, spec: Spec) -> float | None:
        """The spec's median duration on another machine that ran it, times this machine's
        ratio to that one (`_ratio`); of the machines that ran it, the one sharing the most
        configurations with this one. None: none ran it, or none shares a configuration."""
        engine = (spec.backend, spec.mode)
        config = (spec.model, _exact_key(spec))
        candidates = []
        for other in self.elsewhere:
            seconds = other.by_engine.get(engine, {}).get(config)
            ratio = self._ratio(other, engine) if seconds is not None else None
            if seconds is not None and ratio is not None:
                candidates.append((ratio[0], seconds * ratio[1]))
        return max(candidates)[1] if candidates else None

    def _ratio(self, other: Elsewhere, engine: Engine) -> tuple[int, float] | None:
        """(configurations shared, median of this machine's duration over `other`'s) on
        `engine` where they share at least MIN_SHARED, else over every engine; None: none."""
        if (other.path, engine) not in self._ratios:
            mine = {e: self._medians(*e) for e in other.by_engine}
            pairs = {e: [(mine[e][c], other.by_engine[e][c])
                         for c in mine[e].keys() & other.by_engine[e].keys()] for e in mine}
            shared = pairs.get(engine, [])
            if len(shared) < MIN_SHARED:
                shared = [pair for e_pairs in pairs.values() for pair in e_pairs]
            self._ratios[other.path, engine] = (
                (sum(len(p) for p in pairs.values()),
                 stats.median([here / there for here, there in shared])) if shared else None)
        return self._ratios[other.path, engine]

    def _medians(self, backend: str, mode: str) -> dict[tuple[str, HistoryKey], float]:
        grouped: dict[tuple[str, HistoryKey], list[float]] = defaultdict(list)
        for past in self._engine(backend, mode):
            grouped[past.model, past.key].append(past.duration_s)
        return {config: stats.median(seconds) for config, seconds in grouped.items()}

    def has_any(self) -> bool:
        return bool(self._everything())

    def extra_processes(self, minimum: int) -> float:
        """The processes a past result here ran beyond `minimum`, on average over those that
        ran at least that many: flagged processes run again and processes added until the
        interval held (`ResultPolicy`). Zen 4's tier 1 sitting ran 179 processes for 44
        results, and its ETA at three each missed by 1.57 (`bench/study_time.py`). 0 with
        fewer than MIN_SHARED such results."""
        counts = Counter(p.result_id for p in self._everything() if p.result_id)
        ran = [n for n in counts.values() if n >= minimum]
        return sum(n - minimum for n in ran) / len(ran) if len(ran) >= MIN_SHARED else 0.0

    def factor(self, backend: str, mode: str, family: str, line_s: float) -> float:
        """How this machine compares with the cost line: the median of past duration over the
        line's estimate for `family`'s configuration nearest in size to one the line puts at
        `line_s` (`nearest_in_size`) on this backend and mode, else for every model there,
        else over everything measured here, else its measured pace (1: the line's own
        machine)."""
        key = (backend, mode, family, line_s)
        if key not in self._factors:
            self._factors[key] = self._factor(backend, mode, family, line_s)
        return self._factors[key]

    def _factor(self, backend: str, mode: str, family: str, line_s: float) -> float:
        engine = self._engine(backend, mode)
        kin = nearest_in_size([p for p in engine if p.family == family], line_s,
                              lambda p: p.line_s)
        for past in (kin, engine, self._everything()):
            ratios = [p.duration_s / p.line_s for p in past if p.line_s]
            if ratios:
                return stats.median(ratios)
        return self.pace

    def _engine(self, backend: str, mode: str) -> list[_Past]:
        if (backend, mode) not in self._by_engine:
            rows = self._rows(backend=backend, mode=mode)
            self._by_engine[backend, mode] = [p for p in map(_past, rows) if p is not None]
        return self._by_engine[backend, mode]

    def _everything(self) -> list[_Past]:
        if self._all is None:  # read once: every engine without history falls back to it
            self._all = [p for p in map(_past, self._rows()) if p is not None]
        return self._all

    def _rows(self, **filters: str) -> list[dict[str, Any]]:
        if self.store is None:
            return []
        return self.store.rows_with_records(source="local", **filters)


def nearest_in_size(items: Sequence[T], size: float, size_of: Callable[[T], float | None]
                    ) -> list[T]:
    """The items of the size nearest `size` on a log scale (ties: both). A family strays from
    the cost line more the larger its models: on Zen 3 the EfficientNet family's median ratio
    over B1-B5 put B6 at 31 minutes against 50 and B7 at 42 against 58, its nearest member's
    ratio at 34 and 53 (`bench/study_time.py`)."""
    sized = [(abs(math.log(s / size)), item) for item in items if (s := size_of(item))]
    if not sized:
        return []
    nearest = min(distance for distance, _ in sized)
    return [item for distance, item in sized if math.isclose(distance, nearest)]


def _past(row: dict[str, Any]) -> _Past | None:
    duration = json.loads(row["record_json"]).get("duration_s")
    if not duration:
        return None
    key = (str(row["resolution"]), str(row["batch_size"]), row["precision"])
    line_s = cost.configuration_process_s(row["model"], row["resolution"], row["batch_size"])
    return _Past(row["model"], row["family"], key, float(duration), line_s, row["result_id"])


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
        lines.append(f"  tier {tier}: {len(todo)} of {in_grid} configurations to run, "
                     f"estimate {_estimate_text(plan, todo)}")
    return lines


def _estimate_text(plan: Plan, spec_ids: list[str]) -> str:
    """'1 h 05 min (12 from the cost line, 2 without an estimate, not counted)', or '?'."""
    known = [key for key in spec_ids if key in plan.estimate_s]
    if not known:
        return "?"
    total = format_duration(sum(plan.estimate_s[key] for key in known) / plan.workers)
    notes = []
    borrowed = sum(1 for key in known if key in plan.borrowed)
    if borrowed:
        notes.append(f"{borrowed} from another machine's history")
    modelled = sum(1 for key in known if key in plan.modelled)
    if modelled:
        notes.append(f"{modelled} from the cost line")
    if len(spec_ids) > len(known):
        notes.append(f"{len(spec_ids) - len(known)} without an estimate, not counted")
    return total + (f" ({', '.join(notes)})" if notes else "")


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
    if not plan.estimate_s:
        return "estimate: none (no past results for these configurations in the db, and no " \
               "MAC count to estimate them from)"
    workers = f" on {plan.workers} workers" if plan.workers > 1 else ""
    extra = (f" and {plan.extra_processes:.1f} more on average, as results ran here before "
             f"(flagged processes run again, processes added until the interval held)"
             if plan.extra_processes else "")
    return (f"estimate: {_estimate_text(plan, [s.spec_id() for s in plan.todo])}{workers}, "
            f"at least {plan.processes} processes each{extra} (a configuration's median past "
            f"process duration on the same backend and mode; without one, its median on another "
            f"machine (--history-from) times this machine's median ratio to that one on what "
            f"both ran; else the cost line of sweep/cost.py scaled to this machine's history)"
            + _pace_note(plan))


def _pace_note(plan: Plan) -> str:
    """What the cost line's estimates stand on where the machine has no history."""
    if plan.pace is not None:
        return f"; {plan.pace.describe()}"
    if plan.fresh and plan.modelled:
        return (f"; no history here: the line at {REFERENCE_MACHINE}'s pace, which another "
                f"CPU kind may not keep (--pilot measures this machine's)")
    return ""
