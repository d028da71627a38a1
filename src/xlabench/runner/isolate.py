"""Launch a worker process per configuration; turn every way it can end into a record."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlabench.core import Record, Spec, Status, UserError, failure, one_line, utc_now
from xlabench.measure import env as envinfo
from xlabench.zoo import entry_for

DEFAULT_TIMEOUT_S = 1800.0
LOG_TAIL_CHARS = 4000
PR_SET_PDEATHSIG = 1  # linux/prctl.h


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
    want_costs: bool = False,
    placement: Placement = LOCAL,
    python: str = sys.executable,
    worker_args: Sequence[str] = (),
) -> Record:
    """Run `spec` in a fresh worker process with a deadline. Always returns a record.

    The worker runs in its own session, so on a timeout the whole process group (compiler
    subprocesses included) is killed, not just the worker.
    """
    start, started = time.perf_counter(), utc_now()
    with tempfile.TemporaryDirectory(prefix="xlabench-run-") as tmp:
        folder = Path(tmp)
        spec_path, record_path, log_path = (folder / n for n in ("spec.json", "record.json", "log"))
        spec_path.write_text(json.dumps(spec.to_dict()))
        command = [python, "-m", "xlabench.runner.worker", str(spec_path), str(record_path)]
        command += ["--costs"] if want_costs else []
        command += list(worker_args)
        status, reason = _wait(command, placement, log_path, timeout_s)
        record, unreadable = _read_record(record_path)
        log_tail = _tail(log_path)
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


def _describe(spec: Spec) -> dict[str, str]:
    try:
        entry = entry_for(spec)
    except UserError:
        return {}
    return {"family": entry.family, "kind": entry.kind}


def _wait(
    command: list[str], placement: Placement, log_path: Path, timeout_s: float
) -> tuple[Status | None, str | None]:
    """Run the worker; (None, None) if it exited normally, else a status and reason."""
    env = {**os.environ, **placement.environment()}
    oom_kills_before = oom_kill_count()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            preexec_fn=_child_setup(placement.cpus),
        )
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return Status.TIMEOUT, f"timed out after {timeout_s:g} s (worker killed)"
        except BaseException:  # e.g. KeyboardInterrupt: never leave a worker behind
            _kill_group(proc)
            raise
        _kill_group(proc)  # reap anything the worker left running (compile helpers)
    if code == 0:
        return None, None
    return _exit_status(code, _last_line(log_path), oom_killer_ran_since(oom_kills_before))


def _child_setup(cpus: tuple[int, ...]) -> Callable[[], None]:
    """Runs in the forked child before exec: pin its cores, and have the kernel kill it when
    the launching thread dies. The worker runs in its own session, so without this a parent
    killed with SIGKILL (a killed sweep) would leave it running, holding cores or a GPU and
    skewing the next run's numbers."""
    prctl, parent, kill = _prctl(), os.getpid(), int(signal.SIGKILL)

    def setup() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, kill)
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)

    return setup


def _prctl() -> Any:
    """libc's prctl (Linux), looked up in the parent: the child must not load libraries."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


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


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


def _last_line(path: Path) -> str:
    lines = [line for line in _tail(path).splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
