"""What the deployment-runtime backends (OpenVINO, ONNX Runtime, LiteRT, IREE, ExecuTorch) share.

A runtime backend is not a Keras backend: the worker builds the Keras model on the runtime's
*exporting* backend (`core.backends.EXPORT_BACKENDS`) and hands its exported graph to the runtime.
OpenVINO, ONNX Runtime and LiteRT export from Keras-on-TensorFlow (its graph feeds OpenVINO's
TensorFlow frontend, tf2onnx and the TFLite converter): the worker traces the model once into a
`tf.function` with a fixed input signature (`trace`), with this module's environment and
`setup_exporter`. IREE (Keras-on-JAX, StableHLO) and ExecuTorch (Keras-on-PyTorch, torch.export)
set up their own exporter and use the rest: the input, the fp32 check, the timed stages, the
artifacts directory and the first-call compile. The parity reference is the exporting
backend's eager Keras output on the same weights and input (`REFERENCE_MODE`). Artifacts go to
the worker's scratch directory: nothing survives a worker.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any, TypeVar

from xlabench.backends import tensorflow as tf_backend
from xlabench.backends.base import ConversionError, Runner, keras_input
from xlabench.core.backends import EXPORT_BACKENDS, precision_problem
from xlabench.core.spec import REFERENCE_MODE, Spec

#: Set by `environment`: where a worker's artifacts (IR, ONNX files) are written.
ARTIFACTS_ENV = "XLABENCH_ARTIFACTS_DIR"
INPUT_NAME = "images"
T = TypeVar("T")
SYNC = "none needed: the runtime's inference call is synchronous (returns host arrays)"


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    return {
        **tf_backend.environment(spec, environ, scratch),
        "KERAS_BACKEND": EXPORT_BACKENDS[spec.backend],
        ARTIFACTS_ENV: scratch,
    }


def setup_exporter(spec: Spec) -> dict[str, Any]:
    """Pin TensorFlow as for its own modes; say which Keras backend exports the artifact."""
    import keras

    exporter = tf_backend.setup(spec)
    return {
        "export_backend": EXPORT_BACKENDS[spec.backend],
        "export_framework_version": exporter["framework_version"],
        "keras_version": keras.__version__,
        "threads": cpu_count(),
    }


def cpu_count() -> int:
    """CPUs this worker may use (its affinity: a sweep pins each worker to its own cores)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def artifacts_dir() -> str:
    """The worker's scratch directory (a fresh temporary one outside a worker, e.g. tests)."""
    path = os.environ.get(ARTIFACTS_ENV) or tempfile.mkdtemp(prefix="xlabench-artifacts-")
    os.makedirs(path, exist_ok=True)
    return path


def make_input(spec: Spec) -> Any:
    return keras_input(spec)


def reference_runner(model: Any, x: Any) -> Runner:
    """Keras eager on the exporting backend: the parity reference of every runtime mode."""
    return Runner(lambda: model(x, training=False))


def is_reference(mode: str) -> bool:
    return mode == REFERENCE_MODE


def require_precision(spec: Spec) -> None:
    """One line for a precision a runtime backend does not take (its table entry says why)."""
    problem = precision_problem(spec.backend, spec.precision)
    if problem:
        raise ConversionError(problem)


def compiled_on_first_call(
    compile_artifact: Callable[[dict[str, Any]], T], run: Callable[[T], Any]
) -> Runner:
    """The runner of every runtime backend: its first step exports, converts and compiles
    (`compile_artifact(info)` times each stage into the runner's info), so the worker's
    first-call timing holds all of it; every step then runs the compiled artifact."""
    runner = Runner(lambda: None)
    compiled: list[T] = []

    def step() -> Any:
        if not compiled:
            compiled.append(compile_artifact(runner.info))
        return run(compiled[0])

    runner.step = step
    return runner


def host_input(x: Any) -> Any:
    """The input batch as a host NumPy array, made once (runtimes take host buffers)."""
    return x.numpy() if hasattr(x, "numpy") else x


def trace(model: Any, x: Any) -> Any:
    """The model's inference graph as a concrete tf.function with the batch's fixed shape."""
    import tensorflow as tf

    def forward(inputs: Any) -> Any:
        return model(inputs, training=False)

    signature = [tf.TensorSpec(x.shape, x.dtype, name=INPUT_NAME)]
    function = tf.function(forward, input_signature=signature)
    return function, function.get_concrete_function()


def timed(stages: dict[str, float], name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one stage (export, convert, compile ...), store its seconds under `name`, and turn
    a refusal into a one-line ConversionError that says which stage refused."""
    start = time.perf_counter()
    try:
        return call(*args, **kwargs)
    except ConversionError:
        raise
    except Exception as exc:  # a refused model is data, not a crash
        raise ConversionError(f"{name}: {one_line(exc)}") from exc
    finally:
        stages[name] = time.perf_counter() - start


#: Words that mark the line of a converter's message that says *what* it refused, best first.
_TELLING = (("no conversion rule", "unsupported", "not supported", "cannot", "can't"),
            ("error", "failed", "invalid"))


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The most telling line of a converter's (often many-line) message."""
    lines = [line.strip(" -") for line in str(exc).splitlines() if line.strip(" -")]
    lines = [line for line in lines if "http" not in line] or lines
    best = next((line for words in _TELLING for line in lines
                 if any(w in line.lower() for w in words)), None)
    text = f"{type(exc).__name__}: {best or (lines[0] if lines else 'no message')}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sync(output: Any) -> None:
    """Nothing to wait for: the inference call returned host arrays (Keras-on-TF eager on
    the CPU, the reference, is synchronous as well)."""


def to_numpy(output: Any) -> Any:
    """Runtime outputs are already host arrays; the Keras reference is a TF structure."""
    import numpy as np
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: np.asarray(t.numpy() if hasattr(t, "numpy") else t,
                                                      dtype=np.float32), output)


def peak_device_memory_mb() -> float | None:
    return None  # CPU runtimes: host memory is the worker's peak RSS
