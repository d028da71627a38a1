"""Runtime backends: their parity reference, their one-line refusals, OpenVINO's precision."""

from __future__ import annotations

import subprocess
import sys
from types import MappingProxyType

import numpy as np
import pytest

from xlabench.backends import load, runtime
from xlabench.backends import openvino as ov_backend
from xlabench.backends.base import Backend
from xlabench.core import BACKENDS, BackendInfo, Spec, UserError

#: What every backend module provides (the `Backend` protocol's members).
PROTOCOL = sorted({*Backend.__annotations__, *(n for n in vars(Backend) if not n.startswith("_"))})


@pytest.mark.parametrize("described", BACKENDS, ids=lambda b: b.name)
def test_every_backend_in_the_table_has_a_module_that_answers_the_protocol(
        described: BackendInfo) -> None:
    module = load(described.name)
    assert [name for name in PROTOCOL if not hasattr(module, name)] == []
    # a backend with a native runtime exports for it (runner/native.py asks the module)
    assert hasattr(module, "export_native") == bool(described.native_runtimes)
    if described.kind == "runtime":  # the worker builds the model on the exporting backend
        spec = Spec("mobilenet_v3_small", described.name, described.modes[0], 32)
        env = module.environment(spec, {}, "/tmp/scratch")
        assert env["KERAS_BACKEND"] == described.export_backend
        assert callable(module.convert_and_run)  # backends/coverage.py's survey


@pytest.mark.parametrize(("backend", "mode"), [("openvino", "compiled"),
                                               ("onnxruntime", "basic"), ("litert", "basic")])
def test_runtime_specs_compare_with_keras_eager(backend: str, mode: str) -> None:
    spec = Spec("resnet50_v1", backend, mode, 32)
    assert spec.baseline_mode == "keras_eager" != spec.mode
    assert Spec("resnet50_v1", "torch", "compiled", 32).baseline_mode == "eager"


def test_a_table_entry_that_contradicts_itself_is_refused() -> None:
    names = MappingProxyType({"compiled": "its compiler"})
    compiled = ("compiled",)
    with pytest.raises(ValueError, match="export backend"):  # a runtime exports from somewhere
        BackendInfo("x", "X", "runtime", ("compiled",), names, ("fp32",), "x", "pip install x", (),
                    compiled_modes=compiled)
    with pytest.raises(ValueError, match="mode names"):
        BackendInfo("x", "X", "framework", ("eager", "compiled"), names, ("fp32",), "x", "", (),
                    compiled_modes=compiled)
    with pytest.raises(ValueError, match="precisions"):
        BackendInfo("x", "X", "framework", ("compiled",), names, ("fp64",), "x", "", (),
                    compiled_modes=compiled)
    with pytest.raises(ValueError, match="compiled modes"):  # flags a mode it does not have
        BackendInfo("x", "X", "framework", ("compiled",), names, ("fp32",), "x", "", (),
                    compiled_modes=("xla",))
    with pytest.raises(TypeError, match="compiled_modes"):  # every entry says (possibly none)
        BackendInfo("x", "X", "framework", ("compiled",), names, ("fp32",), "x", "", ())


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
    assert ov_backend._check_precision(reported, config) == "fp32"  # agrees: no error


def test_openvino_running_bf16_for_an_fp32_spec_is_refused() -> None:
    """Without the hint this CPU (AVX512_BF16) compiles bf16; the guard must catch that."""
    reported = ov_backend.reported_properties(_compiled({}))
    if reported["INFERENCE_PRECISION_HINT"] != "bf16":
        reported = ov_backend.reported_properties(_compiled({"INFERENCE_PRECISION_HINT": "bf16"}))
    if reported["INFERENCE_PRECISION_HINT"] != "bf16":
        pytest.skip("this CPU has no bf16 inference in OpenVINO")
    with pytest.raises(UserError, match="precision bf16, asked f32"):
        ov_backend._check_precision(reported, ov_backend.compile_config("fp32", threads=1))


