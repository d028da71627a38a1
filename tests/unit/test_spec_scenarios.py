"""A LoadGen scenario as a spec, a sweep grid and a command line see it (nothing runs here)."""

from __future__ import annotations

import dataclasses
import io

import pytest

from xlabench.cli.commands import make_spec
from xlabench.cli.main import build_parser
from xlabench.core import Record, Spec, Status, UserError
from xlabench.core.backends import BACKENDS
from xlabench.core.scenario import (
    DEFAULT_BATCH_WAIT_MS,
    DEFAULT_LATENCY_BOUND_MS,
    Scenario,
    ScenarioOutcome,
    describe_figure,
    scenario_settings_for,
)
from xlabench.measure import scenarios
from xlabench.measure.scenarios import (
    DEFAULT_SEARCH_MAX_RUNS,
    MAX_RESIZED_RUNS,
    RUN_DURATION_SLACK,
    ScenarioSettings,
    lowest_valid_server_rate,
    max_scenario_s,
)
from xlabench.runner.isolate import worker_timeout_s
from xlabench.sweep import build_config, expand
from xlabench.sweep.progress import Progress


def scenario_spec(scenario: str = "offline", backend: str = "tensorflow", batch: int = 4,
                  **settings) -> Spec:
    mode = {"tensorflow": "graph"}.get(backend, "compiled")
    return Spec("mobilenet_v3_small", backend, mode, 32, batch_size=batch, scenario=scenario,
                scenario_settings=scenario_settings_for(scenario, backend, batch, **settings))


def test_the_timed_loops_ids_do_not_move() -> None:
    """The pins of tests/unit/test_spec_record.py, here beside a scenario's: a spec without one
    keeps its id, and each scenario (and its settings) is another configuration."""
    plain = Spec("resnet50_v1", "jax", "xla", 224)
    assert plain.spec_id() == "3c941ae12a53ff4a"
    assert "scenario" not in plain.canonical_json()
    ids = {scenario_spec(s, batch=1).spec_id() for s in Scenario}
    ids.add(scenario_spec("offline", batch=1, min_duration_ms=2000).spec_id())
    ids.add(Spec("mobilenet_v3_small", "tensorflow", "graph", 32, batch_size=1).spec_id())
    assert len(ids) == 5
    assert scenario_spec().label().endswith("fp32 offline")


def test_settings_a_scenario_does_not_use_never_make_specs_differ() -> None:
    """The latency bound and the batch wait are the server's: elsewhere they keep defaults."""
    offline = scenario_settings_for("offline", "tensorflow", 4, latency_bound_ms=5,
                                    batch_wait_ms=9)
    assert offline.latency_bound_ms == DEFAULT_LATENCY_BOUND_MS and offline.batch_wait_ms == 0
    server = scenario_settings_for("server", "tensorflow", 4, latency_bound_ms=5)
    assert server.latency_bound_ms == 5 and server.batch_wait_ms == DEFAULT_BATCH_WAIT_MS
    assert server.max_batch == 4 and server.concurrency == 1
    assert scenario_settings_for("single-stream", "openvino", 1).concurrency == 1


def test_every_backend_describes_how_it_takes_queries() -> None:
    for backend in BACKENDS:
        assert backend.scenario_sut and backend.scenario_concurrency >= 1
        settings = scenario_settings_for("server", backend.name, 2)
        assert settings.concurrency == backend.scenario_concurrency


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: scenario_spec("batch"), "unknown scenario 'batch'"),
        (lambda: scenario_spec("single-stream", batch=4), "batch size must be 1, got 4"),
        (lambda: scenario_spec("server", latency_bound_ms=0), "latency bound (ms) must be > 0"),
        (lambda: scenario_spec("server", latency_bound_ms=-1), "latency bound (ms) must be > 0"),
        (lambda: dataclasses.replace(scenario_spec(), batch_size=2), "max batch is the batch size"),
        (lambda: dataclasses.replace(scenario_spec(), runner="native", mode="xla"),
         "LoadGen scenarios run in the Python worker"),
        (lambda: Spec("mobilenet_v3_small", "tensorflow", "graph", 32, scenario="offline",
                      scenario_settings=ScenarioSettings(max_batch=4, concurrency=3)),
         "tensorflow runs at most 1 query batch(es) at once in a scenario, not 3"),
    ],
)
def test_a_bad_scenario_spec_is_one_line(make, message: str) -> None:
    with pytest.raises(UserError, match=None) as error:
        make()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_scenario_spec_round_trips() -> None:
    spec = scenario_spec("server", latency_bound_ms=50, min_query_count=600)
    again = Spec.from_dict(spec.to_dict())
    assert again == spec and again.spec_id() == spec.spec_id()


def test_figures_are_shown_with_their_unit() -> None:
    assert describe_figure("single-stream", 12.34, 100) == "p90 12.3 ms"
    assert describe_figure("offline", 41.23, 100) == "41.2 samples/s"
    assert describe_figure("server", 18.54, 50) == "18.5 q/s within p99 50 ms"


