"""LoadGen scenarios as a spec and a record see them: which scenario, its settings, and what a
run of it came to. Standard library only (the spec and the record are core); the LoadGen
driver itself is `xlabench.measure.scenarios`.

A scenario result's figure is MLPerf's: single-stream, the p90 latency (LoadGen's
early-stopping estimate of it); offline, the samples/s LoadGen validated; server, the highest
Poisson arrival rate whose p99 stayed within the latency bound. A result combines its processes
as rates (higher is faster), by the same function as every other result (`measure.combine`):
`figure_to_rate` and `rate_to_figure` are the one conversion between the two.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from xlabench.core.backends import BY_NAME
from xlabench.core.errors import UserError

#: Shortened defaults for a 2-core machine: seconds, not MLPerf's ten minutes.
DEFAULT_MIN_DURATION_MS = 10_000
DEFAULT_MAX_DURATION_MS = 60_000
#: LoadGen's own default latency target for the Server scenario (its p99).
DEFAULT_LATENCY_BOUND_MS = 100.0
#: Server: how long the oldest waiting sample waits for a batch to fill (`--batch-wait-ms`).
DEFAULT_BATCH_WAIT_MS = 2.0


class Scenario(enum.StrEnum):
    SINGLE_STREAM = "single-stream"
    OFFLINE = "offline"
    SERVER = "server"


#: A scenario's minimum query count (Offline: samples) when the settings leave it unset.
#: Server: LoadGen's early stopping judges a p99 only after about 460 queries (with none over
#: the bound; more with some), so a shorter Server run is never valid.
DEFAULT_MIN_QUERY_COUNT = {Scenario.SINGLE_STREAM: 100, Scenario.OFFLINE: 1, Scenario.SERVER: 500}


def parse_scenario(name: str) -> Scenario:
    """The scenario called `name`, or a one-line UserError naming the choices."""
    try:
        return Scenario(name)
    except ValueError:
        choices = ", ".join(scenario.value for scenario in Scenario)
        raise UserError(f"unknown scenario {name!r}: choose one of {choices}") from None


@dataclass(frozen=True)
class ScenarioSettings:
    """How LoadGen runs a scenario and how the system under test takes its queries."""

    min_duration_ms: int = DEFAULT_MIN_DURATION_MS
    #: LoadGen stops issuing after this (a run that has not met its minimums is invalid).
    max_duration_ms: int = DEFAULT_MAX_DURATION_MS
    #: None: the scenario's `DEFAULT_MIN_QUERY_COUNT`. Offline counts samples.
    min_query_count: int | None = None
    #: Server: the p99 latency a valid run stays within.
    latency_bound_ms: float = DEFAULT_LATENCY_BOUND_MS
    #: Server: the Poisson arrival rate.
    server_rate_per_s: float = 10.0
    #: Offline and server: the largest batch `run_batch` gets (1 when the backend takes none).
    max_batch: int = 1
    #: Server: how long the oldest waiting sample waits for a batch to fill.
    batch_wait_ms: float = 0.0
    #: Offline and server: threads that call `run_batch` at once.
    concurrency: int = 1
    #: Offline: the samples/s LoadGen sizes the run by; None: estimated from `run_batch`.
    offline_expected_samples_per_s: float | None = None
    #: LoadGen's random seeds; None keeps LoadGen's own.
    qsl_seed: int | None = None
    sample_index_seed: int | None = None
    schedule_seed: int | None = None

    def __post_init__(self) -> None:
        positive = {
            "min duration (ms)": self.min_duration_ms,
            "max duration (ms)": self.max_duration_ms,
            "latency bound (ms)": self.latency_bound_ms,
            "server rate (/s)": self.server_rate_per_s,
            "max batch": self.max_batch,
            "concurrency": self.concurrency,
        }
        if self.min_query_count is not None:
            positive["min query count"] = self.min_query_count
        if self.offline_expected_samples_per_s is not None:
            positive["offline expected samples/s"] = self.offline_expected_samples_per_s
        for name, value in positive.items():
            if not value > 0:
                raise UserError(f"scenario {name} must be > 0, got {value}")
        if self.batch_wait_ms < 0:
            raise UserError(f"scenario batch wait (ms) must be >= 0, got {self.batch_wait_ms}")
        if self.max_duration_ms < self.min_duration_ms:
            raise UserError(
                f"scenario max duration ({self.max_duration_ms} ms) is below its min duration "
                f"({self.min_duration_ms} ms)"
            )

    def query_count(self, scenario: Scenario) -> int:
        """The minimum query count (Offline: samples) a run of `scenario` asks for."""
        if self.min_query_count is not None:
            return self.min_query_count
        return DEFAULT_MIN_QUERY_COUNT[scenario]


@dataclass(frozen=True)
class FigureKind:
    """What a scenario's figure is: its name, unit and direction."""

    name: str
    unit: str
    higher_is_better: bool


