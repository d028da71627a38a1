"""Isolated workers: one configuration per fresh process, failures turned into records."""

from xlabench.runner.execute import (
    compute_costs,
    ensure_peaks,
    execute,
    run_with_costs,
    with_costs,
)
from xlabench.runner.isolate import DEFAULT_TIMEOUT_S, Placement, current_env_id, run_isolated

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Placement",
    "compute_costs",
    "current_env_id",
    "ensure_peaks",
    "execute",
    "run_isolated",
    "run_with_costs",
    "with_costs",
]
