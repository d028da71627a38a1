"""LiteRT: Keras' LiteRT export (TFLiteConverter of the Keras-on-TensorFlow graph), run by the
LiteRT interpreter (`ai_edge_litert`) on the CPU.

`basic` builds the interpreter with `OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES`: LiteRT's
builtin (optimised, non-reference) kernels, and its default XNNPACK delegate is never applied.
`compiled` uses the default resolver, with which the interpreter hands every subgraph XNNPACK
takes to the XNNPACK delegate when the tensors are first allocated (XNNPACK packs the weights
and plans its operators there: the runtime's compile step). Stages of the first call: `export`
(trace), `convert` (`tf.lite.TFLiteConverter` with the settings `model.export(format="litert")`
uses on TensorFlow, to a .tflite file in the worker's scratch directory) and `compile`
(interpreter creation + `allocate_tensors`).

Which mode really ran is checked, not assumed: a delegate applied to the graph shows up as a
`DELEGATE` node in the interpreter (`backend_info.litert_delegate_nodes`); `basic` with one, or
`compiled` without one, is refused rather than measured as the other mode.

Keras' LiteRT export of an fp32 model is float32 throughout (no quantisation asked for). fp32
only (the table's precision_note): TFLiteConverter makes no bf16 model (`supported_types =
[tf.bfloat16]` converts to float32, a bfloat16 graph is refused as an unsupported input type),
and its fp16 option stores fp16 weights that the CPU kernels dequantise and compute in f32.
"""

from __future__ import annotations

import os
from typing import Any

from xlabench.backends import runtime
from xlabench.backends.base import Runner
from xlabench.core.spec import Spec

SYNC = runtime.SYNC
#: The interpreter's op resolver per mode (names of ai_edge_litert's OpResolverType).
OP_RESOLVER = {"basic": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "compiled": "BUILTIN"}
#: What each resolver means for delegation, in words (stored with the record).
DELEGATE = {"basic": "none (default delegates disabled)",
            "compiled": "XNNPACK (the interpreter's default delegate)"}
#: The name LiteRT gives a node that a delegate replaced part of the graph with.
DELEGATE_NODE = "DELEGATE"
INTERPRETER = "ai_edge_litert.interpreter.Interpreter"

environment = runtime.environment
make_input = runtime.make_input
sync = runtime.sync
to_numpy = runtime.to_numpy
peak_device_memory_mb = runtime.peak_device_memory_mb


def setup(spec: Spec) -> dict[str, Any]:
    runtime.require_precision(spec)  # fp32 only: the table says why
    import ai_edge_litert
    import tensorflow as tf

    return {
        "framework": "litert",
        "framework_version": ai_edge_litert.__version__,
        "interpreter": INTERPRETER,
        "converter": f"tf.lite.TFLiteConverter (TensorFlow {tf.__version__})",
        **runtime.setup_exporter(spec),
    }


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if runtime.is_reference(mode):
        return runtime.reference_runner(model, x)
    host_x = runtime.host_input(x)

    def run(loaded: tuple[Any, int, list[int]]) -> list[Any]:
        interpreter, input_index, output_indices = loaded
        interpreter.set_tensor(input_index, host_x)
        interpreter.invoke()
        return [interpreter.get_tensor(i) for i in output_indices]

    return runtime.compiled_on_first_call(  # export, convert, compile; each timed
        lambda info: compile_model(model, x, mode, runtime.cpu_count(), info), run)


def compile_model(model: Any, x: Any, mode: str, threads: int, info: dict[str, Any]) -> Any:
    """(interpreter, input index, output indices); stages and settings go to `info`."""
    stages: dict[str, float] = {}
    info["compile_stages_s"] = stages
    _, concrete = runtime.timed(stages, "export", runtime.trace, model, x)
    path = runtime.timed(stages, "convert", convert, concrete, model, info)
    return compile_file(path, mode, threads, info, stages)


