"""The same model and configuration measured on two or more backends, side by side."""

from __future__ import annotations

import pandas as pd

from xlabench.analysis.result_rows import latest_per_config

#: One group of the comparison: a configuration but its backend and mode.
CONFIG_BUT_BACKEND = (
    "origin", "source", "device", "model", "resolution", "batch_size", "precision", "weights",
    "tf32",
)


def backend_comparison(results: pd.DataFrame) -> pd.DataFrame:
    """The same model and configuration measured on two or more backends.

    Returns:
        One row per backend and mode, with `backend_mode` (e.g. ``jax/xla``) and
        `vs_fastest_pct`: its throughput relative to the fastest backend/mode of that config.
    """
    runs = latest_per_config(results)
    keys = list(CONFIG_BUT_BACKEND)
    backends = runs.groupby(keys, dropna=False)["backend"].transform("nunique")
    runs = runs[backends >= 2]
    fastest = runs.groupby(keys, dropna=False)["throughput_sps"].transform("max")
    return runs.assign(
        backend_mode=runs["backend"] + "/" + runs["mode"],
        vs_fastest_pct=100 * runs["throughput_sps"] / fastest,
    ).sort_values([*keys, "throughput_sps"], ascending=[True] * len(keys) + [False]) \
        .reset_index(drop=True)


def backend_comparison_wide(comparison: pd.DataFrame) -> pd.DataFrame:
    """`backend_comparison` with one column of throughput per backend/mode."""
    keys = [k for k in CONFIG_BUT_BACKEND if k != "source"]
    if comparison.empty:
        return pd.DataFrame(columns=keys)
    wide = comparison.pivot_table(index=keys, columns="backend_mode", values="throughput_sps",
                                  aggfunc="max")
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index()
