"""Between-process statistics: t quantiles, the combined interval and its hold rate by simulation,
paired speedups, and what is combined when processes are flagged."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics

import pytest

from tests.conftest import make_record
from xlabench.core.record import Interference, Probe, ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine, stats
from xlabench.measure.turns import took_turns

SEED = 20261201


@pytest.mark.parametrize(("df", "expected"), [
    (1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (7, 2.3646), (30, 2.0423),
    (1000, 1.9623),
])
def test_t_quantile_matches_the_table(df: int, expected: float) -> None:
    assert combine.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert combine.t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def _synthetic_run(
    rng: random.Random, true_sps: float, k: int, between: float, within: float, samples: int
) -> list[float]:
    """k process medians: each process has its own offset (between-process spread, log scale)
    and `samples` samples around it (within-process spread); its median is what it reports."""
    medians = []
    for _ in range(k):
        offset = rng.gauss(0.0, between)
        values = [true_sps * math.exp(offset + rng.gauss(0.0, within)) for _ in range(samples)]
        medians.append(stats.median(values))
    return medians


@pytest.mark.parametrize(("k", "between", "within"), [(3, 0.05, 0.01), (5, 0.03, 0.02),
                                                       (3, 0.01, 0.04)])
def test_the_combined_interval_holds_the_true_value_95_percent(
    k: int, between: float, within: float
) -> None:
    """Known between/within variance; the interval must hold the configuration's true median
    (the median over processes) about 95% of the time, whichever level dominates."""
    rng = random.Random(SEED + k)
    trials, hits = 2000, 0
    for _ in range(trials):
        interval = combine.log_t_interval(_synthetic_run(rng, 100.0, k, between, within, 9))
        hits += interval.low <= 100.0 <= interval.high
    assert 0.93 <= hits / trials <= 0.97


# Student's t 0.975-quantiles in closed form: df = 1 is the Cauchy distribution, and for df = 2
# the quantile of p is (2p - 1) / sqrt(2p(1 - p)).
T_975_DF1 = math.tan(math.pi * (0.975 - 0.5))
T_975_DF2 = (2 * 0.975 - 1) / math.sqrt(2 * 0.975 * (1 - 0.975))


@pytest.mark.parametrize(("log_offsets", "t_975"), [((-0.5, 0.5), T_975_DF1),
                                                    ((-1.0, 0.0, 1.0), T_975_DF2)])
def test_combine_gives_the_closed_form_t_interval_wider_than_the_medians_range(
    log_offsets: tuple[float, ...], t_975: float
) -> None:
    """What combine() stores for k clean processes is the t interval of their log medians: the
    geometric mean, +- t(0.975, k - 1) standard errors on the log scale. At two or three
    processes it is far wider than the range of the medians, which is about what a percentile
    bootstrap over the processes would give (and why docs/method.md does not use one: that
    interval holds the truth ~75% of the time at k = 3)."""
    medians = [100.0 * math.exp(offset) for offset in log_offsets]
    k = len(medians)
    mean = sum(log_offsets) / k
    log_se = math.sqrt(sum((x - mean) ** 2 for x in log_offsets) / (k - 1) / k)
    result = combine.combine([_process(m, i) for i, m in enumerate(medians)], "r1",
                             ResultPolicy(min_processes=k))
    assert result.median_sps == pytest.approx(100.0 * math.exp(mean), rel=1e-12)
    assert (result.ci_low_sps, result.ci_high_sps) == pytest.approx(
        (100.0 * math.exp(mean - t_975 * log_se), 100.0 * math.exp(mean + t_975 * log_se)),
        rel=1e-9)
    assert result.ci_confidence == 0.95
    assert result.ci_method.endswith(f"({k} processes, {k - 1} df)")
    assert result.ci_low_sps < min(medians) / 2 and result.ci_high_sps > 2 * max(medians)


def test_pairwise_hold_rate_of_two_runs_is_high() -> None:
    """The check bench/interval_hold_rate.py makes on real runs: how often run i's interval
    holds run j's estimate. For an honest 95% interval of 3 processes it is ~0.9."""
    rng = random.Random(SEED + 1)
    runs = [combine.log_t_interval(_synthetic_run(rng, 100.0, 3, 0.05, 0.01, 9))
            for _ in range(400)]
    hits = sum(a.low <= b.estimate <= a.high for a, b in zip(runs[::2], runs[1::2], strict=True))
    assert hits / 200 > 0.8


