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
from collections.abc import Sequence
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


def run_probe(n: int = PROBE_N, calls: int = PROBE_CALLS) -> Probe:
    """Time `calls` products of two seeded n x n float32 matrices; the rate is that of the
    median call (robust to one interrupted call), `seconds` the time of all of them."""
    import numpy as np  # here: `machine_states` is read where only the standard library is

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
    return Probe(gflops=2.0 * n**3 / median_s / 1e9, seconds=sum(call_s), n=n, calls=calls)


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
    phases); None with fewer than two readings."""
    rates = [p.gflops for r in records for p in (r.probe_before, r.probe_after)
             if p is not None and p.gflops > 0]
    if len(rates) < 2:
        return None
    return ProbeSpread(low_gflops=min(rates), high_gflops=max(rates), probes=len(rates))


def spans_states(spread_rel: float | None) -> bool:
    """Whether a stored spread (`Result.probe_spread_rel`) says the processes ran in
    different machine states (None: not measured, says nothing)."""
    return spread_rel is not None and spread_rel > SPANS_STATES_REL