FIGURES: dict[Scenario, FigureKind] = {
    Scenario.SINGLE_STREAM: FigureKind("p90 latency", "ms", higher_is_better=False),
    Scenario.OFFLINE: FigureKind("offline throughput", "samples/s", higher_is_better=True),
    Scenario.SERVER: FigureKind("server rate within the p99 bound", "queries/s",
                                higher_is_better=True),
}


def figure_to_rate(scenario: str, figure: float) -> float:
    """A scenario figure as a rate per second, higher is faster (a p90 of 20 ms: 50/s)."""
    return 1000.0 / figure if scenario == Scenario.SINGLE_STREAM else figure


def rate_to_figure(scenario: str, rate_per_s: float) -> float:
    """The inverse of `figure_to_rate` (a combined rate back in the figure's unit)."""
    return 1000.0 / rate_per_s if scenario == Scenario.SINGLE_STREAM else rate_per_s


def scenario_settings_for(
    scenario: str,
    backend: str,
    batch_size: int,
    *,
    min_duration_ms: int = DEFAULT_MIN_DURATION_MS,
    max_duration_ms: int = DEFAULT_MAX_DURATION_MS,
    min_query_count: int | None = None,
    latency_bound_ms: float = DEFAULT_LATENCY_BOUND_MS,
    batch_wait_ms: float = DEFAULT_BATCH_WAIT_MS,
) -> ScenarioSettings:
    """A spec's scenario settings: the user's durations and bound, the batch size as the
    largest batch, and the backend's concurrency (core/backends.py). Settings the scenario
    does not use keep their defaults, so they never make two specs differ: the latency bound
    and the batch wait are the server's alone."""
    parsed = parse_scenario(scenario)
    server = parsed is Scenario.SERVER
    return ScenarioSettings(
        min_duration_ms=min_duration_ms,
        max_duration_ms=max_duration_ms,
        min_query_count=min_query_count,
        latency_bound_ms=latency_bound_ms if server else DEFAULT_LATENCY_BOUND_MS,
        max_batch=batch_size,
        batch_wait_ms=batch_wait_ms if server else 0.0,
        concurrency=1 if parsed is Scenario.SINGLE_STREAM else backend_concurrency(backend),
    )


def backend_concurrency(backend: str) -> int:
    """Query batches `backend` runs at once in offline and server (1 for an unknown name:
    the spec reports that one)."""
    described = BY_NAME.get(backend)
    return described.scenario_concurrency if described else 1


def describe_figure(scenario: str, figure: float, latency_bound_ms: float) -> str:
    """A scenario figure with its unit, for people: "p90 12.3 ms", "41.2 samples/s",
    "18.5 q/s within p99 50 ms"."""
    parsed = Scenario(scenario)
    if parsed is Scenario.SINGLE_STREAM:
        return f"p90 {figure:.3g} ms"
    if parsed is Scenario.OFFLINE:
        return f"{figure:.3g} samples/s"
    return f"{figure:.3g} q/s within p99 {latency_bound_ms:g} ms"


@dataclass(frozen=True)
class ScenarioOutcome:
    """What one worker process's LoadGen run (server: search) came to, stored in its record.

    Attributes:
        scenario: the scenario's name.
        figure: in `FIGURES[scenario].unit`; see the module docstring. A run LoadGen called
            invalid (server: no rate passed) makes a failed record that still holds its
            outcome, for inspection: the figure LoadGen measured (server: 0.0, no rate
            passed). Readers take figures from ok records only.
        max_batch / concurrency / batch_wait_ms: how the system under test took queries.
        sut: what the backend used for batching and concurrency, in words.
        shortfall: how the run was shortened against MLPerf's own minimums ("" if it was not).
        loadgen: LoadGen's summary as the driver parsed it: `ScenarioResult.to_dict()`
            (single-stream, offline) or `ServerSearch.to_dict()` (server, every tried rate).
    """

    scenario: str
    figure: float
    max_batch: int
    concurrency: int
    batch_wait_ms: float
    sut: str
    shortfall: str
    loadgen: dict[str, Any]

    @property
    def kind(self) -> FigureKind:
        return FIGURES[Scenario(self.scenario)]

    @property
    def rate_per_s(self) -> float:
        return figure_to_rate(self.scenario, self.figure)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