def test_paired_speedup_cancels_a_drift_that_hits_both_modes() -> None:
    """The machine slows down round by round; both modes of a round see the same slowdown.
    The paired interval of the ratio stays tight and right; the unpaired one is much wider."""
    rng = random.Random(SEED + 2)
    drift = [1.0, 0.8, 0.6, 0.9, 0.7]
    baseline = {r: 100.0 * d * math.exp(rng.gauss(0, 0.005)) for r, d in enumerate(drift)}
    compiled = {r: 250.0 * d * math.exp(rng.gauss(0, 0.005)) for r, d in enumerate(drift)}
    paired = combine.paired_ratio(compiled, baseline)
    unpaired = combine.result_ratio(_stored(list(compiled.values())),
                                    _stored(list(baseline.values())))
    assert paired is not None and unpaired is not None
    assert paired.ratio_low <= 2.5 <= paired.ratio_high
    assert paired.ratio_high - paired.ratio_low < 0.1
    assert unpaired.ratio_high - unpaired.ratio_low > 5 * (paired.ratio_high - paired.ratio_low)
    assert paired.method == "paired t (5 rounds)"
    assert combine.paired_ratio({0: 1.0}, {0: 2.0}) is None  # one pair: no interval


def _process(sps: float, index: int, other_frac: float = 0.0, **record: object) -> object:
    figures = Interference(wall_s=5.0, cpus=(0, 1), busy_frac=0.95, own_frac=0.95 - other_frac,
                           other_frac=other_frac, steal_frac=0.0)
    return make_record(throughput=sps, **record).replace(
        interference=figures, process=ProcessInfo(result_id="r1", index=index, round=index))


def test_a_paired_side_keeps_its_flagged_processes_in_round_order() -> None:
    """`xlabench ab`'s sides (keep_flagged): every successful process makes the figure, so a
    round with a busy process still pairs; the result still counts the flagged one."""
    processes = [_process(100.0, 0), _process(60.0, 1, other_frac=0.5), _process(104.0, 2)]
    result = combine.combine(processes, "r1", ResultPolicy(min_processes=3, keep_flagged=True))
    assert result.process_medians_sps == (100.0, 60.0, 104.0)
    assert result.process_rounds == (0, 1, 2) and result.process_indices == (0, 1, 2)
    assert (result.k, result.k_flagged) == (3, 1)
    other = combine.combine(processes, "r1", ResultPolicy(min_processes=3))
    assert other.process_medians_sps == (100.0, 104.0)  # everywhere else: left out


def test_combine_uses_clean_processes_and_flags_a_thin_result() -> None:
    policy = ResultPolicy(min_processes=3)
    processes = [_process(100.0, 0), _process(30.0, 1, other_frac=0.5), _process(104.0, 2),
                 _process(98.0, 3)]
    result = combine.combine(processes, "r1", policy)
    assert (result.k, result.k_total, result.k_flagged, result.flagged) == (3, 4, 1, False)
    assert result.median_sps == pytest.approx((100.0 * 104.0 * 98.0) ** (1 / 3))
    assert result.ci_confidence == 0.95 and result.between_processes
    assert result.process_rounds == (0, 2, 3)

    thin = combine.combine(processes[:2], "r1", policy)
    assert thin.flagged and thin.k == 1 and "interference" in thin.flag_reason
    assert not thin.between_processes
    # one process: its own order-statistic interval, with the confidence it really has
    assert thin.ci_confidence == pytest.approx(0.97) and thin.ci_method.startswith("one process")

    busy = combine.combine([processes[1]], "r1", policy)
    assert busy.flagged and busy.k == 1 and busy.median_sps == 30.0
    assert busy.flag_reason.startswith("every process")


def test_combine_of_failures_keeps_the_reason() -> None:
    from xlabench.core import Status

    failed = make_record(status=Status.TIMEOUT)
    result = combine.combine([failed], "r1", ResultPolicy())
    assert result.status == "timeout" and result.median_sps is None
    assert result.error == "timeout on purpose"


