"""Sweeps: a grid of configurations, one isolated worker each, resumable, local or on Ray."""

from xlabench.sweep.config import GridPart, SweepConfig, build_config, load_toml
from xlabench.sweep.expand import Grid, expand
from xlabench.sweep.plan import Plan, format_plan
from xlabench.sweep.presets import PRESETS
from xlabench.sweep.progress import SweepSummary, format_summary
from xlabench.sweep.run import Sweep, run_result, run_sweep

__all__ = [
    "PRESETS",
    "Grid",
    "GridPart",
    "Plan",
    "Sweep",
    "SweepConfig",
    "SweepSummary",
    "build_config",
    "expand",
    "format_plan",
    "format_summary",
    "load_toml",
    "run_result",
    "run_sweep",
]
