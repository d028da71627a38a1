"""Launch a worker process per configuration; turn every way it can end into a record."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xlabench.core import Record, Spec, Status, UserError, failure, one_line, utc_now
from xlabench.core.child import ChildExit, run_child
from xlabench.measure import env as envinfo
from xlabench.measure import scenarios
from xlabench.zoo import entry_for

DEFAULT_TIMEOUT_S = 1800.0
LOG_TAIL_CHARS = 4000


@dataclass(frozen=True)
class WorkerJob:
    """What a worker process reads: its spec, and the run-time settings of this one process.

    `sampling_target_rel_ci` is the relaxed per-process sampling target the scheduler may set
    once the spread between a result's processes is known. It is no part of the spec: every
    process of a result must keep the result's spec and so its id (a resumed sweep finds the
    result by it), whatever target each process sampled to; the record says which
    (`ProcessInfo.sampling_target_rel_ci`).
    """

    spec: Spec
    sampling_target_rel_ci: float | None = None
    #: False: skip the parity check (`xlabench ab` checks it in a side's first process only:
    #: the same model, weights and input give the same outputs in every process, and on JAX
    #: the eager reference compiles every op, about half of a small model's process).
    check_parity: bool = True

    def to_json(self) -> str:
        return json.dumps({"spec": self.spec.to_dict(),
                           "sampling_target_rel_ci": self.sampling_target_rel_ci,
                           "check_parity": self.check_parity})

    @classmethod
    def from_json(cls, text: str) -> WorkerJob:
        data = json.loads(text)
        return cls(Spec.from_dict(data["spec"]), data.get("sampling_target_rel_ci"),
                   bool(data.get("check_parity", True)))


@dataclass(frozen=True)
class Placement:
    """Where a worker runs: its CPU cores and GPU, and what runs beside it."""

    cpus: tuple[int, ...] = ()
    gpu: int | None = None
    beside: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        env = dict(self.env)
        if self.cpus:
            threads = str(len(self.cpus))
            env.update(OMP_NUM_THREADS=threads, TF_NUM_INTRAOP_THREADS=threads)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        return env


#: No pinning, nothing beside: the default for a single run.
LOCAL = Placement()


def current_env_id() -> str:
    return envinfo.env_id(envinfo.static_fingerprint())


def run_isolated(
    spec: Spec,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    placement: Placement = LOCAL,
    sampling_target_rel_ci: float | None = None,
    check_parity: bool = True,
    python: str = sys.executable,
    worker_args: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
) -> Record:
    """Run `spec` in a fresh worker process with a deadline. Always returns a record.

    `sampling_target_rel_ci`, `check_parity`: this process's settings (`WorkerJob`);
    `pass_fds`: descriptors the worker inherits (its turn pipes, `runner.turns`).
    """
    start, started = time.perf_counter(), utc_now()
    with tempfile.TemporaryDirectory(prefix="xlabench-run-") as tmp:
        job_path, record_path = Path(tmp) / "job.json", Path(tmp) / "record.json"
        job_path.write_text(WorkerJob(spec, sampling_target_rel_ci, check_parity).to_json())
        command = [python, "-m", "xlabench.runner.worker", str(job_path), str(record_path),
                   *worker_args]
        status, reason, log_tail = _wait(command, placement, worker_timeout_s(spec, timeout_s),
                                         pass_fds)
        record, unreadable = _read_record(record_path)
    if record is None or status is not None:
        record = failure(spec, status or Status.CRASHED,
                         reason or unreadable or "worker exited 0 and wrote no record",
                         log_tail, env=envinfo.static_fingerprint(), **_describe(spec))
        record = record.replace(started_at=started)
    return record.replace(
        env_id=current_env_id(),
        duration_s=time.perf_counter() - start,
        beside=placement.beside,
    )


def worker_timeout_s(spec: Spec, timeout_s: float) -> float:
    """A worker's deadline: `timeout_s` covers building, compiling and the timed loop; a LoadGen
    scenario adds the longest its runs may take (a server search is many runs)."""
    if not spec.scenario:
        return timeout_s
    return timeout_s + scenarios.max_scenario_s(spec.scenario_settings, spec.scenario)


def _describe(spec: Spec) -> dict[str, str]:
    try:
        entry = entry_for(spec)
    except UserError:
        return {}
    return {"family": entry.family, "kind": entry.kind}


def _wait(command: list[str], placement: Placement, timeout_s: float,
          pass_fds: Sequence[int] = ()) -> tuple[Status | None, str | None, str]:
    """Run the worker: (None, None, log tail) if it exited normally, else a status and reason
    with the log tail."""
    env = {**os.environ, **placement.environment()}
    oom_kills_before = oom_kill_count()
    try:
        done = run_child(command, timeout_s, env=env, cpus=placement.cpus, merge_output=True,
                         keep_chars=LOG_TAIL_CHARS, pass_fds=pass_fds)
    except OSError as exc:
        return Status.CRASHED, one_line(f"could not start the worker: {exc}"), ""
    return (*_outcome(done, timeout_s, oom_killer_ran_since(oom_kills_before)), done.stdout)


def _outcome(done: ChildExit, timeout_s: float, oom_killer_ran: bool
             ) -> tuple[Status | None, str | None]:
    if done.timed_out:
        return Status.TIMEOUT, f"timed out after {timeout_s:g} s (worker killed)"
    if done.code == 0:
        return None, None
    assert done.code is not None
    return _exit_status(done.code, done.last_line(), oom_killer_ran)


def oom_kill_count() -> int | None:
    """How many processes the kernel's OOM killer has ended since boot (`oom_kill` in
    /proc/vmstat, Linux 4.13+); None where it cannot be read."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return None


def oom_killer_ran_since(count_before: int | None) -> bool:
    """Whether the kernel's OOM killer ended a process since `oom_kill_count()` read
    `count_before` (False where the count cannot be read)."""
    count_now = oom_kill_count()
    return count_before is not None and count_now is not None and count_now > count_before


def _exit_status(code: int, last_line: str, oom_killer_ran: bool = False
                 ) -> tuple[Status, str]:
    """A worker's abnormal exit as a status and one line. A SIGKILL while the kernel's OOM
    killer ran is stored as `oom`: the kernel's count says it killed something then, and the
    worker is the process that died of it (e.g. tf2onnx converting a 200M-parameter model
    past a 24 GB machine's memory, docs/coverage.md)."""
    if code < 0:
        name = signal.Signals(-code).name
        if -code == signal.SIGKILL and oom_killer_ran:
            return Status.OOM, (f"worker killed by {name} while the kernel's OOM killer ran "
                                "(/proc/vmstat oom_kill rose): out of host memory")
        if -code == signal.SIGKILL:
            return Status.CRASHED, f"worker killed by {name} (out of memory, or killed by hand)"
        return Status.CRASHED, f"worker died of {name}"
    if "memoryerror" in last_line.lower():
        return Status.OOM, one_line(last_line)
    return Status.CRASHED, f"worker exited with code {code}: {one_line(last_line)}"


def _read_record(path: Path) -> tuple[Record | None, str | None]:
    """The worker's record, or None and why a record file that exists could not be read (so
    a record the parent cannot parse is never reported as no record at all)."""
    if not path.exists():
        return None, None
    try:
        return Record.from_json(path.read_text()), None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, one_line(f"the worker's record could not be read: {type(exc).__name__}: "
                              f"{exc}")
