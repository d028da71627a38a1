"""Interference detection with real processes: a CPU hog on this process's cores is seen and
flagged; this process's own work is not counted as interference."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from xlabench.core.record import Interference
from xlabench.core.result import OTHER_BUSY_MAX_FRAC, interference_reason
from xlabench.measure import interference

HOG = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _hog(cpus: tuple[int, ...], seconds: float) -> list[subprocess.Popen[bytes]]:
    """One busy-looping process pinned to each of `cpus`."""
    hogs = []
    for cpu in cpus:
        proc = subprocess.Popen([sys.executable, "-c", HOG.format(seconds=seconds)],
                                preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c}))
        hogs.append(proc)
    return hogs


def test_own_work_is_not_interference() -> None:
    cpu = (min(os.sched_getaffinity(0)),)
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpu))
    try:
        start = interference.snapshot(cpu)
        _spin(1.5)
        figures = interference.between(start, interference.snapshot(cpu))
    finally:
        os.sched_setaffinity(0, before)
    assert figures is not None
    # our busy loop is ours: busy = own + other; on a quiet machine own is ~1.0 and other ~0
    # (a shared CI machine may run something beside us, so only the split is asserted)
    assert figures.own_frac > 0.25
    assert figures.busy_frac == pytest.approx(figures.own_frac + figures.other_frac, abs=0.05)


def test_a_hog_on_the_same_cpu_is_flagged() -> None:
    cpu = (min(os.sched_getaffinity(0)),)
    before = os.sched_getaffinity(0)
    hogs = _hog(cpu, 4.0)
    os.sched_setaffinity(0, set(cpu))
    try:
        time.sleep(0.3)  # let the hog start
        start = interference.snapshot(cpu)
        _spin(1.5)
        figures = interference.between(start, interference.snapshot(cpu))
    finally:
        os.sched_setaffinity(0, before)
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert figures is not None
    assert figures.other_frac > 0.3  # the hog had about half of the CPU
    assert interference_reason(figures) is not None


def test_a_busy_machine_is_said_before_starting() -> None:
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    hogs = _hog(cpus, 4.0)
    try:
        time.sleep(0.3)  # let the hogs start
        warning = interference.busy_before_start(1.0)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert warning is not None and warning.startswith("warning: the machine is busy")
    assert "\n" not in warning and "of the CPUs" in warning


def test_policy_thresholds() -> None:
    def figures(other: float, steal: float = 0.0) -> Interference:
        return Interference(wall_s=3.0, cpus=(0,), busy_frac=1.0, own_frac=1.0 - other,
                            other_frac=other, steal_frac=steal)

    assert interference_reason(figures(OTHER_BUSY_MAX_FRAC - 0.01)) is None
    assert "other processes used 50%" in interference_reason(figures(0.5))
    assert "hypervisor stole" in interference_reason(figures(0.0, steal=0.2))
    assert interference_reason(None) is None


def test_too_short_a_phase_gives_no_figures() -> None:
    start = interference.snapshot()
    assert interference.between(start, interference.snapshot()) is None
    assert interference.between(None, start) is None


@pytest.mark.slow
def test_a_real_worker_under_a_hog_is_flagged_and_a_quiet_one_is_not(tmp_path) -> None:
    """A real torch eager worker (the study's demo case) with a hog pinned to its cores."""
    from xlabench.core import MeasureSettings, Spec, Status
    from xlabench.runner import Placement, run_isolated

    cpus = tuple(sorted(os.sched_getaffinity(0)))
    quick = MeasureSettings(min_sample_s=0.05, budget_s=3.0, warmup_min_s=0.2,
                            warmup_max_s=3.0, latency_steps=5, min_samples=5)
    spec = Spec("mobilenet_v3_small", "torch", "eager", 32, batch_size=2, measure=quick)
    quiet = run_isolated(spec, timeout_s=300, placement=Placement(cpus=cpus))
    hogs = _hog(cpus, 120.0)
    try:
        busy = run_isolated(spec, timeout_s=300, placement=Placement(cpus=cpus))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    for record in (quiet, busy):
        assert record.status is Status.OK, record.error
        assert record.interference is not None and record.interference.cpus == cpus
    assert interference_reason(busy.interference) is not None, busy.interference
    assert busy.interference.other_frac > 0.3
    assert quiet.interference.other_frac < busy.interference.other_frac
