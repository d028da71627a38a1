"""The machine's state: a short fixed reference workload timed in every worker process.

On a small shared VM the machine changes speed for minutes at a time (the host's load, steal,
frequency), so processes of one result can run in different machine states. Each worker times
the same seeded float32 NumPy GEMM just before and just after its timed phases (`run_probe`),
and a result says when its processes' probes differ by more than `SPANS_STATES_REL`
(`machine_states`). The probe explains a figure; it never rescales one.

Threads: the GEMM runs on the worker's threads as NumPy has them, that is BLAS's own pool
(OpenBLAS: as many threads as the process may use, unless OPENBLAS_NUM_THREADS or
OMP_NUM_THREADS in the environment says otherwise), under the worker's CPU placement. So it
measures the CPUs the worker measured on, as the environment sets them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xlabench.core.record import Probe, Record

#: The GEMM's size: about 2.7 ms per call (190-200 GFLOP/s) on a quiet 2-vCPU AMD EPYC
#: (Zen 4) VM.
PROBE_N = 640
#: Calls timed (after one untimed call): 30-40 ms in all on that machine when quiet.
PROBE_CALLS = 12
PROBE_SEED = 0
#: A result whose processes' probes differ by more than this (highest / lowest - 1) ran in
#: different machine states. Back-to-back probes on a quiet machine agree within a few
#: percent; the machine's slow and fast states seen in issue 37 differ by about 2x.
SPANS_STATES_REL = 0.15


#: The worker's own threads count as idle when, with its main thread asleep, the process
#: uses less than this share of one CPU (`settle`).
IDLE_CPU_SHARE = 0.1
SETTLE_STEP_S = 0.01
#: The longest wait for them: ONNX Runtime's pool on the Zen 4 VM went on spinning for a few
#: milliseconds after its last call (a probe 1 ms after read 80-115 GFLOP/s, 10 ms after
#: 200-209); OpenMP's under OMP_WAIT_POLICY=ACTIVE never stops.
SETTLE_MAX_S = 0.5


def settle(max_s: float = SETTLE_MAX_S, step_s: float = SETTLE_STEP_S) -> tuple[float, bool]:
    """Wait until the process's own threads are idle (CPU time of the whole process, measured
    over `step_s` with this thread asleep, below IDLE_CPU_SHARE of one CPU), at most `max_s`:
    (seconds waited, whether they went idle)."""
    start = time.perf_counter()
    while True:
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        time.sleep(step_s)
        busy = (time.process_time() - cpu_before) / (time.perf_counter() - wall_before)
        waited_s = time.perf_counter() - start
        if busy < IDLE_CPU_SHARE:
            return waited_s, True
        if waited_s >= max_s:
            return waited_s, False


def run_probe(n: int = PROBE_N, calls: int = PROBE_CALLS) -> Probe:
    """Time `calls` products of two seeded n x n float32 matrices, once the worker's own
    threads are idle (`settle`); the rate is that of the median call (robust to one
    interrupted call), `seconds` the time of all of them."""
    import numpy as np  # here: `machine_states` is read where only the standard library is

    settle_s, settled = settle()
    rng = np.random.default_rng(PROBE_SEED)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)  # untimed: BLAS's threads start, the pages are touched
    call_s = []
    for _ in range(calls):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        call_s.append(time.perf_counter() - start)
    median_s = statistics.median(call_s)
    return Probe(gflops=2.0 * n**3 / median_s / 1e9, seconds=sum(call_s), n=n, calls=calls,
                 settle_s=settle_s, settled=settled)


@dataclass(frozen=True)
class ProbeSpread:
    """How far apart the probes of a result's processes were."""

    low_gflops: float
    high_gflops: float
    probes: int  # readings compared (before and after of every process that has them)

    @property
    def rel(self) -> float:
        """Highest / lowest - 1: 0.2 means the fastest moment was 20% faster than the slowest."""
        return self.high_gflops / self.low_gflops - 1.0

    @property
    def spans_states(self) -> bool:
        return spans_states(self.rel)


def machine_states(records: Sequence[Record]) -> ProbeSpread | None:
    """The spread of every probe reading of these processes (before and after their timed
    phases, `readings`); None with fewer than two readings."""
    rates = [g for r in records for g in readings(r) if g is not None]
    if len(rates) < 2:
        return None
    return ProbeSpread(low_gflops=min(rates), high_gflops=max(rates), probes=len(rates))


def spans_states(spread_rel: float | None) -> bool:
    """Whether a stored spread (`Result.probe_spread_rel`) says the processes ran in
    different machine states (None: not measured, says nothing)."""
    return spread_rel is not None and spread_rel > SPANS_STATES_REL


def one_state(readings_gflops: Iterable[float | None]) -> bool:
    """Whether these probe readings (of the processes of one round, before and after each)
    say the machine stayed in one state: they differ by at most SPANS_STATES_REL. Fewer than
    two readings say nothing, and so do not split a round."""
    rates = [r for r in readings_gflops if r is not None and r > 0]
    return len(rates) < 2 or not spans_states(max(rates) / min(rates) - 1.0)


def readings(record: Record) -> tuple[float | None, float | None]:
    """A process's probe readings (GFLOP/s) before and after its timed phases (None: not
    taken, or taken while the worker's own threads were still busy, which reads the worker,
    not the machine)."""
    def reading(p: Probe | None) -> float | None:
        return p.gflops if p is not None and p.gflops > 0 and p.settled else None

    return reading(record.probe_before), reading(record.probe_after)

