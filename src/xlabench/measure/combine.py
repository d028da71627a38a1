"""Between-process statistics: one configuration's processes combined, and speedups between two.

The unit of replication is the worker process. Each process reports the median of its own
samples; process medians of the same configuration scatter more than one process's samples do
(thread placement, memory layout, the machine's state), so an interval that should hold on a
re-run has to come from the spread *between* processes. We use the t interval of the mean of
log process medians (k - 1 degrees of freedom) and report exp() of it: the estimate is the
geometric mean of the process medians. Within-process noise is inside each process median, so
the spread of the medians already carries both levels; resampling the samples again (a
two-level bootstrap) counts it twice, and a percentile bootstrap over 3-5 processes is far too
narrow (at k = 3 its interval is about the range of the medians, which covers the median with
~75%). docs/NOTES.md has the simulation; tests/unit/test_combine.py checks coverage.

Standard library only (the sweep, the store's callers and the analysis all use it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xlabench.core.record import Record
from xlabench.core.result import CONFIDENCE, Result, ResultPolicy, interference_reason


# ------------------------------------------------------------------ Student's t distribution
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _reg_incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _reg_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on the CDF; p in (0, 1))."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"need 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


# ------------------------------------------------------------------------- one configuration
@dataclass(frozen=True)
class Interval:
    """An estimate with its interval, confidence and how it was made."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    n: int

    @property
    def rel_halfwidth(self) -> float:
        return max(self.estimate - self.low, self.high - self.estimate) / abs(self.estimate)


