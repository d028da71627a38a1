"""Throughput rankings (the study's findings 1, 2, 3 and 7) and throughput against batch size."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from xlabench.analysis.kinds import NON_CNN_KINDS
from xlabench.analysis.ranking import RankRule, rank
from xlabench.analysis.result_rows import latest_per_config, mode_rows
from xlabench.analysis.speedup import Comparison

MOBILENET_FAMILIES = ("MobileNet_V1", "MobileNet_V2", "MobileNet_V3")
#: One series of the batch-size chart: a configuration but its batch size.
CONFIG_BUT_BATCH = (
    "origin", "source", "device", "model", "resolution", "precision", "weights", "tf32",
    "backend", "mode",
)


def top_models_rule(n: int | None = 10) -> RankRule:
    """Each model's best configuration, then the `n` fastest models per device and origin."""
    return RankRule(
        by="throughput_sps", per=("origin", "device", "model"), top_n=n,
        top_per=("origin", "device"), ci_low="throughput_sps_ci_low",
        ci_high="throughput_sps_ci_high",
    )


def fastest_rule(by_device: bool, top_n: int | None = None) -> RankRule:
    """Models at each resolution (and device), fastest first; the best config per model."""
    group = ("origin", "device", "resolution") if by_device else ("origin", "resolution")
    return RankRule(
        by="throughput_sps", per=(*group, "model"), top_n=top_n, top_per=group,
        ci_low="throughput_sps_ci_low", ci_high="throughput_sps_ci_high",
    )


def compiled_runs(
    results: pd.DataFrame, comparison: Comparison, kinds: Iterable[str] | None = None
) -> pd.DataFrame:
    """Latest successful runs in the comparison's compiled mode, optionally of some kinds."""
    runs = mode_rows(results, comparison.backend, comparison.compiled_mode)
    if kinds is not None:
        runs = runs[runs["kind"].isin(list(kinds))]
    return runs


def top_models(
    results: pd.DataFrame, comparison: Comparison, n: int = 10,
    kinds: Iterable[str] | None = None,
) -> pd.DataFrame:
    """The `n` fastest models with the compiler on each device (study finding 1; 7 with kinds).

    Args:
        results: the frame of `load_results`.
        comparison: whose compiled mode counts as "with XLA".
        n: models per device.
        kinds: only these kinds (e.g. `NON_CNN_KINDS`); None for all.

    Returns:
        One row per (origin, device, rank): the model's best configuration, with `rank` and
        `within_noise` (its throughput CI overlaps a neighbour's).
    """
    return rank(compiled_runs(results, comparison, kinds), top_models_rule(n))


def top_non_cnn_models(results: pd.DataFrame, comparison: Comparison, n: int = 10) -> pd.DataFrame:
    """The `n` fastest transformer, MLP and hybrid models on each device (study finding 7)."""
    return top_models(results, comparison, n, kinds=NON_CNN_KINDS)


def fastest_per_resolution(
    results: pd.DataFrame, comparison: Comparison, by_device: bool = False
) -> pd.DataFrame:
    """The fastest model with the compiler at each resolution (study finding 3).

    Returns:
        One row per resolution (and device when `by_device`) with the winner, the runner-up
        model and throughput, and `within_noise`: the two CIs overlap, so the winner is not
        established by the measurement.
    """
    ranked = rank(compiled_runs(results, comparison), fastest_rule(by_device))
    group = list(fastest_rule(by_device).top_per)
    winners = ranked[ranked["rank"] == 1].drop(columns=["within_noise"])
    runners = ranked[ranked["rank"] == 2][[*group, "model", "throughput_sps", "within_noise"]]
    runners = runners.rename(columns={"model": "runner_up", "throughput_sps": "runner_up_sps"})
    merged = winners.merge(runners, on=group, how="left")
    merged["within_noise"] = merged["within_noise"].astype("boolean")
    return merged.sort_values(group, kind="mergesort").reset_index(drop=True)


def mobilenet_family(results: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    """MobileNet V1, V2 and V3 side by side, baseline and compiled (study finding 2).

    Returns:
        Latest runs of MobileNet models in the comparison's two modes, sorted by device,
        resolution, mode and throughput (fastest first).
    """
    modes = (comparison.baseline_mode, comparison.compiled_mode)
    runs = pd.concat([mode_rows(results, comparison.backend, m) for m in modes])
    runs = runs[runs["family"].isin(MOBILENET_FAMILIES)]
    keys = ["origin", "device", "resolution", "batch_size", "precision", "mode"]
    order = [*keys, "throughput_sps"]
    return runs.sort_values(order, ascending=[True] * len(keys) + [False]).reset_index(drop=True)


def slower_than(
    runs: pd.DataFrame, slow_model: str, fast_model: str, mode: str
) -> pd.DataFrame:
    """Where `slow_model` is slower than `fast_model` in `mode`, per device and config.

    Returns:
        One row per shared configuration: both throughputs, `slower` (median below) and
        `within_noise` (the CIs overlap, so "slower" is not established).
    """
    keys = ["origin", "source", "device", "resolution", "batch_size", "precision"]
    cols = [*keys, "throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high"]
    in_mode = runs[runs["mode"] == mode]
    slow = in_mode[in_mode["model"] == slow_model][cols]
    fast = in_mode[in_mode["model"] == fast_model][cols]
    both = slow.merge(fast, on=keys, suffixes=("_slow", "_fast"))
    overlap = (both["throughput_sps_ci_low_slow"] <= both["throughput_sps_ci_high_fast"]) & (
        both["throughput_sps_ci_low_fast"] <= both["throughput_sps_ci_high_slow"])
    no_ci = both[["throughput_sps_ci_low_slow", "throughput_sps_ci_low_fast"]].isna().any(axis=1)
    return both.assign(
        slow_model=slow_model, fast_model=fast_model,
        slower=both["throughput_sps_slow"] < both["throughput_sps_fast"],
        within_noise=overlap.astype("boolean").mask(no_ci, pd.NA),
    )


def throughput_vs_batch_size(results: pd.DataFrame) -> pd.DataFrame:
    """Configurations measured at two or more batch sizes, one row per batch size.

    Returns:
        Runs with `series` (a label for the configuration but its batch size), sorted by
        series and batch size.
    """
    runs = latest_per_config(results)
    sizes = runs.groupby(list(CONFIG_BUT_BATCH), dropna=False)["batch_size"].transform("nunique")
    runs = runs[sizes >= 2]
    series = (runs["model"] + " " + runs["backend"] + "/" + runs["mode"] + " "
              + runs["precision"] + " @" + runs["resolution"].astype(str) + " on "
              + runs["device"].astype(str)
              + runs["origin"].map({"published": " (published)", "local": ""}))
    return runs.assign(series=series).sort_values(["series", "batch_size"]).reset_index(drop=True)
