"""LoadGen scenario records and bf16 beside fp32, where the deployment answer is known.

Real `Record`s with real `ScenarioOutcome`s, whose LoadGen summaries are the driver's own
dataclasses (`measure.scenarios.ScenarioResult`, `ServerSearch`) as the worker stores them.
Each result is three processes (rounds 0-2 of one sweep), so results have intervals.

On a100, resnet50_v1 @224:
    server, p99 bound 50 ms: OpenVINO fp32 ~31 q/s, OpenVINO bf16 ~62 q/s, ORT fp32 ~21 q/s,
        TF XLA 90 q/s with FAILED parity (never advised); bound 200 ms: OpenVINO fp32 ~45 q/s
    single-stream p90: OpenVINO fp32 ~21 ms, OpenVINO bf16 ~10.5 ms
    offline (batch 8): OpenVINO fp32 ~125 samples/s, ORT fp32 ~82 samples/s
    timed loop batch 1: ORT fp32 ~40 samples/s (ORT has no single-stream result)
"""

from __future__ import annotations

from tests.conftest import make_record
from xlabench.core import Parity, Record, Spec, Status
from xlabench.core.record import ProcessInfo
from xlabench.core.scenario import Scenario, ScenarioOutcome, ScenarioSettings
from xlabench.measure.scenarios import ScenarioResult, ServerSearch, ServerTrial

SWEEP = "sweep-scenarios"
SHORTFALL = "shortened: 10 s vs MLPerf's 600 s"
FP32_PARITY = Parity("keras_eager", 2e-6, 1e-6, 2e-3, True)
BF16_PARITY = Parity("keras_eager", 3e-2, 1.5e-2, 5e-2, True)
BAD_PARITY = Parity("keras_eager", 0.5, 0.2, 2e-3, False, "too far")
#: The process figures of each result (in the scenario's unit), three rounds.
SPREAD = (0.97, 1.0, 1.03)


def loadgen_run(scenario: Scenario, p90_ms: float, samples_per_s: float,
                valid: bool = True) -> ScenarioResult:
    """One LoadGen run as the driver parses it."""
    single = scenario is Scenario.SINGLE_STREAM
    return ScenarioResult(
        scenario=scenario.value, valid=valid, invalid_reason="" if valid else "p99 too high",
        min_duration_met=True, early_stopping_met=valid, early_stopping_text="",
        early_stopping_p90_ms=p90_ms if single else None, p50_ms=0.8 * p90_ms,
        p90_ms=p90_ms, p99_ms=1.2 * p90_ms, mean_ms=0.85 * p90_ms,
        samples_per_s=samples_per_s, query_count=600, effective_settings={"scenario": 1},
        settings={"min_duration_ms": 10_000}, loadgen_version="6.0.17", loadgen_errors=(),
        summary_text="", shortfall=SHORTFALL)


def outcome(scenario: Scenario, figure: float, settings: ScenarioSettings) -> ScenarioOutcome:
    """What a worker stores for one process whose figure is `figure` (in the unit)."""
    if scenario is Scenario.SINGLE_STREAM:
        loadgen = loadgen_run(scenario, figure, 1000 / figure).to_dict()
    elif scenario is Scenario.OFFLINE:
        loadgen = loadgen_run(scenario, 50.0, figure).to_dict()
    else:  # the rate that passed, and the next one up that did not
        bound = settings.latency_bound_ms
        passed = ServerTrial(figure, True, loadgen_run(scenario, bound / 2, figure))
        failed = ServerTrial(1.5 * figure, False,
                             loadgen_run(scenario, bound * 2, 1.4 * figure, valid=False))
        loadgen = ServerSearch(bound, 10.0, None, (passed, failed)).to_dict()
    return ScenarioOutcome(scenario.value, figure, settings.max_batch, settings.concurrency,
                           settings.batch_wait_ms, "OpenVINO streams" if settings.concurrency
                           > 1 else "one request", SHORTFALL, loadgen)


def scenario_result(backend: str, scenario: Scenario, figure: float, precision: str = "fp32",
                    batch: int = 1, concurrency: int = 1, bound_ms: float = 50.0,
                    parity: Parity | None = None, model: str = "resnet50_v1",
                    mode: str = "compiled") -> list[Record]:
    """The three processes of one scenario result."""
    settings = ScenarioSettings(min_duration_ms=10_000, latency_bound_ms=bound_ms,
                                max_batch=batch, concurrency=concurrency)
    spec = Spec(model, backend, mode, 224, batch_size=batch, precision=precision,
                scenario=scenario.value, scenario_settings=settings)
    base = make_record(model=model, backend=backend, mode=mode, batch_size=batch,
                       precision=precision)
    result_id = f"r-{spec.spec_id()}"
    return [
        base.replace(
            spec=spec, throughput=None, latency=None,
            backend_info={"executed_precision": precision},  # as OpenVINO's records say
            parity=parity or (BF16_PARITY if precision == "bf16" else FP32_PARITY),
            scenario=outcome(scenario, figure * factor, settings),
            process=ProcessInfo(result_id, index, index))
        for index, factor in enumerate(SPREAD)
    ]


def timed_loop_result(backend: str, sps: float, batch: int = 1,
                      precision: str = "fp32") -> list[Record]:
    """The three processes of one timed-loop result."""
    base = make_record(backend=backend, mode="compiled", batch_size=batch, precision=precision)
    result_id = f"r-{base.spec_id}"
    return [make_record(backend=backend, mode="compiled", batch_size=batch,
                        precision=precision, throughput=sps * factor).replace(
                            parity=BF16_PARITY if precision == "bf16" else FP32_PARITY,
                            process=ProcessInfo(result_id, index, index))
            for index, factor in enumerate(SPREAD)]


def scenario_records() -> list[Record]:
    """Every result of the module docstring, plus a failed scenario process."""
    server, single, offline = Scenario.SERVER, Scenario.SINGLE_STREAM, Scenario.OFFLINE
    failed = scenario_result("openvino", offline, 1.0, model="mobilenet_v1")[0].replace(
        status=Status.FAILED, error="LoadGen called the run invalid", scenario=None,
        process=ProcessInfo())
    return [
        *scenario_result("openvino", server, 31.0),
        *scenario_result("openvino", server, 62.0, precision="bf16"),
        *scenario_result("onnxruntime", server, 21.0),
        *scenario_result("tensorflow", server, 90.0, parity=BAD_PARITY, mode="xla"),
        *scenario_result("openvino", server, 45.0, bound_ms=200.0),
        *scenario_result("openvino", single, 21.0),
        *scenario_result("openvino", single, 10.5, precision="bf16"),
        *scenario_result("openvino", offline, 125.0, batch=8),
        *scenario_result("onnxruntime", offline, 82.0, batch=8),
        *timed_loop_result("onnxruntime", 40.0),
        *timed_loop_result("openvino", 100.0, batch=4),
        *timed_loop_result("openvino", 180.0, batch=4, precision="bf16"),
        failed,
    ]
