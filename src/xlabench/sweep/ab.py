"""`xlabench ab`: two sides of one grid, measured interleaved, round after round, until decided.

Each round runs one fresh worker process per side per undecided configuration, in a random
order within the round (seeded; randomised multiple interleaved trials, Abedi & Brecht 2017).
The process is the unit of analysis: a round gives one paired log-ratio log(B / A) per
configuration, and after every round `measure.sequential.sequential_look` on those ratios says
faster, slower, same or another round (its design keeps looking after every round from
inflating false alarms). A decided configuration stops; the others share what is left of the
wall-clock budget and the round limit, and end *inconclusive* when either runs out.

Both sides are stored in the database as results of one interleaved pair: one sweep id, round
tags on every process, labels `a` and `b` (or the user's), so `xlabench compare DB
--baseline-label a --label b` pairs them by round as well.

Both results keep every successful process, flagged for interference or not
(`ResultPolicy.keep_flagged`): both processes of a round ran back to back, so what disturbed
one most likely disturbed the other, and the pairing cancels it; dropping one side of a round
would unpair it. A round whose processes' probes say the machine changed state between or
during them is set aside (stored, shown, not paired): the host's slow spells on a small VM
last seconds to minutes, and such a round measures them. The rounds are read from the stored
results (`combine.matched_rounds`), so `compare` pairs exactly the same ones; flagged
processes are counted and shown.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xlabench.analysis.compare import environment_differences
from xlabench.core import Record, Spec, UserError, one_line
from xlabench.core import backends as backend_table
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine, stats
from xlabench.measure import env as envinfo
from xlabench.measure.probe import machine_states
from xlabench.measure.sequential import (
    SequentialDesign,
    SequentialLook,
    between_process_var,
    critical_t,
    samples_per_process,
    sequential_look,
)
from xlabench.measure.turns import took_turns, waited_s
from xlabench.runner import Placement, run_isolated
from xlabench.runner.turns import TurnJob, run_in_turns
from xlabench.store import ResultStore
from xlabench.sweep.config import check_label
from xlabench.sweep.run import save_record
from xlabench.sweep.schedule import ResultProcesses
from xlabench.zoo import REGISTRY, entry_for, own

#: What a side may change: the worker's interpreter, an environment variable (`env:NAME`), or
#: one of these spec fields.
SPEC_KEYS = ("model", "backend", "mode", "precision", "runner")
SIDE_KEYS = ("python", "env:NAME", *SPEC_KEYS)
DEFAULT_LABELS = ("a", "b")
DEFAULT_BUDGET_S = 600.0
#: How a round's two processes share the machine: "samples" (default), alive together and
#: taking turns slice by slice (`measure.turns`: both see the machine's slow spells alike);
#: "processes", one after the other.
INTERLEAVE = ("samples", "processes")
#: The verdicts that stop a configuration (`sequential_look`'s other one is "continue").
DECIDED = ("faster", "slower", "same")
INCONCLUSIVE = "inconclusive"
#: What an interpreter must import to run a worker: xlabench's worker, Keras and NumPy present
#: (find_spec: not loaded, fast), and the frameworks its side's backends run on (argv) loaded,
#: so a broken install (two TensorFlow wheels of different versions over each other) is
#: refused before any round, not found in every process.
PROBE = ("import importlib, importlib.util, sys\n"
         "import xlabench.runner.worker\n"
         "missing = [m for m in ('keras', 'numpy') if importlib.util.find_spec(m) is None]\n"
         "if missing:\n"
         "    sys.exit('missing: ' + ', '.join(missing))\n"
         "for name in sys.argv[1:]:\n"
         "    try:\n"
         "        importlib.import_module(name)\n"
         "    except Exception as exc:\n"
         "        sys.exit(f'cannot import {name}: {type(exc).__name__}: {exc}')\n")
PROBE_TIMEOUT_S = 120.0
#: Spec fields an own model sets; a registry model on one side resets them.
OWN_MODEL_FIELDS = ("model_file", "model_factory", "model_sha256", "channels", "unsafe_load")


# ------------------------------------------------------------------------------ the sides
@dataclass(frozen=True)
class AbSide:
    """One side: its label and what it changes against the grid (nothing: the grid as is)."""

    label: str
    python: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    spec_changes: tuple[tuple[str, str], ...] = ()

    def environment(self) -> dict[str, str]:
        return dict(self.env)

    def describe(self) -> str:
        parts = [f"python={self.python}"] if self.python else []
        parts += [f"env:{k}={v}" for k, v in self.env]
        parts += [f"{k}={v}" for k, v in self.spec_changes]
        return f"{self.label} ({', '.join(parts) or 'the grid as is'})"

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "python": self.python, "env": dict(self.env),
                "changes": dict(self.spec_changes)}


def parse_side(label: str, items: Sequence[str]) -> AbSide:
    """A side from its `KEY=VALUE` items (`--a`/`--b`).

    Raises:
        UserError: a bad label, an item without `=`, an unknown KEY, a KEY given twice.
    """
    check_label(label)
    python: str | None = None
    env: dict[str, str] = {}
    changes: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"side {label}: {item!r} is not KEY=VALUE (KEY one of "
                            f"{', '.join(SIDE_KEYS)})")
        if key == "python":
            if python is not None:
                raise UserError(f"side {label}: python given twice")
            python = value
        elif key.startswith("env:") and key[4:]:
            if key[4:] in env:
                raise UserError(f"side {label}: {key} given twice")
            env[key[4:]] = value
        elif key in SPEC_KEYS:
            if key in changes:
                raise UserError(f"side {label}: {key} given twice")
            changes[key] = value
        else:
            raise UserError(f"side {label}: unknown KEY {key!r}; use one of "
                            f"{', '.join(SIDE_KEYS)}")
    return AbSide(label, python, tuple(env.items()), tuple(changes.items()))


def side_spec(spec: Spec, side: AbSide, unsafe_load: bool = False) -> Spec:
    """The grid's `spec` as `side` runs it.

    Raises:
        UserError: a change the spec refuses (a mode its backend lacks, an unknown model, a
            resolution the model refuses, ...).
    """
    changes: dict[str, Any] = dict(side.spec_changes)
    model = changes.pop("model", None)
    if model is not None:
        changes.update(_model_fields(model, unsafe_load))
    if not changes:
        return spec
    try:
        changed = dataclasses.replace(spec, **changes)
    except (TypeError, ValueError) as exc:
        raise UserError(f"side {side.label}: {one_line(str(exc))}") from None
    problem = entry_for(changed).check_resolution(changed.resolution)
    if problem:
        raise UserError(f"side {side.label}: {changed.model} at {changed.resolution} px: "
                        f"{problem}")
    return changed


def _model_fields(model: str, unsafe_load: bool) -> dict[str, Any]:
    """The spec fields of `model`: an own model's, or a registry model's canonical name with
    the own-model fields at their defaults (UserError: neither)."""
    if own.is_reference(model):
        owned = own.resolve(model, unsafe_load)
        return {"model": owned.entry().name, **owned.spec_fields()}
    defaults = {f.name: f.default for f in dataclasses.fields(Spec)}
    return {"model": REGISTRY.get(model).name,
            **{name: defaults[name] for name in OWN_MODEL_FIELDS}}


def check_interpreter(side: AbSide, backends: Sequence[str] = ()) -> None:
    """Run the side's interpreter once with an import probe, in the side's environment: the
    worker, and the frameworks of `backends` (the backends this side's specs run on).

    Raises:
        UserError: it does not start, lacks xlabench's worker or its dependencies, or cannot
            import a framework it is to run.
    """
    if side.python is None:
        return
    env = {**os.environ, **side.environment()}
    packages = sorted({backend_table.info(b).package for b in backends})
    try:
        done = subprocess.run([side.python, "-c", PROBE, *packages], env=env,
                              capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"side {side.label}: python={side.python} does not run: "
                        f"{one_line(str(exc))}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)])[-1]
        raise UserError(f"side {side.label}: python={side.python} is not an environment with "
                        f"xlabench's worker: {one_line(last)}")


# ------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class AbSettings:
    """How long and how strictly: the sequential design, the wall-clock budget of the whole
    comparison, the per-process deadline and the order's seed (the design checks its own
    thresholds and round limits)."""

    design: SequentialDesign = field(default_factory=SequentialDesign)
    budget_s: float = DEFAULT_BUDGET_S
    timeout_s: float = 600.0
    seed: int = 0
    interleave: str = INTERLEAVE[0]

    def __post_init__(self) -> None:
        if self.interleave not in INTERLEAVE:
            raise UserError(f"interleave must be one of {', '.join(INTERLEAVE)}, got "
                            f"{self.interleave!r}")
        if not self.budget_s > 0:
            raise UserError(f"budget must be positive seconds, got {self.budget_s:g}")
        if not self.timeout_s > 0:
            raise UserError(f"timeout must be positive seconds, got {self.timeout_s:g}")
        if first_decisive_round(self.design) is None:
            design = self.design
            raise UserError(f"no verdict is possible within {design.max_rounds} rounds (min "
                            f"rounds {design.min_rounds}, alpha {design.alpha:g}): the "
                            "interval stays unbounded; allow more rounds")


def first_decisive_round(design: SequentialDesign) -> int | None:
    """The first round at which the design's interval can be finite (None: none within its
    rounds, so a comparison could only end inconclusive)."""
    return next((n for n in range(design.min_rounds, design.max_rounds + 1)
                 if math.isfinite(critical_t(n, design.alpha, design.mixture_g))), None)


# --------------------------------------------------------------------- configurations
@dataclass
class AbConfiguration:
    """One configuration of the grid: both sides' processes, the paired log-ratios, the last
    look and why it stopped."""

    specs: tuple[Spec, Spec]
    processes: tuple[ResultProcesses, ResultProcesses]
    log_ratios: list[float] = field(default_factory=list)
    #: Rounds both sides ran whose processes ran in different machine states: not paired
    #: (`combine.matched_rounds`).
    rounds_set_aside: int = 0
    look: SequentialLook | None = None
    stopped_because: str = ""

    @property
    def live(self) -> bool:
        return not self.stopped_because

    def name(self) -> str:
        a, b = self.specs
        text = f"{a.model} {a.backend}/{a.mode} {a.resolution}px b{a.batch_size} {a.precision}"
        if a.runner != "python":
            text += f" {a.runner}"
        if b != a:
            text += f" vs {_spec_delta(a, b)}"
        return text

    def round_cost_s(self) -> float:
        """What one more round of this configuration should take: the median round, a round
        being the longer of its two processes where they took turns (alive together), their
        sum where they ran one after the other."""
        costs = [_pair_s(a, b) for a, b in zip(*(p.records for p in self.processes),
                                                strict=False)]
        return stats.median(costs) if costs else 0.0

    def verdict(self) -> str:
        if self.look is None or self.look.verdict not in DECIDED:
            return INCONCLUSIVE
        return self.look.verdict


def _pair_s(a: Record, b: Record) -> float:
    a_s, b_s = a.duration_s or 0.0, b.duration_s or 0.0
    both_took_turns = took_turns(a.backend_info) and took_turns(b.backend_info)
    return max(a_s, b_s) if both_took_turns else a_s + b_s


def _spec_delta(a: Spec, b: Spec) -> str:
    return " ".join(f"{key}={getattr(b, key)}" for key in SPEC_KEYS
                    if getattr(a, key) != getattr(b, key))


def make_configurations(specs: Sequence[Spec], sides: tuple[AbSide, AbSide], sweep_id: str,
                        settings: AbSettings, unsafe_load: bool = False
                        ) -> list[AbConfiguration]:
    """One configuration per grid spec, each side's spec and result (UserError: a side's
    change that a spec refuses)."""
    policy = ResultPolicy(min_processes=settings.design.min_rounds,
                          max_processes=settings.design.max_rounds, budget_s=settings.budget_s,
                          rerun_flagged=0, keep_flagged=True)
    configurations = []
    for spec in specs:
        pair = tuple(side_spec(spec, side, unsafe_load) for side in sides)
        processes = tuple(ResultProcesses(s, _result_id(sweep_id, s, side.label), policy)
                          for s, side in zip(pair, sides, strict=True))
        configurations.append(AbConfiguration(pair, processes))  # type: ignore[arg-type]
    return configurations


def _result_id(sweep_id: str, spec: Spec, label: str) -> str:
    text = f"{sweep_id}|{spec.spec_id()}|{label}"
    return "s" + hashlib.sha256(text.encode()).hexdigest()[:15]


def new_sweep_id() -> str:
    return "ab-" + uuid.uuid4().hex[:12]


# ------------------------------------------------------------------------------ the loop
#: Runs one process: (spec, interpreter or None, extra environment, deadline, relaxed
#: sampling target or None, whether to check parity) -> record.
ProcessRunner = Callable[[Spec, str | None, Mapping[str, str], float, float | None, bool], Record]
#: Runs a round's two processes of one configuration: (both sides' jobs, the index of the
#: side that starts, each process's deadline) -> both records, in side order.
PairRunner = Callable[[tuple[TurnJob, TurnJob], int, float], tuple[Record, Record]]
#: z of a 95% interval: turns Kalibera & Jones's samples per process into a sampling target.
Z95 = 1.96


def run_process(spec: Spec, python: str | None, env: Mapping[str, str],
                timeout_s: float, sampling_target_rel_ci: float | None = None,
                check_parity: bool = True) -> Record:
    """One fresh worker with the side's interpreter and environment variables. The record's
    environment is the worker's own, with the side's variables added to its flags (an
    arbitrary variable is no RESULT_FLAG, yet it is what differs), and its id follows."""
    record = run_isolated(spec, timeout_s, placement=Placement(env=dict(env)),
                          sampling_target_rel_ci=sampling_target_rel_ci,
                          check_parity=check_parity, python=python or sys.executable)
    return _with_side_env(record, env)


def _with_side_env(record: Record, env: Mapping[str, str]) -> Record:
    recorded = dict(record.env)
    recorded["flags"] = {**(recorded.get("flags") or {}), **env}
    return record.replace(env=recorded, env_id=envinfo.env_id(recorded))


def pair_in_turns(jobs: tuple[TurnJob, TurnJob], first: int, timeout_s: float
                  ) -> tuple[Record, Record]:
    """Both processes alive together, taking turns slice by slice (`runner.turns`); each
    record's environment gets its side's variables, as `run_process` gives them."""
    records = run_in_turns(jobs, first, timeout_s)
    a, b = (_with_side_env(r, job.env) for r, job in zip(records, jobs, strict=True))
    return a, b


def one_after_other(runner: ProcessRunner = run_process) -> PairRunner:
    """A pair runner that runs the two processes one after the other, `first` first."""
    def run(jobs: tuple[TurnJob, TurnJob], first: int, timeout_s: float
            ) -> tuple[Record, Record]:
        records: dict[int, Record] = {}
        for index in (first, 1 - first):
            job = jobs[index]
            records[index] = runner(job.spec, job.python, job.env, timeout_s,
                                    job.sampling_target_rel_ci, job.check_parity)
        return records[0], records[1]

    return run


@dataclass
class AbRun:
    """One `xlabench ab` invocation's state and outcome."""

    configurations: list[AbConfiguration]
    sides: tuple[AbSide, AbSide]
    settings: AbSettings
    sweep_id: str
    wall_s: float = 0.0
    rounds_run: int = 0


