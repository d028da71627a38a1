"""ONNX Runtime: Keras' ONNX export (tf2onnx of the Keras-on-TensorFlow graph), run on the CPU.

`basic` disables every graph optimisation (ORT_DISABLE_ALL): the exported graph op by op, the
runtime's "eager". `compiled` enables them all (ORT_ENABLE_ALL: constant folding, fusions,
layout changes). Stages of the first call: `export` (trace), `convert` (tf2onnx, the converter
`model.export(format="onnx")` uses on TensorFlow, to a file in the worker's scratch directory)
and `compile` (the InferenceSession, where ORT optimises the graph).

fp32 only (the table's precision_note): Keras' ONNX export needs the float32 dtype policy, and
ONNX Runtime 1.32's CPU execution provider has no bfloat16 Conv or MatMul kernel (a bf16 node is
NOT_IMPLEMENTED at session creation; checked on a Zen 4 VM, AVX512_BF16), so a bf16 ONNX file
could not run on such a CPU either.
"""

from __future__ import annotations

import os
from typing import Any

from xlabench.backends import runtime
from xlabench.backends.base import Runner, package_version
from xlabench.core.spec import Spec

SYNC = runtime.SYNC
PROVIDER = "CPUExecutionProvider"
#: Graph optimisation level per mode (names of onnxruntime.GraphOptimizationLevel).
OPTIMIZATION = {"basic": "ORT_DISABLE_ALL", "compiled": "ORT_ENABLE_ALL"}

environment = runtime.environment
make_input = runtime.make_input
sync = runtime.sync
to_numpy = runtime.to_numpy
peak_device_memory_mb = runtime.peak_device_memory_mb


def setup(spec: Spec) -> dict[str, Any]:
    runtime.require_precision(spec)  # fp32 only: the table says why
    import onnxruntime as ort

    return {
        "framework": "onnxruntime",
        "framework_version": ort.__version__,
        "providers_available": ort.get_available_providers(),
        "converter": f"tf2onnx {package_version('tf2onnx')}, onnx {package_version('onnx')}",
        **runtime.setup_exporter(spec),
    }


def session_config(mode: str, threads: int) -> dict[str, Any]:
    """The knobs we set, in words (stored with the record)."""
    return {
        "graph_optimization_level": OPTIMIZATION[mode],
        "intra_op_num_threads": threads,
        "inter_op_num_threads": 1,
        "execution_mode": "ORT_SEQUENTIAL",
        "providers": [PROVIDER],
    }


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if runtime.is_reference(mode):
        return runtime.reference_runner(model, x)
    host_x = runtime.host_input(x)
    return runtime.compiled_on_first_call(  # export, convert, compile; each timed
        lambda info: compile_model(model, x, mode, runtime.cpu_count(), info),
        lambda compiled: compiled[0].run(None, {compiled[1]: host_x}))


def compile_model(model: Any, x: Any, mode: str, threads: int, info: dict[str, Any]) -> Any:
    """(session, input name) of the converted model; stages and settings go to `info`."""
    stages: dict[str, float] = {}
    info["compile_stages_s"] = stages
    function, _ = runtime.timed(stages, "export", runtime.trace, model, x)
    path = runtime.timed(stages, "convert", convert, function, x)
    return compile_file(path, mode, threads, info, stages)


def convert(function: Any, x: Any) -> str:
    """tf2onnx of the traced function, as Keras' ONNX export calls it; returns the file."""
    import onnx
    import tf2onnx

    try:  # Keras' own numpy-2 fixes for tf2onnx, applied by model.export(format="onnx") too
        from keras.src.export.tf2onnx_lib import patch_tf2onnx

        patch_tf2onnx()
    except ImportError:  # Keras moved it: tf2onnx as installed
        pass
    path = os.path.join(runtime.artifacts_dir(), "model.onnx")
    proto, _ = tf2onnx.convert.from_function(function, function.input_signature)
    _freeze_captured_constants(proto, function.get_concrete_function())
    _rewrite_erfc(proto)
    onnx.save(proto, path)
    return path


def _rewrite_erfc(proto: Any) -> None:
    """tf2onnx 1.17 emits `Erfc`, which ONNX does not have (TF's exact GELU is
    0.5 * x * erfc(-x / sqrt 2): every Keras model with GELU, ViT to ConvNeXt, is refused
    as an invalid graph). Rewrite each as 1 - Erf(x), the same function."""
    import numpy as np
    from onnx import helper, numpy_helper

    nodes = list(proto.graph.node)
    if not any(n.op_type == "Erfc" for n in nodes):
        return
    one = "xlabench_erfc_one"
    proto.graph.initializer.append(numpy_helper.from_array(np.array(1.0, np.float32), one))
    rewritten = []
    for node in nodes:
        if node.op_type != "Erfc":
            rewritten.append(node)
            continue
        erf_out = f"{node.output[0]}_erf"
        rewritten.append(helper.make_node("Erf", [node.input[0]], [erf_out], f"{node.name}_erf"))
        rewritten.append(helper.make_node("Sub", [one, erf_out], [node.output[0]], node.name))
    del proto.graph.node[:]
    proto.graph.node.extend(rewritten)


def _freeze_captured_constants(proto: Any, concrete: Any) -> None:
    """Captured constant tensors (e.g. the mean/variance EfficientNet's Normalization holds as
    plain tensors, not variables) come out of tf2onnx as extra graph inputs the caller would
    have to feed: make them initializers, as the variables are."""
    import numpy as np
    from onnx import numpy_helper

    values = {internal.name: external for external, internal in concrete.graph.captures
              if hasattr(external, "numpy") and external.dtype != "resource"}
    for graph_input in list(proto.graph.input):
        if graph_input.name in values:
            array = np.asarray(values[graph_input.name].numpy())
            proto.graph.initializer.append(numpy_helper.from_array(array, graph_input.name))
            proto.graph.input.remove(graph_input)


def convert_and_run(model: Any, x: Any, threads: int, tf_graph: Any) -> list[Any]:
    """The traced graph (`tf_graph()`) converted, compiled (`compiled` mode) and run once on
    `x` (backends/coverage.py: can ONNX Runtime take this model?)."""
    stages: dict[str, float] = {}
    path = runtime.timed(stages, "convert", convert, tf_graph()[0], x)
    session, name = compile_file(path, "compiled", threads, {}, stages)
    return session.run(None, {name: runtime.host_input(x)})


def compile_file(path: str, mode: str, threads: int, info: dict[str, Any],
                 stages: dict[str, float]) -> Any:
    """An InferenceSession of the ONNX file with every knob set (shared with the zoo test)."""
    import onnxruntime as ort

    config = session_config(mode, threads)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION[mode])
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = runtime.timed(stages, "compile", ort.InferenceSession, path, options,
                            providers=[PROVIDER])
    info["onnxruntime_config"] = config
    info["onnxruntime_providers"] = session.get_providers()
    info["onnx_opset"] = _opset(path)
    return session, session.get_inputs()[0].name


def _opset(path: str) -> int | None:
    import onnx

    model = onnx.load(path, load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
