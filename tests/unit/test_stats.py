"""Order-statistic CI of the median, percentiles and rank correlation."""

from __future__ import annotations

import random

import pytest

from xlabench.measure import stats


def test_median_and_percentile() -> None:
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 2, 3]) == 2.5
    assert stats.percentile([1, 2, 3, 4, 5], 50) == 3
    assert stats.percentile([1, 2, 3, 4, 5], 90) == pytest.approx(4.6)


@pytest.mark.parametrize(("n", "expected"), [(10, (1, 8)), (20, (5, 14)), (100, (39, 60))])
def test_median_ci_ranks_match_binomial_tables(n: int, expected: tuple[int, int]) -> None:
    lo, hi, achieved = stats.median_ci_ranks(n)
    assert (lo, hi) == expected
    assert achieved >= 0.95


def test_small_samples_report_what_they_achieve() -> None:
    lo, hi, achieved = stats.median_ci_ranks(4)
    assert (lo, hi) == (0, 3)
    assert achieved == pytest.approx(0.875)


def test_ci_holds_true_median_about_95_percent() -> None:
    rng = random.Random(0)
    held = 0
    trials = 2000
    for _ in range(trials):
        sample = [rng.lognormvariate(0.0, 0.5) for _ in range(15)]
        low, high, _ = stats.median_ci(sample)
        held += low <= 1.0 <= high  # the lognormal(0, s) median is exactly 1
    assert 0.94 <= held / trials <= 0.995


def test_rel_ci_halfwidth() -> None:
    assert stats.rel_ci_halfwidth([100.0] * 10) == 0.0
    assert stats.rel_ci_halfwidth([90, 95, 100, 105, 110, 100, 100, 100, 100, 100]) > 0


def test_rank_correlation() -> None:
    assert stats.rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert stats.rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