def run_ab(run: AbRun, store: ResultStore, note: Callable[[str], None],
           runner: PairRunner | None = None,
           clock: Callable[[], float] = time.perf_counter) -> AbRun:
    """Round after round until every configuration is decided, failed, or out of rounds or
    budget (wall-clock seconds on `clock`); every process is stored as it finishes, both
    results after every round. `runner`: how a round's pair runs (default: as the settings'
    `interleave` says)."""
    if runner is None:
        runner = pair_in_turns if run.settings.interleave == "samples" else one_after_other()
    rng = random.Random(run.settings.seed)
    start_s = clock()
    design = run.settings.design
    for round_index in range(design.max_rounds):
        live = [c for c in run.configurations if c.live]
        if not live:
            break
        elapsed_s = clock() - start_s
        if round_index and elapsed_s + sum(c.round_cost_s() for c in live) > run.settings.budget_s:
            for c in live:
                c.stopped_because = (f"budget: {run.settings.budget_s:g} s would run out "
                                     f"during round {round_index + 1}")
            break
        _run_round(run, live, round_index, rng, store, runner)
        run.rounds_run = round_index + 1
        for c in live:
            _look(c, design, round_index, note)
            # a decided (or failed) configuration runs no more: complete now, so an ab run
            # killed later keeps it
            _save_results(run, c, store, complete=not c.live)
    for c in run.configurations:
        if c.live:
            c.stopped_because = f"max rounds: {design.max_rounds} rounds run"
        _save_results(run, c, store, complete=True)
    run.wall_s = clock() - start_s
    return run


