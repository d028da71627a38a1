"""Rankings, and whether adjacent ranks are separated by more than the measurement noise.

A `RankRule` is plain data so that the HTML report can apply the same rule in the browser
after the reader changes a filter (assets/report.js mirrors `rank`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class RankRule:
    """Rank rows by a column, largest first.

    Attributes:
        by: the column ranked on (rows where it is missing are left out).
        per: keep only the best row per this key (e.g. a model's best resolution).
        top_n: keep this many rows per `top_per` group; None keeps all.
        top_per: the groups ranked separately (e.g. each device).
        ci_low / ci_high: the interval of `by`, to decide whether adjacent ranks overlap.
        tiebreak: ties in `by` are ordered by this column, ascending.
    """

    by: str
    per: tuple[str, ...] = ()
    top_n: int | None = None
    top_per: tuple[str, ...] = ()
    ci_low: str | None = None
    ci_high: str | None = None
    tiebreak: str = "model"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rank(frame: pd.DataFrame, rule: RankRule) -> pd.DataFrame:
    """Rows ranked by `rule`, with `rank` (1 = best in its group) and `within_noise`.

    `within_noise` is True when a row's CI overlaps the CI of the row ranked just above or
    just below it in the same group (their order is not established by the measurement),
    False when both neighbours are clearly separated, and NA when the row has no CI.
    """
    data = frame[frame[rule.by].notna()]
    data = data.sort_values([rule.by, rule.tiebreak], ascending=[False, True], kind="mergesort")
    if rule.per:
        data = data.drop_duplicates(list(rule.per), keep="first")
    ranks = data.groupby(list(rule.top_per), sort=False, dropna=False).cumcount() + 1 \
        if rule.top_per else pd.Series(range(1, len(data) + 1), index=data.index)
    data = data.assign(rank=ranks.astype("int64"))
    if rule.top_n is not None:
        data = data[data["rank"] <= rule.top_n]
    data = data.assign(within_noise=within_noise(data, rule))
    sort_keys = [*rule.top_per, "rank"]
    return data.sort_values(sort_keys, kind="mergesort").reset_index(drop=True)


def within_noise(ranked: pd.DataFrame, rule: RankRule) -> pd.Series:
    """Whether each row's interval overlaps its neighbours' (rows in rank order per group)."""
    if rule.ci_low is None or rule.ci_high is None or ranked.empty:
        return pd.Series(pd.NA, index=ranked.index, dtype="boolean")
    low, high = ranked[rule.ci_low], ranked[rule.ci_high]
    if rule.top_per:
        groups = ranked.groupby(list(rule.top_per), sort=False, dropna=False)
        above_low, below_high = groups[rule.ci_low].shift(1), groups[rule.ci_high].shift(-1)
    else:
        above_low, below_high = low.shift(1), high.shift(-1)
    overlaps = (above_low <= high) | (low <= below_high)  # NaN compares False
    result = overlaps.astype("boolean")
    result[low.isna() | high.isna()] = pd.NA
    return result
