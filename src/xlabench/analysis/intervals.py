"""Confidence intervals of a speedup, from the two throughputs it compares.

Methods, chosen per pair, best first:

- ``paired t``: both sides are results of two or more processes from the same sweep, with
  processes in the same rounds (they ran next to each other, interleaved): the t interval of
  the per-round log ratios, so a drift of the machine that hits both sides cancels
  (`measure.combine.paired_ratio`).
- ``welch t``: both sides have two or more processes but no common rounds: Welch's interval of
  the difference of mean log process medians (`measure.combine.unpaired_ratio`).

Results of a single process (older databases) fall back to what one process can say:

- ``bootstrap``: when both runs stored at least `MIN_BOOTSTRAP_SAMPLES` raw samples, resample
  each run's per-sample throughputs with replacement (independently: the runs are separate
  processes), take the median of each resample, and read the 2.5th and 97.5th percentiles of
  compiled/baseline (and compiled - baseline). Seeded, so a report is reproducible.
- ``ci-ends``: otherwise, combine the ends of the two stored 95% CIs of the median:
  ratio in [c_low / b_high, c_high / b_low], difference in [c_low - b_high, c_high - b_low].
  If each CI holds its median >= 95% of the time, both do >= 90.25% (independent runs), and
  then the speedup is inside these bounds: conservative in width, a hold rate >= 90%.
- ``none``: a side has no CI (published numbers): the point estimate only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xlabench.measure import combine

MIN_BOOTSTRAP_SAMPLES = 10  # fewer samples give a bootstrap median too coarse to trust
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20230601


@dataclass(frozen=True)
class SpeedupInterval:
    """A speedup's ratio and difference intervals, and how they were computed."""

    ratio_low: float
    ratio_high: float
    diff_low_sps: float
    diff_high_sps: float
    method: str


NO_INTERVAL = SpeedupInterval(math.nan, math.nan, math.nan, math.nan, "none")


def from_ci_ends(
    compiled: tuple[float, float], baseline: tuple[float, float]
) -> SpeedupInterval:
    """Bounds from the ends of both throughput CIs, each given as (low, high) samples/s."""
    (c_low, c_high), (b_low, b_high) = compiled, baseline
    if any(math.isnan(v) for v in (c_low, c_high, b_low, b_high)) or min(b_low, b_high) <= 0:
        return NO_INTERVAL
    return SpeedupInterval(c_low / b_high, c_high / b_low, c_low - b_high, c_high - b_low,
                           "ci-ends")


def bootstrap(
    compiled_sps: Sequence[float], baseline_sps: Sequence[float], rng: np.random.Generator
) -> SpeedupInterval:
    """Percentile bootstrap of the ratio and difference of the two medians."""
    c_medians = _resampled_medians(np.asarray(compiled_sps, dtype=float), rng)
    b_medians = _resampled_medians(np.asarray(baseline_sps, dtype=float), rng)
    ratio_low, ratio_high = np.percentile(c_medians / b_medians, [2.5, 97.5])
    diff_low, diff_high = np.percentile(c_medians - b_medians, [2.5, 97.5])
    return SpeedupInterval(float(ratio_low), float(ratio_high), float(diff_low),
                           float(diff_high), "bootstrap")


def _resampled_medians(samples: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    picks = rng.integers(0, len(samples), size=(BOOTSTRAP_RESAMPLES, len(samples)))
    return np.median(samples[picks], axis=1)


def process_level(
    compiled: tuple[Sequence[float], Sequence[str]], baseline: tuple[Sequence[float], Sequence[str]]
) -> SpeedupInterval | None:
    """Paired (same rounds) or Welch t interval from each side's (process medians, rounds)."""
    (c_sps, c_rounds), (b_sps, b_rounds) = compiled, baseline
    paired = combine.paired_ratio(dict(zip(c_rounds, c_sps, strict=True)),
                                  dict(zip(b_rounds, b_sps, strict=True)))
    found = paired or combine.unpaired_ratio(list(c_sps), list(b_sps))
    if found is None:
        return None
    return SpeedupInterval(found.ratio_low, found.ratio_high, found.diff_low_sps,
                           found.diff_high_sps, found.method)


def speedup_interval(
    compiled_sps: Sequence[float],
    baseline_sps: Sequence[float],
    compiled_ci: tuple[float, float],
    baseline_ci: tuple[float, float],
    rng: np.random.Generator,
    processes: tuple[tuple[Sequence[float], Sequence[str]],
                     tuple[Sequence[float], Sequence[str]]] | None = None,
) -> SpeedupInterval:
    """Process-level when both sides have processes to compare, else the bootstrap of samples
    when both runs have enough of them, else the CI ends, else none."""
    found = process_level(*processes) if processes else None
    if found is not None:
        return found
    if min(len(compiled_sps), len(baseline_sps)) >= MIN_BOOTSTRAP_SAMPLES:
        return bootstrap(compiled_sps, baseline_sps, rng)
    return from_ci_ends(compiled_ci, baseline_ci)


@dataclass(frozen=True)
class RatioSide:
    """The columns of one side of a ratio in a table of pairs (one row per pair)."""

    samples: str
    ci_low: str
    ci_high: str
    processes: str
    rounds: str


def ratio_intervals(
    table: pd.DataFrame, top: RatioSide, bottom: RatioSide
) -> tuple[list[SpeedupInterval], pd.Series, pd.Series, pd.Series]:
    """`speedup_interval` of top / bottom for every row, one seeded generator for the table:
    the intervals, their low and high ends, and `significant` (the interval excludes 1)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    intervals = [
        speedup_interval(
            getattr(row, top.samples), getattr(row, bottom.samples),
            (getattr(row, top.ci_low), getattr(row, top.ci_high)),
            (getattr(row, bottom.ci_low), getattr(row, bottom.ci_high)), rng,
            processes=((getattr(row, top.processes), getattr(row, top.rounds)),
                       (getattr(row, bottom.processes), getattr(row, bottom.rounds))),
        )
        for row in table.itertuples()
    ]
    low = pd.Series([i.ratio_low for i in intervals], index=table.index, dtype="float64")
    high = pd.Series([i.ratio_high for i in intervals], index=table.index, dtype="float64")
    significant = ((low > 1) | (high < 1)).astype("boolean").mask(low.isna())
    return intervals, low, high, significant
