"""Turn raw timings into the statistics a Record stores."""

from __future__ import annotations

from collections.abc import Sequence

from xlabench.core.record import Latency, Throughput
from xlabench.measure import stats

CONFIDENCE = 0.95


def per_sample_sps(
    batch_size: int, steps_per_sample: int, sample_s: Sequence[float]
) -> list[float]:
    """Throughput of each raw sample (samples/s): batch x steps per sample / its seconds; a
    sample of no time (a stored value rounded to 0) says nothing and is left out."""
    return [batch_size * steps_per_sample / s for s in sample_s if s > 0]


def throughput_stats(
    batch_size: int, steps_per_sample: int, sample_s: Sequence[float], target_met: bool
) -> Throughput:
    """Median throughput (samples/s) with the order-statistic 95% CI of the median."""
    per_sample = per_sample_sps(batch_size, steps_per_sample, sample_s)
    low, high, achieved = stats.median_ci(per_sample, CONFIDENCE)
    mid = stats.median(per_sample)
    return Throughput(
        median_sps=mid,
        ci_low_sps=low,
        ci_high_sps=high,
        ci_confidence=achieved,
        rel_ci_halfwidth=max(mid - low, high - mid) / mid,
        target_met=target_met,
        steps_per_sample=steps_per_sample,
        sample_s=tuple(sample_s),
        batch_time_ms_median=1000.0 * stats.median(sample_s) / steps_per_sample,
    )


def latency_stats(step_s: Sequence[float]) -> Latency | None:
    if not step_s:
        return None
    ms = [1000.0 * s for s in step_s]
    return Latency(
        p50_ms=stats.percentile(ms, 50),
        p90_ms=stats.percentile(ms, 90),
        p99_ms=stats.percentile(ms, 99),
        step_s=tuple(step_s),
    )