def test_the_worker_deadline_adds_the_longest_loadgen_runs() -> None:
    settings = ScenarioSettings(max_duration_ms=10_000)
    one = (1 + MAX_RESIZED_RUNS) * 10 * RUN_DURATION_SLACK
    assert max_scenario_s(settings, "offline") == one
    assert max_scenario_s(settings, Scenario.SERVER) == one + DEFAULT_SEARCH_MAX_RUNS * 10 * 2
    plain = Spec("mobilenet_v3_small", "tensorflow", "graph", 32)
    assert worker_timeout_s(plain, 600) == 600
    spec = scenario_spec("server", max_duration_ms=10_000)
    assert worker_timeout_s(spec, 600) == 600 + max_scenario_s(spec.scenario_settings, "server")


def test_the_server_search_never_tries_a_rate_that_cannot_be_valid() -> None:
    """500 queries within 10 s: rates below 55/s end before LoadGen's minimum (invalid
    whatever the latency); the search stops there instead of halving on."""
    assert lowest_valid_server_rate(ScenarioSettings(max_duration_ms=10_000)) == pytest.approx(55)
    tried: list[float] = []

    def passes(rate_per_s: float) -> bool:
        tried.append(rate_per_s)
        return False

    scenarios._search_rates(passes, 160.0, precision=0.1, max_runs=10, floor_rate_per_s=55.0)
    assert tried == [160.0, 80.0, 55.0]
    tried.clear()
    scenarios._search_rates(passes, 20.0, precision=0.1, max_runs=10, floor_rate_per_s=55.0)
    assert tried == [55.0]  # a start below the floor starts at it


# ------------------------------------------------------------------ the command line and sweeps
def run_args(*args: str):
    return build_parser().parse_args(["run", "mobilenet_v3_small", "--resolution", "32", *args])


def test_run_flags_make_the_scenario_spec() -> None:
    spec = make_spec(run_args("--backend", "tensorflow", "--mode", "graph", "--scenario",
                              "server", "--latency-bound-ms", "50", "--scenario-min-duration-s",
                              "2", "--scenario-max-duration-s", "30", "--scenario-min-queries",
                              "600", "--batch-wait-ms", "0"))
    settings = spec.scenario_settings
    assert spec.scenario == "server" and spec.batch_size == 4 and settings.max_batch == 4
    assert (settings.latency_bound_ms, settings.min_duration_ms, settings.max_duration_ms,
            settings.min_query_count, settings.batch_wait_ms) == (50, 2000, 30_000, 600, 0)
    single = make_spec(run_args("--backend", "tensorflow", "--scenario", "single-stream"))
    assert single.batch_size == 1 and single.scenario_settings.max_batch == 1
    assert make_spec(run_args("--backend", "tensorflow")).scenario == ""


def test_a_sweep_file_takes_scenarios_and_their_settings() -> None:
    values = {"models": ["mobilenet_v3_small"], "resolutions": [32], "backends": ["tensorflow"],
              "modes": ["graph"], "batch_sizes": [1, 4],
              "scenarios": ["single-stream", "offline", "server"], "latency_bound_ms": 50,
              "scenario_min_duration_s": 2, "batch_wait_ms": 1}
    grid = expand(build_config(file_values=values))
    found = {(s.scenario, s.batch_size) for s in grid.specs}
    assert found == {("single-stream", 1), ("offline", 1), ("offline", 4), ("server", 1),
                     ("server", 4)}
    # Spec's own refusal is the reason (batch 4 with single-stream)
    assert grid.skipped == {"single-stream issues one sample per query: batch size must be 1, "
                            "got 4": 1}
    server = next(s for s in grid.specs if s.scenario == "server" and s.batch_size == 4)
    assert server.scenario_settings == scenario_settings_for(
        "server", "tensorflow", 4, latency_bound_ms=50, min_duration_ms=2000, batch_wait_ms=1)
    flags = build_config(file_values=values, overrides={"latency_bound_ms": 20})
    assert dict(flags.parts[0].scenario_values)["latency_bound_ms"] == 20


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"scenarios": ["batch"]}, "unknown scenario 'batch'"),
        ({"scenarios": ["server"], "latency_bound_ms": 0}, "latency bound (ms) must be a "
         "positive number"),
        ({"latency_bound_ms": 50}, "latency_bound_ms sets a LoadGen scenario: give scenarios"),
        ({"scenarios": ["offline"], "batch_wait_ms": -1}, "batch wait (ms) must be a number >= 0"),
    ],
)
def test_bad_sweep_scenario_settings_are_one_line(values, message: str) -> None:
    with pytest.raises(UserError) as error:
        build_config(file_values={"models": ["mobilenet_v3_small"], **values})
    assert message in str(error.value)


def test_the_progress_line_shows_a_scenario_figure_with_its_unit() -> None:
    spec = scenario_spec("server", latency_bound_ms=50)
    outcome = ScenarioOutcome("server", 18.54, 4, 1, 2.0, "one at a time",
                              "shortened: 10 s vs MLPerf's 600 s", {"trials": []})
    record = Record(spec=spec, status=Status.OK, scenario=outcome, duration_s=3.0)
    stream = io.StringIO()
    progress = Progress(stream, total=1, tty=False)
    progress.record(record)
    assert ("ok  server 18.5 q/s within p99 50 ms [shortened: 10 s vs MLPerf's 600 s]"
            in stream.getvalue())