# ------------------------------------------------------------- one stored result against another
def _stored(medians: list[float], drift: float | None = None, drift_df: float | None = None,
            rounds: tuple[int, ...] | None = None, status: str = "ok"):
    from xlabench.core.result import Result

    estimate = math.exp(sum(math.log(m) for m in medians) / len(medians)) if medians else None
    return Result(
        result_id="r", spec_id="s", env_id="e", status=status, k=len(medians),
        k_total=len(medians), k_flagged=0, median_sps=estimate, ci_low_sps=estimate,
        ci_high_sps=estimate, ci_confidence=0.95, ci_method="test",
        between_processes=len(medians) >= 2, target_rel_ci=0.05, target_met=True,
        flagged=False, flag_reason="", process_medians_sps=tuple(medians),
        process_rounds=rounds if rounds is not None else tuple(range(len(medians))),
        drift_rel_sd=drift, drift_results=6 if drift is not None else 0, drift_df=drift_df,
    )


def _welch_log_interval(parts: list[tuple[float, float]], log_ratio: float) -> tuple[float, float]:
    """exp of the Welch-Satterthwaite t interval around `log_ratio` of variance components
    (variance, degrees of freedom)."""
    var = sum(v for v, _ in parts)
    df = var**2 / sum(v * v / d for v, d in parts)
    half = combine.t_quantile(0.975, df) * math.sqrt(var)
    return math.exp(log_ratio - half), math.exp(log_ratio + half)


def test_result_ratio_is_welch_on_log_medians_plus_each_runs_drift() -> None:
    base, new = [100.0, 103.0, 98.0], [90.0, 92.0, 89.0, 91.0]
    plain = combine.result_ratio(_stored(new), _stored(base))
    assert plain is not None

    def se2(values: list[float]) -> float:
        logs = [math.log(v) for v in values]
        mean = sum(logs) / len(logs)
        return sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs)

    log_ratio = math.log(plain.ratio)
    assert (plain.ratio_low, plain.ratio_high) == pytest.approx(
        _welch_log_interval([(se2(new), 3), (se2(base), 2)], log_ratio))
    assert plain.method.startswith("welch t") and plain.n_pairs == 0

    held = combine.result_ratio(_stored(new, 0.03, 4.0), _stored(base, 0.02, 6.0))
    assert held is not None
    assert held.ratio == pytest.approx(plain.ratio)
    assert (held.ratio_low, held.ratio_high) == pytest.approx(_welch_log_interval(
        [(se2(new), 3), (0.03**2, 4.0), (se2(base), 2), (0.02**2, 6.0)], log_ratio))
    assert "between-run variation" in held.method
    # a stored drift without its degrees of freedom (older results): still an interval
    old = combine.result_ratio(_stored(new, 0.03), _stored(base))
    assert old is not None and old.ratio_high - old.ratio_low > plain.ratio_high - plain.ratio_low


def test_result_ratio_pairs_rounds_of_one_sweep_and_needs_two_processes() -> None:
    drift = [1.0, 0.8, 0.6, 0.9, 0.7]
    base = _stored([100.0 * d for d in drift], drift=0.05, drift_df=4.0)
    new = _stored([90.0 * d * (1 + 0.001 * (-1) ** i) for i, d in enumerate(drift)], 0.05, 4.0)
    paired = combine.result_ratio(new, base, same_sweep=True)
    unpaired = combine.result_ratio(new, base, same_sweep=False)
    assert paired is not None and unpaired is not None
    assert paired.n_pairs == 5 and paired.method.startswith("paired t")
    assert paired.ratio_low <= 0.9 <= paired.ratio_high < 0.91
    assert unpaired.ratio_high - unpaired.ratio_low > 20 * (paired.ratio_high - paired.ratio_low)
    # one shared round: nothing to pair, the unpaired interval
    apart = _stored(new.process_medians_sps, rounds=(4, 5, 6, 7, 8))
    assert combine.result_ratio(apart, base, same_sweep=True).method.startswith("welch t")
    # one process: a within-process fallback, marked as such (compare gives no verdict on it)
    one = combine.result_ratio(_stored([90.0]), base)
    assert one is not None and one.method == "ci-ends" and not one.between_processes
    assert combine.result_ratio(new, _stored([], status="timeout")) is None


