"""A result's row as the report reads it: the store's one row of each result (`store.view`:
its stored figure, interval, processes used, completeness), and one such row per
configuration (the latest complete one). Every finding reads these rows, never the raw
processes."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import pandas as pd

from xlabench.core.result import Result
from xlabench.store.view import RESULT_ROW_KEYS, latest_complete, result_view

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
    """One row per successful timed-loop result, oldest first (by its latest process):
    `result_frame`'s rows with a throughput."""
    return successful(result_frame(results)).reset_index(drop=True)


def result_frame(results: pd.DataFrame) -> pd.DataFrame:
    """One row per result, oldest first (by its latest process): the store's row of each
    result (`store.view.result_view`, the one construction of a result's row, which
    `results`, `export` and the trackers show), read from the frame's process rows, with what
    the report adds to it: its provenance with how many processes made it (`_provenance`)
    and its samples/s per core (`per_core`). `figure` is the stored Result (the view's
    `result`, None for a result of one process), `flag_reason` why the result is flagged
    (the view's `interference`)."""
    ordered = results.sort_values("id", kind="mergesort")
    columns = list(dict.fromkeys([*results.columns, *RESULT_ROW_KEYS]))
    rows = pd.DataFrame(result_view(ordered.to_dict("records"), _stored(ordered)),
                        columns=columns).astype(results.dtypes.to_dict(), errors="ignore")
    rows = rows.copy()  # one block per dtype again, not one per column (astype's)
    rows = rows.assign(figure=rows["result"], flag_reason=rows["interference"],
                       provenance=_provenance(rows), sps_per_core=per_core(rows))
    return rows.drop(columns="result")


def _stored(results: pd.DataFrame) -> dict[str, tuple[Result, bool]]:
    """The stored results of the frame's processes (`load.load_results`' `figure` and
    `complete`), as the view takes them (`ResultStore.stored_results`)."""
    return {result_id: (figure, bool(complete)) for result_id, figure, complete in zip(
        results["result_id"], results["figure"], results["complete"], strict=True)
        if isinstance(figure, Result)}


def _provenance(rows: pd.DataFrame) -> list[str]:
    """Each row's provenance, with how many processes made it and whether it is flagged."""
    def one(source: Any, origin: str, processes: int, flagged: bool) -> str:
        if origin == "published":
            return str(source)
        text = f"{source}; {processes} process" + ("es" if processes != 1 else "")
        return text + ("; FLAGGED: measured under interference" if flagged else "")

    return [one(*row) for row in zip(rows["provenance"], rows["origin"], rows["processes"],
                                     rows["flagged"], strict=True)]


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


def mode_rows(results: pd.DataFrame, backend: str, mode: str) -> pd.DataFrame:
    """Latest successful runs of one backend in one mode."""
    latest = latest_per_config(results)
    return latest[(latest["backend"] == backend) & (latest["mode"] == mode)]
