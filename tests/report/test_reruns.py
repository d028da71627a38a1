"""Re-runs of one configuration: does one result's interval hold the others' figures? Synthetic
results of known process medians in, the agreement table and the quality section out."""

from __future__ import annotations

import pytest

from tests.conftest import make_record
from tests.report.test_analysis import frame
from xlabench.analysis import rerun_agreement
from xlabench.core import Record
from xlabench.core.record import ProcessInfo
from xlabench.measure import combine
from xlabench.report import ReportOptions, build_findings

#: Three results of one configuration: two agree, the third ran 40% faster (another regime).
RUNS = ((100.0, 102.0, 98.0), (101.0, 99.0, 103.0), (140.0, 142.0, 139.0))


def results(runs: tuple[tuple[float, ...], ...], **fields: object) -> list[Record]:
    return [make_record(throughput=sps, **fields).replace(
                process=ProcessInfo(result_id=f"r{r}-{fields}", index=i, round=i))
            for r, run in enumerate(runs) for i, sps in enumerate(run)]


def test_agreement_counts_the_pairs_whose_interval_holds_the_other_figure() -> None:
    (row,) = rerun_agreement(frame(results(RUNS))).to_dict("records")
    intervals = [combine.log_t_interval(run) for run in RUNS]
    expected = sum(a.low <= b.estimate <= a.high
                   for a in intervals for b in intervals if a is not b)
    assert row["results"] == 3 and row["pairs"] == 6
    assert row["pairs_held"] == expected
    # the first two hold each other; neither holds the fast regime, nor it them
    assert expected == 2 and row["agreement"] == pytest.approx(2 / 6)
    assert row["low_sps"] == pytest.approx(intervals[0].estimate)
    assert row["high_sps"] == pytest.approx(intervals[2].estimate)
    assert row["spread_pct"] == pytest.approx(
        100 * (intervals[2].estimate / intervals[0].estimate - 1))


def test_configurations_measured_once_are_not_listed() -> None:
    once = results(RUNS[:1], model="mobilenet_v3_small")
    assert rerun_agreement(frame(once)).empty
    both = rerun_agreement(frame(once + results(RUNS[:2])))
    assert list(both["model"]) == ["resnet50_v1"]


def test_an_unfinished_result_is_no_re_run() -> None:
    # the third result's sweep was killed before it was complete: only two re-runs count
    rows = frame(results(RUNS))
    unfinished = rows["result_id"] == rows["result_id"].iloc[-1]
    rows.loc[unfinished, "complete"] = False
    (row,) = rerun_agreement(rows).to_dict("records")
    assert row["results"] == 2 and row["pairs_held"] == 2


def test_the_quality_section_shows_the_reruns() -> None:
    findings = build_findings(frame(results(RUNS)), ReportOptions())
    quality = next(f for f in findings if f.key == "quality")
    titles = [t.title for t in quality.tables]
    assert "Re-runs of one configuration: do the intervals hold?" in titles
    assert any("held another's figure in 2 of 6 ordered pairs" in s for s in quality.summary)


def test_each_configuration_takes_the_drift_of_the_others_re_runs() -> None:
    """Two configurations re-run on one machine: the later one's intervals include the
    between-run variation of the *other* one's re-runs as a prior, updated with its own
    results stored before it (never itself or a later one), and the quality section says so."""
    other = ((50.0, 51.0, 49.0), (56.0, 55.0, 57.0), (45.0, 46.0, 44.5))
    # the other configuration was re-run first: results stored later never count back
    rows = frame(results(other, model="mobilenet_v3_small") + results(RUNS))
    (alone,) = rerun_agreement(frame(results(RUNS))).to_dict("records")
    assert alone["pairs_held"] == 2  # alone on its machine: nothing to learn the drift from
    both = rerun_agreement(rows).set_index("model")
    drift = combine.run_drift([[list(r) for r in other]])
    assert drift is not None and drift.rel_sd > 0.05
    intervals = [combine.log_t_interval(
        run, drift=combine.config_drift([list(r) for r in RUNS[:index]], drift))
        for index, run in enumerate(RUNS)]
    expected = sum(a.low <= b.estimate <= a.high
                   for a in intervals for b in intervals if a is not b)
    assert both.loc["resnet50_v1", "pairs_held"] == expected > 2
    findings = build_findings(rows, ReportOptions())
    quality = next(f for f in findings if f.key == "quality")
    assert any("include the between-run variation of this machine" in s for s in quality.summary)
    lone = next(f for f in build_findings(frame(results(RUNS[:1])), ReportOptions())
                if f.key == "quality")
    assert any("No configuration has been re-run on this machine" in s for s in lone.summary)
