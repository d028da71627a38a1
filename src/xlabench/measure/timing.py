"""The timing method: first call, warm-up, calibration, samples, latency.

Backend-agnostic: it only sees `step()` (launch one batch, return its output) and `sync(output)`
(block until the device has finished that output). The clock is injectable so the method can be
tested with a fake clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xlabench.core.spec import MeasureSettings
from xlabench.measure import stats
from xlabench.measure.turns import MIN_SLICES, SLICE_S, STOP, Turns

Clock = Callable[[], float]
Step = Callable[[], Any]
Sync = Callable[[Any], None]

#: Warm-up counts as steady when the recent step times stop falling by more than this.
STEADY_TOLERANCE = 0.05
#: Fewest samples from which we report a throughput at all (when the budget runs out).
MIN_REPORTABLE_SAMPLES = 3


@dataclass(frozen=True)
class WarmupResult:
    steps: int
    seconds: float
    step_s: tuple[float, ...]
    steady: bool


@dataclass(frozen=True)
class SampleResult:
    steps_per_sample: int
    sample_s: tuple[float, ...]
    target_met: bool


def time_call(step: Step, sync: Sync, clock: Clock = time.perf_counter) -> tuple[float, Any]:
    """Seconds for one synced call, and its output. The first call includes trace + compile."""
    start = clock()
    out = step()
    sync(out)
    return clock() - start, out


def warm_up(
    step: Step, sync: Sync, settings: MeasureSettings, clock: Clock = time.perf_counter
) -> WarmupResult:
    """Run synced steps until the minimum count and time are reached and step times are steady.

    Eager modes also compile lazily (per-op kernels, convolution autotuning), so every mode is
    warmed up, not just the compiled ones.
    """
    times: list[float] = []
    start = clock()
    while True:
        seconds, _ = time_call(step, sync, clock)
        times.append(seconds)
        elapsed = clock() - start
        enough = len(times) >= settings.warmup_min_steps and elapsed >= settings.warmup_min_s
        if enough and is_steady(times):
            return WarmupResult(len(times), elapsed, tuple(times), True)
        if elapsed >= settings.warmup_max_s and len(times) >= settings.warmup_min_steps:
            return WarmupResult(len(times), elapsed, tuple(times), False)


def is_steady(step_s: list[float], window: int = 3) -> bool:
    """True when the median of the last `window` steps is no longer clearly below the previous."""
    if len(step_s) < 2 * window:
        return False
    recent = stats.median(step_s[-window:])
    before = stats.median(step_s[-2 * window : -window])
    return recent >= before * (1.0 - STEADY_TOLERANCE)


def steps_for(min_sample_s: float, step_s: float) -> int:
    """Steps per sample so that one sample lasts at least `min_sample_s`."""
    if step_s <= 0:
        return 1
    return max(1, math.ceil(min_sample_s / step_s))


def time_sample(step: Step, sync: Sync, steps: int, clock: Clock = time.perf_counter) -> float:
    """Seconds for `steps` back-to-back steps, then one sync of the last output (pipelined).

    Work on one device stream completes in order, so waiting for the last output waits for all.
    """
    start = clock()
    out = None
    for _ in range(steps):
        out = step()
    sync(out)
    return clock() - start


def calibrate(
    step: Step,
    sync: Sync,
    settings: MeasureSettings,
    step_s: float,
    clock: Clock = time.perf_counter,
) -> int:
    """Steps per sample, checked by timing one sample and growing it until it is long enough."""
    steps = steps_for(settings.min_sample_s, step_s)
    for _ in range(8):
        seconds = time_sample(step, sync, steps, clock)
        if seconds >= settings.min_sample_s:
            return steps
        steps = max(steps + 1, steps_for(settings.min_sample_s, seconds / steps))
    return steps


def collect_samples(
    step: Step, sync: Sync, settings: MeasureSettings, steps: int,
    clock: Clock = time.perf_counter, turns: Turns | None = None,
) -> SampleResult:
    """Take samples until the median's 95% CI is within the target, or the budget is spent.

    Taking turns with another worker (`measure.turns`), the samples come in slices of at least
    SLICE_S, each after one untimed step (the other side's slice left this one's caches and
    threads cold), and the parent decides when sampling ends: once both sides had enough.
    """
    if turns is not None and turns.active:
        return _collect_in_turns(step, sync, settings, steps, clock, turns)
    samples: list[float] = []
    start = clock()
    while True:
        samples.append(time_sample(step, sync, steps, clock))
        met = _target_met(samples, settings)
        out_of_time = clock() - start >= settings.budget_s
        if met or len(samples) >= settings.max_samples:
            return SampleResult(steps, tuple(samples), met)
        if out_of_time and len(samples) >= MIN_REPORTABLE_SAMPLES:
            return SampleResult(steps, tuple(samples), False)


def _target_met(samples: list[float], settings: MeasureSettings) -> bool:
    return len(samples) >= settings.min_samples and (
        stats.rel_ci_halfwidth(samples) <= settings.target_rel_ci)


def _collect_in_turns(step: Step, sync: Sync, settings: MeasureSettings, steps: int,
                      clock: Clock, turns: Turns) -> SampleResult:
    """Slices until the parent says STOP; after each, MORE while this side's own rule (target,
    budget of its own slices, sample limit; at least MIN_SLICES) wants more."""
    samples: list[float] = []
    own_s, slices = 0.0, 0
    while turns.take() != STOP:
        slice_start = clock()
        time_call(step, sync, clock)
        while not samples or clock() - slice_start < SLICE_S:
            samples.append(time_sample(step, sync, steps, clock))
        own_s += clock() - slice_start
        slices += 1
        enough = (_target_met(samples, settings) or own_s >= settings.budget_s
                  or len(samples) >= settings.max_samples)
        turns.give(more=slices < MIN_SLICES or not enough)
    return SampleResult(steps, tuple(samples), _target_met(samples, settings))


def time_latency(
    step: Step, sync: Sync, count: int, budget_s: float, clock: Clock = time.perf_counter
) -> tuple[float, ...]:
    """Individually synced steps: single-batch latency, not pipelined throughput."""
    times: list[float] = []
    start = clock()
    while len(times) < count and (not times or clock() - start < budget_s):
        seconds, _ = time_call(step, sync, clock)
        times.append(seconds)
    return tuple(times)
