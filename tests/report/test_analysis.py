"""Analysis: one function per finding, synthetic records in, DataFrames out."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import make_record
from tests.report.conftest import grid_records
from xlabench.analysis import (
    Comparison,
    RankRule,
    achieved_gflops,
    backend_comparison,
    backend_comparison_wide,
    comparison_for,
    default_slice,
    eager_graph_xla_decomposition,
    failed_runs,
    failures_by_reason,
    fastest_per_resolution,
    load_results,
    mobilenet_family,
    parity_failures,
    parity_within_own_spread,
    rank,
    slower_than,
    speedup_by_family,
    speedup_by_kind,
    speedup_table,
    throughput_vs_batch_size,
    top_models,
    top_non_cnn_models,
)
from xlabench.core import Costs, Parity, Record, Status, Throughput, UserError
from xlabench.core.record import Interference, ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine
from xlabench.store import ResultStore
from xlabench.sweep.run import stored_drift

TF = Comparison()


def frame(records: list[Record], sweep_id: str | None = None) -> pd.DataFrame:
    """The analysis frame of `records` stored as a sweep stores them, in list order: a
    result's processes, then its figure (`combine.combine`, with the between-run variation
    the store holds at that moment, `sweep.run.stored_drift`), then the next result's; all
    of one sweep when `sweep_id` is given (results that ran interleaved pair by round)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "frame.db"
        with ResultStore(path) as store:
            for result_id, processes in _by_result(records):
                store.save_many(processes, sweep_id)
                if result_id:
                    _store_figure(store, result_id, ResultPolicy())
        return load_results(path)


def _by_result(records: list[Record]) -> list[tuple[str, list[Record]]]:
    """Consecutive records of one result together; records without a result id alone."""
    groups: list[tuple[str, list[Record]]] = []
    for record in records:
        result_id = record.process.result_id
        if result_id and groups and groups[-1][0] == result_id:
            groups[-1][1].append(record)
        else:
            groups.append((result_id, [record]))
    return groups


def _store_figure(store: ResultStore, result_id: str, policy: ResultPolicy) -> None:
    processes = store.processes(result_id)
    drift = stored_drift(store, processes[0].env_id, processes[0].spec_id, result_id)
    store.save_result(combine.combine(processes, result_id, policy, drift=drift), policy,
                      complete=True)


@pytest.fixture(scope="module")
def grid() -> pd.DataFrame:
    return frame(grid_records())


def with_samples(record: Record, sample_sps: list[float]) -> Record:
    """`record` with these per-sample throughputs (batch 4, 10 steps per sample)."""
    tp = record.throughput
    assert tp is not None
    sample_s = tuple(40 / s for s in sample_sps)
    return record.replace(throughput=Throughput(
        tp.median_sps, tp.ci_low_sps, tp.ci_high_sps, 0.95, 0.02, True, 10, sample_s, 1.0))


