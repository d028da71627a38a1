"""What a report is made of: findings, each with a summary, charts and tables."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from xlabench.analysis import Comparison
from xlabench.report.charts import ChartSpec
from xlabench.report.tables import Column, Table


@dataclass(frozen=True)
class ReportOptions:
    """What the reader chose: the comparison, the slice of findings 4 and 5, the top-N."""

    comparison: Comparison = field(default_factory=Comparison)
    device: str | None = None
    resolution: int | None = None
    top_n: int = 10


@dataclass(eq=False)
class Finding:
    """One section of the report. `empty` is said when there is no data for it."""

    key: str
    title: str
    summary: list[str] = field(default_factory=list)
    charts: list[ChartSpec] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    empty: str | None = None
    # deploy: which runtime to run it on (first on the page); study: the 2023 study's
    # findings; beyond: what the study did not measure
    part: str = "study"


@dataclass(eq=False)
class Context:
    """Inputs every finding builder reads; the speedup table is computed once."""

    results: pd.DataFrame
    options: ReportOptions
    speedups: pd.DataFrame
    device: str | None
    resolution: int | None
    #: The `xlabench ab` pairs of the XLA:CPU flags (`analysis.flag_pairs`' input): a frame
    #: of its own (the study's xla-flags.db), or None to read them from `results`.
    flag_results: pd.DataFrame | None = None


SPS = Column("throughput_sps", "samples/s [CI]", "sps",
             ci=("throughput_sps_ci_low", "throughput_sps_ci_high"))
PROVENANCE = Column("provenance", "provenance", "text")
NOISE = Column("within_noise", "order vs neighbours", "noise")
#: What names a pair of runs that differ only in mode (speedups, per-configuration tables).
PAIR_COLUMNS = (
    Column("device", "device"), Column("model", "model"), Column("resolution", "res", "int"),
    Column("batch_size", "batch", "int"), Column("precision", "precision"),
)
RATIO = Column("speedup_ratio", "speedup [95% CI]", "ratio",
               ci=("speedup_ratio_ci_low", "speedup_ratio_ci_high"))
#: What names one program run by two runners (python and native).
CONFIG_COLUMNS = (
    Column("model", "model"), Column("device", "device"), Column("resolution", "res", "int"),
    Column("batch_size", "batch", "int"), Column("precision", "precision"),
    Column("backend", "backend"), Column("mode", "mode"),
)
HOVER_RUN = (
    ("model", "model"), ("family", "family"), ("device", "device"),
    ("resolution", "resolution"), ("batch_size", "batch"), ("backend", "backend"),
    ("mode", "mode"), ("precision", "precision"), ("throughput_sps", "samples/s"),
    ("throughput_sps_ci_low", "CI low"), ("throughput_sps_ci_high", "CI high"),
    ("provenance", "provenance"),
)
HOVER_PAIR = (
    ("model", "model"), ("family", "family"), ("device", "device"),
    ("resolution", "resolution"), ("batch_size", "batch"), ("precision", "precision"),
    ("baseline_sps", "baseline samples/s"), ("compiled_sps", "compiled samples/s"),
    ("speedup_ratio", "speedup x"), ("speedup_ratio_ci_low", "CI low"),
    ("speedup_ratio_ci_high", "CI high"), ("speedup_abs_sps", "speedup samples/s"),
    ("speedup_rel_pct", "speedup %"), ("ci_method", "CI method"), ("provenance", "provenance"),
)
MARKER_NOTE = "Hollow diamonds / hatched bars: published numbers (unsynced, no CI)."


def origin_label(origin: object, device: object) -> str:
    """``a100`` for local results, ``a100 (published)`` for imported ones."""
    return f"{device} (published)" if origin == "published" else str(device)
