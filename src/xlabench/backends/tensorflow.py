"""Keras 3 on TensorFlow: eager, graph (tf.function, no XLA) and XLA (jit_compile=True)."""

from __future__ import annotations

from typing import Any

from xlabench.backends.base import Runner, keras_input
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
