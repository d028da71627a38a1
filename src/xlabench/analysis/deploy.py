"""Which runtime to deploy: per model and device the fastest way to run it that kept its
outputs (parity), how it compares with the study's TensorFlow eager and XLA, the fastest under
a latency or a host-memory bound, and which runtimes ran which model families.

Only local results count: published numbers come from another machine, have no interval and
no parity check, so they cannot say which runtime to deploy here.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from xlabench.analysis.intervals import NO_INTERVAL_METHOD, Spans, result_spans, row_ratio
from xlabench.analysis.ranking import RankRule, rank
from xlabench.analysis.result_rows import latest_per_config
from xlabench.core import BACKEND_MODES
from xlabench.core.backends import STUDY_BACKEND, info
from xlabench.core.spec import RUNTIME_BACKENDS

#: One deployment question: this model on this device at this input size and batch.
DEPLOY_KEYS = ("device", "model", "resolution", "batch_size")
#: The bound picks choose the batch too (memory grows with it; latency fixes it at 1).
BOUND_KEYS = ("device", "model", "resolution")
#: What the reader would deploy: the way a model is run.
WAY_KEYS = ("backend", "mode", "precision", "runner")
#: A study baseline is the same configuration as the pick but for the way it is run.
SAME_CONFIG = ("source", "device", "model", "resolution", "batch_size", "precision", "weights",
               "tf32")
#: The study's two choices, run by the Python worker as the study ran them: TensorFlow's eager
#: baseline (its first mode) and its compiled mode (XLA), read from its table entry.
STUDY_BASELINES = {"tf_eager": BACKEND_MODES[STUDY_BACKEND][0],
                   "tf_xla": info(STUDY_BACKEND).compiled_modes[0]}
#: Defaults of the reader-set bounds, used where the page cannot ask (findings.md).
DEFAULT_LATENCY_BOUND_MS = 10.0  # a 100 frames/s real-time budget per image
DEFAULT_HOST_MEM_BOUND_MB = 4096.0  # a modest inference host or container
OUTCOMES = ("ok", "unsupported", "failed")

_THROUGHPUT_CI = ("throughput_sps_ci_low", "throughput_sps_ci_high")
_NO_INTERVAL = {
    NO_INTERVAL_METHOD: "no interval: a side has no CI",
    "same": "the pick is this run",
    "missing": "not measured",
}


def passed_parity(frame: pd.DataFrame) -> pd.Series:
    """Parity passed, or the run is its backend's own reference (eager has nothing to compare
    against). A runtime's first mode is not its reference (Keras eager is), so it must pass."""
    reference = [m == BACKEND_MODES.get(b, ("",))[0] and b not in RUNTIME_BACKENDS
                 for b, m in zip(frame["backend"], frame["mode"], strict=True)]
    unchecked = frame["parity_passed"].isna() & pd.Series(reference, index=frame.index,
                                                          dtype=bool)
    return (frame["parity_passed"] == 1) | unchecked


def deploy_candidates(results: pd.DataFrame) -> pd.DataFrame:
    """Latest local ok results (processes combined) that passed parity, with a `way` label."""
    latest = latest_per_config(results)
    local = latest[latest["origin"] == "local"]
    chosen = local[passed_parity(local)] if not local.empty else local
    way = [f"{b}/{m} {p}" + (" native" if r == "native" else "") for b, m, p, r in zip(
        chosen["backend"], chosen["mode"], chosen["precision"], chosen["runner"], strict=True)]
    return chosen.assign(way=pd.Series(way, index=chosen.index, dtype=object))


def ranked_ways(candidates: pd.DataFrame, group: tuple[str, ...]) -> pd.DataFrame:
    """Candidates ranked by throughput within each `group`, the best of each way (and batch)
    once, with `within_noise` from the throughput intervals (the ranking's own rule)."""
    per = tuple(dict.fromkeys((*group, "batch_size", "way")))
    rule = RankRule("throughput_sps", per=per, top_per=group,
                    ci_low=_THROUGHPUT_CI[0], ci_high=_THROUGHPUT_CI[1], tiebreak="way")
    return rank(candidates, rule)


def fastest_deployments(results: pd.DataFrame) -> pd.DataFrame:
    """Per device, model, resolution and batch: the fastest way that passed parity.

    Returns:
        One row per `DEPLOY_KEYS`: the pick's way and throughput (with CI), `ways` (how many
        ways were measured), the runner-up's way and throughput, `vs_runner_up` (whether the
        two throughput intervals overlap), and the ratios fastest / TF eager and fastest / TF
        XLA of the same configuration with intervals and how each was formed
        (``over_tf_eager``, ``over_tf_eager_ci_low``/``_high``, ``over_tf_eager_ci``...).
    """
    candidates = deploy_candidates(results)
    ranked = ranked_ways(candidates, DEPLOY_KEYS)
    if ranked.empty:
        return ranked
    picks = ranked[ranked["rank"] == 1].copy()
    runner_up = ranked[ranked["rank"] == 2].set_index(list(DEPLOY_KEYS))
    keys = [tuple(r) for r in picks[list(DEPLOY_KEYS)].itertuples(index=False)]
    picks["ways"] = ranked.groupby(list(DEPLOY_KEYS), sort=False).size().reindex(keys).values
    for column, name in (("way", "runner_up_way"), ("throughput_sps", "runner_up_sps"),
                         (_THROUGHPUT_CI[0], "runner_up_ci_low_sps"),
                         (_THROUGHPUT_CI[1], "runner_up_ci_high_sps")):
        picks[name] = [runner_up[column].get(k) if k in runner_up.index else None for k in keys]
    picks["vs_runner_up"] = [_separation(n, w) for n, w in zip(
        picks["ways"], picks["within_noise"], strict=True)]
    spans = result_spans(results)
    for label, mode in STUDY_BASELINES.items():
        picks = _with_ratio(picks, candidates, label, mode, spans)
    return picks.reset_index(drop=True)


