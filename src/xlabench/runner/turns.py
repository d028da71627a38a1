"""Two workers alive together, taking turns on the machine (`measure.turns` is the worker's
side and says why): the parent hands the turn to one, waits until it gives it back or ends,
hands it to the other, and so on until both have ended.

Each worker is an ordinary isolated worker (`run_isolated`: its own deadline, its own record,
every way it can end turned into one); the turn pipes are two more descriptors it inherits.
A worker that never gives its turn back (a native runner, a LoadGen scenario, a crash) simply
runs to its end first: the pair then ran one after the other. Sampling ends for both at once:
the parent says STOP only once both said DONE, so the two sample the same stretch of time.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from xlabench.core import Record, Spec, Status, failure
from xlabench.measure.turns import DONE, GO, STOP, TURNS_ENV
from xlabench.runner.isolate import Placement, run_isolated

#: How often the parent looks whether a worker that holds the turn has ended (it never gives
#: its last turn back: its exit is its answer).
POLL_S = 0.05


@dataclass(frozen=True)
class TurnJob:
    """One worker of a pair: its spec, interpreter, extra environment and process settings."""

    spec: Spec
    python: str
    env: Mapping[str, str]
    sampling_target_rel_ci: float | None = None
    check_parity: bool = True


class _Pipes:
    """The two pipes of one worker: `go` (parent writes, worker reads) and `back` (worker
    writes, parent reads)."""

    def __init__(self) -> None:
        self.go_read, self.go_write = os.pipe()
        self.back_read, self.back_write = os.pipe()

    def child_fds(self) -> tuple[int, int]:
        return self.go_read, self.back_write

    def close_parent_ends(self) -> None:
        for fd in (self.go_write, self.back_read):
            _close(fd)

    def close_child_ends(self) -> None:
        for fd in self.child_fds():
            _close(fd)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def run_in_turns(jobs: tuple[TurnJob, TurnJob], first: int, timeout_s: float
                 ) -> tuple[Record, Record]:
    """Both jobs' records, their workers having taken turns, `jobs[first]` first.

    `timeout_s` is each worker's deadline, its waits for the other's turns included.
    """
    pipes = (_Pipes(), _Pipes())
    records: list[Record | None] = [None, None]

    def launch(index: int) -> None:
        job, fds = jobs[index], pipes[index].child_fds()
        env = {**job.env, TURNS_ENV: f"{fds[0]},{fds[1]}"}
        try:
            records[index] = run_isolated(
                job.spec, timeout_s, placement=Placement(env=env),
                sampling_target_rel_ci=job.sampling_target_rel_ci,
                check_parity=job.check_parity, python=job.python, pass_fds=fds)
        except Exception as exc:  # noqa: BLE001 - this side fails as data, the other goes on
            records[index] = failure(job.spec, Status.CRASHED, f"could not run the worker: {exc}")

    # Daemons: an interrupted parent exits without waiting for them, and its workers die
    # with the threads that launched them (`core.child`).
    threads = tuple(threading.Thread(target=launch, args=(i,), daemon=True) for i in (0, 1))
    for thread in threads:
        thread.start()
    try:
        _hand_turns(pipes, threads, first)
    finally:
        for p in pipes:  # a worker still waiting for a turn reads the end of its pipe
            p.close_parent_ends()
    for thread in threads:
        thread.join()
    for p in pipes:
        p.close_child_ends()
    a, b = records
    assert a is not None and b is not None  # `launch` always sets one
    return a, b


def _hand_turns(pipes: tuple[_Pipes, _Pipes], threads: tuple[threading.Thread, ...],
                first: int) -> None:
    """Alternate the turn between the two workers, starting with `first`: GO while either
    side's samples want more, then STOP to each (it keeps the machine to its end)."""
    done = [False, False]
    index = first
    while any(t.is_alive() for t in threads):
        if threads[index].is_alive():
            finished = all(done[i] or not threads[i].is_alive() for i in (0, 1))
            try:
                os.write(pipes[index].go_write, STOP if finished else GO)
            except BrokenPipeError:  # it exited between the look and the write
                pass
            else:
                reply = _wait_for_turn_back(pipes[index], threads[index])
                done[index] = reply == DONE
        index = 1 - index


def _wait_for_turn_back(pipes: _Pipes, thread: threading.Thread) -> bytes | None:
    """The worker's answer when it gives the turn back (MORE or DONE), or None: it ended."""
    while thread.is_alive():
        ready, _, _ = select.select([pipes.back_read], [], [], POLL_S)
        if ready:
            return os.read(pipes.back_read, 1)
    return None
