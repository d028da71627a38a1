"""What went wrong: parity failures and failed runs; how each number was measured, and whether
re-runs of a configuration agree with its intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from xlabench.analysis.result_rows import CONFIG_KEYS, every_result, latest_per_config


def parity_failures(results: pd.DataFrame) -> pd.DataFrame:
    """Runs whose compiled output differed from eager beyond tolerance (parity_passed = 0)."""
    failed = results[results["parity_passed"] == 0]
    return failed.sort_values(["model", "backend", "mode", "id"]).reset_index(drop=True)


def parity_within_own_spread(results: pd.DataFrame) -> pd.DataFrame:
    """Runs that passed parity only because their reference differs from itself as much
    (`measure.parity.compare`): a network too sensitive for its outputs to be compared."""
    within = results[(results["parity_passed"] == 1) & results["parity_own_spread_rel"].notna()]
    return within.sort_values(["model", "backend", "mode", "id"]).reset_index(drop=True)


def failed_runs(results: pd.DataFrame) -> pd.DataFrame:
    """Every run that did not finish with status ok, oldest first.

    `later_ok` says whether the same configuration also has a successful run (e.g. a re-run
    after a transient failure), and `runs` is 1 so that charts can sum it.
    """
    failed = results[results["status"] != "ok"]
    ok_keys = set(map(tuple, results.loc[results["status"] == "ok", list(CONFIG_KEYS)].values))
    later_ok = [tuple(row) in ok_keys for row in failed[list(CONFIG_KEYS)].values]
    reason = failed["error"].fillna("").astype(str).replace("", "(no reason recorded)")
    return failed.assign(reason=reason, later_ok=later_ok, runs=1).sort_values("id") \
        .reset_index(drop=True)


def failures_by_reason(results: pd.DataFrame) -> pd.DataFrame:
    """Failed runs counted by status and reason, with the models and modes they hit."""
    failed = failed_runs(results)
    columns = ["status", "reason", "runs", "models", "backend_modes"]
    if failed.empty:
        return pd.DataFrame(columns=columns)
    backend_mode = failed["backend"] + "/" + failed["mode"]
    groups = failed.assign(backend_mode=backend_mode).groupby(["status", "reason"], sort=True)
    summary = groups.agg(
        runs=("runs", "sum"), models=("model", _joined), backend_modes=("backend_mode", _joined)
    ).reset_index()
    return summary.sort_values(["runs", "status"], ascending=[False, True])[columns] \
        .reset_index(drop=True)


def _joined(values: pd.Series, limit: int = 8) -> str:
    unique = sorted({str(v) for v in values})
    more = f" (+{len(unique) - limit} more)" if len(unique) > limit else ""
    return ", ".join(unique[:limit]) + more


def measurement_quality(results: pd.DataFrame) -> pd.DataFrame:
    """Every local result with how it was measured: processes, interval confidence and method,
    interference. Flagged results first, then single-process ones, then the rest."""
    latest = latest_per_config(results)
    local = latest[latest["origin"] == "local"]
    order = local.assign(
        _rank=[0 if f else (1 if not b else 2) for f, b in zip(
            local["flagged"], local["between_processes"], strict=True)])
    order = order.sort_values(["_rank", "model", "backend", "mode"]).drop(columns="_rank")
    return order.assign(ci_confidence_pct=100 * order["ci_confidence"]).reset_index(drop=True)


def rerun_agreement(results: pd.DataFrame) -> pd.DataFrame:
    """Configurations measured by two or more results here (re-runs): how far their figures
    spread, and how often one result's interval holds another's figure (over ordered pairs;
    an honest 95% interval scores about 0.83 when both sides vary, issue 10's check). This is
    the test of the intervals a user's own database can make. Complete results only, as the
    between-run variation counts them (a killed sweep's unfinished one is no re-run)."""
    local = every_result(results)
    local = local[(local["origin"] == "local") & local["complete"].astype(bool)]
    keys = [*CONFIG_KEYS, "env_id"]
    rows = []
    for key, group in local.groupby(keys, dropna=False, sort=False):
        if len(group) < 2:
            continue
        estimate = group["throughput_sps"].to_numpy(dtype=float)
        low = group["throughput_sps_ci_low"].to_numpy(dtype=float)
        high = group["throughput_sps_ci_high"].to_numpy(dtype=float)
        pairs = [(i, j) for i in range(len(group)) for j in range(len(group)) if i != j]
        held = sum(bool(low[i] <= estimate[j] <= high[i]) for i, j in pairs)
        rows.append({**dict(zip(keys, key, strict=True)), "results": len(group),
                     "low_sps": estimate.min(), "high_sps": estimate.max(),
                     "spread_pct": 100 * (estimate.max() / estimate.min() - 1),
                     "median_halfwidth_pct": 100 * float(np.median(
                         np.maximum(estimate - low, high - estimate) / estimate)),
                     "pairs_held": held, "pairs": len(pairs),
                     "agreement": held / len(pairs)})
    return pd.DataFrame(rows, columns=[*keys, *RERUN_COLUMNS])


RERUN_COLUMNS = ("results", "low_sps", "high_sps", "spread_pct", "median_halfwidth_pct",
                 "pairs_held", "pairs", "agreement")