def _separation(ways: int, within_noise: Any) -> str:
    if ways < 2:
        return "only way measured"
    if within_noise is pd.NA or within_noise is None:
        return "no interval"
    return "overlaps runner-up" if bool(within_noise) else "clear of runner-up"


def _with_ratio(picks: pd.DataFrame, candidates: pd.DataFrame, label: str,
                mode: str, spans: Spans) -> pd.DataFrame:
    """Columns ``over_<label>`` (pick / baseline), its interval and how it was formed."""
    baselines = _study_baselines(candidates, mode)
    rows = [_ratio(pick, baselines.get(_config(pick)), spans)
            for pick in picks.to_dict("records")]
    ratio, low, high, how = (list(v) for v in zip(*rows, strict=True))
    return picks.assign(**{f"over_{label}": ratio, f"over_{label}_ci_low": low,
                           f"over_{label}_ci_high": high, f"over_{label}_ci": how})


def _study_baselines(candidates: pd.DataFrame, mode: str) -> dict[tuple[Any, ...], dict]:
    """The TF `mode` results of the Python runner among `candidates`, by `_config`."""
    study = candidates[(candidates["backend"] == STUDY_BACKEND) & (candidates["mode"] == mode)
                       & (candidates["runner"] == "python")]
    return {_config(r): r for r in study.to_dict("records")}


def _config(row: dict[str, Any]) -> tuple[Any, ...]:
    # NaN != NaN: a missing key value is written as None so that equal configurations match.
    return tuple(None if isinstance(row[k], float) and math.isnan(row[k]) else row[k]
                 for k in SAME_CONFIG)


def _ratio(pick: dict[str, Any], base: dict[str, Any] | None,
           spans: Spans) -> tuple[float, float, float, str]:
    """pick / base with the interval of the one ratio method (`intervals.row_ratio`)."""
    if base is None:
        return math.nan, math.nan, math.nan, _NO_INTERVAL["missing"]
    if base["id"] == pick["id"]:
        return 1.0, math.nan, math.nan, _NO_INTERVAL["same"]
    interval = row_ratio(pick, base, spans)
    how = _NO_INTERVAL.get(interval.method, interval.method)
    return (pick["throughput_sps"] / base["throughput_sps"], interval.ratio_low,
            interval.ratio_high, how)


def latency_candidates(results: pd.DataFrame) -> pd.DataFrame:
    """Batch-1 candidates with a p99 latency, ranked by throughput per device, model and
    resolution: `first_under` of them picks the fastest below a latency bound."""
    candidates = deploy_candidates(results)
    single = candidates[(candidates["batch_size"] == 1) & candidates["latency_ms_p99"].notna()]
    return ranked_ways(single, BOUND_KEYS)


def memory_candidates(results: pd.DataFrame) -> pd.DataFrame:
    """Candidates (any batch) with a peak host memory, ranked by throughput per device, model
    and resolution: `first_under` of them picks the fastest below a memory bound."""
    candidates = deploy_candidates(results)
    return ranked_ways(candidates[candidates["peak_host_mem_mb"].notna()], BOUND_KEYS)


def first_under(ranked: pd.DataFrame, column: str, bound: float,
                group: tuple[str, ...] = BOUND_KEYS) -> pd.DataFrame:
    """Per group, the first row (rows in rank order) whose `column` is below `bound`.

    The HTML page does the same in the browser when the reader changes the bound
    (assets/report.js, `filterTables`); an infinite bound picks each group's first row.
    """
    under = ranked[ranked[column] < bound]
    return under.drop_duplicates(list(group), keep="first")