def test_rounds_whose_processes_span_machine_states_are_set_aside() -> None:
    """Round 2's processes read 210 and 160 GFLOP/s on the probe (the machine changed state
    between them): it is set aside, in the paired t and in the sequential look alike; a round
    whose processes both ran slow still pairs; results without probes pair every round."""
    drift = [1.0, 1.0, 1.0, 0.7, 1.0]
    base = _stored([100.0 * d for d in drift])
    new = _stored([90.0 * d for d in drift[:2]] + [50.0] + [90.0 * d for d in drift[3:]])
    fast, slow = 210.0, 160.0
    base_probes = (fast, fast, fast, slow, fast)
    new_probes = (fast, fast, slow, slow, fast)
    probed_base = dataclasses.replace(base, process_probe_before_gflops=base_probes,
                                      process_probe_after_gflops=base_probes)
    probed_new = dataclasses.replace(new, process_probe_before_gflops=new_probes,
                                     process_probe_after_gflops=(None,) * 5)
    rounds = combine.matched_rounds(probed_new, probed_base)
    assert rounds.set_aside == (2,) and sorted(rounds.new) == [0, 1, 3, 4]
    assert combine.paired_log_ratios(probed_new, probed_base) == pytest.approx([math.log(0.9)] * 4)
    paired = combine.result_ratio(probed_new, probed_base, same_sweep=True)
    assert paired is not None and paired.n_pairs == 4 and "1 round set aside" in paired.method
    assert paired.ratio_low == pytest.approx(0.9) == paired.ratio_high
    assert combine.matched_rounds(new, base).set_aside == ()  # no probes: nothing to go by
    assert len(combine.paired_log_ratios(new, base)) == 5
    # a round whose two processes took turns slice by slice saw the same states: it pairs
    in_turns = (False, False, True, False, False)
    turned = [dataclasses.replace(r, process_took_turns=in_turns)
              for r in (probed_new, probed_base)]
    assert combine.matched_rounds(*turned).set_aside == ()
    one_sided = dataclasses.replace(probed_new, process_took_turns=in_turns)
    assert combine.matched_rounds(one_sided, probed_base).set_aside == (2,)


def test_a_process_took_turns_only_if_it_alternated() -> None:
    assert took_turns({"turns": {"taken": 6, "waited_s": 8.0}})
    assert not took_turns({"turns": {"taken": 1, "waited_s": 9.0}})  # held it start to end
    assert not took_turns({})


def test_a_machine_busy_at_every_probe_still_pairs_every_round() -> None:
    """Fewer than four rounds in one state (other work on the machine: the probe reads
    differently every time) leave nothing to decide on: every round pairs, and the rounds
    across states are named."""
    base = _stored([100.0, 100.0, 100.0, 100.0, 100.0])
    new = _stored([50.0, 50.0, 50.0, 50.0, 50.0])
    new_probes = (210.0, 60.0, 210.0, 90.0, 40.0)
    probed_new = dataclasses.replace(new, process_probe_before_gflops=new_probes,
                                     process_probe_after_gflops=new_probes)
    probed_base = dataclasses.replace(base, process_probe_before_gflops=(210.0,) * 5,
                                      process_probe_after_gflops=(210.0,) * 5)
    rounds = combine.matched_rounds(probed_new, probed_base)
    assert rounds.set_aside == () and rounds.paired_across_states == (1, 3, 4)
    assert len(rounds.log_ratios()) == 5
    paired = combine.result_ratio(probed_new, probed_base, same_sweep=True)
    assert paired is not None and paired.n_pairs == 5
    assert "3 rounds across machine states paired" in paired.method


def test_combine_keeps_each_process_probe_readings() -> None:
    probes = [Probe(gflops=g, seconds=0.03, n=640, calls=12) for g in (200.0, 170.0)]
    processes = [make_record(throughput=100.0).replace(
        probe_before=probes[0], probe_after=probes[i],
        process=ProcessInfo(result_id="r1", index=i, round=i)) for i in range(2)]
    result = combine.combine(processes, "r1", ResultPolicy(min_processes=2))
    assert result.process_probe_before_gflops == (200.0, 200.0)
    assert result.process_probe_after_gflops == (200.0, 170.0)


