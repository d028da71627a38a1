"""Layer 3: stored results in, pandas DataFrames out. No plotting, no I/O beyond loading.

One function per finding; the report (layer 4) turns their frames into charts and tables.
"""

from xlabench.analysis.compute import (
    PEAK_FP32_TFLOPS,
    achieved_gflops,
    backend_comparison,
    backend_comparison_wide,
    throughput_vs_batch_size,
)
from xlabench.analysis.deploy import (
    DEFAULT_HOST_MEM_BOUND_MB,
    DEFAULT_LATENCY_BOUND_MS,
    deploy_candidates,
    family_speedups,
    family_speedups_wide,
    fastest_deployments,
    first_under,
    latency_candidates,
    memory_candidates,
    runtime_coverage,
    runtime_coverage_wide,
)
from xlabench.analysis.health import (
    failed_runs,
    failures_by_reason,
    measurement_quality,
    parity_failures,
    rerun_agreement,
)
from xlabench.analysis.load import FILTER_COLUMNS, load_results, results_frame
from xlabench.analysis.native import (
    NATIVE_STAGES,
    native_stage_times,
    python_share,
    runner_pairs,
    stage_column,
)
from xlabench.analysis.ranking import RankRule, rank
from xlabench.analysis.select import (
    NON_CNN_KINDS,
    Comparison,
    comparison_for,
    kind_group,
    latest_per_config,
    most_common,
)
from xlabench.analysis.speedup import (
    break_even_batches,
    default_slice,
    eager_graph_xla_decomposition,
    family_rule,
    speedup_by_family,
    speedup_by_kind,
    speedup_table,
)
from xlabench.analysis.throughput import (
    compiled_runs,
    fastest_per_resolution,
    fastest_rule,
    mobilenet_family,
    slower_than,
    top_models,
    top_models_rule,
    top_non_cnn_models,
)

__all__ = [
    "DEFAULT_HOST_MEM_BOUND_MB",
    "DEFAULT_LATENCY_BOUND_MS",
    "FILTER_COLUMNS",
    "NATIVE_STAGES",
    "NON_CNN_KINDS",
    "PEAK_FP32_TFLOPS",
    "Comparison",
    "RankRule",
    "achieved_gflops",
    "backend_comparison",
    "backend_comparison_wide",
    "break_even_batches",
    "comparison_for",
    "compiled_runs",
    "default_slice",
    "deploy_candidates",
    "eager_graph_xla_decomposition",
    "failed_runs",
    "failures_by_reason",
    "family_rule",
    "family_speedups",
    "family_speedups_wide",
    "fastest_deployments",
    "fastest_per_resolution",
    "fastest_rule",
    "first_under",
    "kind_group",
    "latency_candidates",
    "latest_per_config",
    "load_results",
    "measurement_quality",
    "memory_candidates",
    "mobilenet_family",
    "most_common",
    "native_stage_times",
    "parity_failures",
    "python_share",
    "rank",
    "rerun_agreement",
    "results_frame",
    "runner_pairs",
    "runtime_coverage",
    "runtime_coverage_wide",
    "slower_than",
    "speedup_by_family",
    "speedup_by_kind",
    "speedup_table",
    "stage_column",
    "throughput_vs_batch_size",
    "top_models",
    "top_models_rule",
    "top_non_cnn_models",
]
