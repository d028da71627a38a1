"""OpenVINO: the Keras-on-TensorFlow graph converted to OpenVINO IR, compiled for the CPU.

Stages of the first call (each timed): `export` (trace the Keras model into a concrete
tf.function, as `model.export(format="openvino")` does on TensorFlow), `convert`
(`openvino.convert_model` of that function), `save` (IR to the worker's scratch directory with
`compress_to_fp16=False`: the default would store fp16 weights), `read` and `compile`
(`Core.compile_model(..., "CPU")`). Every result-changing knob is set, and what the compiled
model reports back is recorded: this CPU's default inference precision is bf16, so an fp32
spec that did not say so would silently compare different arithmetic.

Precision: the Keras model is always the fp32 one (the table's `model_precision`: a deployer
converts the fp32 model), saved as fp32 IR; the spec's precision is the inference precision
hint (fp32 -> f32, bf16 -> bf16), and parity is checked against Keras eager fp32 at the
spec's tolerance. The precision the compiled model reports is stored as
`backend_info.executed_precision`; one other than asked is refused (a CPU without bf16 support
compiles f32 under a bf16 hint: never timed under a bf16 label).

Concurrency: the timed loop and single-stream run one infer request on a 1-stream, LATENCY-hint
compiled model. Offline and server run the table's `scenario_concurrency` LoadGen threads
(`make_runners`): one compiled model with the THROUGHPUT hint and that many streams (the
worker's CPUs shared among them), one infer request per thread. A model compiled with fewer
streams than asked (the plugin lowers NUM_STREAMS to the threads it has) is refused: its
requests would queue on one stream under a label that says they ran side by side.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xlabench.backends import runtime
from xlabench.backends.base import Runner
from xlabench.core.errors import UserError
from xlabench.core.gemm import Gemm, GemmSkippedError
from xlabench.core.spec import Spec

SYNC = runtime.SYNC
DEVICE = "CPU"
#: OpenVINO's name for the element type each spec precision asks for.
INFERENCE_PRECISION = {"fp32": "f32", "bf16": "bf16"}
#: The spec precision of each element type the compiled model may report.
EXECUTED_PRECISION = {hint: precision for precision, hint in INFERENCE_PRECISION.items()}
#: Properties read back from the compiled model and stored with the record (by the native
#: runner too: export_native names them in its manifest).
REPORTED = ("INFERENCE_PRECISION_HINT", "EXECUTION_MODE_HINT", "PERFORMANCE_HINT",
            "NUM_STREAMS", "INFERENCE_NUM_THREADS", "ENABLE_CPU_PINNING",
            "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE", "OPTIMAL_NUMBER_OF_INFER_REQUESTS")

environment = runtime.environment
make_input = runtime.make_input
sync = runtime.sync
to_numpy = runtime.to_numpy
peak_device_memory_mb = runtime.peak_device_memory_mb

_PRECISION: list[str] = []  # the spec's precision, set by setup (make_runner gets no spec)


def setup(spec: Spec) -> dict[str, Any]:
    runtime.require_precision(spec)
    import openvino as ov

    _PRECISION[:] = [spec.precision]
    return {
        "framework": "openvino",
        "framework_version": ov.get_version(),
        "device": DEVICE,
        **runtime.setup_exporter(spec),
    }


def compile_config(precision: str, threads: int, streams: int = 1) -> dict[str, Any]:
    """The knobs we set (strings, as OpenVINO's property names take them). One stream: the
    timed loop's, single-stream's and the native export's; more: `make_runners`'."""
    return {
        "INFERENCE_PRECISION_HINT": INFERENCE_PRECISION[precision],
        # ACCURACY would override the precision hint; PERFORMANCE lets the hint decide.
        "EXECUTION_MODE_HINT": "PERFORMANCE",
        # One synchronous request per step, as every other backend: latency-style execution;
        # several streams (one request each, stepping at once) are throughput-style.
        "PERFORMANCE_HINT": "LATENCY" if streams == 1 else "THROUGHPUT",
        "NUM_STREAMS": str(streams),
        "INFERENCE_NUM_THREADS": str(threads),  # all the worker's CPUs, shared by the streams
    }


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if runtime.is_reference(mode):
        return runtime.reference_runner(model, x)
    precision = _PRECISION[0] if _PRECISION else "fp32"
    return runtime.compiled_on_first_call(  # export, convert, save, read, compile; each timed
        lambda info: compile_model(model, x, precision, runtime.cpu_count(),
                                   info).create_infer_request(),
        _infer(runtime.host_input(x)))


def make_runners(model: Any, mode: str, x: Any, n: int) -> list[Runner]:
    """`n` runners that step at the same time (LoadGen's threads): infer requests of one
    model compiled with `n` streams. The first runner to step compiles (timed as its first
    call) into the first runner's info, which the worker reads; the others' first steps only
    create their request."""
    if n == 1:
        return [make_runner(model, mode, x)]
    if runtime.is_reference(mode):
        raise ValueError(f"the parity reference runs one batch at a time, not {n}")
    precision = _PRECISION[0] if _PRECISION else "fp32"
    runners: list[Runner] = []
    compiled: list[Any] = []
    lock = threading.Lock()  # runners may take their first step at once: compile only once

    def infer_request(_info: dict[str, Any]) -> Any:
        with lock:
            if not compiled:
                compiled.append(compile_model(model, x, precision, runtime.cpu_count(),
                                              runners[0].info, streams=n))
        return compiled[0].create_infer_request()

    run = _infer(runtime.host_input(x))
    runners.extend(runtime.compiled_on_first_call(infer_request, run) for _ in range(n))
    return runners


def _infer(host_x: Any) -> Callable[[Any], list[Any]]:
    """One synchronous inference of an infer request on the preloaded batch."""
    return lambda request: list(request.infer({0: host_x}, share_inputs=True).values())


def compile_model(model: Any, x: Any, precision: str, threads: int, info: dict[str, Any],
                  streams: int = 1) -> Any:
    """The compiled model; stages and reported properties go to `info`."""
    import openvino as ov

    stages: dict[str, float] = {}
    info["compile_stages_s"] = stages
    _, concrete = runtime.timed(stages, "export", runtime.trace, model, x)
    return compile_traced(concrete, precision, threads, info, stages, ov, streams)


def compile_traced(concrete: Any, precision: str, threads: int, info: dict[str, Any],
                   stages: dict[str, float], ov: Any, streams: int = 1) -> Any:
    """convert -> save -> read -> compile of a traced function (shared with the zoo test);
    the compiled model."""
    ov_model = runtime.timed(stages, "convert", _convert, concrete, info, ov)
    path = os.path.join(runtime.artifacts_dir(), "model.xml")
    runtime.timed(stages, "save", ov.save_model, ov_model, path, compress_to_fp16=False)
    core = ov.Core()
    read = runtime.timed(stages, "read", core.read_model, path)
    config = compile_config(precision, threads, streams)
    compiled = runtime.timed(stages, "compile", core.compile_model, read, DEVICE, config)
    info["openvino_config"] = config
    info["openvino_properties"] = reported_properties(compiled)
    info["ir_weight_types"] = sorted({op.get_element_type().get_type_name() for op in read.get_ops()
                                      if op.get_type_name() == "Constant"})
    info["executed_precision"] = _check_precision(info["openvino_properties"], config)
    _check_streams(info["openvino_properties"], config)
    return compiled


def convert_and_run(model: Any, x: Any, threads: int, tf_graph: Any) -> list[Any]:
    """The traced graph (`tf_graph()`) converted, compiled and run once on `x`, fp32
    (backends/coverage.py: can OpenVINO take this model?)."""
    import openvino as ov

    request = compile_traced(tf_graph()[1], "fp32", threads, {}, {}, ov).create_infer_request()
    return list(request.infer({0: runtime.host_input(x)}).values())


def export_native(spec: Spec, model: Any, x: Any, out_dir: Path,
                  threads: int) -> dict[str, Any]:
    """openvino: the IR the compiled mode compiles, from the same trace and conversion, fp32
    weights (`base.NativeExporter`).

    The compile properties are this module's (compile_config: the precision hint, one stream,
    LATENCY, INFERENCE_NUM_THREADS = the worker's CPUs); the C++ side sets them on
    compile_model and reports back the properties REPORTED names (the manifest's "reported").
    """
    import openvino as ov

    stages: dict[str, float] = {}
    info: dict[str, Any] = {}
    try:
        _, concrete = runtime.timed(stages, "export", runtime.trace, model, x)
        ov_model = runtime.timed(stages, "convert", _convert, concrete, info, ov)
        (out_dir / "ir").mkdir()
        runtime.timed(stages, "save", ov.save_model, ov_model, str(out_dir / "ir" / "model.xml"),
                      compress_to_fp16=False)
    except runtime.ConversionError as exc:
        raise runtime.ConversionError(f"{spec.backend} {exc}") from exc
    config = compile_config(spec.precision, threads)
    weights = sorted({op.get_element_type().get_type_name() for op in ov_model.get_ops()
                      if op.get_type_name() == "Constant"})
    return {
        "model": "ir/model.xml", "weights": "ir/model.bin", "config": config,
        "reported": list(REPORTED), "stages_s": stages,
        "info": {"artifact": "OpenVINO IR (compress_to_fp16=False)",
                 "artifact_bytes": sum(p.stat().st_size for p in (out_dir / "ir").iterdir()),
                 "openvino_config": config, "ir_weight_types": weights,
                 "openvino_version": ov.get_version(), "same_compiler": True, **info},
    }


def _convert(concrete: Any, info: dict[str, Any], ov: Any) -> Any:
    """convert_model, keeping only the function's own outputs.

    Keras' swish/gelu use tf.custom_gradient, whose IdentityN nodes carry extra (gradient)
    outputs; OpenVINO's TF frontend turns every dangling one into a model result
    (EfficientNet-B0: 50 results instead of 1). Computing them would cost time and defeat
    fusions, so they go, matched by the function's output tensor names.
    """
    ov_model = ov.convert_model(concrete)
    wanted = [t.name for t in concrete.outputs]
    kept = [next((o for o in ov_model.outputs if name in o.get_names()), None) for name in wanted]
    if any(o is None for o in kept):  # names not kept by this OpenVINO: the frontend's order
        kept = list(ov_model.outputs[: len(wanted)])
    info["openvino_dropped_outputs"] = len(ov_model.outputs) - len(kept)
    if len(kept) == len(ov_model.outputs):
        return ov_model
    return ov.Model(kept, ov_model.get_parameters(), ov_model.get_friendly_name())


def reported_properties(compiled: Any) -> dict[str, str]:
    """What the compiled model says it runs with (strings: enums print their names)."""
    reported: dict[str, str] = {}
    for name in REPORTED:
        try:
            value = compiled.get_property(name)
        except RuntimeError:  # a property this device or version does not have
            continue
        # Element types print as "<Type: 'float32'>"; their short name is the hint's spelling.
        reported[name] = value.get_type_name() if hasattr(value, "get_type_name") else str(value)
    return reported


def _check_precision(reported: dict[str, str], config: dict[str, Any]) -> str:
    """The spec precision the compiled model executes; arithmetic other than the one asked
    for is refused (e.g. a bf16 hint on a CPU without bf16: the plugin compiles f32)."""
    got = reported.get("INFERENCE_PRECISION_HINT", "").lower()
    wanted = config["INFERENCE_PRECISION_HINT"]
    if got != wanted:
        raise UserError(f"OpenVINO compiled for inference precision {got or 'unknown'}, asked "
                        f"{wanted}: this CPU does not run {wanted} here, so it is not measured")
    return EXECUTED_PRECISION[got]


def _check_streams(reported: dict[str, str], config: dict[str, Any]) -> None:
    """Refuse fewer streams than asked: with 2 streams on a 1-CPU worker the plugin compiles
    1, and the runners' requests would take turns on it."""
    got, wanted = reported.get("NUM_STREAMS", "unknown"), config["NUM_STREAMS"]
    if got != wanted:
        raise UserError(f"OpenVINO compiled {got} stream(s), asked {wanted} with "
                        f"INFERENCE_NUM_THREADS {config['INFERENCE_NUM_THREADS']}: give the "
                        f"worker at least {wanted} CPUs")


# ----------------------------------------------------------- its GEMM for the device peak
def peak_gemm(dtype: str) -> Gemm:
    """A one-MatMul model (x @ W, W a Constant as a model's weights are) compiled on the CPU
    with the inference precision hint of `dtype`, one stream and one thread per CPU of the
    process: OpenVINO's GEMM for the device's measured peak (`core.gemm`). The precision its
    runtime graph says it executed must be the one asked for, else the dtype is skipped."""
    import numpy as np
    import openvino as ov

    ops = _opset()
    core = ov.Core()
    hint = INFERENCE_PRECISION[dtype]
    threads = runtime.cpu_count()
    config = {"INFERENCE_PRECISION_HINT": hint, "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads)}
    ran: dict[str, Any] = {}
    rng = np.random.default_rng(0)

    def prepare(n: int) -> Callable[[], object]:
        x = rng.standard_normal((n, n), dtype=np.float32)
        weights = rng.standard_normal((n, n), dtype=np.float32)
        param = ops.parameter([n, n], np.float32)
        model = ov.Model([ops.matmul(param, ops.constant(weights), False, False)], [param],
                         "xlabench_peak_matmul")
        compiled = core.compile_model(model, DEVICE, config)
        kernel, executed = _matmul_node(compiled)
        if executed != hint:
            raise GemmSkippedError(
                f"OpenVINO executes the MatMul in {executed or 'unknown'} here "
                f"(asked {hint}; kernel {kernel or 'unknown'})")
        ran.update(kernel=kernel, executed=executed)
        request = compiled.create_infer_request()
        request.set_input_tensor(ov.Tensor(x))
        return request.infer

    return Gemm("openvino", str(ov.get_version()), threads, prepare, lambda: dict(ran))


def _opset() -> Any:
    """The newest opset module of the installed OpenVINO (openvino.opsetN; before 2025,
    openvino.runtime.opsetN)."""
    for parent in ("openvino", "openvino.runtime"):
        for version in range(20, 7, -1):
            try:
                module = importlib.import_module(f"{parent}.opset{version}")
            except ImportError:
                continue
            if hasattr(module, "matmul"):
                return module
    raise ImportError("no openvino opset module with matmul")


def _matmul_node(compiled: Any) -> tuple[str, str]:
    """(kernel, precision) of the MatMul in the compiled runtime graph (FullyConnected where
    the weights are a Constant), ("", "") if none is found."""
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        keys = set(info.keys())
        if "layerType" not in keys:
            continue
        if str(info["layerType"].astype(str)) in ("FullyConnected", "MatMul"):
            kernel = str(info["primitiveType"].astype(str)) if "primitiveType" in keys else ""
            executed = (str(info["runtimePrecision"].astype(str))
                        if "runtimePrecision" in keys else "")
            return kernel, executed
    return "", ""