def _run_round(run: AbRun, live: Sequence[AbConfiguration], round_index: int,
               rng: random.Random, store: ResultStore, runner: PairRunner) -> None:
    """Each configuration's pair, the configurations in a random order, and in each pair the
    side that starts drawn at random."""
    order = list(live)
    rng.shuffle(order)
    # A process never outlives the whole budget (a hung worker cannot hold it hostage); taking
    # turns, its deadline also covers the other side's turns.
    timeout_s = min(run.settings.timeout_s * (2 if run.settings.interleave == "samples" else 1),
                    run.settings.budget_s)
    for configuration in order:
        first = rng.randrange(2)
        targets = [sampling_target(p.records) for p in configuration.processes]
        jobs = tuple(TurnJob(spec, side.python or sys.executable, side.environment(), target,
                             not _parity_checked(processes.records))
                     for spec, side, processes, (target, _) in zip(
                         configuration.specs, run.sides, configuration.processes, targets,
                         strict=True))
        records = runner(jobs, first, timeout_s)  # type: ignore[arg-type]
        for side_index in (first, 1 - first):
            side, processes = run.sides[side_index], configuration.processes[side_index]
            target, reason = targets[side_index]
            info = ProcessInfo(result_id=processes.result_id, index=len(processes.records),
                               round=round_index, sampling_target_rel_ci=target,
                               sampling_reason=reason)
            record = records[side_index].replace(process=info)
            processes.records.append(save_record(store, record, run.sweep_id, side.label))


