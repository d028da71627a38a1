"""A result's row: the processes of one result combined into the figure stored for it, and
one such row per configuration (the latest). Every finding reads these rows, never the raw
processes."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import pandas as pd

from xlabench.core.result import ONE_PROCESS_METHOD, Result
from xlabench.store.view import figure_columns, latest_complete

#: What identifies one configuration. Rows from different sources (each imported file, or
#: local runs) never replace each other; the latest successful local run of a config wins.
CONFIG_KEYS = (
    "source", "origin", "device", "model", "resolution", "batch_size", "precision", "weights",
    "tf32", "backend", "mode", "runner",
)


def successful(results: pd.DataFrame) -> pd.DataFrame:
    """Runs that finished with a throughput."""
    ok = (results["status"] == "ok") & (results["throughput_sps"] > 0)
    return results[ok]


def latest_per_config(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: its latest complete result (`store.view.latest_complete`:
    the one whose last process was stored last; a killed sweep's incomplete one never is),
    with the figure stored for that result (`ResultStore.result_rows` shows the same).
    Repeats of a configuration (`sweep --repeats`) are results of their own: the latest one is
    shown, and the earlier ones are re-runs that its interval already learnt from when it was
    stored."""
    combined = every_result(results)
    if combined.empty:
        return combined
    keys = combined[list(CONFIG_KEYS)].astype(object)
    keys = keys.where(keys.notna(), None)  # NaN is no key: it equals nothing, itself included
    rows = zip(combined.index, keys.itertuples(index=False, name=None), combined["complete"],
               strict=True)  # (index, configuration, complete), oldest first
    latest = latest_complete(rows, key=itemgetter(1), complete=itemgetter(2))
    return combined.loc[sorted(index for index, _, _ in latest.values())].reset_index(drop=True)


def every_result(results: pd.DataFrame) -> pd.DataFrame:
    """One row per successful result, oldest first (by its latest process): that process's
    columns with the figure the result was stored with in place of its own."""
    ok = successful(results).sort_values("id", kind="mergesort")
    if ok.empty:
        return ok.assign(**{c: pd.Series(dtype=object) for c in COMBINED_COLUMNS})
    keys = [_result_key(r) for r in ok.itertuples()]
    rows = [_result_row(group) for _, group in ok.groupby(keys, sort=False)]
    combined = pd.DataFrame(rows)
    combined = combined.astype({k: v for k, v in ok.dtypes.to_dict().items()
                                if k in combined.columns}, errors="ignore")
    combined = combined.assign(sps_per_core=per_core(combined))
    return combined.sort_values("id", kind="mergesort").reset_index(drop=True)


def per_core(results: pd.DataFrame) -> pd.Series:
    """CPU rows' samples/s per CPU the worker could use (`cpu_threads`); NaN elsewhere: what
    machines of different core counts compare on."""
    if "cpu_threads" not in results:
        return pd.Series(float("nan"), index=results.index)
    cores = pd.to_numeric(results["cpu_threads"], errors="coerce").astype("float64")
    on_cpu = results["accelerator"] == "cpu"
    return (results["throughput_sps"] / cores.where(cores > 0)).where(on_cpu)


def core_counts_differ(results: pd.DataFrame) -> bool:
    """Whether CPU rows of more than one core count are in `results` (then per-core figures
    belong beside the throughput)."""
    if "cpu_threads" not in results or results.empty:
        return False
    on_cpu = results[results["accelerator"] == "cpu"]
    return on_cpu["cpu_threads"].dropna().nunique() > 1


#: Columns a result's row has beside its latest process's (`every_result`).
COMBINED_COLUMNS = (
    "processes", "processes_total", "processes_flagged", "ci_confidence", "ci_method",
    "between_processes", "flagged", "flag_reason", "process_sps", "process_rounds",
    "run_ci_low", "run_ci_high", "drift_rel_sd", "figure", "sps_per_core",
)


