"""Which rows a finding uses: successful runs, one per configuration, one backend's modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from xlabench.core import BACKEND_MODES, COMPILED_MODES, UserError
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine

#: What identifies one configuration. Rows from different sources (each imported file, or
#: local runs) never replace each other; the latest successful local run of a config wins.
CONFIG_KEYS = (
    "source", "origin", "device", "model", "resolution", "batch_size", "precision", "weights",
    "tf32", "backend", "mode", "runner",
)
#: A baseline and a compiled run are a pair when they agree on everything but the mode.
PAIR_KEYS = tuple(k for k in CONFIG_KEYS if k != "mode")

NON_CNN_KINDS = ("transformer", "mlp", "hybrid")
KIND_GROUPS = {"cnn": "CNN", **dict.fromkeys(NON_CNN_KINDS, "non-CNN"), "detector": "detector"}


@dataclass(frozen=True)
class Comparison:
    """A compiled mode against a baseline mode of one backend (the study: TF xla vs eager)."""

    backend: str = "tensorflow"
    baseline_mode: str = "eager"
    compiled_mode: str = "xla"

    @property
    def label(self) -> str:
        return f"{self.backend} {self.compiled_mode} vs {self.baseline_mode}"


def comparison_for(backend: str = "tensorflow", baseline: str | None = None) -> Comparison:
    """The comparison a user asked for; a UserError names what is possible otherwise.

    Args:
        backend: tensorflow, jax or torch.
        baseline: a non-compiled mode of that backend; default its eager mode.
    """
    if backend not in BACKEND_MODES:
        raise UserError(f"unknown backend {backend!r}; choose from {', '.join(BACKEND_MODES)}")
    modes = BACKEND_MODES[backend]
    baselines = [m for m in modes if m not in COMPILED_MODES]
    baseline = baseline or baselines[0]
    if baseline not in baselines:
        raise UserError(
            f"backend {backend} has no baseline mode {baseline!r}; "
            f"choose from {', '.join(baselines)}"
        )
    compiled = next(m for m in modes if m in COMPILED_MODES)
    return Comparison(backend, baseline, compiled)


def successful(results: pd.DataFrame) -> pd.DataFrame:
    """Runs that finished with a throughput."""
    ok = (results["status"] == "ok") & (results["throughput_sps"] > 0)
    return results[ok]


def latest_per_config(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: its latest result, its processes combined.

    A result is the set of worker processes stored under one `result_id` (a row from before
    results had processes is a result of its own). Per configuration and repeat the latest
    result counts (the one stored last); several repeats of a configuration (`sweep --repeats`)
    pool their processes. Processes measured under interference are left out when clean ones
    exist. The combination is `measure.combine`'s, the same the sweep stores: the geometric
    mean of the process medians with the t interval of their logs (k >= 2), or the one
    process's own interval (k = 1). Added columns: `processes` (k combined), `processes_total`,
    `processes_flagged`, `ci_confidence`, `ci_method`, `between_processes`, `flagged` and
    `flag_reason` (too few clean processes), `process_sps` and `process_rounds` (for paired
    speedups), and `repeats`.
    """
    ok = successful(results).sort_values("id", kind="mergesort")
    if ok.empty:
        return ok.assign(**{c: pd.Series(dtype=object) for c in COMBINED_COLUMNS})
    ok = ok.assign(result_key=[_result_key(r) for r in ok.itertuples()])
    ok = ok.assign(result_last_id=ok.groupby("result_key")["id"].transform("max"))
    per_repeat = [*CONFIG_KEYS, "repeat"]
    last = ok.groupby(per_repeat, dropna=False)["result_last_id"].transform("max")
    chosen = ok[ok["result_last_id"] == last]
    drifts = result_drifts(ok)
    grouped = chosen.groupby(list(CONFIG_KEYS), dropna=False, sort=False)
    combined = pd.DataFrame([_combine_processes(group, drifts.get(group["result_key"].iloc[0]))
                             for _, group in grouped])
    combined = combined.astype({k: v for k, v in ok.dtypes.to_dict().items()
                                if k in combined.columns}, errors="ignore")
    return combined.drop(columns=["result_key", "result_last_id"]).sort_values(
        "id", kind="mergesort")


def every_result(results: pd.DataFrame) -> pd.DataFrame:
    """One row per result (not only the latest of each configuration), its processes combined
    as in `latest_per_config`, oldest first: what re-runs of one configuration gave."""
    ok = successful(results).sort_values("id", kind="mergesort")
    if ok.empty:
        return ok.assign(**{c: pd.Series(dtype=object) for c in COMBINED_COLUMNS})
    ok = ok.assign(result_key=[_result_key(r) for r in ok.itertuples()])
    drifts = result_drifts(ok)
    grouped = ok.groupby("result_key", sort=False)
    combined = pd.DataFrame([_combine_processes(group, drifts.get(key))
                             for key, group in grouped])
    return combined.drop(columns="result_key").sort_values(
        "id", kind="mergesort").reset_index(drop=True)


#: Columns `latest_per_config` adds to a result's row.
COMBINED_COLUMNS = (
    "processes", "processes_total", "processes_flagged", "ci_confidence", "ci_method",
    "between_processes", "flagged", "flag_reason", "process_sps", "process_rounds", "repeats",
    "run_ci_low", "run_ci_high", "drift_rel_sd",
)