def _parity_checked(records: Sequence[Record]) -> bool:
    """Whether a process of this side already passed the parity check: the same spec, seed and
    input give the same outputs in every process, so later ones skip it (on JAX the eager
    reference compiles every op: about half of a small model's process)."""
    return any(r.ok and r.parity is not None and r.parity.passed for r in records)


def sampling_target(records: Sequence[Record]) -> tuple[float | None, str]:
    """How long the side's next process samples, from its processes so far (Kalibera & Jones
    2013): the samples per process that minimise the interval for the time spent, given the
    within-process variance of a sample, the between-process variance of the medians and what
    a process costs beside its samples, as the relative interval the worker samples to (it only
    ever relaxes the spec's target, so the spec and its id stay). None before two processes."""
    timed = [(math.log(r.throughput.median_sps), r.throughput.sample_s, _own_s(r))
             for r in records if r.ok and r.throughput is not None
             and r.throughput.median_sps > 0 and len(r.throughput.sample_s) >= 2]
    if len(timed) < 2:
        return None, ""
    within_var = stats.median([_log_var(samples) for _, samples, _ in timed])
    if within_var <= 0:
        return None, ""
    medians = [log_rate for log_rate, _, _ in timed]
    samples = round(stats.median([len(samples) for _, samples, _ in timed]))
    between_var = between_process_var(_log_var_of_logs(medians), within_var, samples)
    sample_s = stats.median([stats.median(samples) for _, samples, _ in timed])
    process_s = stats.median([max(0.0, duration - sum(samples))
                              for _, samples, duration in timed])
    best = samples_per_process(within_var, between_var, process_s, sample_s)
    target = Z95 * math.sqrt(within_var / best)
    return target, (f"Kalibera & Jones: {best} samples per process (within σ "
                    f"{100 * math.sqrt(within_var):.1f}%, between σ "
                    f"{100 * math.sqrt(between_var):.1f}%, {process_s:.1f} s a process, "
                    f"{sample_s:.3f} s a sample): sampling stops at ±{100 * target:.1f}%")


