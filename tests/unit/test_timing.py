"""The timing method, driven by a fake clock: no sleeping, exact expectations."""

from __future__ import annotations

import pytest

from xlabench.core import MeasureSettings
from xlabench.measure import summarize, timing


class FakeDevice:
    """A step that 'takes' a scripted time on a fake clock; sync records that it was called."""

    def __init__(self, step_times: list[float], steady: float) -> None:
        self.now = 0.0
        self.script = list(step_times)
        self.steady = steady
        self.steps = 0
        self.syncs = 0

    def clock(self) -> float:
        return self.now

    def step(self) -> int:
        self.now += self.script.pop(0) if self.script else self.steady
        self.steps += 1
        return self.steps

    def sync(self, _out: object) -> None:
        self.syncs += 1


def test_first_call_is_timed_alone() -> None:
    device = FakeDevice([5.0], steady=0.01)
    seconds, out = timing.time_call(device.step, device.sync, device.clock)
    assert seconds == 5.0 and out == 1 and device.syncs == 1


def test_warm_up_waits_until_steps_stop_falling() -> None:
    device = FakeDevice([0.5, 0.4, 0.3, 0.2, 0.1, 0.05], steady=0.01)
    settings = MeasureSettings(warmup_min_steps=3, warmup_min_s=0.0)
    result = timing.warm_up(device.step, device.sync, settings, device.clock)
    assert result.steady
    assert result.steps >= 9  # six falling steps, then two windows of steady ones
    assert result.step_s[-1] == pytest.approx(0.01)


def test_warm_up_gives_up_at_its_limit() -> None:
    device = FakeDevice([1.0 / (i + 1) for i in range(1000)], steady=0.001)
    settings = MeasureSettings(warmup_min_steps=3, warmup_min_s=0.0, warmup_max_s=2.0)
    result = timing.warm_up(device.step, device.sync, settings, device.clock)
    assert result.seconds >= 2.0


def test_calibration_makes_samples_long_enough() -> None:
    device = FakeDevice([], steady=0.003)
    settings = MeasureSettings(min_sample_s=0.1)
    steps = timing.calibrate(device.step, device.sync, settings, 0.003, device.clock)
    assert steps * 0.003 >= 0.1
    assert steps == 34


def test_sample_syncs_once_after_many_steps() -> None:
    device = FakeDevice([], steady=0.01)
    seconds = timing.time_sample(device.step, device.sync, 10, device.clock)
    assert abs(seconds - 0.1) < 1e-12 and device.syncs == 1 and device.steps == 10


def test_samples_stop_when_the_ci_target_is_met() -> None:
    device = FakeDevice([], steady=0.01)
    settings = MeasureSettings(min_samples=5, target_rel_ci=0.02)
    result = timing.collect_samples(device.step, device.sync, settings, 10, device.clock)
    assert result.target_met and len(result.sample_s) == 5


def test_samples_stop_at_the_budget_without_meeting_the_target() -> None:
    noisy = [0.01 * (1 + (i % 7) / 3) for i in range(100_000)]
    device = FakeDevice(noisy, steady=0.01)
    settings = MeasureSettings(min_samples=5, target_rel_ci=0.001, budget_s=1.0, max_samples=1000)
    result = timing.collect_samples(device.step, device.sync, settings, 10, device.clock)
    assert not result.target_met
    assert 1.0 <= sum(result.sample_s) < 1.2


def test_throughput_stats_contain_the_median() -> None:
    sample_s = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.10]
    tp = summarize.throughput_stats(batch_size=4, steps_per_sample=10, sample_s=sample_s,
                                    target_met=True)
    assert tp.ci_low_sps <= tp.median_sps <= tp.ci_high_sps
    assert tp.median_sps == 400.0
    assert tp.batch_time_ms_median == 10.0


def test_latency_is_per_synced_step() -> None:
    device = FakeDevice([], steady=0.02)
    step_s = timing.time_latency(device.step, device.sync, 5, 10.0, device.clock)
    assert len(step_s) == 5 and device.syncs == 5
    latency = summarize.latency_stats(step_s)
    assert latency is not None and abs(latency.p99_ms - 20.0) < 1e-9
