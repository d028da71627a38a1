"""Isolated workers: one configuration per fresh process, failures turned into records; the
model costs and the device peak, each measured once in a process of its own."""

from xlabench.runner.costs import count_costs, ensure_costs, with_costs
from xlabench.runner.isolate import DEFAULT_TIMEOUT_S, Placement, current_env_id, run_isolated
from xlabench.runner.peaks import ensure_peaks

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Placement",
    "count_costs",
    "current_env_id",
    "ensure_costs",
    "ensure_peaks",
    "run_isolated",
    "with_costs",
]
