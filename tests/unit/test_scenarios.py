"""LoadGen scenarios driven for real on a tiny NumPy system under test (short runs).

Nothing here asserts a speed: the machine is shared. The Server search compares two systems
whose capacities differ by a large factor (one sleeps 20 ms per batch).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from xlabench.core.errors import UserError
from xlabench.measure import scenarios
from xlabench.measure.scenarios import (
    LOADGEN_INSTALL_HINT,
    Scenario,
    ScenarioResult,
    ScenarioSettings,
    ServerSearch,
    find_peak_server_rate,
    parse_scenario,
    read_detail_log,
    run_scenario,
)

SAMPLE_COUNT = 32
#: LoadGen's name for each scenario in its effective settings.
LOADGEN_SCENARIO_NAMES = {
    Scenario.SINGLE_STREAM: "SingleStream",
    Scenario.OFFLINE: "Offline",
    Scenario.SERVER: "Server",
}


class TinySut:
    """A 64x64 matmul per sample, plus `sleep_s` per batch; remembers every batch size."""

    def __init__(self, sleep_s: float = 0.0) -> None:
        rng = np.random.default_rng(0)
        self.inputs = rng.random((SAMPLE_COUNT, 64), dtype=np.float32)
        self.weights = rng.random((64, 64), dtype=np.float32)
        self.sleep_s = sleep_s
        self.batch_sizes: list[int] = []

    def __call__(self, indices: list[int]) -> None:
        self.batch_sizes.append(len(indices))
        _ = self.inputs[indices] @ self.weights
        if self.sleep_s:
            time.sleep(self.sleep_s)


@pytest.fixture
def loadgen() -> object:
    return pytest.importorskip("mlperf_loadgen")


def json_round_trip(data: dict) -> dict:
    return json.loads(json.dumps(data))


# Generous bounds: on a busy machine a thread can stall for tens of milliseconds.
RUN_SETTINGS = {
    Scenario.SINGLE_STREAM: ScenarioSettings(min_duration_ms=1000, max_duration_ms=10_000),
    Scenario.OFFLINE: ScenarioSettings(
        min_duration_ms=1000, max_duration_ms=10_000, max_batch=8, concurrency=2
    ),
    Scenario.SERVER: ScenarioSettings(
        min_duration_ms=1000,
        max_duration_ms=10_000,
        server_rate_per_s=300,
        latency_bound_ms=1000,
        max_batch=8,
        batch_wait_ms=2,
        concurrency=2,
    ),
}


@pytest.mark.parametrize("scenario", list(Scenario))
def test_each_scenario_returns_loadgen_summary(
    loadgen: object, scenario: Scenario, tmp_path: Path
) -> None:
    sut = TinySut(sleep_s=0.0005)
    settings = RUN_SETTINGS[scenario]
    result = run_scenario(sut, SAMPLE_COUNT, settings, scenario, tmp_path)

    assert result.valid, result.invalid_reason or result.early_stopping_text
    assert result.scenario == scenario.value
    assert result.effective_settings["scenario"] == LOADGEN_SCENARIO_NAMES[scenario]
    assert result.effective_settings["min_duration_ms"] == settings.min_duration_ms
    assert 0 < result.p50_ms <= result.p90_ms <= result.p99_ms
    assert result.samples_per_s > 0 and result.query_count > 0
    assert result.loadgen_version.startswith("6.0.17")
    assert result.loadgen_errors == ()
    assert "MLPerf Results Summary" in result.summary_text
    assert "vs MLPerf's 600 s" in result.shortfall
    assert result.settings["max_batch"] == settings.max_batch
    assert ScenarioResult.from_dict(json_round_trip(result.to_dict())) == result

    assert max(sut.batch_sizes) <= settings.max_batch
    if scenario is Scenario.SINGLE_STREAM:
        assert set(sut.batch_sizes) == {1}
        assert result.early_stopping_met and result.early_stopping_p90_ms is not None
    if scenario is Scenario.OFFLINE:
        # all samples arrive at once: full batches (the probe's calls included)
        assert max(sut.batch_sizes) == settings.max_batch
        assert "24,576" in result.shortfall
    if scenario is Scenario.SERVER:
        assert result.effective_settings["target_latency_ns"] == 1000 * 1_000_000


def test_server_search_finds_a_lower_rate_on_a_slowed_system(loadgen: object, tmp_path: Path):
    # One thread, batches of up to 8: the slowed system cannot serve more than 8 / 20 ms =
    # 400 samples/s, the plain one thousands. Runs of >= 500 queries (early stopping's need).
    settings = ScenarioSettings(
        min_duration_ms=500, max_duration_ms=10_000, max_batch=8, batch_wait_ms=2
    )
    searches = {
        name: find_peak_server_rate(
            TinySut(sleep_s), SAMPLE_COUNT, settings, 100.0, tmp_path / name, max_runs=8
        )
        for name, sleep_s in (("slowed", 0.02), ("plain", 0.0))
    }
    for search in searches.values():
        assert search.peak is not None, [(t.rate_per_s, t.result.p99_ms) for t in search.trials]
        assert search.peak.result.valid and search.peak.result.p99_ms <= 100.0
        assert 0 < len(search.trials) <= 8
        assert search.estimate is not None and search.estimate.scenario == "single-stream"
        failing = search.failing_above
        if failing is not None:
            assert failing.rate_per_s > search.peak.rate_per_s and not failing.passed
        assert ServerSearch.from_dict(json_round_trip(search.to_dict())) == search
    assert searches["slowed"].peak.rate_per_s < searches["plain"].peak.rate_per_s


def test_search_brackets_then_bisects_to_the_precision() -> None:
    tried: list[float] = []

    def passes(rate_per_s: float) -> bool:
        tried.append(rate_per_s)
        return rate_per_s <= 37.0

    scenarios._search_rates(passes, 10.0, precision=0.1, max_runs=20)
    assert tried[:3] == [10.0, 20.0, 40.0]  # doubled until one failed
    passing = max(rate for rate in tried if rate <= 37.0)
    failing = min(rate for rate in tried if rate > 37.0)
    assert (failing - passing) / passing <= 0.1

    tried.clear()
    scenarios._search_rates(passes, 160.0, precision=0.1, max_runs=3)
    assert tried == [160.0, 80.0, 40.0]  # halved, and stopped at the run limit


def test_an_error_in_the_system_under_test_ends_the_run_and_is_raised(
    loadgen: object, tmp_path: Path
) -> None:
    def broken(indices: list[int]) -> None:
        raise RuntimeError("model failed")

    settings = ScenarioSettings(min_duration_ms=200, max_duration_ms=1000)
    with pytest.raises(RuntimeError, match="model failed"):
        run_scenario(broken, SAMPLE_COUNT, settings, Scenario.OFFLINE, tmp_path)


def test_detail_log_lines_are_parsed_by_key(tmp_path: Path) -> None:
    log = tmp_path / "mlperf_log_detail.txt"
    lines = [
        {"key": "result_validity", "value": "VALID", "metadata": {"is_error": False}},
        {"key": "error_invalid_config", "value": "bad", "metadata": {"is_error": True}},
    ]
    log.write_text("noise\n" + "".join(f":::MLLOG {json.dumps(line)}\n" for line in lines))
    values, errors = read_detail_log(log)
    assert values == {"result_validity": "VALID", "error_invalid_config": "bad"}
    assert errors == ("error_invalid_config: bad",)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: parse_scenario("multi-stream"), "unknown scenario 'multi-stream'"),
        (lambda: ScenarioSettings(latency_bound_ms=0), "latency bound (ms) must be > 0"),
        (lambda: ScenarioSettings(max_batch=0), "max batch must be > 0"),
        (lambda: ScenarioSettings(batch_wait_ms=-1), "batch wait (ms) must be >= 0"),
        (lambda: ScenarioSettings(min_duration_ms=5000, max_duration_ms=1000), "below its min"),
        (
            lambda: find_peak_server_rate(TinySut(), SAMPLE_COUNT, ScenarioSettings(), -5, Path()),
            "latency bound (ms) must be > 0",
        ),
        (
            lambda: run_scenario(TinySut(), SAMPLE_COUNT, ScenarioSettings(), "batch", Path()),
            "unknown scenario 'batch'",
        ),
    ],
)
def test_bad_input_is_one_line(make, message: str) -> None:
    with pytest.raises(UserError) as raised:
        make()
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_missing_loadgen_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "mlperf_loadgen", None)  # import raises ImportError
    with pytest.raises(UserError) as raised:
        run_scenario(TinySut(), SAMPLE_COUNT, ScenarioSettings(), Scenario.OFFLINE, tmp_path)
    assert str(raised.value) == LOADGEN_INSTALL_HINT
