"""LoadGen scenarios through the real worker: real LoadGen, a real Keras backend (JAX, XLA) and
a tiny model (tests.own.factories, 32 px), runs of about a second.

Nothing here asserts a speed: the machine is shared. The Server search compares two systems
whose capacities differ by a large factor (one sleeps 10 ms more per query batch, injected on
the production path), and asserts only their order.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import REPO, run_one_process
from xlabench.core import MeasureSettings, Record, Spec, Status
from xlabench.core.scenario import Scenario, scenario_settings_for
from xlabench.measure.scenarios import LOADGEN_INSTALL_HINT
from xlabench.runner import Placement, run_isolated
from xlabench.runner.scenario_run import SLOW_SUT_FAULT
from xlabench.runner.worker import FAULT_ENV
from xlabench.store import ResultStore
from xlabench.zoo import own

pytest.importorskip("mlperf_loadgen")
pytestmark = pytest.mark.slow

FACTORY = "tests.own.factories:build_custom"
QUICK = MeasureSettings(min_sample_s=0.02, budget_s=1.0, warmup_min_s=0.1, warmup_max_s=2.0,
                        latency_steps=3)
#: Short runs; the server keeps LoadGen's 500 queries (its early stopping judges a p99 only
#: after about 460), so its max duration lets rates from 55/s be valid.
DURATIONS = {"min_duration_ms": 500, "max_duration_ms": 10_000}
MIN_QUERIES = {Scenario.SINGLE_STREAM: 50, Scenario.OFFLINE: 64, Scenario.SERVER: None}
BATCH = {Scenario.SINGLE_STREAM: 1, Scenario.OFFLINE: 2, Scenario.SERVER: 2}
BOUND_MS = 100.0
TIMEOUT_S = 300


def scenario_spec(scenario: Scenario) -> Spec:
    model = own.resolve(FACTORY)
    settings = scenario_settings_for(scenario, "jax", BATCH[scenario],
                                     min_query_count=MIN_QUERIES[scenario],
                                     latency_bound_ms=BOUND_MS, **DURATIONS)
    return Spec(model.name, "jax", "xla", 32, batch_size=BATCH[scenario], measure=QUICK,
                scenario=scenario.value, scenario_settings=settings, **model.spec_fields())


def assert_scenario_measured(record: Record, scenario: Scenario) -> None:
    """An ok record holding LoadGen's outcome, and what the worker measures as for the loop."""
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    outcome = record.scenario
    assert outcome is not None and outcome.scenario == scenario.value and outcome.figure > 0
    assert record.rate_per_s is not None and record.rate_per_s > 0
    assert record.throughput is None and record.latency is None
    assert outcome.max_batch == BATCH[scenario] and outcome.concurrency == 1
    assert "vs MLPerf's 600 s" in outcome.shortfall and outcome.sut
    assert record.warmup is not None and record.warmup.first_call_s > 0
    assert record.parity is not None and record.parity.passed, record.parity
    assert record.interference is not None and record.interference.wall_s > 0
    assert record.probe_before is not None and record.probe_after is not None
    assert record.probe_before.gflops > 0 and record.probe_after.gflops > 0
    assert record.memory.peak_host_mb and record.costs.params


def assert_loadgen_summary(summary: dict, scenario: Scenario) -> None:
    """LoadGen's own summary of one run: validity, percentiles, early stopping, settings."""
    assert summary["valid"] is True and summary["scenario"] == scenario.value
    assert summary["loadgen_version"].startswith("6.0.17")
    assert "MLPerf Results Summary" in summary["summary_text"]
    assert 0 < summary["p50_ms"] <= summary["p90_ms"] <= summary["p99_ms"]
    assert summary["effective_settings"]["min_duration_ms"] == DURATIONS["min_duration_ms"]
    assert summary["settings"]["max_batch"] == BATCH[scenario]


