"""MLPerf LoadGen scenarios: LoadGen issues the queries, a callable runs them.

The system under test is `run_batch(indices)`: it runs the model on the preloaded inputs at
those indices, synchronously (device sync included), and returns when the outputs exist. This
module knows no framework; the worker hands it the backend's compiled model as that callable.

    single-stream  one query at a time, batch 1; MLPerf's result is the p90 latency, with
                   LoadGen's early-stopping bound on it.
    offline        every query at once; the samples are run in batches of up to `max_batch`
                   on `concurrency` threads; the result is the samples/s LoadGen validates.
    server         Poisson arrivals at a target rate; dynamic batching (up to `max_batch`
                   samples, or fewer once the oldest has waited `batch_wait_ms`) on
                   `concurrency` threads; valid only while LoadGen's p99 stays within the
                   latency bound. `find_peak_server_rate` searches the highest such rate, each
                   tried rate a full LoadGen run.

Each run writes LoadGen's logs into its own folder; the result is parsed from the JSON lines
of `mlperf_log_detail.txt` (not the human summary, which is kept as text beside it).

MLPerf's own runs last at least 600 s (Offline: at least 24,576 samples); the defaults here
are shortened to fit a small machine, settable up to MLPerf's figures, and
`mlperf_shortfall` says by how much a run was shortened.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from xlabench.core.errors import UserError
from xlabench.core.scenario import (  # noqa: F401 (re-exported: the driver's vocabulary)
    DEFAULT_LATENCY_BOUND_MS,
    DEFAULT_MAX_DURATION_MS,
    DEFAULT_MIN_DURATION_MS,
    DEFAULT_MIN_QUERY_COUNT,
    Scenario,
    ScenarioSettings,
    parse_scenario,
)

#: The system under test: run the model on the preloaded inputs at these indices, synchronously.
RunBatch = Callable[[list[int]], None]

#: MLPerf's own minimum run duration (every scenario) and Offline sample count.
MLPERF_MIN_DURATION_MS = 600_000
MLPERF_OFFLINE_MIN_SAMPLES = 24_576

LOADGEN_INSTALL_HINT = "scenarios need MLPerf LoadGen: pip install 'xlabench[scenarios]'"

#: LoadGen sizes a run from an expected speed. Offline issues expected samples/s x duration
#: samples at once: too few and the run ends before its minimum duration (invalid), too many
#: and it runs longer. Single-stream stops at its minimum duration however many queries it
#: generated, so only too slow a guess hurts. A run that ended short is run again at the speed
#: LoadGen measured, made faster by this headroom, at most `MAX_RESIZED_RUNS` times.
EXPECTED_SPEED_HEADROOM = 1.5
MAX_RESIZED_RUNS = 2
#: Shortest single-stream latency LoadGen is told to expect (it pre-generates the schedule
#: from it: a tiny one only costs memory).
MIN_EXPECTED_LATENCY_S = 50e-6
#: Untimed then timed calls of `run_batch` that estimate a first expected speed.
PROBE_CALLS = 3

#: Percentiles kept in milliseconds (LoadGen logs these and more in nanoseconds).
_PERCENTILE_KEYS = {
    "p50_ms": "result_50.00_percentile_latency_ns",
    "p90_ms": "result_90.00_percentile_latency_ns",
    "p99_ms": "result_99.00_percentile_latency_ns",
}
#: Where each scenario logs its throughput, in samples/s.
_SAMPLES_PER_S_KEYS = (
    "result_samples_per_second",  # offline
    "result_completed_samples_per_sec",  # server
    "result_qps_with_loadgen_overhead",  # single-stream (1 sample per query)
)
_MLLOG_PREFIX = ":::MLLOG "
_EFFECTIVE_PREFIX = "effective_"


def mlperf_shortfall(settings: ScenarioSettings, scenario: Scenario) -> str:
    """How a run with these settings falls short of MLPerf's own minimums, or "" if it does not,
    e.g. "shortened: 10 s vs MLPerf's 600 s"."""
    parts = []
    if settings.min_duration_ms < MLPERF_MIN_DURATION_MS:
        parts.append(
            f"{settings.min_duration_ms / 1000:g} s vs MLPerf's {MLPERF_MIN_DURATION_MS / 1000:g} s"
        )
    samples = settings.query_count(scenario)
    if scenario is Scenario.OFFLINE and samples < MLPERF_OFFLINE_MIN_SAMPLES:
        parts.append(f"min {samples:,} samples vs MLPerf's {MLPERF_OFFLINE_MIN_SAMPLES:,}")
    return "shortened: " + ", ".join(parts) if parts else ""


@dataclass(frozen=True)
class ScenarioResult:
    """One LoadGen run as LoadGen summarised it; latencies in ms."""

    scenario: str
    valid: bool
    invalid_reason: str
    min_duration_met: bool
    early_stopping_met: bool
    early_stopping_text: str
    #: Single-stream: LoadGen's early-stopping estimate of the p90 (MLPerf's reported figure).
    early_stopping_p90_ms: float | None
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    samples_per_s: float
    query_count: int
    #: LoadGen's effective settings (keys without the "effective_" prefix).
    effective_settings: dict[str, Any]
    #: The settings this run was asked for (xlabench's, batching and threads included).
    settings: dict[str, Any]
    loadgen_version: str
    loadgen_errors: tuple[str, ...]
    summary_text: str
    shortfall: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioResult:
        return cls(**{**data, "loadgen_errors": tuple(data["loadgen_errors"])})


@dataclass(frozen=True)
class ServerTrial:
    """One tried Server rate: a full LoadGen run, and whether it met the latency bound."""

    rate_per_s: float
    passed: bool  # LoadGen called the run valid and its p99 is within the bound
    result: ScenarioResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate_per_s": self.rate_per_s,
            "passed": self.passed,
            "result": self.result.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerTrial:
        return cls(data["rate_per_s"], data["passed"], ScenarioResult.from_dict(data["result"]))


@dataclass(frozen=True)
class ServerSearch:
    """The highest Server rate found within a p99 bound, and every rate tried on the way."""

    latency_bound_ms: float
    start_rate_per_s: float
    #: The single-stream run the start rate was estimated from (None if it was given).
    estimate: ScenarioResult | None
    trials: tuple[ServerTrial, ...]
    #: The lowest rate tried: below it no run can be valid within the max duration
    #: (`lowest_valid_server_rate`).
    floor_rate_per_s: float = 0.0

    @property
    def peak(self) -> ServerTrial | None:
        """The highest rate that passed (None if none did)."""
        passed = [trial for trial in self.trials if trial.passed]
        return max(passed, key=lambda trial: trial.rate_per_s, default=None)

    @property
    def failing_above(self) -> ServerTrial | None:
        """The lowest failing rate above the peak: with the peak, the bracket."""
        floor = self.peak.rate_per_s if self.peak else 0.0
        failed = [t for t in self.trials if not t.passed and t.rate_per_s > floor]
        return min(failed, key=lambda trial: trial.rate_per_s, default=None)

    def to_dict(self) -> dict[str, Any]:
        peak, failing = self.peak, self.failing_above
        return {
            "latency_bound_ms": self.latency_bound_ms,
            "start_rate_per_s": self.start_rate_per_s,
            "estimate": self.estimate.to_dict() if self.estimate else None,
            "trials": [trial.to_dict() for trial in self.trials],
            "floor_rate_per_s": self.floor_rate_per_s,
            # derived, for readers of the stored record; from_dict recomputes them
            "peak_rate_per_s": peak.rate_per_s if peak else None,
            "failing_rate_per_s": failing.rate_per_s if failing else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerSearch:
        estimate = data["estimate"]
        return cls(
            latency_bound_ms=data["latency_bound_ms"],
            start_rate_per_s=data["start_rate_per_s"],
            estimate=ScenarioResult.from_dict(estimate) if estimate else None,
            trials=tuple(ServerTrial.from_dict(trial) for trial in data["trials"]),
            floor_rate_per_s=data.get("floor_rate_per_s", 0.0),
        )


def load_loadgen() -> ModuleType:
    """The `mlperf_loadgen` module, or a one-line UserError saying how to install it."""
    try:
        return importlib.import_module("mlperf_loadgen")
    except ImportError:
        raise UserError(LOADGEN_INSTALL_HINT) from None


class _BatchingSut:
    """LoadGen's system under test: queued samples are taken by `concurrency` threads, each
    running up to `max_batch` at once, and every sample is completed when its batch returns.

    A thread that finds fewer than `max_batch` samples waits for more until the oldest has
    waited `batch_wait_s` (dynamic batching; 0 runs what is there). One thread assembles a
    batch at a time, so that idle threads do not split the arrivals into small batches.
    After `run_batch` raises, the remaining samples are completed unrun so that LoadGen
    finishes; the error is re-raised when the run ends.
    """

    def __init__(
        self,
        loadgen: ModuleType,
        run_batch: RunBatch,
        max_batch: int,
        batch_wait_s: float,
        concurrency: int,
    ) -> None:
        self._loadgen = loadgen
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._batch_wait_s = batch_wait_s
        self._pending: deque[tuple[int, int, float]] = deque()  # (id, index, arrival)
        self._ready = threading.Condition()
        self._assembling = threading.Lock()
        self._closed = False
        self.error: Exception | None = None
        self._threads = [
            threading.Thread(target=self._serve, name=f"xlabench-sut-{i}", daemon=True)
            for i in range(concurrency)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()

    def issue_queries(self, samples: list[Any]) -> None:
        """LoadGen's issue callback: queue and return (LoadGen's issue thread must not block)."""
        arrival_s = time.monotonic()
        with self._ready:
            self._pending.extend((sample.id, sample.index, arrival_s) for sample in samples)
            self._ready.notify_all()

    def flush_queries(self) -> None:
        """Nothing is held back: a waiting batch leaves at its own deadline."""

    def _take_batch(self) -> list[tuple[int, int, float]] | None:
        with self._assembling, self._ready:
            while not self._pending:
                if self._closed:
                    return None
                self._ready.wait()
            batch = [self._pending.popleft()]
            deadline_s = batch[0][2] + self._batch_wait_s
            while len(batch) < self._max_batch:
                if self._pending:
                    batch.append(self._pending.popleft())
                    continue
                left_s = deadline_s - time.monotonic()
                if left_s <= 0 or self._closed:
                    break
                self._ready.wait(left_s)
            return batch

    def _serve(self) -> None:
        while (batch := self._take_batch()) is not None:
            if self.error is None:
                try:
                    self._run_batch([index for _, index, _ in batch])
                except Exception as error:  # noqa: BLE001 - re-raised after LoadGen finishes
                    self.error = error
            responses = [self._loadgen.QuerySampleResponse(id_, 0, 0) for id_, _, _ in batch]
            self._loadgen.QuerySamplesComplete(responses)


def read_detail_log(path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The values of LoadGen's `:::MLLOG {json}` lines by key (the last one wins), and the
    messages of those it flagged as errors."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    for line in path.read_text().splitlines():
        if not line.startswith(_MLLOG_PREFIX):
            continue
        entry = json.loads(line[len(_MLLOG_PREFIX) :])
        values[entry["key"]] = entry["value"]
        if entry.get("metadata", {}).get("is_error"):
            errors.append(f"{entry['key']}: {entry['value']}")
    return values, tuple(errors)


def _ms(nanoseconds: float | None) -> float:
    return float("nan") if nanoseconds is None else nanoseconds / 1e6


def _parse_result(outdir: Path, scenario: Scenario, settings: ScenarioSettings) -> ScenarioResult:
    values, errors = read_detail_log(outdir / "mlperf_log_detail.txt")
    samples_per_s = next((values[key] for key in _SAMPLES_PER_S_KEYS if key in values), 0.0)
    early_p90_ns = values.get("early_stopping_latency_ss")
    return ScenarioResult(
        scenario=scenario.value,
        valid=values.get("result_validity") == "VALID",
        invalid_reason=str(values.get("result_invalid_reason", "")).strip(),
        min_duration_met=bool(values.get("result_min_duration_met", False)),
        early_stopping_met=bool(values.get("early_stopping_met", False)),
        early_stopping_text=" ".join(str(values.get("early_stopping_result", "")).split()),
        early_stopping_p90_ms=None if early_p90_ns is None else _ms(early_p90_ns),
        **{field: _ms(values.get(key)) for field, key in _PERCENTILE_KEYS.items()},
        mean_ms=_ms(values.get("result_mean_latency_ns")),
        samples_per_s=float(samples_per_s),
        query_count=int(values.get("result_query_count", 0)),
        effective_settings={
            key.removeprefix(_EFFECTIVE_PREFIX): value
            for key, value in values.items()
            if key.startswith(_EFFECTIVE_PREFIX)
        },
        settings=dataclasses.asdict(settings),
        loadgen_version=str(values.get("loadgen_version", "")),
        loadgen_errors=errors,
        summary_text=(outdir / "mlperf_log_summary.txt").read_text(),
        shortfall=mlperf_shortfall(settings, scenario),
    )


def _probe_batch_s(run_batch: RunBatch, batch: list[int]) -> float:
    """The fastest of a few calls of `run_batch(batch)` after an untimed one: a first guess
    of the speed LoadGen sizes its run by (the run itself re-measures it)."""
    run_batch(batch)
    best_s = float("inf")
    for _ in range(PROBE_CALLS):
        start_s = time.perf_counter()
        run_batch(batch)
        best_s = min(best_s, time.perf_counter() - start_s)
    return max(best_s, 1e-9)


def _test_settings(
    loadgen: ModuleType, settings: ScenarioSettings, scenario: Scenario, expected: float
) -> Any:
    """LoadGen's TestSettings; `expected` is the single-stream latency (s) or the offline
    samples/s LoadGen sizes the run by (unused by server, which runs at its set rate)."""
    test = loadgen.TestSettings()
    test.scenario = {
        Scenario.SINGLE_STREAM: loadgen.TestScenario.SingleStream,
        Scenario.OFFLINE: loadgen.TestScenario.Offline,
        Scenario.SERVER: loadgen.TestScenario.Server,
    }[scenario]
    test.mode = loadgen.TestMode.PerformanceOnly
    test.min_duration_ms = settings.min_duration_ms
    test.max_duration_ms = settings.max_duration_ms
    test.min_query_count = settings.query_count(scenario)
    for attribute, seed in (
        ("qsl_rng_seed", settings.qsl_seed),
        ("sample_index_rng_seed", settings.sample_index_seed),
        ("schedule_rng_seed", settings.schedule_seed),
    ):
        if seed is not None:
            setattr(test, attribute, seed)
    if scenario is Scenario.SINGLE_STREAM:
        test.single_stream_expected_latency_ns = int(max(expected, MIN_EXPECTED_LATENCY_S) * 1e9)
    elif scenario is Scenario.OFFLINE:
        test.offline_expected_qps = expected
    else:
        test.server_target_qps = settings.server_rate_per_s
        test.server_target_latency_ns = int(settings.latency_bound_ms * 1e6)
    return test


def _start_test(
    loadgen: ModuleType,
    run_batch: RunBatch,
    sample_count: int,
    settings: ScenarioSettings,
    scenario: Scenario,
    expected: float,
    outdir: Path,
) -> ScenarioResult:
    """One LoadGen run with its logs in `outdir`."""
    single = scenario is Scenario.SINGLE_STREAM
    sut = _BatchingSut(
        loadgen,
        run_batch,
        max_batch=1 if single else settings.max_batch,
        batch_wait_s=settings.batch_wait_ms / 1000 if scenario is Scenario.SERVER else 0.0,
        concurrency=1 if single else settings.concurrency,
    )
    outdir.mkdir(parents=True, exist_ok=True)
    output = loadgen.LogOutputSettings()
    output.outdir = str(outdir)
    output.copy_summary_to_stdout = False
    log = loadgen.LogSettings()
    log.log_output = output
    log.enable_trace = False  # a per-query trace: megabytes at a few thousand queries
    # The inputs are preloaded by the caller: LoadGen's load/unload have nothing to do.
    qsl = loadgen.ConstructQSL(sample_count, sample_count, _no_op, _no_op)
    handle = loadgen.ConstructSUT(sut.issue_queries, sut.flush_queries)
    sut.start()
    try:
        loadgen.StartTestWithLogSettings(
            handle, qsl, _test_settings(loadgen, settings, scenario, expected), log
        )
    finally:
        sut.stop()
        loadgen.DestroySUT(handle)
        loadgen.DestroyQSL(qsl)
    if sut.error is not None:
        raise sut.error
    return _parse_result(outdir, scenario, settings)


def _no_op(_indices: list[int]) -> None:
    return None


def _first_expected(
    run_batch: RunBatch, sample_count: int, settings: ScenarioSettings, scenario: Scenario
) -> float:
    """The single-stream latency (s) or offline samples/s LoadGen first sizes a run by.

    Offline: one batch at a time, not `concurrency` (threads may not scale on a CPU, and a
    run that ends short is resized, while one sized too large just runs long)."""
    if scenario is Scenario.SINGLE_STREAM:
        return _probe_batch_s(run_batch, [0]) / EXPECTED_SPEED_HEADROOM
    if scenario is Scenario.OFFLINE:
        if settings.offline_expected_samples_per_s is not None:
            return settings.offline_expected_samples_per_s
        batch = [i % sample_count for i in range(settings.max_batch)]
        return settings.max_batch / _probe_batch_s(run_batch, batch)
    return 0.0


def _resized_expected(result: ScenarioResult, scenario: Scenario) -> float | None:
    """A larger run after one that ended before its minimum duration because LoadGen expected
    the system to be slower than it was; None when that was not why it was invalid."""
    if result.min_duration_met or result.samples_per_s <= 0:
        return None
    if scenario is Scenario.SINGLE_STREAM:
        return 1 / result.samples_per_s / EXPECTED_SPEED_HEADROOM
    if scenario is Scenario.OFFLINE:
        return result.samples_per_s * EXPECTED_SPEED_HEADROOM
    return None


def run_scenario(
    run_batch: RunBatch,
    sample_count: int,
    settings: ScenarioSettings,
    scenario: Scenario | str,
    outdir: Path,
) -> ScenarioResult:
    """Run one LoadGen scenario on `run_batch` over `sample_count` preloaded inputs.

    Single-stream and offline are sized by a first guess of the system's speed (a few timed
    calls, or `offline_expected_samples_per_s`); a run that ended short of its minimum duration
    because the guess was too slow is run again at the speed LoadGen measured (into the same
    `outdir`: the result is the last run's).
    """
    scenario = parse_scenario(scenario) if isinstance(scenario, str) else scenario
    if sample_count < 1:
        raise UserError(f"a scenario needs at least 1 preloaded sample, got {sample_count}")
    loadgen = load_loadgen()
    expected = _first_expected(run_batch, sample_count, settings, scenario)
    result = _start_test(loadgen, run_batch, sample_count, settings, scenario, expected, outdir)
    for _ in range(MAX_RESIZED_RUNS):
        resized = _resized_expected(result, scenario)
        if resized is None:
            break
        result = _start_test(loadgen, run_batch, sample_count, settings, scenario, resized, outdir)
    return result


#: The Server search starts at this fraction of the single-stream rate x max batch x threads
#: (what perfect batching would reach), then doubles or halves to a bracket.
START_RATE_FRACTION = 0.5
DEFAULT_SEARCH_PRECISION = 0.1
DEFAULT_SEARCH_MAX_RUNS = 10


#: A Server run lasts at most its max duration, and LoadGen calls it invalid unless it issued its
#: minimum query count by then: rates below count / max duration, with this headroom (LoadGen
#: stops a little short of the count at exactly that rate), cannot make a valid run.
SERVER_QUERY_HEADROOM = 1.1


def lowest_valid_server_rate(settings: ScenarioSettings) -> float:
    """The lowest Server rate that can issue the minimum query count within the max duration."""
    queries = settings.query_count(Scenario.SERVER)
    return queries / (settings.max_duration_ms / 1000) * SERVER_QUERY_HEADROOM


def _search_rates(
    passes: Callable[[float], bool],
    start_rate_per_s: float,
    precision: float,
    max_runs: int,
    floor_rate_per_s: float = 0.0,
) -> None:
    """Try rates with `passes` (one full run each): double (or halve) from the start until one
    rate passes and another fails, then bisect between them until the failing rate is within
    `precision` (relative) of the passing one; at most `max_runs` rates. Never below
    `floor_rate_per_s`: once it fails, the search ends with no rate passed."""
    passing: float | None = None
    failing: float | None = None
    rate_per_s = max(start_rate_per_s, floor_rate_per_s)
    for _ in range(max_runs):
        if passing is not None and failing is not None:
            if (failing - passing) / passing <= precision:
                return
            rate_per_s = (passing + failing) / 2
        if passes(rate_per_s):
            passing = rate_per_s
            rate_per_s *= 2
        elif rate_per_s <= floor_rate_per_s:
            return
        else:
            failing = rate_per_s
            rate_per_s = max(rate_per_s / 2, floor_rate_per_s)


#: Slack on each LoadGen run's max duration: LoadGen stops issuing then, but waits for what it
#: issued; an overloaded server trial (or an offline run sized too large) completes late.
RUN_DURATION_SLACK = 2.0


def max_scenario_s(settings: ScenarioSettings, scenario: Scenario | str) -> float:
    """The longest a worker's LoadGen runs of `scenario` may take, in seconds: every run it may
    start (a resized run; the server's estimate and each tried rate) at its max duration,
    with slack. The one place this is computed (runner.isolate adds it to the deadline)."""
    scenario = parse_scenario(scenario) if isinstance(scenario, str) else scenario
    runs = 1 + MAX_RESIZED_RUNS
    if scenario is Scenario.SERVER:
        runs += DEFAULT_SEARCH_MAX_RUNS
    return runs * settings.max_duration_ms / 1000 * RUN_DURATION_SLACK


def find_peak_server_rate(
    run_batch: RunBatch,
    sample_count: int,
    settings: ScenarioSettings,
    latency_bound_ms: float,
    outdir: Path,
    *,
    start_rate_per_s: float | None = None,
    precision: float = DEFAULT_SEARCH_PRECISION,
    max_runs: int = DEFAULT_SEARCH_MAX_RUNS,
) -> ServerSearch:
    """The highest Server rate at which LoadGen finds the run valid with its p99 within
    `latency_bound_ms`, each tried rate a full LoadGen run (in `outdir/rate_<r>`).

    Without `start_rate_per_s` a single-stream run (in `outdir/estimate`) estimates it.
    """
    settings = dataclasses.replace(settings, latency_bound_ms=latency_bound_ms)
    if not 0 < precision < 1:
        raise UserError(f"server search precision must be between 0 and 1, got {precision}")
    if max_runs < 2:
        raise UserError(f"server search needs at least 2 runs to bracket a rate, got {max_runs}")
    if start_rate_per_s is not None and start_rate_per_s <= 0:
        raise UserError(f"server start rate must be > 0, got {start_rate_per_s}")
    estimate = None
    if start_rate_per_s is None:
        estimate = run_scenario(
            run_batch, sample_count, settings, Scenario.SINGLE_STREAM, outdir / "estimate"
        )
        parallel_batches = settings.max_batch * settings.concurrency
        start_rate_per_s = estimate.samples_per_s * parallel_batches * START_RATE_FRACTION
    trials: list[ServerTrial] = []

    def passes(rate_per_s: float) -> bool:
        result = run_scenario(
            run_batch,
            sample_count,
            dataclasses.replace(settings, server_rate_per_s=rate_per_s),
            Scenario.SERVER,
            outdir / f"rate_{rate_per_s:.6g}",
        )
        passed = result.valid and result.p99_ms <= latency_bound_ms
        trials.append(ServerTrial(rate_per_s, passed, result))
        return passed

    floor_rate_per_s = lowest_valid_server_rate(settings)
    _search_rates(passes, start_rate_per_s, precision, max_runs, floor_rate_per_s)
    return ServerSearch(latency_bound_ms, start_rate_per_s, estimate, tuple(trials),
                        floor_rate_per_s)
