"""Own models measured for real: a small CNN saved as .keras on every backend, mode and runtime
and on the native runner; a factory with a custom layer; a Lambda layer with leave to load it."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlabench.core import BACKEND_MODES, MeasureSettings, Spec, Status
from xlabench.core.spec import NATIVE_RUNTIMES
from xlabench.runner import count_costs, run_isolated
from xlabench.zoo import own

# Samples of 0.05 s: five of them outlast the 0.2 s an interference reading needs, even on a
# runtime fast enough to meet the target in five.
QUICK = MeasureSettings(min_sample_s=0.05, budget_s=1.5, warmup_min_s=0.1, warmup_max_s=3.0,
                        latency_steps=5, min_samples=5)
PAIRS = [(backend, mode, "python") for backend, modes in BACKEND_MODES.items() for mode in modes]
PAIRS += [(backend, mode, "native") for backend, mode in NATIVE_RUNTIMES]

pytestmark = pytest.mark.slow


def _spec(model: own.OwnModel, backend: str, mode: str, runner: str = "python") -> Spec:
    return Spec(model.name, backend, mode, model.input_size or 32, batch_size=2, measure=QUICK,
                runner=runner, **model.spec_fields())


def _assert_measured(record, model: own.OwnModel) -> None:
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.spec.model == model.name and record.family == model.name
    assert record.kind == "own"
    assert record.throughput is not None and record.throughput.median_sps > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    assert record.costs.params
    if record.spec.runner == "python":  # the native runner's memory is the C++ program's
        assert record.memory.peak_host_mb > 0
    assert record.interference is not None
    for probe in (record.probe_before, record.probe_after):  # the machine's speed, both sides
        assert probe is not None and probe.gflops > 0 and probe.calls > 0, probe
    if record.spec.mode != record.spec.baseline_mode:
        assert record.parity is not None and record.parity.passed, record.parity


@pytest.mark.parametrize(("backend", "mode", "runner"), PAIRS,
                         ids=[f"{b}-{m}-{r}" for b, m, r in PAIRS])
def test_a_keras_file_runs_every_way(own_files: Path, backend: str, mode: str,
                                     runner: str) -> None:
    model = own.resolve(str(own_files / "cnn.keras"))
    spec = _spec(model, backend, mode, runner)
    record = run_isolated(spec, timeout_s=900)
    _assert_measured(record, model)
    assert record.costs.params == 650  # conv 224, depthwise 80, batch norm 32, conv 144, dense 170
    if backend == "jax" and runner == "python":  # counted apart, once per model and resolution
        costs = count_costs(spec)
        assert costs["params"] == 650 and costs["macs_per_image"] and costs["flops_per_image"]


def test_a_factory_with_a_custom_layer_runs() -> None:
    model = own.resolve("tests.own.factories:build_custom")
    for backend, mode in (("jax", "xla"), ("openvino", "compiled")):
        record = run_isolated(_spec(model, backend, mode), timeout_s=900)
        _assert_measured(record, model)


def test_a_one_channel_model_gets_one_channel(own_files: Path) -> None:
    model = own.resolve(str(own_files / "gray.keras"))
    record = run_isolated(_spec(model, "tensorflow", "graph"), timeout_s=900)
    _assert_measured(record, model)


def test_a_lambda_layer_runs_with_leave_and_fails_without(own_files: Path) -> None:
    model = own.resolve(str(own_files / "lambda.keras"), unsafe_load=True)
    record = run_isolated(_spec(model, "tensorflow", "xla"), timeout_s=900)
    _assert_measured(record, model)
    # a spec that somehow lacks the leave: Keras' safe_mode refuses, stored as failed
    without = Spec(model.name, "jax", "eager", 32, batch_size=2, measure=QUICK,
                   **{**model.spec_fields(), "unsafe_load": False})
    refused = run_isolated(without, timeout_s=900)
    assert refused.status is Status.FAILED and "safe_mode" in refused.error


def test_a_file_edited_after_planning_fails_as_such(own_files: Path, tmp_path: Path) -> None:
    path = tmp_path / "cnn.keras"
    path.write_bytes((own_files / "cnn.keras").read_bytes())
    model = own.resolve(str(path))
    path.write_bytes(path.read_bytes() + b"\0")
    record = run_isolated(_spec(model, "jax", "eager"), timeout_s=900)
    assert record.status is Status.FAILED and "changed or is gone" in record.error


def test_a_model_one_backend_cannot_build_fails_there_only() -> None:
    model = own.resolve("tests.own.factories:build_tensorflow_only")
    assert model.input_size == 32  # inspected on the backend that builds it
    failed = run_isolated(_spec(model, "jax", "eager"), timeout_s=900)
    assert failed.status is Status.FAILED and "does not build on jax" in failed.error
    _assert_measured(run_isolated(_spec(model, "tensorflow", "graph"), timeout_s=900), model)


def test_a_legacy_h5_file_runs(own_files: Path) -> None:
    model = own.resolve(str(own_files / "legacy.h5"))
    record = run_isolated(_spec(model, "torch", "eager"), timeout_s=900)
    _assert_measured(record, model)
    assert record.costs.params == 650