def _drift_key(rows: pd.DataFrame) -> tuple[Any, ...]:
    """(machine, software, configuration) of a result's rows: re-runs of one configuration
    with the same software (`core.result.software_id`, as `ResultStore.rerun_groups`)."""
    first = rows.iloc[0]
    return (first.get("machine_id", ""), first.get("software_id") or first.get("env_id", ""),
            tuple(first.get(k) for k in CONFIG_KEYS))


def result_drifts(ok: pd.DataFrame) -> dict[str, combine.RunDrift | None]:
    """Per `result_key`: the between-run variation its interval holds, as the sweep stores it
    (`sweep.run.environment_drift`): the machine's, from the re-runs of the *other*
    configurations on that machine (any of its environments; here from every result in the
    frame, later ones too), updated with the configuration's own results that began before
    this one (`combine.config_drift`; never the result itself or a later re-run, which the
    report's re-run check grades it against). Results used: two or more clean processes,
    not flagged. `ok` needs `result_key`."""
    if "env_id" not in ok.columns or ok.empty:
        return {}
    runs: dict[tuple[Any, ...], list[tuple[int, str, list[float]]]] = {}
    for result_key, rows in ok.groupby("result_key", sort=False):
        flagged = rows["interference_flagged"].fillna(0).astype(bool)
        clean = [float(v) for v in rows.loc[~flagged, "throughput_sps"]]
        usable = len(clean) >= max(2, ResultPolicy().min_processes)
        runs.setdefault(_drift_key(rows), []).append(
            (int(rows["id"].min()), str(result_key), clean if usable else []))
    drifts: dict[str, combine.RunDrift | None] = {}
    for key, results in runs.items():
        machine = combine.run_drift([c for _, _, c in found if c]
                                    for (m, _, config), found in runs.items()
                                    if m == key[0] and config != key[2])
        for started, result_key, _ in results:
            own = [c for other, _, c in results if other < started and c]
            drifts[result_key] = combine.config_drift(own, machine)
    return drifts


def _result_key(row: Any) -> str:
    result_id = getattr(row, "result_id", None)
    return str(result_id) if isinstance(result_id, str) and result_id else f"row{row.id}"


def _combine_processes(runs: pd.DataFrame, drift: combine.RunDrift | None = None) -> pd.Series:
    flagged = runs["interference_flagged"].fillna(0).astype(bool)
    used = runs[~flagged] if (~flagged).any() else runs
    row = used.iloc[-1].copy()  # the latest process supplies everything not combined below
    medians = [float(v) for v in used["throughput_sps"]]
    row["drift_rel_sd"] = None
    if len(used) >= 2:
        alone, interval = combine.run_and_held_intervals(medians, drift)
        row["throughput_sps"] = interval.estimate
        row["throughput_sps_ci_low"], row["throughput_sps_ci_high"] = interval.low, interval.high
        row["run_ci_low"], row["run_ci_high"] = alone.low, alone.high
        row["rel_ci_halfwidth"] = interval.rel_halfwidth
        row["ci_confidence"], row["ci_method"] = interval.confidence, interval.method
        row["batch_time_ms"] = 1000 * row["batch_size"] / interval.estimate
        row["drift_rel_sd"] = drift.rel_sd if drift else None
    else:
        row["run_ci_low"], row["run_ci_high"] = (row.get("throughput_sps_ci_low"),
                                                 row.get("throughput_sps_ci_high"))
        row["ci_method"] = "one process: order-statistic interval of its own samples"
    row["n_samples"] = used["n_samples"].sum()
    row["sample_sps"] = [s for samples in used["sample_sps"] for s in samples]
    row["process_sps"] = medians
    row["process_rounds"] = [_round(r, i) for i, r in enumerate(used.itertuples())]
    row["processes"], row["processes_total"] = len(used), len(runs)
    row["processes_flagged"] = int(flagged.sum())
    row["between_processes"] = len(used) >= 2
    clean = int((~flagged).sum())
    row["flagged"] = bool(flagged.any()) and clean < ResultPolicy().min_processes
    row["flag_reason"] = (f"{clean} clean of {len(runs)} processes; {int(flagged.sum())} "
                          "measured under interference") if row["flagged"] else ""
    row["repeats"] = runs["repeat"].nunique()
    row["provenance"] = _provenance(row)
    return row


def _provenance(row: pd.Series) -> str:
    """The row's provenance, with how many processes made it and whether it is flagged."""
    text = str(row["provenance"])
    if row["origin"] == "published":
        return text
    text += f"; {row['processes']} process" + ("es" if row["processes"] != 1 else "")
    return text + ("; FLAGGED: measured under interference" if row["flagged"] else "")


def _round(row: Any, position: int) -> str:
    """A process's sweep round, qualified by its sweep (rounds pair only within one sweep)."""
    process_round = getattr(row, "process_round", None)
    if process_round is None or pd.isna(process_round):
        return f"{row.result_key}:{position}"
    return f"{row.sweep_id}:{int(process_round)}"


def mode_rows(results: pd.DataFrame, backend: str, mode: str) -> pd.DataFrame:
    """Latest successful runs of one backend in one mode."""
    latest = latest_per_config(results)
    return latest[(latest["backend"] == backend) & (latest["mode"] == mode)]


def most_common(values: pd.Series) -> Any:
    """The most frequent value (ties: the smallest), or None for no values."""
    counts = values.dropna().value_counts()
    if counts.empty:
        return None
    top = counts[counts == counts.max()].index
    return sorted(top)[0]


def kind_group(kind: object) -> str:
    """CNN, non-CNN (transformer, mlp, hybrid), detector, or unknown."""
    return KIND_GROUPS.get(str(kind), "unknown")
