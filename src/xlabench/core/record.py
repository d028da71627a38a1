"""What came out: a frozen record of one benchmark run, successful or not."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from xlabench.core.errors import Status, one_line
from xlabench.core.scenario import ScenarioOutcome
from xlabench.core.spec import Spec


@dataclass(frozen=True)
class Throughput:
    """Throughput statistics; every number is derived from `sample_s` and `steps_per_sample`.

    Samples are pipelined: each one runs `steps_per_sample` steps back to back and then waits
    for the device (sync), so they measure sustained throughput, not single-batch latency.
    Imported numbers (published without samples) have no CI: those fields are None.
    """

    median_sps: float
    ci_low_sps: float | None
    ci_high_sps: float | None
    ci_confidence: float | None  # the confidence the order-statistic interval achieves
    rel_ci_halfwidth: float | None  # max distance of the CI bounds from the median, relative
    target_met: bool
    steps_per_sample: int
    sample_s: tuple[float, ...]  # raw: wall seconds of each sample, sync included
    batch_time_ms_median: float


@dataclass(frozen=True)
class Latency:
    """Single-batch latency: each step is synced on its own before the next starts."""

    p50_ms: float
    p90_ms: float
    p99_ms: float
    step_s: tuple[float, ...]  # raw


@dataclass(frozen=True)
class Warmup:
    """How the run got to steady state. `first_call_s` includes trace + compile + autotune."""

    first_call_s: float
    compile_s: float  # first call minus a steady batch: what compiling/tracing cost
    steps: int
    seconds: float
    compile_stages_s: dict[str, float] = field(default_factory=dict)  # e.g. jax trace/lower


@dataclass(frozen=True)
class Parity:
    """Compiled output vs the same backend's eager output, on the same input and weights.

    max_rel_diff is max|out - ref| / max|ref| over all output tensors: relative to the output's
    scale, because elementwise relative error is meaningless for logits near zero.

    own_spread_rel is the reference's disagreement with itself, measured only where max_rel_diff
    exceeds rtol (`measure.parity.compare`): the same max relative difference between the first
    image run alone and the same image within the batch, on the reference mode. Summation order
    is all that changes, so on a well-conditioned network it is ~1e-6; a random-weight network
    that amplifies rounding (EfficientNetV2-M's largest logit is 5e5 at 480 px) differs from
    itself by most of its scale, and a difference within that spread is no fault of the mode.
    """

    reference_mode: str
    max_abs_diff: float
    max_rel_diff: float
    rtol: float
    passed: bool
    reason: str = ""
    own_spread_rel: float | None = None


@dataclass(frozen=True)
class Costs:
    """Model size and arithmetic per image, computed once per model and resolution."""

    params: int | None = None
    macs_per_image: float | None = None  # multiply-accumulates of conv/dot ops (the study's "flop")
    flops_per_image: float | None = None  # XLA cost analysis: every op, 2 per MAC
    method: str = ""


@dataclass(frozen=True)
class Memory:
    peak_host_mb: float | None = None  # peak resident set of the worker process (ru_maxrss)
    host_mb_before_build: float | None = None
    peak_device_mb: float | None = None  # peak allocated by the framework on the accelerator


@dataclass(frozen=True)
class Interference:
    """What else used this worker's CPUs during its timed phases (calibration, samples, latency).

    From /proc/stat (busy and steal time of the CPUs the worker may run on) and the worker's own
    CPU time (/proc/self/stat, threads and waited-for children included), over the same wall
    time. Fractions are of the CPUs' capacity: 1.0 = every allowed CPU busy for the whole phase.
    Whether these figures flag the process is policy, decided in `core.result`.
    """

    wall_s: float
    cpus: tuple[int, ...]
    busy_frac: float  # all processes (and the kernel) on those CPUs
    own_frac: float  # this worker
    other_frac: float  # busy minus own: other processes on the same CPUs
    steal_frac: float  # time the hypervisor gave those CPUs to other guests
    cpu_mhz_start: float | None = None  # mean current frequency, where the kernel shows one
    cpu_mhz_end: float | None = None
    mhz_source: str = ""


@dataclass(frozen=True)
class Probe:
    """How fast the machine was at one moment: a fixed reference workload (`measure.probe`)
    timed in the worker, before or after its timed phases. It explains a figure, it never
    rescales one."""

    gflops: float  # the reference GEMM's rate, from its median call
    seconds: float  # wall time of every call together
    n: int  # the GEMM's size (n x n times n x n, float32)
    calls: int
    # Seconds waited for the worker's own threads to go idle before the GEMM
    # (`measure.probe.settle`), and whether they did: a runtime's pool that keeps spinning
    # after its last call (ONNX Runtime's, OpenMP's under OMP_WAIT_POLICY=ACTIVE) takes a
    # CPU from the probe, and then the reading is the worker's, not the machine's.
    settle_s: float = 0.0
    settled: bool = True


@dataclass(frozen=True)
class ProcessInfo:
    """Where this worker process sits in its result (a result is several processes).

    `result_id` groups the processes combined into one figure; `round` is the sweep round the
    process ran in (processes of one model's configurations with the same round ran next to
    each other, and speedups pair them); `sampling_target_rel_ci` is set when the scheduler
    let this process stop sampling early because the between-process spread dominates.
    """

    result_id: str = ""
    index: int = 0
    round: int = 0
    sampling_target_rel_ci: float | None = None
    sampling_reason: str = ""


@dataclass(frozen=True)
class Record:
    """Everything known about one run of one Spec. Built by the worker or by the parent."""

    spec: Spec
    status: Status
    error: str | None = None  # one line, for people
    error_detail: str | None = None  # traceback or stderr tail, for debugging
    family: str = ""
    kind: str = ""
    throughput: Throughput | None = None
    latency: Latency | None = None
    warmup: Warmup | None = None
    parity: Parity | None = None
    costs: Costs = field(default_factory=Costs)
    memory: Memory = field(default_factory=Memory)
    env: dict[str, Any] = field(default_factory=dict)
    env_id: str = ""  # hash of the launching machine's stable environment (the resume key)
    backend_info: dict[str, Any] = field(default_factory=dict)  # graph breaks, tracing count...
    sync: str = ""  # how the device was synchronised, in words
    started_at: str = ""
    duration_s: float | None = None  # wall time of the whole worker
    beside: tuple[str, ...] = ()  # other configurations running at the same time
    source: str = "local"  # local, or where an imported row came from
    provenance: dict[str, Any] = field(default_factory=dict)
    interference: Interference | None = None  # None: not measured (old records, failures)
    process: ProcessInfo = field(default_factory=ProcessInfo)
    #: A LoadGen scenario's outcome (spec.scenario set); such a record has no `throughput`.
    scenario: ScenarioOutcome | None = None
    #: The machine's speed just before and just after the timed phases (None: not measured,
    #: old records, failures).
    probe_before: Probe | None = None
    probe_after: Probe | None = None

    @property
    def rate_per_s(self) -> float | None:
        """This process's figure as a rate, higher is faster: what a result combines. The
        timed loop's median samples/s, or a scenario's figure as a rate (core.scenario)."""
        if self.scenario is not None:
            return self.scenario.rate_per_s
        return self.throughput.median_sps if self.throughput is not None else None

    @property
    def spec_id(self) -> str:
        return self.spec.spec_id()

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        data["spec_id"] = self.spec_id
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        data = {k: v for k, v in data.items() if k != "spec_id"}
        nested = {
            "throughput": Throughput,
            "latency": Latency,
            "warmup": Warmup,
            "parity": Parity,
            "costs": Costs,
            "memory": Memory,
            "interference": Interference,
            "process": ProcessInfo,
            "scenario": ScenarioOutcome,
            "probe_before": Probe,
            "probe_after": Probe,
        }
        for key, kind in nested.items():
            if data.get(key) is not None:
                data[key] = _tuples(kind, data[key])
        data["spec"] = Spec.from_dict(data["spec"])
        data["status"] = Status(data["status"])
        data["beside"] = tuple(data.get("beside", ()))
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Record:
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> Record:
        return dataclasses.replace(self, **changes)


def failure(
    spec: Spec, status: Status, error: str, detail: str | None = None, **extra: Any
) -> Record:
    """A record for a run that produced no measurement."""
    return Record(spec=spec, status=status, error=one_line(error), error_detail=detail, **extra)


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _tuples(kind: type, data: dict[str, Any]) -> Any:
    """Rebuild a frozen dataclass from JSON, turning lists back into tuples."""
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    return kind(**fixed)
