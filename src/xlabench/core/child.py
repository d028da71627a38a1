"""The one way xlabench starts a child process (a worker, xlabench-native, a cost count, the
peak measurement, an own model's inspection).

Every child runs in its own process group, so a timeout kills it with whatever it started
(compiler helpers); the kernel kills it when the thread that launched it dies, so a parent
killed with SIGKILL (a killed sweep) never leaves one running, holding cores or a GPU and
skewing the next run's numbers; and what it wrote is captured. In the lowest layer because
the zoo launches one too (an own model's factory is inspected in a child).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class ChildExit:
    """How a child ended. `code` is its exit status (negative: the signal that ended it),
    None when it ran past its deadline and was killed (`timed_out`)."""

    code: int | None
    stdout: str
    stderr: str  # "" when the child's stderr went to stdout (`merge_output`)
    timed_out: bool
    pid: int

    @property
    def ok(self) -> bool:
        return self.code == 0

    def last_line(self) -> str:
        """The child's last non-empty line of stderr (of stdout when merged), or "no output"."""
        lines = [line for line in (self.stderr or self.stdout).splitlines() if line.strip()]
        return lines[-1].strip() if lines else "no output"


def run_child(
    command: Sequence[str],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
    cpus: Sequence[int] = (),
    merge_output: bool = False,
    keep_chars: int | None = None,
    pass_fds: Sequence[int] = (),
) -> ChildExit:
    """Run `command` to its end or its deadline; never leaves it, or anything it started,
    running (not on a timeout, not when this thread is interrupted).

    Args:
        timeout_s: the deadline; past it the whole process group is killed.
        env: the child's whole environment (default: this process's).
        cpus: pin the child to these cores (default: not pinned).
        merge_output: the child's stderr goes to its stdout (one log, in order).
        keep_chars: keep only the last this many characters of each output.
        pass_fds: file descriptors the child inherits (a worker's turn pipes, `measure.turns`).

    Raises:
        OSError: the command could not be started.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            list(command), stdout=out, stderr=subprocess.STDOUT if merge_output else err,
            env=dict(env) if env is not None else None, start_new_session=True,
            preexec_fn=_child_setup(tuple(cpus)), pass_fds=tuple(pass_fds),
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on KeyboardInterrupt: never leave a child behind
            _kill_group(proc)
        return ChildExit(None if timed_out else proc.returncode, _read(out, keep_chars),
                         _read(err, keep_chars), timed_out, proc.pid)


def _child_setup(cpus: tuple[int, ...]) -> Callable[[], None]:
    """Runs in the forked child before exec: pin its cores, and have the kernel kill it when
    the launching thread dies (its own session would otherwise outlive a killed parent)."""
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


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    """Kill the child's process group (the child, and what it left running), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _read(handle: IO[bytes], keep_chars: int | None) -> str:
    if keep_chars is None:
        handle.seek(0)
        return handle.read().decode("utf-8", errors="replace")
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - 4 * keep_chars))  # a character is at most 4 bytes of UTF-8
    return handle.read().decode("utf-8", errors="replace")[-keep_chars:]