def _own_s(record: Record) -> float:
    """A process's own wall time: taking turns, its waits for the other side's aside."""
    return max(0.0, (record.duration_s or 0.0) - waited_s(record.backend_info))


def _log_var(sample_s: Sequence[float]) -> float:
    """Variance of log(samples/s) over one process's samples: the steps per sample are fixed,
    so it is the variance of log(sample time)."""
    return _log_var_of_logs([math.log(t) for t in sample_s if t > 0])


def _log_var_of_logs(logs: Sequence[float]) -> float:
    if len(logs) < 2:
        return 0.0
    mean = sum(logs) / len(logs)
    return sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)


def _look(c: AbConfiguration, design: SequentialDesign, round_index: int,
          note: Callable[[str], None]) -> None:
    """The paired log-ratios so far, the look after them, and the round's progress line.

    The rounds are read from the two results as the store combines them
    (`combine.paired_log_ratios`), so `xlabench compare` on the database pairs exactly these
    rounds; a round with a process measured under interference says so."""
    last = [p.records[-1] for p in c.processes]
    failed = next((r for r in last if not r.ok or not r.rate_per_s), None)
    if failed is not None:
        c.stopped_because = f"a process failed: {failed.error or failed.status.value}"
        note(f"round {round_index + 1:>2}  {c.name()}: {c.stopped_because}")
        return
    result_a, result_b = (p.result() for p in c.processes)
    rounds = combine.matched_rounds(result_b, result_a)
    busy = [r for r in last if combine.interference_reason(r.interference)]
    busy_note = "" if not busy else (
        f" ({len(busy)} of its processes measured under interference: kept, paired)")
    if round_index in rounds.set_aside:
        busy_note += f" (this round set aside: {_states_text(last)})"
    elif round_index in rounds.paired_across_states:
        busy_note += (f" ({_states_text(last)}; paired: fewer than "
                      f"{combine.MIN_ROUNDS_IN_ONE_STATE} rounds in one state so far)")
    c.log_ratios, c.rounds_set_aside = rounds.log_ratios(), len(rounds.set_aside)
    if len(c.log_ratios) < 2:
        rate_a, rate_b = (r.rate_per_s for r in last)
        assert rate_a and rate_b
        note(f"round {round_index + 1:>2}  {c.name()}: b/a {rate_b / rate_a:.3f} "
             f"(an interval from 2 paired rounds){busy_note}")
        return
    c.look = sequential_look(c.log_ratios, design)
    if c.look.verdict in DECIDED:
        c.stopped_because = f"decided: {c.look.verdict}"
    note(f"round {round_index + 1:>2}  {c.name()}: {format_look(c.look)}{busy_note}")