def _one_process(median: float, low: float, high: float, confidence: float = 0.95):
    return dataclasses.replace(_stored([median]), ci_low_sps=low, ci_high_sps=high,
                               ci_confidence=confidence)


def test_result_ratio_of_one_process_sides_bootstraps_samples_else_takes_the_ci_ends() -> None:
    """The fallbacks the speedup tables had (intervals.speedup_interval) are result_ratio's."""
    new, base = _one_process(120.0, 115.0, 125.0), _one_process(100.0, 96.0, 104.0)
    ends = combine.result_ratio(new, base)
    assert ends is not None and ends.method == "ci-ends" and not ends.between_processes
    assert (ends.ratio, ends.ratio_low, ends.ratio_high) == pytest.approx(
        (1.2, 115.0 / 104.0, 125.0 / 96.0))
    assert (ends.diff_low_sps, ends.diff_high_sps) == pytest.approx((11.0, 29.0))
    rng = random.Random(3)
    samples = ([rng.gauss(120.0, 3.0) for _ in range(40)],
               [rng.gauss(100.0, 3.0) for _ in range(40)])
    boot = combine.result_ratio(new, base, samples=samples)
    assert boot is not None and boot.method == "bootstrap" and not boot.between_processes
    assert boot.ratio == pytest.approx(1.2)  # the stored figures' ratio
    assert ends.ratio_low < boot.ratio_low < 1.2 < boot.ratio_high < ends.ratio_high
    assert combine.result_ratio(new, base, samples=samples) == boot  # seeded per ratio
    few = (samples[0][:9], samples[1])
    assert combine.result_ratio(new, base, samples=few).method == "ci-ends"
    # a side without an interval of its own (a LoadGen figure, a published number): none
    assert combine.result_ratio(new, _one_process(100.0, 100.0, 100.0, 0.0)) is None


def test_interleaved_needs_the_same_sweep_and_overlapping_times() -> None:
    run = combine.RunTimes
    assert combine.interleaved(run("s1", (0, 10)), run("s1", (5, 15)))
    assert not combine.interleaved(run("s1", (0, 10)), run("s1", (11, 20)))  # swept again
    assert not combine.interleaved(run("s1", (0, 10)), run("s2", (0, 10)))  # other grids
    assert not combine.interleaved(run(None, (0, 10)), run(None, (0, 10)))
    assert not combine.interleaved(run("s1", None), run("s1", (0, 10)))  # times unknown


def test_log_mean_se2_is_the_mean_and_squared_standard_error_of_the_logs() -> None:
    values = [90.0, 100.0, 110.0]
    logs = [math.log(v) for v in values]
    mean = sum(logs) / 3
    assert combine.log_mean_se2(values) == pytest.approx(
        (mean, sum((x - mean) ** 2 for x in logs) / 2 / 3))
    assert combine.log_spread(values) == pytest.approx(statistics.stdev(logs))


def test_result_ratio_of_re_runs_holds_one_about_95_percent() -> None:
    """A/A: two runs of the same software, each with its own between-run offset; with the drift
    they carry, the ratio interval holds 1 about 95% of the time (without it, far less)."""
    rng = random.Random(SEED + 3)
    hits = hits_without = 0
    trials = 1500
    for _ in range(trials):
        runs = []
        for _ in range(2):
            offset = rng.gauss(0.0, 0.04)
            medians = [100.0 * math.exp(offset + rng.gauss(0.0, 0.01)) for _ in range(3)]
            runs.append(medians)
        held = combine.result_ratio(_stored(runs[1], 0.04, 1000.0), _stored(runs[0], 0.04, 1000.0))
        alone = combine.result_ratio(_stored(runs[1]), _stored(runs[0]))
        assert held is not None and alone is not None
        hits += held.ratio_low <= 1.0 <= held.ratio_high
        hits_without += alone.ratio_low <= 1.0 <= alone.ratio_high
    assert 0.93 <= hits / trials <= 0.97
    assert hits_without / trials < 0.6