def test_offline_runs_in_the_worker() -> None:
    record = run_isolated(scenario_spec(Scenario.OFFLINE), TIMEOUT_S)
    assert_scenario_measured(record, Scenario.OFFLINE)
    summary = record.scenario.loadgen
    assert_loadgen_summary(summary, Scenario.OFFLINE)
    assert record.scenario.figure == summary["samples_per_s"] == record.rate_per_s
    assert "min 64 samples vs MLPerf's 24,576" in record.scenario.shortfall


def test_a_server_search_finds_a_lower_rate_on_a_slowed_system() -> None:
    spec = scenario_spec(Scenario.SERVER)
    plain = run_isolated(spec, TIMEOUT_S)
    slowed = run_isolated(spec, TIMEOUT_S,
                          placement=Placement(env={FAULT_ENV: f"{SLOW_SUT_FAULT}10"}))
    for record in (plain, slowed):
        assert_scenario_measured(record, Scenario.SERVER)
        search = record.scenario.loadgen
        assert search["latency_bound_ms"] == BOUND_MS
        assert record.scenario.figure == search["peak_rate_per_s"]
        assert search["estimate"]["scenario"] == "single-stream"
        (peak,) = [t for t in search["trials"] if t["rate_per_s"] == search["peak_rate_per_s"]]
        assert peak["passed"] and peak["result"]["p99_ms"] <= BOUND_MS
        assert_loadgen_summary(peak["result"], Scenario.SERVER)
        assert peak["result"]["effective_settings"]["target_latency_ns"] == BOUND_MS * 1e6
    assert slowed.scenario.figure < plain.scenario.figure


def test_a_server_search_where_no_rate_passes_is_a_failed_record_with_its_outcome() -> None:
    """A 1 ms bound that a 10 ms batch can never keep: failed, why in one line, and LoadGen's
    summary kept for inspection (a failed record never counts in a result)."""
    spec = scenario_spec(Scenario.SERVER)
    settings = scenario_settings_for("server", "jax", 2, latency_bound_ms=1.0,
                                     min_duration_ms=300, max_duration_ms=2000)
    spec = dataclasses.replace(spec, scenario_settings=settings)
    record = run_isolated(spec, TIMEOUT_S,
                          placement=Placement(env={FAULT_ENV: f"{SLOW_SUT_FAULT}10"}))
    assert record.status is Status.FAILED
    assert record.error.startswith("no rate kept p99 within 1 ms; lowest tried ")
    assert "\n" not in record.error
    assert record.scenario is not None and record.scenario.figure == 0.0
    assert record.scenario.loadgen["trials"] and record.scenario.loadgen["peak_rate_per_s"] is None