def test_load_results_from_an_empty_db_has_every_column(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db"):
        pass
    results = load_results(tmp_path / "r.db")
    assert results.empty
    for column in ("device", "origin", "throughput_sps", "compile_s", "sample_sps", "params_m"):
        assert column in results.columns


def test_load_results_derives_units_origin_and_samples(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        store.save(make_record(throughput=200.0))
    (row,) = load_results(tmp_path / "r.db").to_dict("records")
    assert row["device"] == "a100" and row["origin"] == "local"
    assert row["gmacs_per_image"] == pytest.approx(4.1)
    assert row["gflops_per_image"] == pytest.approx(8.2)
    assert row["params_m"] == pytest.approx(25.636712)
    assert sorted(row["sample_sps"]) == pytest.approx([196, 198, 200, 202, 204])


@pytest.mark.parametrize(
    ("backend", "baseline", "expected"),
    [
        ("tensorflow", None, ("eager", "xla")),
        ("tensorflow", "graph", ("graph", "xla")),
        ("jax", None, ("eager", "xla")),
        ("torch", None, ("eager", "compiled")),
    ],
)
def test_comparison_for(backend: str, baseline: str | None, expected: tuple[str, str]) -> None:
    cmp = comparison_for(backend, baseline)
    assert (cmp.baseline_mode, cmp.compiled_mode) == expected


@pytest.mark.parametrize(("backend", "baseline"), [("jax", "graph"), ("torch", "xla"),
                                                   ("mxnet", None), ("tensorflow", "xla")])
def test_comparison_for_refuses_what_does_not_exist(backend: str, baseline: str | None) -> None:
    with pytest.raises(UserError):
        comparison_for(backend, baseline)


def test_latest_run_of_a_configuration_wins() -> None:
    results = frame([make_record(throughput=100.0), make_record(throughput=150.0)])
    assert top_models(results, TF)["throughput_sps"].tolist() == [150.0]


def test_repeats_of_a_configuration_are_results_of_their_own() -> None:
    runs = [make_record(throughput=t, repeat=r) for r, t in enumerate((100.0, 130.0, 90.0))]
    runs.append(make_record(throughput=120.0, repeat=2))  # a re-run of repeat 2
    (row,) = top_models(frame(runs), TF).to_dict("records")
    # the latest result of the configuration is shown as it is: no figure pools repeats
    assert row["throughput_sps"] == 120.0 and row["processes"] == 1


def _process(throughput: float, result_id: str, index: int, other_frac: float = 0.01) -> Record:
    figures = Interference(wall_s=5.0, cpus=(0, 1), busy_frac=0.9, own_frac=0.9 - other_frac,
                           other_frac=other_frac, steal_frac=0.0)
    return make_record(throughput=throughput).replace(
        interference=figures, process=ProcessInfo(result_id=result_id, index=index, round=index))


def stored_frame(path: Path, records: list[Record],
                 policy: ResultPolicy | None = None) -> pd.DataFrame:
    """`records` stored as `frame` stores them, under `policy`, in the database `path`."""
    with ResultStore(path) as store:
        for result_id, processes in _by_result(records):
            store.save_many(processes)
            if result_id:
                _store_figure(store, result_id, policy or ResultPolicy())
    return load_results(path)


def test_processes_of_a_result_are_combined_without_the_flagged_ones(tmp_path: Path) -> None:
    old = [_process(t, "r-old", i) for i, t in enumerate((50.0, 52.0, 51.0))]
    new = [_process(100.0, "r-new", 0), _process(10.0, "r-new", 1, other_frac=0.5),
           _process(104.0, "r-new", 2), _process(98.0, "r-new", 3)]
    results = stored_frame(tmp_path / "r.db", old + new)
    (row,) = top_models(results, TF).to_dict("records")
    expected = combine.log_t_interval([100.0, 104.0, 98.0])  # the latest result, clean only
    assert row["throughput_sps"] == pytest.approx(expected.estimate)
    assert (row["processes"], row["processes_total"], row["processes_flagged"]) == (3, 4, 1)
    assert not row["flagged"] and row["between_processes"]


def test_a_result_left_with_too_few_clean_processes_is_flagged(tmp_path: Path) -> None:
    runs = [_process(100.0, "r1", 0), _process(20.0, "r1", 1, other_frac=0.4),
            _process(30.0, "r1", 2, other_frac=0.6)]
    (row,) = top_models(stored_frame(tmp_path / "r.db", runs), TF).to_dict("records")
    assert row["throughput_sps"] == 100.0 and row["processes"] == 1
    assert row["flagged"] and "interference" in row["flag_reason"]
    assert not row["between_processes"] and row["ci_confidence"] == pytest.approx(0.97)


def test_a_result_is_flagged_by_its_own_policy(tmp_path: Path) -> None:
    # two clean processes and one flagged: short of the default policy's three, enough for
    # a result stored under a policy of two; the report follows the stored result's policy
    runs = [_process(100.0, "r1", 0), _process(102.0, "r1", 1),
            _process(20.0, "r1", 2, other_frac=0.4)]
    (row,) = top_models(stored_frame(tmp_path / "r.db", runs, ResultPolicy(min_processes=2)),
                        TF).to_dict("records")
    assert row["processes"] == 2 and not row["flagged"]


def test_one_process_from_an_old_database_is_a_result_of_one() -> None:
    (row,) = top_models(frame([make_record(throughput=100.0)]), TF).to_dict("records")
    assert row["processes"] == 1 and not row["between_processes"]
    assert row["ci_method"].startswith("one process")


RANKED = pd.DataFrame({
    "model": ["a", "b", "c", "d"], "g": ["x"] * 4, "v": [100.0, 99.0, 50.0, 10.0],
    "lo": [98.0, 97.0, 49.0, math.nan], "hi": [102.0, 101.0, 51.0, math.nan],
})


@pytest.mark.parametrize(
    ("top_n", "expected_models", "expected_noise"),
    [(None, ["a", "b", "c", "d"], [True, True, False, pd.NA]), (2, ["a", "b"], [True, True])],
)
def test_rank_marks_overlapping_neighbours_as_within_noise(
    top_n: int | None, expected_models: list[str], expected_noise: list[object]
) -> None:
    ranked = rank(RANKED, RankRule("v", top_n=top_n, top_per=("g",), ci_low="lo", ci_high="hi"))
    assert ranked["model"].tolist() == expected_models
    assert ranked["rank"].tolist() == list(range(1, len(expected_models) + 1))
    assert [x if x is not pd.NA else pd.NA for x in ranked["within_noise"]] == expected_noise


def test_rank_keeps_the_best_row_per_key() -> None:
    data = RANKED.assign(model=["a", "a", "b", "b"])
    assert rank(data, RankRule("v", per=("model",)))["v"].tolist() == [100.0, 50.0]


def test_top_models_per_device_and_non_cnn_filter(grid: pd.DataFrame) -> None:
    top = top_models(grid, TF, n=3)
    assert set(top.groupby("device").size()) == {3}
    a100 = top[(top["device"] == "a100") & (top["origin"] == "local")]
    # a model's best configuration counts: resnet50_v1 at batch 16 beats mobilenet_v1 at 4
    assert a100["model"].tolist() == ["mobilenet_v3_small", "resnet50_v1", "mobilenet_v1"]
    assert a100["batch_size"].tolist() == [4, 16, 4]
    non_cnn = top_non_cnn_models(grid, TF)
    assert set(non_cnn["kind"]) == {"transformer", "mlp"}


def test_fastest_per_resolution_names_the_runner_up(grid: pd.DataFrame) -> None:
    by_device = fastest_per_resolution(grid, TF, by_device=True)
    row = by_device[by_device["device"] == "t4"].iloc[0]
    assert (row["model"], row["runner_up"]) == ("mobilenet_v3_small", "resnet50_v1")
    assert row["within_noise"] is pd.NA or not row["within_noise"]
    overall = fastest_per_resolution(grid, TF)
    assert overall["device"].tolist() == ["a100"]


def test_fastest_winner_within_noise_when_cis_overlap() -> None:
    results = frame([make_record(model="a", throughput=100.0),
                     make_record(model="b", throughput=101.0)])
    (row,) = fastest_per_resolution(results, TF).to_dict("records")
    assert row["model"] == "b" and row["runner_up"] == "a" and row["within_noise"] is True


def test_mobilenet_family_and_the_v3_small_claim(grid: pd.DataFrame) -> None:
    runs = mobilenet_family(grid, TF)
    assert set(runs["model"]) == {"mobilenet_v1", "mobilenet_v3_small"}
    assert set(runs["mode"]) == {"eager", "xla"}
    check = slower_than(runs, "mobilenet_v3_small", "mobilenet_v1", "xla")
    assert len(check) == 2 and not check["slower"].any()


def test_speedup_from_ci_ends_is_exact() -> None:
    results = frame([make_record(mode="eager", throughput=100.0),
                     make_record(mode="xla", throughput=200.0)])
    (row,) = speedup_table(results, TF).to_dict("records")
    assert row["speedup_ratio"] == 2.0 and row["speedup_abs_sps"] == 100.0
    assert row["speedup_rel_pct"] == pytest.approx(100.0)
    assert row["ci_method"] == "ci-ends"
    assert row["speedup_ratio_ci_low"] == pytest.approx(196 / 102)
    assert row["speedup_ratio_ci_high"] == pytest.approx(204 / 98)
    assert row["speedup_abs_ci_low_sps"] == pytest.approx(196 - 102)
    assert row["significant"] is True


def test_speedup_bootstraps_from_raw_samples_when_there_are_enough() -> None:
    base = [100.0 + (i % 5) for i in range(20)]
    comp = [150.0 + (i % 7) for i in range(20)]
    records = [with_samples(make_record(mode="eager", throughput=102.0), base),
               with_samples(make_record(mode="xla", throughput=153.0), comp)]
    first = speedup_table(frame(records), TF).iloc[0]
    again = speedup_table(frame(records), TF).iloc[0]
    assert first["ci_method"] == "bootstrap"
    assert first["speedup_ratio_ci_low"] <= 153 / 102 <= first["speedup_ratio_ci_high"]
    assert first["speedup_ratio_ci_low"] > 1.4  # the spread is small
    assert first["speedup_ratio_ci_low"] == again["speedup_ratio_ci_low"]  # seeded



def _three_processes(mode: str, medians: list[float], hour: int) -> list[Record]:
    """One result of three processes (rounds 0-2), started from `hour` on, a minute apart."""
    return [make_record(mode=mode, throughput=m).replace(
        started_at=f"2026-11-30T{hour:02d}:{i:02d}:00+00:00",
        process=ProcessInfo(result_id=f"{mode}-{hour}", index=i, round=i))
        for i, m in enumerate(medians)]


@pytest.mark.parametrize(("xla_hour", "method"), [(0, "paired t"), (5, "welch t")])
def test_a_speedup_pairs_rounds_only_where_both_ran_interleaved(xla_hour: int,
                                                                method: str) -> None:
    """One sweep id both ways; the xla result swept again five hours later did not run next
    to the eager one, so its rounds are not paired (the rule `compare` uses), and the interval
    is result_ratio's, the one ratio method, in either case."""
    results = frame(_three_processes("eager", [100.0, 80.0, 120.0], 0)
                    + _three_processes("xla", [150.0, 121.0, 179.0], xla_hour), "s1")
    (row,) = speedup_table(results, TF).to_dict("records")
    assert row["ci_method"].startswith(method)
    figures = {r["mode"]: r["figure"] for r in results.to_dict("records")}
    expected = combine.result_ratio(figures["xla"], figures["eager"], xla_hour == 0)
    assert expected is not None and expected.method == row["ci_method"]
    assert (row["speedup_ratio_ci_low"], row["speedup_ratio_ci_high"]) == pytest.approx(
        (expected.ratio_low, expected.ratio_high))

def test_published_pairs_have_no_interval() -> None:
    no_ci = Throughput(100.0, None, None, None, None, False, 100, (), 40.0)
    records = [make_record(mode="eager").replace(throughput=no_ci),
               make_record(mode="xla", throughput=150.0)]
    row = speedup_table(frame(records), TF).iloc[0]
    assert row["ci_method"] == "none" and row["significant"] is pd.NA


def test_speedup_within_noise_is_not_significant() -> None:
    results = frame([make_record(mode="eager", throughput=100.0),
                     make_record(mode="xla", throughput=101.0)])
    (row,) = speedup_table(results, TF).to_dict("records")
    assert row["significant"] is False


@pytest.mark.parametrize(
    ("compiled_sps", "expected_batches"),
    # batch 4: baseline 40 ms, compiled 20 ms -> 20 ms saved; compile 2.9 s -> 145 batches
    [(200.0, 145.0), (100.0, None), (80.0, None)],
)
def test_break_even_batches(compiled_sps: float, expected_batches: float | None) -> None:
    results = frame([make_record(mode="eager", throughput=100.0),
                     make_record(mode="xla", throughput=compiled_sps)])
    row = speedup_table(results, TF).iloc[0]
    if expected_batches is None:
        assert math.isnan(row["break_even_batches"]) and not row["pays_off"]
    else:
        assert row["break_even_batches"] == pytest.approx(expected_batches)
        assert row["break_even_images"] == pytest.approx(4 * expected_batches)


def test_speedups_of_other_backends(grid: pd.DataFrame) -> None:
    jax = speedup_table(grid, comparison_for("jax"))
    assert set(jax["comparison"]) == {"jax xla vs eager"}
    assert jax["speedup_ratio"].round(6).eq(round(2.1 / 0.9, 6)).all()
    graph = speedup_table(grid, comparison_for("tensorflow", "graph"))
    assert len(graph) == 12
    assert speedup_table(grid, comparison_for("torch")).empty


def test_best_variant_depends_on_the_metric() -> None:
    # big: +100 samples/s but +10%; small: +60 samples/s but +60%.
    records = [
        make_record(model="big", mode="eager", throughput=1000.0, family="F"),
        make_record(model="big", mode="xla", throughput=1100.0, family="F"),
        make_record(model="small", mode="eager", throughput=100.0, family="F"),
        make_record(model="small", mode="xla", throughput=160.0, family="F"),
    ]
    speedups = speedup_table(frame(records), TF)
    assert default_slice(speedups) == ("a100", 224)
    absolute = speedup_by_family(speedups, "speedup_abs_sps", "a100", 224)
    relative = speedup_by_family(speedups, "speedup_rel_pct", "a100", 224)
    assert absolute["model"].tolist() == ["big"] and relative["model"].tolist() == ["small"]


def test_speedup_by_kind_keeps_detectors_apart(grid: pd.DataFrame) -> None:
    summary = speedup_by_kind(speedup_table(grid, TF))
    assert set(summary["kind_group"]) == {"CNN", "non-CNN", "detector"}
    a100 = summary[(summary["device"] == "a100") & (summary["kind_group"] == "non-CNN")]
    assert int(a100["configs"].iloc[0]) == 2


def test_eager_graph_xla_decomposition_adds_up() -> None:
    records = [make_record(mode="eager", throughput=100.0),  # 40 ms per batch of 4
               make_record(mode="graph", throughput=200.0),  # 20 ms
               make_record(mode="xla", throughput=400.0)]  # 10 ms
    (row,) = eager_graph_xla_decomposition(frame(records)).to_dict("records")
    assert row["python_overhead_ms"] == pytest.approx(20.0)
    assert row["compiler_saving_ms"] == pytest.approx(10.0)
    assert row["overhead_share_pct"] == pytest.approx(200 / 3)
    assert row["xla_over_eager"] == pytest.approx(row["graph_over_eager"] * row["xla_over_graph"])


def test_achieved_gflops_against_the_fp32_peak() -> None:
    no_flops = Costs(params=1, macs_per_image=1e9)
    records = [
        make_record(throughput=1000.0),  # 8.2 GFLOP x 1000/s = 8200 GFLOP/s of 19500
        make_record(model="m", throughput=1000.0, accelerator="cpu").replace(costs=no_flops),
        make_record(model="b", throughput=1000.0, precision="bf16"),
    ]
    gflops = achieved_gflops(frame(records)).set_index("model")
    assert gflops.loc["resnet50_v1", "pct_of_peak"] == pytest.approx(100 * 8200 / 19500)
    assert gflops.loc["m", "achieved_gflops_s"] == pytest.approx(2000.0)
    assert gflops.loc["m", "flops_source"] == "2 x MACs"
    assert math.isnan(gflops.loc["m", "pct_of_peak"])  # cpu: peak unknown
    assert math.isnan(gflops.loc["b", "peak_gflops_s"])  # bf16: not the FP32 peak


def test_achieved_gflops_on_a_cpu_uses_the_measured_peak_of_its_dtype(tmp_path: Path) -> None:
    # 8.2 GFLOP per image x 100 images/s = 820 GFLOP/s achieved by every row.
    records = [
        make_record(model="f", accelerator="cpu"),
        make_record(model="b", accelerator="cpu", precision="bf16"),
        make_record(model="x", accelerator="cpu", precision="mixed"),
        make_record(model="g", accelerator="a100"),  # same environment, a GPU row
        make_record(model="gb", accelerator="a100", precision="bf16"),
        make_record(model="o", accelerator="cpu").replace(env_id="e2"),  # never measured
    ]
    with ResultStore(tmp_path / "r.db") as store:
        store.save_many(records)
        store.put_peaks("e1", [{"dtype": "fp32", "gflops_s": 1640.0, "size": 2048},
                               {"dtype": "bf16", "gflops_s": 8200.0, "size": 2048}])
    gflops = achieved_gflops(load_results(tmp_path / "r.db")).set_index("model")
    expected = {  # model: (peak GFLOP/s, % of peak, peak_source)
        "f": (1640.0, 50.0, "measured matmul fp32"),
        "b": (8200.0, 10.0, "measured matmul bf16"),
        "x": (8200.0, 10.0, "measured matmul bf16"),  # mixed: bf16 matmuls
        "g": (19500.0, 100 * 820 / 19500, "datasheet"),
    }
    for model, (peak, pct, source) in expected.items():
        row = gflops.loc[model]
        assert row["achieved_gflops_s"] == pytest.approx(820.0)
        assert (row["peak_gflops_s"], row["pct_of_peak"]) == pytest.approx((peak, pct)), model
        assert row["peak_source"] == source, model
    for model in ("gb", "o"):  # a GPU's bf16 is not the CPU's peak; no peak for e2
        assert math.isnan(gflops.loc[model, "peak_gflops_s"])
        assert gflops.loc[model, "peak_source"] == ""


def test_throughput_vs_batch_size_keeps_swept_configurations(grid: pd.DataFrame) -> None:
    swept = throughput_vs_batch_size(grid)
    # resnet50_v1 tensorflow/xla at 4, 8, 16; mobilenet_v1 jax/xla at 2 and 4
    assert set(swept["model"]) == {"resnet50_v1", "mobilenet_v1"}
    resnet = swept[(swept["model"] == "resnet50_v1") & (swept["device"] == "a100")]
    assert resnet["series"].nunique() == 1
    assert resnet["batch_size"].tolist() == [4, 8, 16] and set(resnet["mode"]) == {"xla"}


def test_backend_comparison(grid: pd.DataFrame) -> None:
    both = backend_comparison(grid)
    assert {"tensorflow/xla", "jax/xla", "jax/eager"} <= set(both["backend_mode"])
    assert both["vs_fastest_pct"].max() == pytest.approx(100.0)
    wide = backend_comparison_wide(both)
    assert {"tensorflow/eager", "jax/xla"} <= set(wide.columns)


def test_failures_and_parity(grid: pd.DataFrame) -> None:
    failed = failed_runs(grid)
    assert set(failed["status"]) == {"timeout", "oom", "failed"}
    reasons = failures_by_reason(grid)
    assert reasons["runs"].sum() == 3
    parity = parity_failures(grid)
    assert parity["model"].tolist() == ["mobilenet_v1"]


def test_a_pass_within_eager_s_own_spread_is_listed_apart_from_failures() -> None:
    """Parity passed by the reference's own spread (`measure.parity.compare`) is no failure,
    but the report says it was not a plain pass; a failure shows the spread it exceeded."""
    from xlabench.report import ReportOptions
    from xlabench.report.findings.failures import failures_finding
    from xlabench.report.model import Context

    spread = Parity("eager", 4e5, 0.7, 2e-3, True, "within eager's own 0.9", own_spread_rel=0.9)
    beyond = Parity("eager", 4e5, 0.7, 2e-3, False, "> eager's own spread 0.1",
                    own_spread_rel=0.1)
    results = frame([make_record(model="efficient_m_v2").replace(parity=spread),
                     make_record(model="efficient_s_v2").replace(parity=beyond),
                     make_record(model="resnet50_v1", mode="eager")])
    within = parity_within_own_spread(results)
    assert within["model"].tolist() == ["efficient_m_v2"]
    assert within["parity_own_spread_rel"].tolist() == [0.9]
    failed = parity_failures(results)
    assert failed["model"].tolist() == ["efficient_s_v2"]
    assert failed["parity_own_spread_rel"].tolist() == [0.1]
    finding = failures_finding(Context(results, ReportOptions(), results.iloc[:0], None, None))
    assert "1 parity failures, 1 passed only within eager's own spread." in finding.summary[0]
    assert [len(t.frame) for t in finding.tables[:2]] == [1, 1]


FUNCTIONS: list[Callable[[pd.DataFrame], pd.DataFrame]] = [
    lambda r: top_models(r, TF), lambda r: top_non_cnn_models(r, TF),
    lambda r: fastest_per_resolution(r, TF), lambda r: fastest_per_resolution(r, TF, True),
    lambda r: mobilenet_family(r, TF), lambda r: speedup_table(r, TF),
    lambda r: speedup_by_kind(speedup_table(r, TF)),
    lambda r: speedup_by_family(speedup_table(r, TF), "speedup_abs_sps", None, None),
    eager_graph_xla_decomposition, achieved_gflops, throughput_vs_batch_size,
    backend_comparison, failed_runs, failures_by_reason, parity_failures,
    parity_within_own_spread,
]


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("which", ["empty", "failures only"])
def test_every_finding_copes_with_no_data(function: Callable, which: str) -> None:
    records = [] if which == "empty" else [make_record(status=Status.CRASHED)]
    result = function(frame(records))
    assert isinstance(result, pd.DataFrame)
    if which == "empty":
        assert result.empty
