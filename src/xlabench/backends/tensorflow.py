"""Keras 3 on TensorFlow: eager, graph (tf.function, no XLA) and XLA (jit_compile=True)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xlabench.backends.base import ConversionError, Runner, keras_input
from xlabench.core.spec import Spec

SYNC = "tf.test.experimental.sync_devices() after the last step of each sample"
#: Auto-clustering would silently turn the graph row into an XLA row.
_AUTO_JIT_FLAGS = ("--tf_xla_auto_jit", "--tf_xla_cpu_global_jit")


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    flags = [
        f for f in environ.get("TF_XLA_FLAGS", "").split()
        if not f.startswith(_AUTO_JIT_FLAGS)
    ]
    env = {"TF_XLA_FLAGS": " ".join(flags), "TF_CPP_MIN_LOG_LEVEL": "2"}
    if not flags:
        env["TF_XLA_FLAGS"] = ""
    return env


def setup(spec: Spec) -> dict[str, Any]:
    import tensorflow as tf

    tf.config.optimizer.set_jit(False)  # explicit: no auto-clustering in eager/graph modes
    tf.config.experimental.enable_tensor_float_32_execution(spec.tf32)
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "framework": "tensorflow",
        "framework_version": tf.__version__,
        "devices": [d.name for d in gpus] or ["CPU:0"],
        "tf32_enabled": tf.config.experimental.tensor_float_32_execution_enabled(),
        "auto_jit": tf.config.optimizer.get_jit(),
        "onednn": _onednn_enabled(),
    }


def seed_framework(seed: int) -> None:
    """TensorFlow's global seed (what keras.utils.set_random_seed adds on TensorFlow)."""
    import tensorflow as tf

    tf.random.set_seed(seed)


def make_input(spec: Spec) -> Any:
    return keras_input(spec)


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    import tensorflow as tf

    def forward(inputs: Any) -> Any:
        return model(inputs, training=False)

    if mode == "eager":
        return Runner(lambda: forward(x))
    signature = [tf.TensorSpec(x.shape, x.dtype)]  # fixed: one trace, never a retrace
    function = tf.function(forward, input_signature=signature, jit_compile=(mode == "xla"))
    runner = Runner(lambda: function(x), {"jit_compile": mode == "xla"})

    def finish() -> None:
        runner.info["tracing_count"] = function.experimental_get_tracing_count()

    runner.finish = finish
    return runner


def export_native(spec: Spec, model: Any, x: Any, out_dir: Path,
                  threads: int) -> dict[str, Any]:
    """tf_c: a SavedModel whose serving function is the forward (jit_compile on for the xla
    mode), run by the TF C API with this process's thread counts (`base.NativeExporter`)."""
    import keras
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2, saved_model_pb2

    def forward(inputs: Any) -> Any:
        return model(inputs, training=False)

    jit = spec.mode == "xla"
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", tf.function(forward, jit_compile=jit, autograph=False),
                         input_signature=[tf.TensorSpec(x.shape, tf.float32)])
    archive.write_out(str(out_dir / "saved_model"), verbose=False)
    saved = saved_model_pb2.SavedModel.FromString(
        (out_dir / "saved_model" / "saved_model.pb").read_bytes())
    signature = saved.meta_graphs[0].signature_def["serving_default"]
    if len(signature.inputs) != 1:
        raise ConversionError(f"the serving signature has {len(signature.inputs)} inputs, not 1")
    # Keras flattens dict outputs by sorted key, and the signature names them output_0, ...
    keys = sorted(signature.outputs, key=lambda k: (len(k), k))
    # The same thread counts TensorFlow's Python side uses by default on this machine.
    config = config_pb2.ConfigProto(intra_op_parallelism_threads=threads,
                                    inter_op_parallelism_threads=threads)
    (out_dir / "session_config.pb").write_bytes(config.SerializeToString())
    size = sum(p.stat().st_size for p in (out_dir / "saved_model").rglob("*") if p.is_file())
    return {
        "saved_model": "saved_model", "session_config": "session_config.pb",
        "input": {"tensor": next(iter(signature.inputs.values())).name},
        "outputs": [{"tensor": signature.outputs[k].name} for k in keys],
        "info": {"artifact": "SavedModel", "artifact_bytes": size, "jit_compile": jit,
                 "same_compiler": True},
    }


def sync(output: Any) -> None:
    import tensorflow as tf

    tf.test.experimental.sync_devices()


def to_numpy(output: Any) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: t.numpy(), output)


def peak_device_memory_mb() -> float | None:
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def _onednn_enabled() -> bool | None:
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        return None