def _states_text(records: Sequence[Record]) -> str:
    """The probe readings of a round's processes, when they span machine states."""
    spread = machine_states(records)
    assert spread is not None  # only said of a round whose probes span states
    return (f"the machine changed state within it, probes {spread.low_gflops:.0f}-"
            f"{spread.high_gflops:.0f} GFLOP/s")


def format_look(look: SequentialLook) -> str:
    needed = f", ~{look.rounds_needed} rounds needed" if look.rounds_needed else ""
    return (f"b/a {look.ratio:.3f} [{look.ratio_low:.3f}, {look.ratio_high:.3f}] "
            f"{look.verdict}{needed}")


def _save_results(run: AbRun, c: AbConfiguration, store: ResultStore, complete: bool) -> None:
    for processes, side in zip(c.processes, run.sides, strict=True):
        if processes.records:
            store.save_result(processes.result(), processes.policy, complete, run.sweep_id,
                              side.label)


# ---------------------------------------------------------------------------- outcome
def verdict_at(c: AbConfiguration, design: SequentialDesign, threshold: float) -> str:
    """The configuration's verdict at another threshold, from the same rounds (the gate's
    `--fail-on-slowdown PCT`): its look at that threshold."""
    if len(c.log_ratios) < 2:
        return INCONCLUSIVE
    look = sequential_look(c.log_ratios, dataclasses.replace(design, threshold=threshold))
    return look.verdict if look.verdict in DECIDED else INCONCLUSIVE


