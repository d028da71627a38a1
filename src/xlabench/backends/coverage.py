"""Can each deployment runtime take this model? One in-process conversion and one run each.

The zoo tests and `bench/runtime_coverage.py` use this to cover the whole registry cheaply: the
model is traced once and that one graph serves every runtime of its exporting backend (the
worker, which measures, does the same stages per runtime in its own process). OpenVINO, ONNX
Runtime and LiteRT take the Keras-on-TensorFlow graph, IREE the Keras-on-JAX jax.export: a
process covers the runtimes whose exporting backend is its KERAS_BACKEND (`runtimes_for`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from xlabench.backends import load, runtime
from xlabench.core.backends import EXPORT_BACKENDS, RUNTIMES


def runtimes_for(keras_backend: str) -> tuple[str, ...]:
    """The runtimes a process with this KERAS_BACKEND can convert for."""
    return tuple(r for r in RUNTIMES if EXPORT_BACKENDS[r] == keras_backend)


@dataclass(frozen=True)
class Outcome:
    """One runtime on one model: did it convert and run, how close to Keras, how long."""

    runtime: str
    ok: bool
    reason: str = ""
    max_rel_diff: float | None = None
    outputs: int = 0
    finite: bool = False
    seconds: float = 0.0


def try_runtimes(model: Any, x: Any, threads: int = 1,
                 runtimes: tuple[str, ...] | None = None) -> dict[str, Outcome]:
    """Convert `model` (fp32, built on the runtimes' exporting backend) for each of `runtimes`
    (default: those of this process's Keras backend) and run it once on `x`."""
    import keras

    runtimes = runtimes_for(keras.backend.backend()) if runtimes is None else runtimes
    wrong = [r for r in runtimes if EXPORT_BACKENDS[r] != keras.backend.backend()]
    if wrong:
        raise ValueError(f"{', '.join(wrong)} take a model built on "
                         f"{EXPORT_BACKENDS[wrong[0]]}, not {keras.backend.backend()}")
    reference = _flat(model(x, training=False))
    traced: list[Any] = []

    def tf_graph() -> Any:  # traced once, for the runtimes that take the TF graph
        if not traced:
            traced.append(runtime.trace(model, x))
        return traced[0]

    with _scratch():
        # each runtime module's convert_and_run: convert, compile and run once on x
        return {name: _attempt(name, reference, functools.partial(
            load(name).convert_and_run, model, x, threads, tf_graph)) for name in runtimes}


@contextlib.contextmanager
def _scratch() -> Iterator[None]:
    """Artifacts in a directory deleted afterwards, as a worker's scratch directory is."""
    before = os.environ.get(runtime.ARTIFACTS_ENV)
    with tempfile.TemporaryDirectory(prefix="xlabench-coverage-") as path:
        os.environ[runtime.ARTIFACTS_ENV] = path
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(runtime.ARTIFACTS_ENV, None)
            else:
                os.environ[runtime.ARTIFACTS_ENV] = before


def _attempt(name: str, reference: list[np.ndarray], run: Any) -> Outcome:
    start = time.perf_counter()
    try:
        outputs = [np.asarray(o, dtype=np.float64) for o in run()]
    except Exception as exc:  # noqa: BLE001 (a refusal is the finding, not a crash)
        text = str(exc) if isinstance(exc, runtime.ConversionError) else runtime.one_line(exc)
        return Outcome(name, False, text, seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    finite = all(np.isfinite(o).all() for o in outputs)
    if [o.shape for o in outputs] != [r.shape for r in reference]:
        shapes = f"{[o.shape for o in outputs]} vs {[r.shape for r in reference]}"
        return Outcome(name, False, f"output shapes differ: {shapes}", None, len(outputs),
                       finite, seconds)
    return Outcome(name, True, "", _max_rel_diff(outputs, reference), len(outputs), finite,
                   seconds)


def _flat(output: Any) -> list[np.ndarray]:
    """The Keras output as float64 arrays, dict keys sorted (the traced graph's order)."""
    import keras

    return [np.asarray(keras.ops.convert_to_numpy(t), dtype=np.float64)
            for t in keras.tree.flatten(output)]


def _max_rel_diff(outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """max|out - ref| / max|ref|, as measure.parity computes it for the worker."""
    diff = max(float(np.max(np.abs(o - r))) for o, r in zip(outputs, reference, strict=True))
    scale = max(float(np.max(np.abs(r))) for r in reference)
    return diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