def _result_key(row: Any) -> str:
    result_id = getattr(row, "result_id", None)
    return str(result_id) if isinstance(result_id, str) and result_id else f"row{row.id}"


def _result_row(processes: pd.DataFrame) -> pd.Series:
    """A result's row: its latest process's columns, the stored figure in place of that
    process's own. The figure is the one `results`, `export` and `compare` show: the Result
    the sweep stored (`figure` column, from `load.load_results`); a result stored without one
    (a row from before results had processes, an imported row, or processes whose result was
    never written) is its latest process alone, as `ResultStore.result_rows` shows it."""
    row = processes.iloc[-1].copy()
    figure = row.get("figure")
    if isinstance(figure, Result) and figure.status == "ok" and figure.median_sps:
        return _with_figure(row, processes, figure)
    return _one_process(row)


def _with_figure(row: pd.Series, processes: pd.DataFrame, figure: Result) -> pd.Series:
    used = _used(processes, figure)
    for column, value in figure_columns(figure, row["batch_size"]).items():
        row[column] = value
    row["run_ci_low"] = figure.run_ci_low_sps if figure.run_ci_low_sps is not None \
        else figure.ci_low_sps
    row["run_ci_high"] = figure.run_ci_high_sps if figure.run_ci_high_sps is not None \
        else figure.ci_high_sps
    row["drift_rel_sd"] = figure.drift_rel_sd
    row["n_samples"] = used["n_samples"].sum()
    row["sample_sps"] = [s for samples in used["sample_sps"] for s in samples]
    row["process_sps"] = list(figure.process_medians_sps)
    row["process_rounds"] = [f"{row['sweep_id']}:{r}" for r in figure.process_rounds]
    row["between_processes"] = figure.between_processes
    row["flagged"], row["flag_reason"] = figure.flagged, figure.flag_reason
    row["provenance"] = _provenance(row)
    return row


def _used(processes: pd.DataFrame, figure: Result) -> pd.DataFrame:
    """The (successful) processes the stored figure combined: combine's decision, stored with
    it (`Result.process_indices`). A result stored before that was kept combined the clean
    ones, or every one when all were flagged."""
    if figure.process_indices:
        return processes[processes["process_index"].isin(figure.process_indices)]
    flagged = processes["interference_flagged"].fillna(0).astype(bool)
    return processes[~flagged] if (~flagged).any() else processes


def _one_process(row: pd.Series) -> pd.Series:
    row["run_ci_low"], row["run_ci_high"] = (row.get("throughput_sps_ci_low"),
                                             row.get("throughput_sps_ci_high"))
    row["ci_method"] = ONE_PROCESS_METHOD
    row["drift_rel_sd"] = None
    row["process_sps"] = [float(row["throughput_sps"])]
    row["process_rounds"] = [f"row{row['id']}:0"]
    row["processes"], row["processes_total"] = 1, 1
    # no interference figures (NULL, NaN in the frame) is no flag, as `results` reads it
    row["processes_flagged"] = int(pd.notna(row.get("interference_flagged"))
                                   and bool(row.get("interference_flagged")))
    row["between_processes"] = False
    row["flagged"] = bool(row["processes_flagged"])
    row["flag_reason"] = "its one process was measured under interference" \
        if row["flagged"] else ""
    row["provenance"] = _provenance(row)
    return row


def _provenance(row: pd.Series) -> str:
    """The row's provenance, with how many processes made it and whether it is flagged."""
    text = str(row["provenance"])
    if row["origin"] == "published":
        return text
    text += f"; {row['processes']} process" + ("es" if row["processes"] != 1 else "")
    return text + ("; FLAGGED: measured under interference" if row["flagged"] else "")


def mode_rows(results: pd.DataFrame, backend: str, mode: str) -> pd.DataFrame:
    """Latest successful runs of one backend in one mode."""
    latest = latest_per_config(results)
    return latest[(latest["backend"] == backend) & (latest["mode"] == mode)]