def log_t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Geometric mean of positive `values` with the t interval of their logs (needs >= 2)."""
    if len(values) < 2 or min(values) <= 0:
        raise ValueError("need at least two positive values")
    logs = [math.log(v) for v in values]
    k = len(logs)
    mean = sum(logs) / k
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (k - 1))
    half = t_quantile(0.5 + confidence / 2.0, k - 1) * sd / math.sqrt(k)
    method = f"t interval of log process medians ({k} processes, {k - 1} df)"
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), confidence,
                    method, k)


def log_spread(values: Sequence[float]) -> float:
    """Standard deviation of log(values): the between-process coefficient of variation."""
    if len(values) < 2:
        return 0.0
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))


def clean_processes(records: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """(successful clean processes, successful flagged ones), in the given order."""
    ok = [r for r in records if r.ok and r.throughput is not None]
    clean = [r for r in ok if interference_reason(r.interference) is None]
    flagged = [r for r in ok if interference_reason(r.interference) is not None]
    return clean, flagged


def combine(
    records: Sequence[Record], result_id: str, policy: ResultPolicy, env_id: str = ""
) -> Result:
    """The combined figure of one configuration's processes (all with the same spec).

    Clean processes are combined; flagged ones only when no clean process exists. The result
    is flagged when it has fewer clean processes than the policy's minimum because some were
    measured under interference (or when it had to use flagged ones).
    """
    if not records:
        raise ValueError("no processes to combine")
    first = records[0]
    clean, flagged = clean_processes(records)
    used = clean or flagged
    flag_reason = _flag_reason(len(clean), flagged, policy)
    if not used:
        failed = next((r for r in reversed(records) if not r.ok), records[-1])
        return _empty_result(records, result_id, env_id or first.env_id, failed, flag_reason)
    medians = [r.throughput.median_sps for r in used]  # type: ignore[union-attr]
    interval = _interval(used)
    between = len(used) >= 2
    rel = interval.rel_halfwidth
    return Result(
        result_id=result_id, spec_id=first.spec_id, env_id=env_id or first.env_id, status="ok",
        k=len(used), k_total=len(records), k_flagged=len(flagged),
        median_sps=interval.estimate, ci_low_sps=interval.low, ci_high_sps=interval.high,
        ci_confidence=interval.confidence, ci_method=interval.method, between_processes=between,
        target_rel_ci=policy.target_rel_ci, target_met=between and rel <= policy.target_rel_ci,
        flagged=bool(flag_reason), flag_reason=flag_reason, process_medians_sps=tuple(medians),
        process_rounds=tuple(r.process.round for r in used),
    )


def _interval(used: Sequence[Record]) -> Interval:
    if len(used) >= 2:
        return log_t_interval([r.throughput.median_sps for r in used])  # type: ignore[union-attr]
    tp = used[0].throughput
    assert tp is not None
    low = tp.ci_low_sps if tp.ci_low_sps is not None else tp.median_sps
    high = tp.ci_high_sps if tp.ci_high_sps is not None else tp.median_sps
    confidence = tp.ci_confidence if tp.ci_confidence is not None else 0.0
    method = "one process: order-statistic interval of its own samples (no between-process spread)"
    return Interval(tp.median_sps, low, high, confidence, method, 1)


def _flag_reason(clean: int, flagged: Sequence[Record], policy: ResultPolicy) -> str:
    if not flagged or clean >= policy.min_processes:
        return ""
    why = interference_reason(flagged[-1].interference)
    if clean == 0:
        return f"every process was measured under interference ({len(flagged)}; last: {why})"
    return (f"{clean} clean process(es) of {policy.min_processes} wanted; {len(flagged)} "
            f"measured under interference (last: {why})")


def _empty_result(
    records: Sequence[Record], result_id: str, env_id: str, failed: Record, flag_reason: str
) -> Result:
    return Result(
        result_id=result_id, spec_id=records[0].spec_id, env_id=env_id,
        status=failed.status.value, k=0, k_total=len(records), k_flagged=0, median_sps=None,
        ci_low_sps=None, ci_high_sps=None, ci_confidence=None, ci_method="",
        between_processes=False, target_rel_ci=None, target_met=False,
        flagged=bool(flag_reason), flag_reason=flag_reason, process_medians_sps=(),
        process_rounds=(), error=failed.error,
    )


# ---------------------------------------------------------------------------------- speedups
@dataclass(frozen=True)
class RatioInterval:
    """compiled / baseline (and compiled - baseline in samples/s) with intervals."""

    ratio: float
    ratio_low: float
    ratio_high: float
    diff_low_sps: float
    diff_high_sps: float
    method: str
    n_pairs: int


def paired_ratio(
    compiled: Mapping[Any, float], baseline: Mapping[Any, float], confidence: float = CONFIDENCE
) -> RatioInterval | None:
    """Speedup from processes that ran next to each other (same round): a paired t interval of
    log(compiled / baseline), so a drift of the machine that hits both sides of a round cancels.
    None with fewer than two pairs."""
    rounds = sorted(set(compiled) & set(baseline))
    if len(rounds) < 2:
        return None
    ratios = [compiled[r] / baseline[r] for r in rounds]
    diffs = [compiled[r] - baseline[r] for r in rounds]
    ratio = log_t_interval(ratios, confidence)
    diff_mean = sum(diffs) / len(diffs)
    diff_sd = math.sqrt(sum((d - diff_mean) ** 2 for d in diffs) / (len(diffs) - 1))
    diff_half = t_quantile(0.5 + confidence / 2, len(diffs) - 1) * diff_sd / math.sqrt(len(diffs))
    return RatioInterval(ratio.estimate, ratio.low, ratio.high, diff_mean - diff_half,
                         diff_mean + diff_half, f"paired t ({len(rounds)} rounds)", len(rounds))


def unpaired_ratio(
    compiled: Sequence[float], baseline: Sequence[float], confidence: float = CONFIDENCE
) -> RatioInterval | None:
    """Welch's t interval of the difference of mean log process medians (no pairing). None
    unless both sides have two or more processes."""
    if len(compiled) < 2 or len(baseline) < 2:
        return None
    lc, lb = [math.log(v) for v in compiled], [math.log(v) for v in baseline]
    mc, mb = sum(lc) / len(lc), sum(lb) / len(lb)
    vc = sum((x - mc) ** 2 for x in lc) / (len(lc) - 1) / len(lc)
    vb = sum((x - mb) ** 2 for x in lb) / (len(lb) - 1) / len(lb)
    se = math.sqrt(vc + vb)
    if se == 0:
        ratio = math.exp(mc - mb)
        return RatioInterval(ratio, ratio, ratio, math.exp(mc) - math.exp(mb),
                             math.exp(mc) - math.exp(mb), "welch t (no spread)", 0)
    df = (vc + vb) ** 2 / (vc**2 / (len(lc) - 1) + vb**2 / (len(lb) - 1))
    half = t_quantile(0.5 + confidence / 2, df) * se
    gc, gb = math.exp(mc), math.exp(mb)
    low, high = math.exp(mc - mb - half), math.exp(mc - mb + half)
    return RatioInterval(gc / gb, low, high, gb * (low - 1), gb * (high - 1),
                         f"welch t ({len(lc)} vs {len(lb)} processes)", 0)
