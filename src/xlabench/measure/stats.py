"""Distribution-free statistics for timing samples (standard library only).

Timing samples are skewed (a run is slowed by interference, never sped up), so we report the
median with an order-statistic confidence interval rather than mean +- standard deviation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return ordered[mid] if n % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (numpy's default method)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _binom_cdf(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2.0**n


def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int, float]:
    """0-based ranks (lo, hi) whose order statistics bracket the median with >= confidence.

    The interval [x_(j), x_(k)] (1-based) holds the population median with probability
    P(j <= B < k), B ~ Binomial(n, 1/2). We take the narrowest symmetric pair that reaches the
    confidence; with too few samples no pair does, and we return (0, n-1) with what it achieves.

    Returns:
        (lo, hi, achieved confidence).
    """
    if n < 1:
        raise ValueError("need at least one sample")
    best = (0, n - 1, 1.0 - 2.0 * _binom_cdf(0, n))
    for j in range(1, n // 2 + 1):
        k = n - j + 1  # symmetric partner, 1-based
        achieved = 1.0 - 2.0 * _binom_cdf(j - 1, n)
        if achieved < confidence:
            break
        best = (j - 1, k - 1, achieved)
    return best


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(low, high, achieved confidence) of the median of `values`."""
    ordered = sorted(values)
    lo, hi, achieved = median_ci_ranks(len(ordered), confidence)
    return ordered[lo], ordered[hi], achieved


def rel_ci_halfwidth(values: Sequence[float], confidence: float = 0.95) -> float:
    """Largest distance of a CI bound from the median, relative to the median."""
    mid = median(values)
    low, high, _ = median_ci(values, confidence)
    if mid == 0:
        return math.inf
    return max(mid - low, high - mid) / abs(mid)


def rank_correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("need two sequences of equal length >= 2")
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var_a = sum((x - ma) ** 2 for x in ra)
    var_b = sum((y - mb) ** 2 for y in rb)
    if var_a == 0 or var_b == 0:
        return math.nan
    return cov / math.sqrt(var_a * var_b)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for idx in order[i : j + 1]:
            ranks[idx] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks
