"""Which rows a finding uses: successful runs, one per configuration, one backend's modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from xlabench.core import BACKEND_MODES, COMPILED_MODES, UserError

#: What identifies one configuration. Rows from different sources (each imported file, or
#: local runs) never replace each other; the latest successful local run of a config wins.
CONFIG_KEYS = (
    "source", "origin", "device", "model", "resolution", "batch_size", "precision", "weights",
    "tf32", "backend", "mode",
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
    """One row per configuration: its latest successful run, with its repeats combined.

    A re-run of the same repeat replaces the older run. Different repeats (`sweep --repeats N`)
    are separate worker processes, and on a busy or small machine processes differ more than
    one process's samples do, so one run's CI understates the spread. Their combination: the
    median of the repeats' throughputs, an interval from the lowest repeat's CI end to the
    highest's (it covers every repeat), all raw samples pooled, and `repeats` = how many.
    """
    ok = successful(results).sort_values("id", kind="mergesort")
    latest = ok.drop_duplicates([*CONFIG_KEYS, "repeat"], keep="last")
    counts = latest.groupby(list(CONFIG_KEYS), dropna=False, sort=False)["id"].transform("size")
    single = latest[counts == 1].assign(repeats=1)
    if (counts == 1).all():
        return single
    grouped = latest[counts > 1].groupby(list(CONFIG_KEYS), dropna=False, sort=False)
    combined = pd.DataFrame([_combine_repeats(group) for _, group in grouped])
    both = pd.concat([single, combined.astype(single.dtypes.to_dict(), errors="ignore")])
    return both.sort_values("id", kind="mergesort")


def _combine_repeats(runs: pd.DataFrame) -> pd.Series:
    row = runs.iloc[-1].copy()  # the latest repeat supplies everything not combined below
    median = float(runs["throughput_sps"].median())
    low = runs["throughput_sps_ci_low"].fillna(runs["throughput_sps"]).min()
    high = runs["throughput_sps_ci_high"].fillna(runs["throughput_sps"]).max()
    row["throughput_sps"] = median
    row["throughput_sps_ci_low"], row["throughput_sps_ci_high"] = low, high
    row["rel_ci_halfwidth"] = (high - low) / (2 * median)
    row["batch_time_ms"] = float(runs["batch_time_ms"].median())
    row["n_samples"] = runs["n_samples"].sum()
    row["sample_sps"] = [s for samples in runs["sample_sps"] for s in samples]
    row["repeats"] = len(runs)
    return row


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
