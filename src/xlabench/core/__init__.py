"""Core types shared by every layer. Standard library only."""

from xlabench.core.backends import BACKENDS, BackendInfo
from xlabench.core.errors import Status, UserError, one_line
from xlabench.core.record import (
    Costs,
    Latency,
    Memory,
    Parity,
    Record,
    Throughput,
    Warmup,
    failure,
    utc_now,
)
from xlabench.core.spec import (
    BACKEND_MODES,
    COMPILED_MODES,
    PRECISIONS,
    WEIGHTS,
    MeasureSettings,
    Spec,
)

__all__ = [
    "BACKENDS",
    "BACKEND_MODES",
    "COMPILED_MODES",
    "PRECISIONS",
    "WEIGHTS",
    "BackendInfo",
    "Costs",
    "Latency",
    "MeasureSettings",
    "Memory",
    "Parity",
    "Record",
    "Spec",
    "Status",
    "Throughput",
    "UserError",
    "Warmup",
    "failure",
    "one_line",
    "utc_now",
]