def runtime_coverage(results: pd.DataFrame) -> pd.DataFrame:
    """Per backend/mode and family: how many of the family's models ran ok, were unsupported,
    or failed (failed, oom, timeout, crashed), over every local record and device.

    A model counts once, by its best outcome: ok if any of its runs was ok (a re-run after a
    transient failure succeeded), else unsupported if the runtime refused it, else failed.
    Parity is not an outcome here: a parity failure ran ok (see the health finding).
    """
    columns = ["backend", "mode", "backend_mode", "family", *(f"{o}_models" for o in OUTCOMES)]
    local = results[results["origin"] == "local"]
    if local.empty:
        return pd.DataFrame(columns=columns)
    outcome = local["status"].map(lambda s: s if s in OUTCOMES[:2] else "failed")
    best = local.assign(outcome=outcome.map(OUTCOMES.index)).groupby(
        ["backend", "mode", "family", "model"], dropna=False)["outcome"].min()
    counts = best.map(lambda i: OUTCOMES[i]).reset_index().groupby(
        ["backend", "mode", "family", "outcome"], dropna=False).size().unstack(fill_value=0)
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    counts.columns = [f"{o}_models" for o in OUTCOMES]
    table = counts.reset_index()
    table["backend_mode"] = table["backend"] + "/" + table["mode"]
    return table[columns].sort_values(["backend", "mode", "family"]).reset_index(drop=True)


def runtime_coverage_wide(coverage: pd.DataFrame) -> pd.DataFrame:
    """One row per backend/mode, one column per family: ``ok / unsupported / failed``."""
    if coverage.empty:
        return pd.DataFrame(columns=["backend", "mode", "backend_mode"])
    cells = coverage.assign(cell=[f"{o} / {u} / {f}" for o, u, f in zip(
        coverage["ok_models"], coverage["unsupported_models"], coverage["failed_models"],
        strict=True)])
    wide = cells.pivot_table(index=["backend", "mode", "backend_mode"], columns="family",
                             values="cell", aggfunc="first", fill_value="–")
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index()


def family_speedups(results: pd.DataFrame) -> pd.DataFrame:
    """Per way (backend/mode precision runner) and model family: the median, over the family's
    configurations (`SAME_CONFIG`) where both were measured, of the way's throughput over TF
    eager's and over TF XLA's (Python runner), among results that passed parity.

    Returns:
        One row per way and family (and one per way with family "all families"): `over_tf_eager`
        and `over_tf_xla` (medians, NaN where that baseline was never measured beside it),
        `eager_configs` and `xla_configs` (how many configurations each median is over) and
        `models` (how many models of the family the way ran beside a baseline).
    """
    columns = ["way", "backend", "mode", "family", "over_tf_eager", "eager_configs",
               "over_tf_xla", "xla_configs", "models"]
    candidates = deploy_candidates(results)
    if candidates.empty:
        return pd.DataFrame(columns=columns)
    ratios = candidates.assign(**{f"over_{label}": _point_ratios(candidates, mode)
                                  for label, mode in STUDY_BASELINES.items()})
    ratios = ratios[ratios[["over_tf_eager", "over_tf_xla"]].notna().any(axis=1)]
    if ratios.empty:
        return pd.DataFrame(columns=columns)
    every = ratios.assign(family="all families")
    rows = []
    for (way, family), group in pd.concat([ratios, every]).groupby(["way", "family"],
                                                                   sort=False):
        first = group.iloc[0]
        rows.append({"way": way, "backend": first["backend"], "mode": first["mode"],
                     "family": family,
                     "over_tf_eager": group["over_tf_eager"].median(),
                     "eager_configs": int(group["over_tf_eager"].notna().sum()),
                     "over_tf_xla": group["over_tf_xla"].median(),
                     "xla_configs": int(group["over_tf_xla"].notna().sum()),
                     "models": group["model"].nunique()})
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["family", "over_tf_xla"], ascending=[True, False],
                             na_position="last").reset_index(drop=True)


def _point_ratios(candidates: pd.DataFrame, mode: str) -> list[float]:
    """Each candidate's throughput over the TF `mode` (Python runner) result of its
    configuration, NaN where there is none."""
    baselines = _study_baselines(candidates, mode)
    return [row["throughput_sps"] / baselines[_config(row)]["throughput_sps"]
            if _config(row) in baselines else math.nan
            for row in candidates.to_dict("records")]


def family_speedups_wide(speedups: pd.DataFrame) -> pd.DataFrame:
    """One row per way, one column per family (first "all families"): ``×eager / ×XLA (n)``,
    the two median speedups and how many configurations the XLA one is over."""
    if speedups.empty:
        return pd.DataFrame(columns=["way", "all families"])
    cells = speedups.assign(cell=[_speedup_cell(e, x, n) for e, x, n in zip(
        speedups["over_tf_eager"], speedups["over_tf_xla"],
        speedups[["eager_configs", "xla_configs"]].max(axis=1), strict=True)])
    wide = cells.pivot_table(index="way", columns="family", values="cell", aggfunc="first",
                             fill_value="–")
    families = ["all families", *sorted(c for c in wide.columns if c != "all families")]
    order = speedups[speedups["family"] == "all families"].sort_values(
        ["over_tf_xla", "over_tf_eager"], ascending=False, na_position="last")["way"]
    return wide.reindex(index=list(order), columns=families).reset_index()


def _speedup_cell(over_eager: float, over_xla: float, configs: int) -> str:
    def times(value: float) -> str:
        return "–" if value is None or math.isnan(value) else f"{value:.2f}x"
    return f"{times(over_eager)} / {times(over_xla)} ({configs})"
