"""The timing method, driven by a fake clock: no sleeping, exact expectations."""

from __future__ import annotations

import random

import pytest

from xlabench.core import MeasureSettings
from xlabench.measure import summarize, timing
from xlabench.measure.turns import GO, MIN_SLICES, SLICE_S, STOP, Turns


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


class FakeTurns(Turns):
    """Turns on the fake clock, the parent's rule played against another side that wants
    `other_slices` slices of `other_s` seconds each."""

    def __init__(self, device: FakeDevice, other_s: float, other_slices: int) -> None:
        super().__init__(read_fd=-1, write_fd=-1)
        self.device, self.other_s, self.other_slices = device, other_s, other_slices
        self.events: list[tuple[str, int]] = []
        self.done = False
        self.other_taken = 0

    def take(self) -> bytes:
        if self.held:
            return GO
        self.held = True
        if self.done and self.other_taken >= self.other_slices:
            self.events.append(("stop", self.device.steps))
            return STOP
        self.device.now += self.other_s  # the other side's slice
        self.other_taken += 1
        self.events.append(("take", self.device.steps))
        return GO

    def give(self, more: bool) -> None:
        self.held, self.done = False, not more
        self.events.append(("give", self.device.steps))


def _sliced(other_slices: int, other_s: float, budget_s: float = 2.0
            ) -> tuple[timing.SampleResult, FakeTurns]:
    rng = random.Random(0)  # step times that vary: a 1e-9 CI target is never met
    device = FakeDevice([rng.uniform(0.009, 0.011) for _ in range(100_000)], steady=0.01)
    turns = FakeTurns(device, other_s, other_slices)
    settings = MeasureSettings(min_samples=5, max_samples=200, target_rel_ci=1e-9,
                               budget_s=budget_s, min_sample_s=0.1)
    return timing.collect_samples(device.step, device.sync, settings, 10, device.clock,
                                  turns=turns), turns


def test_taking_turns_samples_in_slices_and_counts_its_own_time_only() -> None:
    # the other side's slices last far past the budget: the budget is this side's own time
    result, turns = _sliced(other_slices=0, other_s=100.0)
    assert 2.0 <= sum(result.sample_s) < 2.0 + SLICE_S + 0.2
    starts = [steps for event, steps in turns.events if event in ("take", "stop")]
    ends = [steps for event, steps in turns.events if event == "give"]
    assert turns.events[-1][0] == "stop" and turns.held  # it keeps the machine after STOP
    # each slice: one untimed step, then samples of 10 steps until it lasted SLICE_S
    per_slice = [end - start for start, end in zip(starts, ends, strict=False)]
    assert all((n - 1) % 10 == 0 and (n - 1) // 10 >= SLICE_S / 0.11 for n in per_slice)
    assert len(result.sample_s) == sum((n - 1) // 10 for n in per_slice)


def test_taking_turns_a_side_samples_on_while_the_other_wants_more() -> None:
    short, _ = _sliced(other_slices=0, other_s=0.3, budget_s=0.5)
    assert len(short.sample_s) >= MIN_SLICES * 3  # never fewer than MIN_SLICES slices
    longer, turns = _sliced(other_slices=20, other_s=0.3, budget_s=0.5)
    assert sum(1 for event, _ in turns.events if event == "give") == 20
    assert len(longer.sample_s) > 2 * len(short.sample_s)


def test_without_turns_the_samples_run_back_to_back() -> None:
    device = FakeDevice([], steady=0.01)
    settings = MeasureSettings(min_samples=5, target_rel_ci=1e-9, budget_s=2.0)
    result = timing.collect_samples(device.step, device.sync, settings, 10, device.clock)
    assert device.steps == 10 * len(result.sample_s)  # no untimed steps