def test_xlabench_run_stores_the_loadgen_summary(run_cli, tmp_path: Path) -> None:
    """Single-stream from the command line into a real store, read back."""
    db = tmp_path / "s.db"
    done = run_cli("run", FACTORY, "--backend", "jax", "--mode", "xla", "--resolution", "32",
                   "--scenario", "single-stream", "--scenario-min-duration-s", "0.5",
                   "--scenario-min-queries", "50", "--processes", "1", "--max-processes", "1",
                   "--rerun-flagged", "0", "--db", str(db), "--budget", "1",
                   "--min-sample-time", "0.02", env={"PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert "single-stream" in done.stdout and "p90" in done.stdout
    with ResultStore(db) as store:
        (record,) = store.records()
    assert_scenario_measured(record, Scenario.SINGLE_STREAM)
    assert record.spec.batch_size == 1  # single-stream's batch, set without --batch-size
    summary = record.scenario.loadgen
    assert_loadgen_summary(summary, Scenario.SINGLE_STREAM)
    assert summary["early_stopping_met"]  # MLPerf's figure: the early-stopping p90
    assert record.scenario.figure == summary["early_stopping_p90_ms"]
    assert record.rate_per_s == pytest.approx(1000 / record.scenario.figure)
    with sqlite3.connect(db) as conn:  # as stored: the record's JSON holds the whole outcome
        (text,) = conn.execute("SELECT record_json FROM results").fetchone()
    assert json.loads(text)["scenario"]["loadgen"]["valid"] is True
    shown = run_cli("results", "--db", str(db))
    assert shown.returncode == 0 and "single-stream" in shown.stdout, shown.stdout


@pytest.fixture
def no_loadgen(tmp_path: Path) -> dict[str, str]:
    """An environment whose `import mlperf_loadgen` fails, as where it is not installed: a
    module of that name first on the path that raises ImportError (the real worker, real
    Python, nothing mocked)."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "mlperf_loadgen.py").write_text("raise ImportError('hidden for the test')\n")
    paths = [str(shim), str(Path.cwd()), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def test_a_worker_without_loadgen_says_how_to_install_it(no_loadgen: dict[str, str],
                                                         tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(scenario_spec(Scenario.OFFLINE), store, TIMEOUT_S,
                                 Placement(env=no_loadgen))
        (row,) = store.rows()
    assert record.status is Status.FAILED and record.error == LOADGEN_INSTALL_HINT
    assert row["status"] == "failed"


def test_the_cli_without_loadgen_refuses_before_running(run_cli, no_loadgen: dict[str, str],
                                                        tmp_path: Path) -> None:
    done = run_cli("run", "mobilenet_v3_small", "--scenario", "offline", "--db",
                   str(tmp_path / "n.db"), env=no_loadgen)
    assert done.returncode == 2
    assert done.stderr.strip() == f"xlabench: error: {LOADGEN_INSTALL_HINT}"
    assert not (tmp_path / "n.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--scenario", "batch"), "unknown scenario 'batch': choose one of single-stream, "
         "offline, server"),
        (("--scenario", "server", "--latency-bound-ms", "0"), "latency bound (ms) must be "
         "positive, got 0"),
        (("--scenario", "server", "--latency-bound-ms", "-5"), "latency bound (ms) must be "
         "positive"),
        (("--scenario", "offline", "--backend", "tensorflow", "--mode", "xla", "--runner",
          "native"), "LoadGen scenarios run in the Python worker"),
        (("--scenario", "single-stream", "--batch-size", "4"), "single-stream issues one "
         "sample per query: batch size must be 1, got 4"),
        (("--latency-bound-ms", "50"), "--latency-bound-ms sets a LoadGen scenario: give "
         "--scenario too"),
        (("--scenario", "offline", "--scenario-min-duration-s", "20",
          "--scenario-max-duration-s", "10"), "below its min duration"),
    ],
)
def test_bad_scenario_input_is_one_line_and_stores_nothing(run_cli, tmp_path: Path, args,
                                                           message: str) -> None:
    done = run_cli("run", "mobilenet_v3_small", *args, "--db", str(tmp_path / "b.db"))
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "b.db").exists()


def test_openvino_offline_runs_two_streams_in_the_worker() -> None:
    """OpenVINO's table entry runs 2 LoadGen threads: one THROUGHPUT-hint model compiled with
    2 streams, an infer request per thread, parity from the first."""
    model = own.resolve(FACTORY)
    settings = scenario_settings_for(Scenario.OFFLINE, "openvino", 2, min_query_count=64,
                                     **DURATIONS)
    spec = Spec(model.name, "openvino", "compiled", 32, batch_size=2, measure=QUICK,
                scenario=Scenario.OFFLINE.value, scenario_settings=settings,
                **model.spec_fields())
    record = run_isolated(spec, TIMEOUT_S)
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.scenario is not None and record.scenario.concurrency == 2
    assert record.scenario.loadgen["valid"] and record.scenario.figure > 0
    assert "2 streams" in record.scenario.sut
    assert record.parity is not None and record.parity.passed, record.parity
    assert set(record.warmup.compile_stages_s) == {"export", "convert", "save", "read",
                                                   "compile"}
    info = record.backend_info
    assert info["openvino_config"]["PERFORMANCE_HINT"] == "THROUGHPUT"
    reported = info["openvino_properties"]
    assert reported["PERFORMANCE_HINT"] == "THROUGHPUT" and reported["NUM_STREAMS"] == "2"
    assert reported["INFERENCE_NUM_THREADS"] == str(record.env["runtime"]["threads"])
    assert info["executed_precision"] == "fp32"
