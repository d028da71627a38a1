"""The deployment runtimes for real: exported, converted, compiled and measured by the worker."""

from __future__ import annotations

import pytest

from tests.worker.checks import quick_spec
from xlabench.core import Status
from xlabench.store import ResultStore

PAIRS = [("openvino", "compiled"), ("onnxruntime", "basic"), ("onnxruntime", "compiled")]
STAGES = {"openvino": {"export", "convert", "save", "read", "compile"},
          "onnxruntime": {"export", "convert", "compile"}}
CASES = [(model, backend, mode) for model in ("mobilenet_v3_small", "resnet50_v1")
         for backend, mode in PAIRS]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("model", "backend", "mode"), CASES,
                         ids=[f"{m}-{b}-{mo}" for m, b, mo in CASES])
def test_runtime_measures_with_the_precision_asked_for(measured, model: str, backend: str,
                                                       mode: str, tmp_path) -> None:
    spec = quick_spec(backend, mode, model)
    record = measured(spec)
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.throughput is not None and record.throughput.median_sps > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    # Parity against Keras eager on the exporting backend: same weights, same input.
    assert record.parity is not None and record.parity.reference_mode == "keras_eager"
    assert record.parity.passed, record.parity
    assert record.parity.max_rel_diff < 1e-4  # fp32 all the way: far inside the tolerance
    assert set(record.warmup.compile_stages_s) == STAGES[backend]
    assert all(s >= 0 for s in record.warmup.compile_stages_s.values())
    runtime = record.env["runtime"]
    assert runtime["framework"] == backend and runtime["export_backend"] == "tensorflow"
    assert runtime["framework_version"] and runtime["threads"] >= 1
    assert record.env["packages"][backend] == runtime["framework_version"].split("-")[0]
    info = record.backend_info
    if backend == "openvino":
        # This CPU's default is bf16: the record must prove the fp32 spec ran f32.
        assert info["openvino_properties"]["INFERENCE_PRECISION_HINT"] == "f32"
        assert info["executed_precision"] == "fp32"
        assert info["openvino_properties"]["INFERENCE_NUM_THREADS"] == str(runtime["threads"])
        assert info["openvino_properties"]["NUM_STREAMS"] == "1"
        assert "f16" not in info["ir_weight_types"]  # saved with compress_to_fp16=False
    else:
        level = {"basic": "ORT_DISABLE_ALL", "compiled": "ORT_ENABLE_ALL"}[mode]
        assert info["onnxruntime_config"]["graph_optimization_level"] == level
        assert info["onnxruntime_config"]["intra_op_num_threads"] == runtime["threads"]
        assert info["onnxruntime_providers"] == ["CPUExecutionProvider"]
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record)
        (stored,) = store.records(backend=backend)
    assert stored.spec == spec and stored.backend_info == info
