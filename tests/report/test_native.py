"""Python's share (native / python of one program), the decomposition's native step and the
native artifacts' stage times: synthetic records in, frames and findings out."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import make_record
from tests.report.test_analysis import frame, with_samples
from xlabench.analysis import (
    eager_graph_xla_decomposition,
    load_results,
    native_stage_times,
    python_share,
    speedup_table,
)
from xlabench.core import Record
from xlabench.core.record import ProcessInfo, Warmup
from xlabench.measure import combine
from xlabench.report import ReportOptions, build_findings, write_report
from xlabench.report.markdown import md_text
from xlabench.report.model import Finding
from xlabench.store import ResultStore

#: Per-round Python process medians; native runs each round 1.5x faster, give or take 1%.
PYTHON_SPS = (100.0, 104.0, 97.0, 101.0)
NATIVE_FACTORS = (1.5 * 1.01, 1.5 * 0.99, 1.5 * 1.005, 1.5 * 0.995)
STAGES_S = {"export": 1.5, "package": 2.0, "native_load": 0.3, "native_prepare": 0.1}


def processes(runner: str, throughputs: tuple[float, ...], rounds: tuple[int, ...],
              **fields: object) -> list[Record]:
    """One result of several worker processes, process i in sweep round rounds[i]."""
    return [
        make_record(throughput=t, runner=runner, **fields).replace(
            process=ProcessInfo(result_id=f"{runner}-{fields}", index=i, round=r))
        for i, (t, r) in enumerate(zip(throughputs, rounds, strict=True))
    ]


def native_and_python(native_rounds: tuple[int, ...] = (0, 1, 2, 3),
                      same_compiler: bool | None = True, **fields: object) -> list[Record]:
    native_sps = tuple(p * f for p, f in zip(PYTHON_SPS, NATIVE_FACTORS, strict=True))
    native = [r.replace(backend_info={"runner": "native", "same_compiler": same_compiler})
              for r in processes("native", native_sps, native_rounds, **fields)]
    return processes("python", PYTHON_SPS, (0, 1, 2, 3), **fields) + native


def finding(findings: list[Finding], key: str) -> Finding:
    return next(f for f in findings if f.key == key)


@pytest.mark.parametrize(("native_rounds", "sweep_id", "method"),
                         [((0, 1, 2, 3), "s1", "paired t"),
                          ((10, 11, 12, 13), "s1", "welch t"),
                          ((0, 1, 2, 3), None, "welch t")])  # rounds, but of no one sweep
def test_native_over_python_has_the_known_ratio_and_an_interval_without_one(
    native_rounds: tuple[int, ...], sweep_id: str | None, method: str
) -> None:
    (row,) = python_share(frame(native_and_python(native_rounds), sweep_id)).to_dict("records")
    assert row["ci_method"].startswith(method)
    assert row["native_over_python"] == pytest.approx(1.5, rel=0.01)
    assert row["native_over_python_ci_low"] < 1.5 < row["native_over_python_ci_high"]
    assert row["native_over_python_ci_low"] > 1.0 and bool(row["significant"])
    # the Python side keeps its own figure: the geometric mean of its process medians
    assert row["python_sps"] == pytest.approx(combine.log_t_interval(PYTHON_SPS).estimate)
    assert row["python_share_pct"] == pytest.approx(100 * (1 - 1 / 1.5), abs=0.5)


def test_paired_rounds_give_the_paired_t_interval_of_the_round_ratios() -> None:
    (row,) = python_share(frame(native_and_python(), "s1")).to_dict("records")
    expected = combine.log_t_interval(list(NATIVE_FACTORS))
    assert row["native_over_python_ci_low"] == pytest.approx(expected.low)
    assert row["native_over_python_ci_high"] == pytest.approx(expected.high)


def test_one_process_per_runner_falls_back_to_the_bootstrap() -> None:
    python = with_samples(make_record(throughput=100.0), [100.0 + i % 5 for i in range(20)])
    native = with_samples(make_record(throughput=150.0, runner="native"),
                          [150.0 + i % 5 for i in range(20)])
    (row,) = python_share(frame([python, native])).to_dict("records")
    assert row["ci_method"] == "bootstrap"
    assert row["native_over_python_ci_low"] < 1.5 < row["native_over_python_ci_high"]
    assert row["native_over_python_ci_low"] > 1.0


def test_a_native_run_within_noise_is_not_significant() -> None:
    records = processes("python", PYTHON_SPS, (0, 1, 2, 3)) + processes(
        "native", (104.0, 97.0, 101.0, 100.0), (0, 1, 2, 3))
    (row,) = python_share(frame(records)).to_dict("records")
    assert row["native_over_python_ci_low"] < 1.0 < row["native_over_python_ci_high"]
    assert not row["significant"]


def test_only_the_same_program_pairs() -> None:
    records = [
        *native_and_python(),
        make_record(throughput=300.0, runner="native", batch_size=8),  # no python batch 8
        make_record(backend="jax", mode="xla", throughput=90.0),  # no native jax
    ]
    share = python_share(frame(records))
    assert share[["backend", "mode", "batch_size"]].values.tolist() == [["tensorflow", "xla", 4]]


@pytest.mark.parametrize("records", [
    [], [make_record(mode="eager"), make_record(mode="xla")],
    [make_record(runner="native")],
], ids=["nothing", "python only", "native only"])
def test_python_share_is_empty_with_its_message_without_both_runners(
    records: list[Record]
) -> None:
    results = frame(records)
    assert python_share(results).empty
    section = finding(build_findings(results, ReportOptions()), "python-share")
    assert section.empty is not None and "runner native" in section.empty
    assert section.part == "beyond" and not section.charts and not section.tables


def test_python_share_section_table_chart_and_summary() -> None:
    records = [*native_and_python(), make_record(mode="eager", throughput=50.0)]
    section = finding(build_findings(frame(records), ReportOptions()), "python-share")
    assert section.empty is None
    (chart,) = section.charts
    assert chart.y == "native_over_python" and chart.error == (
        "native_over_python_ci_low", "native_over_python_ci_high")
    assert [h.y for h in chart.hlines] == [1.0]
    (table,) = section.tables
    headers = [c.header for c in table.shown_columns()]
    for wanted in ("python samples/s [CI]", "native samples/s [CI]", "native/python [95% CI]",
                   "CI method", "provenance"):
        assert wanted in headers
    ratio_cell = table.cells()[0][headers.index("native/python [95% CI]")]
    assert ratio_cell.startswith("1.50x [")
    assert ("Median native/python over 1 configurations that run the same compiler on both "
            "sides: 1.50x") in section.summary[0]
    assert any("Significantly faster native: resnet50_v1 tensorflow/xla" in s
               for s in section.summary)
    assert table.cells()[0][headers.index("compiler")] == "same"


@pytest.mark.parametrize(("same_compiler", "word"), [(False, "differs"), (None, "not recorded")])
def test_a_pair_on_different_compilers_stays_out_of_the_python_share_median(
    same_compiler: bool | None, word: str
) -> None:
    records = [*native_and_python(),  # tensorflow/xla b4, same compiler: 1.5x
               *native_and_python(same_compiler=same_compiler, batch_size=8)]
    share = python_share(frame(records))
    assert share["same_compiler"].tolist() == [True, same_compiler]
    section = finding(build_findings(frame(records), ReportOptions()), "python-share")
    assert "over 1 configurations that run the same compiler" in section.summary[0]
    assert section.summary[1].startswith("1 more run different compilers")
    headers = [c.header for c in section.tables[0].shown_columns()]
    assert sorted(row[headers.index("compiler")] for row in section.tables[0].cells()) == [
        word, "same"]


def decomposition_records() -> list[Record]:
    return [make_record(mode="eager", throughput=100.0),  # 40 ms per batch of 4
            make_record(mode="graph", throughput=200.0),  # 20 ms
            make_record(mode="xla", throughput=400.0),  # 10 ms
            make_record(mode="xla", throughput=800.0, runner="native"),  # 5 ms
            make_record(mode="graph", throughput=1000.0, runner="native")]


def test_the_decomposition_gains_the_native_step_without_mixing_runners() -> None:
    (row,) = eager_graph_xla_decomposition(frame(decomposition_records())).to_dict("records")
    # eager/graph/xla are the Python runner's: the native graph and xla runs stay out of them
    assert (row["runner"], row["graph_sps"], row["xla_sps"]) == ("python", 200.0, 400.0)
    assert row["python_overhead_ms"] == pytest.approx(20.0)
    assert row["native_sps"] == 800.0 and row["native_over_xla"] == pytest.approx(2.0)
    assert row["python_launch_ms"] == pytest.approx(5.0)
    assert row["python_launch_pct"] == pytest.approx(100 * 5 / 40)
    assert row["launch_share_pct"] == pytest.approx(100 * 5 / 35)


def test_the_decomposition_without_a_native_run_has_no_native_step() -> None:
    (row,) = eager_graph_xla_decomposition(frame(decomposition_records()[:3])).to_dict("records")
    assert math.isnan(row["native_sps"]) and math.isnan(row["python_launch_ms"])
    section = finding(build_findings(frame(decomposition_records()[:3]), ReportOptions()),
                      "decomposition")
    headers = [c.header for c in section.tables[0].shown_columns()]
    assert not any("native" in h for h in headers)
    assert set(section.charts[0].data["component"]) == {
        "eager → graph: Python overhead", "graph → XLA: compiler"}


def test_the_decomposition_section_shows_the_native_step() -> None:
    section = finding(build_findings(frame(decomposition_records()), ReportOptions()),
                      "decomposition")
    bars = section.charts[0].data.set_index("component")["share_pct"]
    assert bars["xla → native: Python launch"] == pytest.approx(12.5)
    table = section.tables[0]
    headers = [c.header for c in table.shown_columns()]
    launch = table.cells()[0][headers.index("xla → native: Python launch ms/batch")]
    assert launch == "5.00"
    assert any("timed natively" in s and "14%" in s for s in section.summary)


def with_stages(record: Record, stages_s: dict[str, float], compile_s: float = 2.9) -> Record:
    return record.replace(warmup=Warmup(3.0, compile_s, 10, 1.0, compile_stages_s=stages_s))


def test_native_stage_times_per_configuration() -> None:
    records = [with_stages(make_record(runner="native"), STAGES_S),
               with_stages(make_record(), {"trace": 9.0}, compile_s=7.0),  # python: stays out
               make_record(model="m", runner="native")]  # no stages stored
    stages = native_stage_times(frame(records)).set_index("model")
    assert list(stages.index) == ["resnet50_v1", "m"]
    resnet = stages.loc["resnet50_v1"]
    for stage, seconds in STAGES_S.items():
        assert resnet[f"stage_{stage}_s"] == pytest.approx(seconds)
    assert resnet["stages_total_s"] == pytest.approx(3.9)
    assert resnet["compile_s"] == pytest.approx(2.9)
    assert resnet["python_compile_s"] == pytest.approx(7.0)  # the python run of the program
    assert "stage_trace_s" not in stages.columns
    assert math.isnan(stages.loc["m", "stages_total_s"])
    assert math.isnan(stages.loc["m", "python_compile_s"])


def compile_section(records: list[Record]) -> Finding:
    return finding(build_findings(frame(records), ReportOptions()), "compile")


def test_native_stage_times_appear_beside_the_compile_times() -> None:
    records = [make_record(mode="eager", throughput=100.0), make_record(throughput=200.0),
               with_stages(make_record(runner="native", throughput=300.0), STAGES_S)]
    section = compile_section(records)
    assert [t.title for t in section.tables] == [
        "Break-even per pair", "Native artifacts: export, package and load"]
    stages = section.tables[1]
    headers = [c.header for c in stages.shown_columns()]
    assert headers[7:11] == ["export s", "package s", "native load s", "native prepare s"]
    assert stages.cells()[0][7:11] == ["1.50", "2.00", "0.30", "0.10"]
    assert any("export 1.50 s" in s and "3.90 s in all" in s for s in section.summary)


def test_native_runs_alone_still_show_their_stage_times() -> None:
    section = compile_section([with_stages(make_record(runner="native"), {"export": 0.5})])
    assert section.empty is None and not section.charts
    (table,) = section.tables
    assert "export s" in [c.header for c in table.shown_columns()]
    assert compile_section([make_record()]).empty is not None


def test_native_runs_do_not_join_the_speedup_pairs() -> None:
    records = [make_record(mode="eager", throughput=100.0), make_record(throughput=200.0),
               make_record(runner="native", throughput=300.0)]
    speedups = speedup_table(frame(records), ReportOptions().comparison)
    assert speedups["compiled_sps"].tolist() == [200.0]


def test_a_report_with_native_runs_is_written(tmp_path: Path) -> None:
    records = [
        *decomposition_records(),
        with_stages(make_record(runner="native", model="m", throughput=90.0), STAGES_S),
        make_record(model="m", throughput=60.0)]
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
    results = load_results(tmp_path / "r.db")
    stored = results[results["runner"] == "native"]["compile_stages_s"].tolist()
    assert STAGES_S in stored  # the stages survive the store
    files = write_report(results, tmp_path / "out", ReportOptions(), "r.db")
    assert (tmp_path / "out" / "python-share.png") in files.pngs
    markdown = files.findings_md.read_text()
    for text in ("Python's share", "native/python [95% CI]", "native load s",
                 "xla → native: Python launch ms/batch"):
        assert md_text(text) in markdown, text
