"""Speedups of a compiled mode over a baseline of one backend (`Comparison`): the study's
findings 4, 5 and 6, with
confidence intervals, the eager -> graph -> XLA decomposition and the compile-time break-even."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from xlabench.analysis.intervals import RATIO_COLUMNS, ratio_intervals, result_spans
from xlabench.analysis.kinds import kind_group
from xlabench.analysis.native import native_step
from xlabench.analysis.ranking import RankRule, rank
from xlabench.analysis.result_rows import CONFIG_KEYS, latest_per_config
from xlabench.core import BACKEND_MODES, COMPILED_MODES, UserError
from xlabench.core.backends import STUDY_BACKEND

#: A baseline and a compiled run are a pair when they agree on everything but the mode.
PAIR_KEYS = tuple(k for k in CONFIG_KEYS if k != "mode")

SPEEDUP_METRICS = {  # metric column -> (CI low column, CI high column)
    "speedup_abs_sps": ("speedup_abs_ci_low_sps", "speedup_abs_ci_high_sps"),
    "speedup_rel_pct": ("speedup_rel_ci_low_pct", "speedup_rel_ci_high_pct"),
    "speedup_ratio": ("speedup_ratio_ci_low", "speedup_ratio_ci_high"),
}
_SIDE_COLUMNS = tuple(dict.fromkeys((
    "throughput_sps", "throughput_sps_ci_low", "throughput_sps_ci_high", "sample_sps",
    "batch_time_ms", "compile_s", "family", "kind", "parity_passed", "gmacs_per_image",
    "params_m", "provenance", "id", "process_sps", "process_rounds", "processes",
    *RATIO_COLUMNS,  # what the ratio's interval reads
)))
_SHARED = ("family", "kind", "gmacs_per_image", "params_m", "provenance")


@dataclass(frozen=True)
class Comparison:
    """A compiled mode against a baseline mode of one backend (the study: TF xla vs eager)."""

    backend: str = STUDY_BACKEND
    baseline_mode: str = "eager"
    compiled_mode: str = "xla"

    @property
    def label(self) -> str:
        return f"{self.backend} {self.compiled_mode} vs {self.baseline_mode}"


def comparison_for(backend: str = STUDY_BACKEND, baseline: str | None = None) -> Comparison:
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


def paired_runs(results: pd.DataFrame, backend: str, baseline: str, compiled: str) -> pd.DataFrame:
    """Configurations measured in both modes: one row each, columns suffixed by side.

    Returns:
        `PAIR_KEYS` plus, for each column of one run, ``<column>_baseline`` and
        ``<column>_compiled`` (family, kind, costs and provenance once, from the compiled run).
    """
    latest = latest_per_config(results)
    mine = latest[latest["backend"] == backend]
    sides = []
    for mode, suffix in ((baseline, "_baseline"), (compiled, "_compiled")):
        side = mine[mine["mode"] == mode][[*PAIR_KEYS, *_SIDE_COLUMNS]]
        sides.append(side.rename(columns={c: c + suffix for c in _SIDE_COLUMNS}))
    pairs = sides[0].merge(sides[1], on=list(PAIR_KEYS), how="inner")
    pairs = pairs.rename(columns={f"{c}_compiled": c for c in _SHARED})
    return pairs.drop(columns=[f"{c}_baseline" for c in _SHARED])


def speedup_table(results: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    """Every paired configuration with its speedup and the speedup's 95% interval.

    Columns (beside the pair's): ``baseline_sps``/``compiled_sps`` with their CIs,
    ``speedup_ratio`` (compiled / baseline), ``speedup_abs_sps`` (compiled - baseline, the
    study's "XLA speedup"), ``speedup_rel_pct`` (100 x (ratio - 1)), each with CI columns,
    ``ci_method`` (see `intervals`), ``significant`` (the ratio's interval excludes 1),
    ``compile_s``, batch times, ``break_even_batches`` and ``kind_group``.
    """
    pairs = paired_runs(results, comparison.backend, comparison.baseline_mode,
                        comparison.compiled_mode)
    pairs = _with_intervals(pairs, result_spans(results))
    table = pairs.rename(columns={
        "throughput_sps_baseline": "baseline_sps", "throughput_sps_compiled": "compiled_sps",
        "compile_s_compiled": "compile_s", "compile_s_baseline": "baseline_compile_s",
        "parity_passed_compiled": "parity_passed",
        "throughput_sps_ci_low_baseline": "baseline_ci_low_sps",
        "throughput_sps_ci_high_baseline": "baseline_ci_high_sps",
        "throughput_sps_ci_low_compiled": "compiled_ci_low_sps",
        "throughput_sps_ci_high_compiled": "compiled_ci_high_sps",
    })
    table = table.assign(
        comparison=comparison.label, speedup_ratio=table["compiled_sps"] / table["baseline_sps"],
        speedup_abs_sps=table["compiled_sps"] - table["baseline_sps"],
        kind_group=[kind_group(k) for k in table["kind"]],
    )
    table["speedup_rel_pct"] = 100 * (table["speedup_ratio"] - 1)
    table = break_even_batches(table)
    ratio_sides = tuple(f"{c}_{s}" for c in RATIO_COLUMNS for s in ("baseline", "compiled"))
    drop = [c for c in table.columns
            if c.startswith(("sample_sps_", "id_", "parity_passed_", "process_sps_",
                             "process_rounds_")) or c in ratio_sides]
    return table.drop(columns=drop).reset_index(drop=True)


def _with_intervals(table: pd.DataFrame, spans: Mapping[str, Any]) -> pd.DataFrame:
    """compiled / baseline intervals (`intervals.ratio_intervals`) of `paired_runs` rows."""
    intervals, ratio_low, ratio_high, significant = ratio_intervals(
        table, "_compiled", "_baseline", spans)
    return table.assign(
        speedup_ratio_ci_low=ratio_low, speedup_ratio_ci_high=ratio_high,
        speedup_abs_ci_low_sps=[i.diff_low_sps for i in intervals],
        speedup_abs_ci_high_sps=[i.diff_high_sps for i in intervals],
        speedup_rel_ci_low_pct=100 * (ratio_low - 1),
        speedup_rel_ci_high_pct=100 * (ratio_high - 1),
        ci_method=[i.method for i in intervals], significant=significant,
    )


def break_even_batches(speedups: pd.DataFrame) -> pd.DataFrame:
    """After how many batches compiling pays off: compile_s / (baseline - compiled batch time).

    Batch times come from the median throughput (batch_size / throughput). Where the compiled
    mode is not faster, compiling never pays off: `break_even_batches` is NaN, `pays_off` False.
    """
    baseline_s = speedups["batch_size"] / speedups["baseline_sps"]
    compiled_s = speedups["batch_size"] / speedups["compiled_sps"]
    saving_s = baseline_s - compiled_s
    batches = (speedups["compile_s"] / saving_s).where(saving_s > 0)
    return speedups.assign(
        baseline_batch_ms=1000 * baseline_s, compiled_batch_ms=1000 * compiled_s,
        saving_per_batch_ms=1000 * saving_s, pays_off=saving_s > 0,
        break_even_batches=batches, break_even_images=batches * speedups["batch_size"],
    )


def default_slice(speedups: pd.DataFrame) -> tuple[str | None, int | None]:
    """The most common device, then the most common resolution on it (the default slice)."""
    device = most_common(speedups["device"])
    if device is None:
        return None, None
    resolution = most_common(speedups.loc[speedups["device"] == device, "resolution"])
    return str(device), None if resolution is None else int(resolution)


def most_common(values: pd.Series) -> Any:
    """The most frequent value (ties: the smallest), or None for no values."""
    counts = values.dropna().value_counts()
    if counts.empty:
        return None
    top = counts[counts == counts.max()].index
    return sorted(top)[0]


def family_rule(metric: str) -> RankRule:
    """Each family's best variant by `metric`, families ranked per device and resolution."""
    low, high = SPEEDUP_METRICS[metric]
    group = ("origin", "device", "resolution")
    return RankRule(by=metric, per=(*group, "family"), top_per=group, ci_low=low, ci_high=high)


def speedup_by_family(
    speedups: pd.DataFrame, metric: str, device: str | None, resolution: int | None
) -> pd.DataFrame:
    """Per model family, its best variant's speedup at one device and resolution (findings 4, 5).

    Args:
        speedups: the frame of `speedup_table`.
        metric: ``speedup_abs_sps`` (finding 4) or ``speedup_rel_pct`` (finding 5); the best
            variant is the one with the largest value of this metric.
        device / resolution: the slice; see `default_slice` for the default.

    Returns:
        One row per family, ranked, with `within_noise` from the speedup intervals.
    """
    chosen = speedups[(speedups["device"] == device) & (speedups["resolution"] == resolution)]
    return rank(chosen, family_rule(metric))


def speedup_by_kind(speedups: pd.DataFrame) -> pd.DataFrame:
    """Relative speedups of CNN against non-CNN models, detectors apart (study finding 6).

    Returns:
        Per origin, device and kind group: how many configurations, and the median, min and
        max relative speedup (%), and how many have a significant speedup.
    """
    keys = ["origin", "device", "kind_group"]
    groups = speedups.groupby(keys, sort=True)
    summary = groups["speedup_rel_pct"].agg(["count", "median", "min", "max"])
    summary["significant"] = groups["significant"].sum(min_count=1)
    summary = summary.rename(columns={
        "count": "configs", "median": "median_rel_pct", "min": "min_rel_pct",
        "max": "max_rel_pct", "significant": "significant_configs",
    })
    return summary.reset_index()


#: TensorFlow's modes as its table entry lists them: eager, graph (tf.function), xla.
_TF_MODES = BACKEND_MODES[STUDY_BACKEND]


def eager_graph_xla_decomposition(results: pd.DataFrame) -> pd.DataFrame:
    """Split TensorFlow's eager -> XLA gain into Python overhead and compiler.

    With batch times t_eager, t_graph, t_xla (from median throughputs), the saving
    t_eager - t_xla = (t_eager - t_graph) + (t_graph - t_xla): the first term is what leaving
    Python's op-by-op dispatch (tf.function without XLA) gains, the second what XLA adds.
    Both are given in ms per batch and as % of the eager batch time, and the speedup factors
    multiply: xla/eager = graph/eager x xla/graph. The three modes are the Python runner's
    (a native run is another configuration, not a duplicate of these); where xla was also
    timed natively, `native.native_step` adds the fourth step, xla -> native.

    Returns:
        One row per TensorFlow configuration measured in all three modes.
    """
    latest = latest_per_config(results)
    tf = latest[(latest["backend"] == STUDY_BACKEND) & (latest["runner"] == "python")]
    keep = [*PAIR_KEYS, "throughput_sps", "family", "kind", "provenance"]
    merged = None
    for mode in _TF_MODES:
        side = tf[tf["mode"] == mode][keep].rename(columns={"throughput_sps": f"{mode}_sps"})
        if merged is not None:
            side = side.drop(columns=["family", "kind", "provenance"])
        merged = side if merged is None else merged.merge(side, on=list(PAIR_KEYS))
    assert merged is not None
    return native_step(_decompose(merged), latest).reset_index(drop=True)


def _decompose(frame: pd.DataFrame) -> pd.DataFrame:
    ms = {m: 1000 * frame["batch_size"] / frame[f"{m}_sps"] for m in _TF_MODES}
    overhead_ms, compiler_ms = ms["eager"] - ms["graph"], ms["graph"] - ms["xla"]
    total_ms = ms["eager"] - ms["xla"]
    return frame.assign(
        eager_batch_ms=ms["eager"], graph_batch_ms=ms["graph"], xla_batch_ms=ms["xla"],
        graph_over_eager=frame["graph_sps"] / frame["eager_sps"],
        xla_over_graph=frame["xla_sps"] / frame["graph_sps"],
        xla_over_eager=frame["xla_sps"] / frame["eager_sps"],
        python_overhead_ms=overhead_ms, compiler_saving_ms=compiler_ms,
        python_overhead_pct=100 * overhead_ms / ms["eager"],
        compiler_saving_pct=100 * compiler_ms / ms["eager"],
        overhead_share_pct=(100 * overhead_ms / total_ms).where(total_ms > 0),
    )
