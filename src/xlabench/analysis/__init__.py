"""Layer 3: stored results in, pandas DataFrames out. No plotting, no I/O beyond loading.

One function per finding; the report (layer 4) turns their frames into charts and tables.

The names below are imported on first use (PEP 562), not with the package: `xlabench compare`
reads `analysis.compare`, which needs no pandas, and should not pay for importing it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each module and the public names it gives the package.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "across_backends": ("backend_comparison", "backend_comparison_wide"),
    "across_devices": (
        "device_ratio_summary", "device_ratios", "picks_across_devices",
        "verdicts_across_devices",
    ),
    "deploy": (
        "DEFAULT_HOST_MEM_BOUND_MB", "DEFAULT_LATENCY_BOUND_MS", "deploy_candidates",
        "family_speedups", "family_speedups_wide", "fastest_deployments", "first_under",
        "latency_candidates", "memory_candidates", "runtime_coverage", "runtime_coverage_wide",
    ),
    "gflops": ("PEAK_FP32_TFLOPS", "achieved_gflops"),
    "health": (
        "failed_runs", "failures_by_reason", "measurement_quality", "parity_failures",
        "parity_within_own_spread", "rerun_agreement",
    ),
    "kinds": ("NON_CNN_KINDS", "kind_group"),
    "load": ("FILTER_COLUMNS", "load_results", "results_frame"),
    "native": ("NATIVE_STAGES", "native_stage_times", "python_share", "runner_pairs",
               "stage_column"),
    "ranking": ("RankRule", "rank"),
    "result_rows": ("latest_per_config",),
    "scenarios": (
        "batching_gains", "offline_throughputs", "precision_pairs", "scenario_results",
        "server_rates", "single_stream_latencies",
    ),
    "speedup": (
        "Comparison", "break_even_batches", "comparison_for", "default_slice",
        "eager_graph_xla_decomposition", "family_rule", "most_common", "speedup_by_family",
        "speedup_by_kind", "speedup_table",
    ),
    "xla_flags": ("GAP_VERDICTS", "flag_gaps", "flag_pairs", "gap_verdict"),
    "throughput": (
        "compiled_runs", "fastest_per_resolution", "fastest_rule", "mobilenet_family",
        "slower_than", "throughput_vs_batch_size", "top_models", "top_models_rule",
        "top_non_cnn_models",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """Import the module that holds `name` and keep the name here for the next lookup."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