def convert(concrete: Any, model: Any, info: dict[str, Any]) -> str:
    """The traced function through TFLiteConverter as Keras' LiteRT export configures it;
    returns the .tflite file.

    Keras writes a SavedModel of the serving endpoint (ExportArchive) and converts that; we
    freeze the traced function's graph instead (`experimental_lower_to_saved_model=False`):
    on mobilenet_v3_small the same ops and weights (the files differ by Keras' signature
    def, 172 bytes of 10 MB; identical outputs) in 1.8 s instead of 10.8 s. Letting the
    converter lower the function and the whole Keras model to a SavedModel itself is not an
    option: the variables stay resource variables nothing initialises (READ_VARIABLE fails).
    """
    import tensorflow as tf

    # `model` owns the variables the function captures: kept alive through the conversion.
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], model)
    converter.experimental_lower_to_saved_model = False
    # Keras' settings: builtin ops, TensorFlow ops (Flex) where no builtin exists.
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                           tf.lite.OpsSet.SELECT_TF_OPS]
    converter.experimental_enable_resource_variables = True
    flatbuffer = converter.convert()
    info["litert_converter_route"] = "frozen concrete function"
    path = os.path.join(runtime.artifacts_dir(), "model.tflite")
    with open(path, "wb") as out:
        out.write(flatbuffer)
    info["tflite_bytes"] = len(flatbuffer)
    return path


def convert_and_run(model: Any, x: Any, threads: int, tf_graph: Any) -> list[Any]:
    """The traced graph (`tf_graph()`) converted and run once on `x` in the compiled
    (XNNPACK) mode, the one a deployment would run (backends/coverage.py)."""
    stages: dict[str, float] = {}
    info: dict[str, Any] = {}
    path = runtime.timed(stages, "convert", convert, tf_graph()[1], model, info)
    interpreter, index, outputs = compile_file(path, "compiled", threads, info, stages)
    interpreter.set_tensor(index, runtime.host_input(x))
    interpreter.invoke()
    return [interpreter.get_tensor(i) for i in outputs]


def interpreter_config(mode: str, threads: int) -> dict[str, Any]:
    """The knobs we set, in words (stored with the record)."""
    return {"op_resolver": OP_RESOLVER[mode], "num_threads": threads, "delegate": DELEGATE[mode],
            "interpreter": INTERPRETER}


def compile_file(path: str, mode: str, threads: int, info: dict[str, Any],
                 stages: dict[str, float]) -> Any:
    """An interpreter of the .tflite file with its tensors allocated (shared with the zoo test);
    (interpreter, input index, output indices)."""
    interpreter = runtime.timed(stages, "compile", load, path, mode, threads)
    info["litert_config"] = interpreter_config(mode, threads)
    # Every node, delegate kernels included (the execution plan is not exposed in Python).
    nodes = [op["op_name"] for op in interpreter._get_ops_details()]
    info["litert_nodes"] = len(nodes)
    info["litert_delegate_nodes"] = nodes.count(DELEGATE_NODE)
    info["litert_flex_nodes"] = sum(name.startswith("Flex") for name in nodes)
    check_delegation(mode, info["litert_delegate_nodes"])
    (tensor_in,) = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    info["litert_output_shapes"] = [[int(d) for d in t["shape"]] for t in outputs]
    return interpreter, tensor_in["index"], [t["index"] for t in outputs]


def load(path: str, mode: str, threads: int) -> Any:
    """Interpreter creation and `allocate_tensors` (where the default delegate is applied)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=path, num_threads=threads,
                              experimental_op_resolver_type=OpResolverType[OP_RESOLVER[mode]])
    interpreter.allocate_tensors()
    return interpreter


def check_delegation(mode: str, delegate_nodes: int) -> None:
    """Refuse to measure one mode as the other: `basic` must run no delegate (XNNPACK would
    make it `compiled`), `compiled` must have handed XNNPACK part of the graph (LiteRT drops a
    default delegate that fails to apply and runs the builtin kernels instead)."""
    if mode == "basic" and delegate_nodes:
        raise runtime.ConversionError(
            f"compile: basic ran {delegate_nodes} delegate node(s); default delegates were to be "
            f"disabled")
    if mode == "compiled" and not delegate_nodes:
        raise runtime.ConversionError("compile: XNNPACK took no part of the graph")
