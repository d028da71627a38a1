"""Taking turns with another worker: two processes of one `xlabench ab` round, alive together,
that run one at a time and hand the machine to each other between short slices of samples.

Why: a small VM changes speed for seconds at a time (the host's slow spells; probe readings
of about 210 against 170 GFLOP/s on the Zen 4 VM, flipping every few seconds, docs/method.md),
and two processes that sample one after the other see different spells: the per-process
noise of a paired round was mostly that. Two processes that alternate slices of a fraction of
a second see the same spells in the same proportion, so their ratio cancels them.

The protocol, over two pipes the parent (`runner.turns`) passes to the worker: the worker
*takes* a turn by reading one byte, blocking until the parent hands it the machine: GO (sample
a slice) or STOP (sampling is over: keep the machine to your end); it *gives* the turn back by
writing one byte, MORE (my samples want more) or DONE (they have enough), after its own
threads have gone idle (`probe.settle`, so a pool still spinning never runs into the other
side's slice). The worker holds its first turn from its start through building, compiling,
warm-up, calibration and its first slice; then one turn per slice. The parent says STOP only
once both sides said DONE (or one ended), so both sample the same stretch of time, slice for
slice, however soon either one's own precision target was met; after STOP the worker runs its
latency phase and ends (its exit tells the parent). Outside `xlabench ab` there is no pipe and
every call is a no-op.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from xlabench.measure import interference, probe
from xlabench.measure.interference import CpuSnapshot

#: The worker's end of the two pipes: "READ_FD,WRITE_FD" (set by the parent, `runner.turns`).
TURNS_ENV = "XLABENCH_TURNS"
#: A slice of samples lasts at least this long: long against the handover (the yielding
#: side's pool going idle, the other's waking and re-warming its caches with one untimed
#: step), short against the machine's spells (seconds).
SLICE_S = 0.3
#: Fewest slices a side samples before it may say DONE: its median spans several alternations.
MIN_SLICES = 3
#: The longest a yielding side waits for its own threads to go idle before handing over.
HANDOVER_SETTLE_MAX_S = 0.1
#: The bytes on the pipes: parent to worker, then worker to parent.
GO, STOP = b"g", b"s"
MORE, DONE = b"m", b"d"


class TurnsEndedError(Exception):
    """The parent closed the pipe: the pair was stopped (an interrupted `ab`)."""


@dataclass
class Turns:
    """One worker's side of the turn-taking (`read_fd` None: not taking turns, no-ops)."""

    read_fd: int | None = None
    write_fd: int | None = None
    held: bool = False
    taken: int = 0
    waited_s: float = 0.0
    #: The CPU counters at the start and end of each of this process's own stretches of the
    #: timed phases (`open_windows` .. `close_windows`): what `interference.over` reads.
    windows: list[tuple[CpuSnapshot | None, CpuSnapshot | None]] = field(default_factory=list)
    _window_start: CpuSnapshot | None = None
    _counting: bool = False

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Turns:
        value = (os.environ if environ is None else environ).get(TURNS_ENV, "")
        if not value:
            return cls()
        read_fd, _, write_fd = value.partition(",")
        return cls(int(read_fd), int(write_fd))

    @property
    def active(self) -> bool:
        return self.read_fd is not None

    def take(self) -> bytes:
        """Block until the parent hands this worker the machine: GO, or STOP (sampling is
        over). Without turns, or holding the machine already: GO."""
        if not self.active or self.held:
            return GO
        assert self.read_fd is not None
        start = time.perf_counter()
        message = os.read(self.read_fd, 1)
        if message not in (GO, STOP):
            raise TurnsEndedError("the parent ended the pair")
        self.waited_s += time.perf_counter() - start
        self.taken += 1
        self.held = True
        if self._counting:
            self._window_start = interference.snapshot()
        return message

    def give(self, more: bool) -> None:
        """Hand the machine back once this process's own threads are idle, saying whether its
        samples want more."""
        if not self.active or not self.held:
            return
        assert self.write_fd is not None
        if self._counting:
            self.windows.append((self._window_start, interference.snapshot()))
        probe.settle(HANDOVER_SETTLE_MAX_S)
        self.held = False
        os.write(self.write_fd, MORE if more else DONE)

    def open_windows(self) -> None:
        """The timed phases start (this process holds the machine): count from here."""
        self.windows, self._counting = [], True
        self._window_start = interference.snapshot()

    def close_windows(self) -> list[tuple[CpuSnapshot | None, CpuSnapshot | None]]:
        """The timed phases end (this process holds the machine): its own stretches."""
        self.windows.append((self._window_start, interference.snapshot()))
        self._counting = False
        return self.windows

    def summary(self) -> dict[str, float | int]:
        """What the record keeps: how many turns and how long this process waited for them
        (the rest of its wall time is its own)."""
        return {"taken": self.taken, "waited_s": round(self.waited_s, 3)}


def took_turns(backend_info: dict[str, object]) -> bool:
    """Whether a process's record says it alternated with the other side of its round: more
    than one turn taken. A worker that held the machine from its start to its end (a native
    runner, a LoadGen scenario) took one: its round ran one after the other."""
    summary = backend_info.get("turns")
    return isinstance(summary, dict) and int(summary.get("taken", 0)) > 1


def waited_s(backend_info: dict[str, object]) -> float:
    """How long a process's record says it waited for the other side's turns (0 when it took
    none)."""
    summary = backend_info.get("turns")
    return float(summary.get("waited_s", 0.0)) if isinstance(summary, dict) else 0.0


def no_turns() -> Turns:
    """Outside `xlabench ab` (and in tests of the timing method): no pipes, no-op turns."""
    return Turns()
