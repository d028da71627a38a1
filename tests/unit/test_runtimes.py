"""Runtime backends: their parity reference, their one-line refusals, OpenVINO's precision."""

from __future__ import annotations

import numpy as np
import pytest

from xlabench.backends import openvino as ov_backend
from xlabench.backends import runtime
from xlabench.core import Spec


@pytest.mark.parametrize(("backend", "mode"), [("openvino", "compiled"),
                                               ("onnxruntime", "basic")])
def test_runtime_specs_compare_with_keras_eager(backend: str, mode: str) -> None:
    spec = Spec("resnet50_v1", backend, mode, 32)
    assert spec.baseline_mode == "keras_eager" != spec.mode
    assert Spec("resnet50_v1", "torch", "compiled", 32).baseline_mode == "eager"


def test_one_line_keeps_the_line_that_names_what_was_refused() -> None:
    message = ("Check 'false' failed at unconverted_ops_report.cpp:151:\n"
               "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted.\n"
               "-- No conversion rule found for operations: Const of unknown type\n"
               "To facilitate the conversion of unsupported operations, refer to "
               "https://docs.openvino.ai/latest/x.html")
    line = runtime.one_line(RuntimeError(message))
    assert line == "RuntimeError: No conversion rule found for operations: Const of unknown type"
    assert len(runtime.one_line(ValueError("x" * 1000))) == 300


def _tiny_ov_model():
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([4, 64], np.float32, name="x")
    w = ops.constant(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    return ov.Model([ops.matmul(x, w, False, False)], [x])


def _compiled(config: dict):
    import openvino as ov

    return ov.Core().compile_model(_tiny_ov_model(), "CPU", config)


def test_openvino_fp32_spec_reports_f32() -> None:
    config = ov_backend.compile_config("fp32", threads=1)
    reported = ov_backend.reported_properties(_compiled(config))
    assert reported["INFERENCE_PRECISION_HINT"] == "f32"
    assert reported["INFERENCE_NUM_THREADS"] == "1" and reported["NUM_STREAMS"] == "1"
    ov_backend._check_precision(reported, config)  # agrees: no error


def test_openvino_running_bf16_for_an_fp32_spec_is_refused() -> None:
    """Without the hint this CPU (AVX512_BF16) compiles bf16; the guard must catch that."""
    reported = ov_backend.reported_properties(_compiled({}))
    if reported["INFERENCE_PRECISION_HINT"] != "bf16":
        reported = ov_backend.reported_properties(_compiled({"INFERENCE_PRECISION_HINT": "bf16"}))
    if reported["INFERENCE_PRECISION_HINT"] != "bf16":
        pytest.skip("this CPU has no bf16 inference in OpenVINO")
    with pytest.raises(runtime.ConversionError, match="precision bf16, asked f32"):
        ov_backend._check_precision(reported, ov_backend.compile_config("fp32", threads=1))