def test_openvino_bf16_spec_executes_bf16_or_is_refused() -> None:
    """A bf16 hint on a CPU without bf16 compiles f32: refused, never timed as bf16."""
    config = ov_backend.compile_config("bf16", threads=1)
    assert config["INFERENCE_PRECISION_HINT"] == "bf16"
    assert ov_backend._check_precision({"INFERENCE_PRECISION_HINT": "bf16"}, config) == "bf16"
    with pytest.raises(UserError, match="precision f32, asked bf16"):
        ov_backend._check_precision({"INFERENCE_PRECISION_HINT": "f32"}, config)


def test_iree_is_a_runtime_exported_by_keras_on_jax() -> None:
    from xlabench.backends import iree as iree_backend
    from xlabench.backends.coverage import runtimes_for
    from xlabench.sweep.expand import BACKEND_ORDER, BACKEND_PRECISIONS

    spec = Spec("mobilenet_v3_small", "iree", "compiled", 32)
    assert spec.baseline_mode == "keras_eager" and spec.compiled
    env = iree_backend.environment(spec, {}, "/tmp/scratch")
    assert env["KERAS_BACKEND"] == "jax" and env[runtime.ARTIFACTS_ENV] == "/tmp/scratch"
    assert env["JAX_COMPILATION_CACHE_DIR"] is None and env["IREE_PY_RUNTIME_FLAGS"] is None
    assert BACKEND_PRECISIONS["iree"] == ("fp32",) and "iree" in BACKEND_ORDER
    assert runtimes_for("jax") == ("iree",)
    assert runtimes_for("tensorflow") == ("openvino", "onnxruntime", "litert")
    assert iree_backend.runtime_flags(3) == ("--task_topology_group_count=3",)


class _Aval:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _Exported:
    def __init__(self, inputs: list[str], outputs: list[str]) -> None:
        self.in_avals = [_Aval(d) for d in inputs]
        self.out_avals = [_Aval(d) for d in outputs]


def test_iree_precision_guard_refuses_non_float32_floats() -> None:
    pytest.importorskip("ml_dtypes")
    import ml_dtypes

    from xlabench.backends import iree as iree_backend

    iree_backend._check_precision(_Exported(["float32", "uint32"], ["float32"]))  # seed state
    bf16 = np.dtype(ml_dtypes.bfloat16).name
    with pytest.raises(runtime.ConversionError, match="bfloat16"):
        iree_backend._check_precision(_Exported(["float32", bf16], ["float32"]))
    with pytest.raises(runtime.ConversionError, match="float16"):
        iree_backend._check_precision(_Exported(["float32"], ["float16"]))
    with pytest.raises(runtime.ConversionError, match="float64 outputs"):
        iree_backend._to_host([np.zeros(2, np.float64)])


_ADD = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""


#: Run in a fresh interpreter: IREE runtime objects freed by a later garbage collection in the
#: test process (device before its buffers) crashed a pytest worker; a worker process runs one
#: benchmark and exits, so only the test needs the isolation.
_IREE_RUN = f"""
import numpy as np
from xlabench.backends import iree
vmfb = iree.compile_stablehlo({_ADD!r})
a = np.arange(4, dtype=np.float32)
function, args = iree.load(vmfb, [a, a], threads=1)
(out,) = iree._to_host(function(*args))
np.testing.assert_array_equal(out, 2 * a)
print("ok")
"""


