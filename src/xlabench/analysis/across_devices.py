"""The same configuration measured on two or more devices (the fleet's CPU kinds, as the
study's A100, V100 and T4): whether a verdict holds on every one, whether the fastest way to
run a model is the same, and how much faster one device is than another per way.

Local results only: a published number has no interval, so it cannot say whether a verdict
holds, and no parity check, so it cannot say which way to deploy.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlabench.analysis.deploy import deploy_candidates, fastest_deployments
from xlabench.analysis.intervals import Spans, ratio_verdict, result_spans, row_ratio

#: A configuration but the device it ran on.
ACROSS_KEYS = ("model", "resolution", "batch_size", "precision", "runner")
#: A deployment question but its device (`deploy.DEPLOY_KEYS` less the device).
PICK_KEYS = ("model", "resolution", "batch_size")


def on_several_devices(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """The local rows of `frame` whose `keys` were measured on two or more devices."""
    if frame.empty:
        return frame
    local = frame[frame["origin"] == "local"]
    devices = local.groupby(list(keys), dropna=False)["device"].transform("nunique")
    return local[devices >= 2]


def verdicts_across_devices(speedups: pd.DataFrame) -> pd.DataFrame:
    """The rows of a `speedup_table` whose configuration ran on two or more devices, each
    with its `verdict` (`ratio_verdict` of its speedup's interval) and `holds`: every device
    gives the same verdict."""
    rows = on_several_devices(speedups, ACROSS_KEYS)
    if rows.empty:
        return rows.assign(verdict=pd.Series(dtype=object), holds=pd.Series(dtype=bool))
    rows = rows.assign(verdict=[ratio_verdict(low, high) for low, high in zip(
        rows["speedup_ratio_ci_low"], rows["speedup_ratio_ci_high"], strict=True)])
    verdicts = rows.groupby(list(ACROSS_KEYS), dropna=False)["verdict"].transform("nunique")
    return rows.assign(holds=verdicts == 1).sort_values([*ACROSS_KEYS, "device"]) \
        .reset_index(drop=True)


def picks_across_devices(results: pd.DataFrame) -> pd.DataFrame:
    """`fastest_deployments` of the models measured on two or more devices, with
    `same_pick`: every device's fastest way is the same way."""
    picks = on_several_devices(fastest_deployments(results), PICK_KEYS)
    if picks.empty:
        return picks.assign(same_pick=pd.Series(dtype=bool))
    ways = picks.groupby(list(PICK_KEYS), dropna=False)["way"].transform("nunique")
    return picks.assign(same_pick=ways == 1).sort_values([*PICK_KEYS, "device"]) \
        .reset_index(drop=True)


def device_ratios(results: pd.DataFrame) -> pd.DataFrame:
    """Per way and configuration measured on two or more devices: each device's throughput
    over the reference device's (the first by name), with the interval of the one ratio
    method (`intervals.row_ratio`; two devices never run interleaved, so it is the Welch t of
    log process medians with each result's between-run variation).

    Returns:
        One row per (configuration, way, device other than the reference): ``device``,
        ``reference``, ``way``, ``device_sps``, ``reference_sps``, ``device_ratio`` with
        ``device_ratio_ci_low``/``_high``, ``ci_method`` and ``verdict``.
    """
    rows = on_several_devices(deploy_candidates(results), (*ACROSS_KEYS, "way"))
    if rows.empty:
        return pd.DataFrame()
    reference = sorted(rows["device"].unique())[0]
    spans = result_spans(results)
    found = []
    for _, group in rows.groupby([*ACROSS_KEYS, "way"], dropna=False, sort=True):
        base = group[group["device"] == reference]
        if base.empty:
            continue
        found += [_device_ratio(row, base.iloc[0].to_dict(), reference, spans)
                  for row in group[group["device"] != reference].to_dict("records")]
    return pd.DataFrame(found)


def _device_ratio(row: dict[str, Any], base: dict[str, Any], reference: str,
                  spans: Spans) -> dict[str, Any]:
    interval = row_ratio(row, base, spans)
    return {
        **{k: row[k] for k in ("origin", "family", *ACROSS_KEYS, "way", "device")},
        "reference": reference, "device_sps": row["throughput_sps"],
        "reference_sps": base["throughput_sps"],
        "device_ratio": row["throughput_sps"] / base["throughput_sps"],
        "device_ratio_ci_low": interval.ratio_low, "device_ratio_ci_high": interval.ratio_high,
        "ci_method": interval.method,
        "verdict": ratio_verdict(interval.ratio_low, interval.ratio_high),
    }


def device_ratio_summary(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per device and way: the median `device_ratio` over its configurations, how many there
    are, and how many are faster or slower beyond their interval; fastest way first."""
    if ratios.empty:
        return pd.DataFrame()
    groups = ratios.groupby(["device", "reference", "way"], sort=True)
    summary = groups.agg(median_ratio=("device_ratio", "median"),
                         configurations=("device_ratio", "size"),
                         faster=("verdict", lambda v: int((v == "faster").sum())),
                         slower=("verdict", lambda v: int((v == "slower").sum())))
    return summary.reset_index().sort_values(["device", "median_ratio"],
                                             ascending=[True, False]).reset_index(drop=True)
