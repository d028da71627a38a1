"""Python's share: the same compiled program timed by the Python worker and by xlabench-native,
the native step of the eager -> graph -> XLA decomposition, and what building a native
artifact costs (export, package, load).

A Python and a native run are the same program when their configurations agree on everything
but the runner. Their ratio native / python gets its interval from `intervals.ratio_intervals`
(`measure.combine.result_ratio`, the one ratio method): paired t by process round where both
ran interleaved in one sweep, else Welch over log process medians, else the bootstrap (or CI
ends) of one-process results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from xlabench.analysis.intervals import RATIO_COLUMNS, ratio_intervals, result_spans
from xlabench.analysis.result_rows import CONFIG_KEYS, latest_per_config
from xlabench.core.backends import STUDY_BACKEND

RUNNERS = ("python", "native")
#: A Python and a native run pair when they agree on everything but the runner.
RUNNER_KEYS = tuple(k for k in CONFIG_KEYS if k != "runner")
#: ... and a native xla run joins a Python eager/graph/xla triple on everything but the mode.
STEP_KEYS = tuple(k for k in RUNNER_KEYS if k != "mode")
#: Compile stages of native records, in the order they happen (runner/native.py `to_record`).
NATIVE_STAGES = ("export", "package", "native_load", "native_prepare")
_SIDE_COLUMNS = tuple(dict.fromkeys((
    "throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high", "sample_sps",
    "process_sps", "process_rounds", "processes", "compile_s", "provenance",
    *RATIO_COLUMNS,  # what the ratio's interval reads
)))
_RENAMES = {
    f"throughput_sps_{runner}": f"{runner}_sps" for runner in RUNNERS
} | {
    f"throughput_sps_ci_{end}_{runner}": f"{runner}_ci_{end}_sps"
    for runner in RUNNERS for end in ("low", "high")
}


def runner_pairs(results: pd.DataFrame) -> pd.DataFrame:
    """Configurations measured with both runners: one row each, side columns suffixed
    ``_python`` and ``_native`` (family, kind and costs once)."""
    latest = latest_per_config(results)
    sides = []
    for runner in RUNNERS:
        side = latest[latest["runner"] == runner][[*RUNNER_KEYS, *_SIDE_COLUMNS]]
        sides.append(side.rename(columns={c: f"{c}_{runner}" for c in _SIDE_COLUMNS}))
    shared = latest[latest["runner"] == "native"][[*RUNNER_KEYS, "family", "kind",
                                                   "same_compiler"]]
    pairs = sides[0].merge(sides[1], on=list(RUNNER_KEYS), how="inner")
    return pairs.merge(shared, on=list(RUNNER_KEYS), how="left")


def python_share(results: pd.DataFrame) -> pd.DataFrame:
    """Native against Python throughput of the same program, with the ratio's 95% interval.

    Columns (beside `RUNNER_KEYS`): ``python_sps``/``native_sps`` with ``*_ci_low_sps`` and
    ``*_ci_high_sps``; ``native_over_python`` with ``native_over_python_ci_low``/``_high``;
    ``python_share_pct`` (100 x (1 - python/native): the part of the Python batch time that
    the native runner does not spend, with its interval from the ratio's), ``launch_ms``
    (python - native batch time, ms); ``ci_method``, ``significant`` (the interval excludes 1),
    ``same_compiler`` (the native record's word: True where both sides run one compiler the
    same way, False where they do not — a different XLA, or torch.compile against an
    AOTInductor package — None where the record does not say) and ``provenance`` (both sides').
    """
    pairs = _ratio_intervals(runner_pairs(results), result_spans(results))
    pairs = pairs.rename(columns=_RENAMES)
    table = pairs.assign(native_over_python=pairs["native_sps"] / pairs["python_sps"])
    python_ms = 1000 * table["batch_size"] / table["python_sps"]
    native_ms = 1000 * table["batch_size"] / table["native_sps"]
    table = table.assign(
        python_batch_ms=python_ms, native_batch_ms=native_ms, launch_ms=python_ms - native_ms,
        python_share_pct=100 * (1 - 1 / table["native_over_python"]),
        python_share_ci_low_pct=100 * (1 - 1 / table["native_over_python_ci_low"]),
        python_share_ci_high_pct=100 * (1 - 1 / table["native_over_python_ci_high"]),
        provenance=[f"python: {p} | native: {n}" for p, n in zip(
            table["provenance_python"], table["provenance_native"], strict=True)],
    )
    ratio_sides = {f"{c}_{runner}" for c in RATIO_COLUMNS for runner in RUNNERS}
    drop = [c for c in table.columns if c in ratio_sides or c.startswith((
        "sample_sps_", "process_sps_", "process_rounds_", "provenance_"))]
    return table.drop(columns=drop).reset_index(drop=True)


def _ratio_intervals(pairs: pd.DataFrame, spans: Mapping[str, Any]) -> pd.DataFrame:
    """native / python intervals of `runner_pairs` rows (native plays the compiled side)."""
    intervals, low, high, significant = ratio_intervals(pairs, "_native", "_python", spans)
    return pairs.assign(native_over_python_ci_low=low, native_over_python_ci_high=high,
                        ci_method=pd.Series([i.method for i in intervals], index=pairs.index,
                                            dtype=object),
                        significant=significant)


def native_step(decomposition: pd.DataFrame, latest: pd.DataFrame) -> pd.DataFrame:
    """The decomposition's fourth step: TensorFlow xla timed by xlabench-native.

    `latest` is `latest_per_config` of the results (the decomposition has computed it).

    t_xla - t_native is what launching the compiled program from Python costs per batch (the
    Python loop, tf.function's call path, the sync); where no native run exists the added
    columns are NaN. Added: ``native_sps``, ``native_batch_ms``, ``native_over_xla``,
    ``python_launch_ms``, ``python_launch_pct`` (of the eager batch time) and
    ``launch_share_pct`` (of the whole eager -> native saving).
    """
    native = latest[(latest["backend"] == STUDY_BACKEND) & (latest["mode"] == "xla")
                    & (latest["runner"] == "native")]
    side = native[[*STEP_KEYS, "throughput_sps"]].rename(columns={"throughput_sps": "native_sps"})
    frame = decomposition.merge(side, on=list(STEP_KEYS), how="left")
    native_sps = frame["native_sps"].astype("float64")
    native_ms = 1000 * frame["batch_size"] / native_sps
    launch_ms = frame["xla_batch_ms"] - native_ms
    saving_ms = frame["eager_batch_ms"] - native_ms
    return frame.assign(
        native_sps=native_sps, native_batch_ms=native_ms,
        native_over_xla=native_sps / frame["xla_sps"], python_launch_ms=launch_ms,
        python_launch_pct=100 * launch_ms / frame["eager_batch_ms"],
        launch_share_pct=(100 * launch_ms / saving_ms).where(saving_ms > 0),
    )


def stage_column(stage: str) -> str:
    """The column of one compile stage's seconds, e.g. ``stage_native_load_s``."""
    return f"stage_{stage}_s"


def native_stage_times(results: pd.DataFrame) -> pd.DataFrame:
    """Per native configuration, the seconds of each stage of building and loading its artifact.

    Stage times are those of the configuration's latest process (as `compile_s` is). Columns:
    `RUNNER_KEYS`, one ``stage_<name>_s`` per stage stored (`NATIVE_STAGES` first, in order,
    then any other), ``stages_total_s`` (their sum: the time before the first native call),
    ``first_call_s`` and ``compile_s`` of the native run, ``python_compile_s`` (the Python
    runner's compile + first call of the same program, NaN where it was not measured) and
    ``provenance``.
    """
    latest = latest_per_config(results)
    native = latest[latest["runner"] == "native"]
    stages = pd.DataFrame([dict(s) if isinstance(s, dict) else {}
                           for s in native["compile_stages_s"]], index=native.index)
    names = [s for s in NATIVE_STAGES if s in stages.columns]
    names += sorted(c for c in stages.columns if c not in NATIVE_STAGES)
    stages = stages[names].astype("float64").rename(columns=stage_column)
    frame = native[[*RUNNER_KEYS, "first_call_s", "compile_s", "provenance"]].join(stages)
    frame = frame.assign(stages_total_s=stages.sum(axis=1, min_count=1))
    python = latest[latest["runner"] == "python"][[*RUNNER_KEYS, "compile_s"]]
    python = python.rename(columns={"compile_s": "python_compile_s"})
    return frame.merge(python, on=list(RUNNER_KEYS), how="left").reset_index(drop=True)