def configuration_dict(run: AbRun, c: AbConfiguration) -> dict[str, Any]:
    """What `--format json` says of one configuration."""
    look = c.look
    envs = [[r.env for r in p.records if r.env] for p in c.processes]
    return {
        "configuration": c.name(),
        "spec_a": c.specs[0].to_dict(), "spec_b": c.specs[1].to_dict(),
        "verdict": c.verdict(),
        "ratio": look.ratio if look else _geometric(c.log_ratios),
        "ratio_low": look.ratio_low if look else None,
        "ratio_high": look.ratio_high if look else None,
        "rounds": len(c.log_ratios),
        "rounds_set_aside": c.rounds_set_aside,
        "rounds_needed": look.rounds_needed if look else None,
        "method": look.method if look else "",
        "stopped_because": c.stopped_because,
        "a": _side_figures(run.sides[0], c.processes[0]),
        "b": _side_figures(run.sides[1], c.processes[1]),
        "environment_differences": [d.to_dict() for d in
                                    environment_differences(_unique(envs[0]), _unique(envs[1]))],
    }


def _geometric(log_ratios: Sequence[float]) -> float | None:
    return math.exp(sum(log_ratios) / len(log_ratios)) if log_ratios else None


def _unique(envs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One of each distinct stored environment (volatile fields aside)."""
    seen: dict[str, Mapping[str, Any]] = {}
    for env in envs:
        seen.setdefault(envinfo.env_id(dict(env)), env)
    return list(seen.values())


def _side_figures(side: AbSide, processes: ResultProcesses) -> dict[str, Any]:
    ok = [r.rate_per_s for r in processes.records if r.ok and r.rate_per_s]
    result = processes.result() if processes.records else None
    return {
        **side.to_dict(), "spec_id": processes.spec.spec_id(), "result_id": processes.result_id,
        "processes": len(processes.records),
        "median_sps": result.median_sps if result else None,
        "ci_low_sps": result.ci_low_sps if result else None,
        "ci_high_sps": result.ci_high_sps if result else None,
        "process_sps": ok,
    }


def run_dict(run: AbRun) -> dict[str, Any]:
    design = run.settings.design
    return {
        "sweep_id": run.sweep_id, "seed": run.settings.seed,
        "threshold": design.threshold, "alpha": design.alpha,
        "min_rounds": design.min_rounds, "max_rounds": design.max_rounds,
        "budget_s": run.settings.budget_s, "interleave": run.settings.interleave,
        "wall_s": run.wall_s, "rounds_run": run.rounds_run,
        "sides": [s.to_dict() for s in run.sides],
        "configurations": [configuration_dict(run, c) for c in run.configurations],
    }
