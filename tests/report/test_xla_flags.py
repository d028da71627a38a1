"""XLA:CPU flags against XLA's defaults: ab pairs stored as `xlabench ab` stores them, read by
the one ratio method, and the rule that says whether a flag closes the gap to TF graph."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import make_record
from tests.report.test_analysis import _store_figure
from xlabench.analysis import flag_gaps, flag_pairs, gap_verdict, load_results
from xlabench.core import Record
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.report.findings.xla_flags import xla_flags_finding
from xlabench.report.model import Context, ReportOptions
from xlabench.store import ResultStore

ONEDNN = "--xla_cpu_use_onednn=true"
WIDE = "--xla_cpu_prefer_vector_width=512"
#: Side a's three rounds (samples/s); each side b is a ratio of them with a little jitter.
DEFAULTS = (100.0, 90.0, 110.0)
JITTER = (1.0, 1.01, 0.99)


def side(sweep: str, label: str, mode: str, ratio: float, flags: str, first_minute: int
         ) -> list[Record]:
    """One side of an ab: three processes in rounds 0-2, two minutes apart from
    `first_minute` (side a at even minutes, side b at odd ones: interleaved); side b's are
    `ratio` times side a's, with a little jitter."""
    jitters = JITTER if first_minute else (1.0,) * len(DEFAULTS)
    records = []
    for i, (sps, jitter) in enumerate(zip(DEFAULTS, jitters, strict=True)):
        record = make_record(model="m", mode=mode, throughput=sps * ratio * jitter)
        env = {**record.env, "flags": {"XLA_FLAGS": flags} if flags else {}}
        records.append(record.replace(
            env=env, started_at=f"2026-11-30T00:{first_minute + 2 * i:02d}:00+00:00",
            process=ProcessInfo(result_id=f"{sweep}-{label}", index=i, round=i)))
    return records


def labelled_frame(sides: list[tuple[str, str, list[Record]]]) -> pd.DataFrame:
    """The analysis frame of ab sides (sweep id, label, processes), each side's figure
    stored after its processes, as `xlabench ab` stores them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flags.db"
        with ResultStore(path) as store:
            for sweep, label, records in sides:
                for record in records:
                    store.save(record, sweep, label)
                _store_figure(store, records[0].process.result_id, ResultPolicy())
        return load_results(path)


@pytest.fixture(scope="module")
def flags_frame() -> pd.DataFrame:
    """Model m on a100: graph 4x XLA's defaults, oneDNN 4.1x (reaches graph), a 512-bit
    vector width 1.0x (does not close the gap)."""
    sides = []
    for sweep, label, mode, ratio, flags in (("ab-1", "graph", "graph", 4.0, ""),
                                             ("ab-2", "xla-onednn", "xla", 4.1, ONEDNN),
                                             ("ab-3", "xla-vector-512", "xla", 1.0, WIDE)):
        sides.append((sweep, "xla", side(sweep, "xla", "xla", 1.0, "", 0)))
        sides.append((sweep, label, side(sweep, label, mode, ratio, flags, 1)))
    return labelled_frame(sides)


def test_gap_verdicts() -> None:
    assert gap_verdict(3.8, 4.1, 3.8) == "reaches graph"
    assert gap_verdict(1.2, 1.8, 3.8) == "faster than XLA's defaults"
    assert gap_verdict(0.9, 4.0, 3.8) == "too wide to tell"
    assert gap_verdict(0.98, 1.04, 3.8) == "does not close it"
    assert gap_verdict(math.nan, 1.04, 3.8) == "no interval"


def test_each_side_b_is_read_against_its_own_sweeps_defaults(flags_frame: pd.DataFrame) -> None:
    pairs = flag_pairs(flags_frame).set_index("label")
    assert set(pairs.index) == {"graph", "xla-onednn", "xla-vector-512"}
    assert pairs.loc["xla-onednn", "xla_flags"] == ONEDNN
    assert pairs.loc["graph", "xla_flags"] == "" and pairs.loc["graph", "mode"] == "graph"
    assert pairs["ci_method"].str.startswith("paired t").all()
    assert pairs.loc["xla-onednn", "rounds"] == 3
    assert pairs.loc["graph", "verdict"] == "faster"
    for label in pairs.index:
        row = pairs.loc[label]
        assert row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"]


def test_which_flag_closes_the_gap(flags_frame: pd.DataFrame) -> None:
    gaps = flag_gaps(flag_pairs(flags_frame)).set_index("label")
    assert set(gaps.index) == {"xla-onednn", "xla-vector-512"}  # graph is the gap itself
    assert gaps.loc["xla-onednn", "gap"] == "reaches graph"
    assert gaps.loc["xla-vector-512", "gap"] == "does not close it"
    assert gaps["graph_ratio"].tolist() == pytest.approx([4.0, 4.0], rel=0.02)


def test_the_finding_names_the_flag(flags_frame: pd.DataFrame) -> None:
    ctx = Context(pd.DataFrame(), ReportOptions(), pd.DataFrame(), None, None, flags_frame)
    finding = xla_flags_finding(ctx)
    text = "\n".join(finding.summary)
    assert text.startswith("m on a100: graph / XLA defaults 4.0")
    assert "reaches graph: xla-onednn; does not close it: xla-vector-512." in text
    assert "Flags that close the gap to TF graph: xla-onednn (m)." in text
    assert [t.title for t in finding.tables] == [
        "Each side b against TF XLA at XLA's defaults", "Does a flag close the gap to TF graph?"]


def test_no_pairs_no_finding() -> None:
    results = labelled_frame([("s", "x", side("s", "x", "xla", 1.0, "", 0))])
    finding = xla_flags_finding(Context(results, ReportOptions(), pd.DataFrame(), None, None))
    assert finding.empty and "bench/xla_cpu_flags.py --ab" in finding.empty