def test_iree_compiles_and_runs_stablehlo_and_refusals_are_one_line() -> None:
    pytest.importorskip("iree.compiler")
    from xlabench.backends import iree as iree_backend

    done = subprocess.run([sys.executable, "-c", _IREE_RUN], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    stages: dict[str, float] = {}
    with pytest.raises(runtime.ConversionError,
                       match=r"^compile: RuntimeError: iree-compile: .*error: custom op "
                             r"'stablehlo.no_such_op' is unknown$") as err:
        runtime.timed(stages, "compile", iree_backend.compile_stablehlo,
                      _ADD.replace("stablehlo.add", "stablehlo.no_such_op"))
    assert "\n" not in str(err.value) and set(stages) == {"compile"}


def _tiny_tflite(path) -> str:
    """A convolution and a dense layer (both XNNPACK ops) as a .tflite file, no Keras model."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    kernel = tf.constant(rng.standard_normal((3, 3, 3, 8)), tf.float32)
    weights = tf.constant(rng.standard_normal((8, 4)), tf.float32)

    @tf.function(input_signature=[tf.TensorSpec((1, 8, 8, 3), tf.float32)])
    def forward(x):
        y = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME"))
        return tf.matmul(tf.reduce_mean(y, axis=(1, 2)), weights)

    converter = tf.lite.TFLiteConverter.from_concrete_functions([forward.get_concrete_function()],
                                                                forward)
    (path / "tiny.tflite").write_bytes(converter.convert())
    return str(path / "tiny.tflite")


def test_litert_delegation_is_visible_in_the_interpreter_and_guarded(tmp_path) -> None:
    """The observable the worker test relies on: the default resolver gives XNNPACK the graph
    (DELEGATE nodes), BUILTIN_WITHOUT_DEFAULT_DELEGATES does not; the guard refuses a mode
    that ran as the other."""
    pytest.importorskip("ai_edge_litert")
    from xlabench.backends import litert

    path = _tiny_tflite(tmp_path)
    seen = {}
    for mode in ("basic", "compiled"):
        info: dict = {}
        interpreter, index, outputs = litert.compile_file(path, mode, 1, info, {})
        interpreter.set_tensor(index, np.ones((1, 8, 8, 3), np.float32))
        interpreter.invoke()
        seen[mode] = (info["litert_delegate_nodes"], interpreter.get_tensor(outputs[0]))
    assert seen["basic"][0] == 0 and seen["compiled"][0] >= 1
    np.testing.assert_allclose(seen["basic"][1], seen["compiled"][1], rtol=1e-4, atol=1e-4)
    with pytest.raises(runtime.ConversionError, match="basic ran 1 delegate node"):
        litert.check_delegation("basic", 1)
    with pytest.raises(runtime.ConversionError, match="XNNPACK took no part"):
        litert.check_delegation("compiled", 0)


def test_openvino_one_stream_config_is_the_latency_one() -> None:
    """The timed loop, single-stream and the native export keep exactly this config."""
    assert ov_backend.compile_config("fp32", threads=2) == {
        "INFERENCE_PRECISION_HINT": "f32", "EXECUTION_MODE_HINT": "PERFORMANCE",
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": "2"}
    streams = ov_backend.compile_config("bf16", threads=2, streams=2)
    assert streams["PERFORMANCE_HINT"] == "THROUGHPUT" and streams["NUM_STREAMS"] == "2"
    assert streams["INFERENCE_PRECISION_HINT"] == "bf16"


def test_openvino_fewer_streams_than_asked_is_refused() -> None:
    """One thread for two streams: the plugin compiles one stream, which must not pass as
    two; the 1-stream config is never refused for it."""
    config = ov_backend.compile_config("fp32", threads=1, streams=2)
    reported = ov_backend.reported_properties(_compiled(config))
    assert reported["NUM_STREAMS"] == "1"
    with pytest.raises(UserError, match=r"compiled 1 stream\(s\), asked 2 .* at least 2 CPUs"):
        ov_backend._check_streams(reported, config)
    one = ov_backend.compile_config("fp32", threads=1)
    ov_backend._check_streams(ov_backend.reported_properties(_compiled(one)), one)


def test_openvino_runners_share_one_compiled_model_with_a_request_each() -> None:
    """make_runners(n=2) on a real (tiny Keras) model: one compile, into the first runner's
    info, two distinct infer requests, same outputs as the 1-stream runner."""
    pytest.importorskip("tensorflow")
    if runtime.cpu_count() < 2:
        pytest.skip("two streams need two CPUs")
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    runners = ov_backend.make_runners(model, "compiled", x, 2)
    outputs = [runner.step() for runner in (runners[1], runners[0], runners[1])]
    info = runners[0].info
    assert info["openvino_properties"]["NUM_STREAMS"] == "2" and "compile_stages_s" in info
    assert info["openvino_properties"]["PERFORMANCE_HINT"] == "THROUGHPUT"
    assert "openvino_config" not in runners[1].info
    (single,) = ov_backend.make_runners(model, "compiled", x, 1)
    for out in outputs:
        np.testing.assert_allclose(out[0], single.step()[0], rtol=1e-5, atol=1e-5)
    assert single.info["openvino_properties"]["NUM_STREAMS"] == "1"
