"""What every backend module provides, and the helpers they share."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xlabench.core.backends import model_precision
from xlabench.core.spec import Spec

OOM_MARKERS = ("resource_exhausted", "resourceexhausted", "out of memory", "outofmemory", "oom ")


class ConversionError(RuntimeError):
    """An exporter, converter or runtime refused the model; the message is one line."""


@dataclass
class Runner:
    """A ready-to-time step for one mode. `info` fills in as the step runs (compile stages...)."""

    step: Callable[[], Any]
    info: dict[str, Any] = field(default_factory=dict)
    finish: Callable[[], None] = lambda: None  # collects info that is only known after running


class Backend(Protocol):
    """The questions every backend module answers (module-level functions)."""

    SYNC: str  # how `sync` waits for the device, in words, stored with every record

    def environment(
        self, spec: Spec, environ: dict[str, str], scratch: str
    ) -> dict[str, str | None]:
        """Environment variables for the worker, set before the framework is imported.

        `scratch` is a directory the worker owns and deletes when it ends; None unsets."""

    def setup(self, spec: Spec) -> dict[str, Any]:
        """Pin precision flags (TF32 ...) and return what the framework reports about itself."""

    def make_input(self, spec: Spec) -> Any:
        """The seeded input batch, created once, on the device, in the compute dtype."""

    def make_runner(self, model: Any, mode: str, x: Any) -> Runner:
        """A step callable that runs `model` on `x` in `mode`."""

    def sync(self, output: Any) -> None:
        """Block until the device has finished computing `output`."""

    def to_numpy(self, output: Any) -> Any:
        """The output as nested NumPy arrays (for parity)."""

    def peak_device_memory_mb(self) -> float | None:
        """Peak memory the framework allocated on the accelerator, or None on the CPU."""

    # Optional: seed_framework(seed) seeds the framework's own generator (`seed_all`),
    # export_native (`NativeExporter`) where the table gives the backend native runtimes, and
    # make_runners(model, mode, x, n) where its table entry runs LoadGen scenarios on more than
    # one thread (`scenario_concurrency` > 1): n runners of one compiled model, one per thread.


class NativeExporter(Protocol):
    """What a backend module with native runtimes (core/backends.py `native_runtimes`) adds:
    the export of a compiled mode's artifact, which xlabench-native then times."""

    def export_native(self, spec: Spec, model: Any, x: Any, out_dir: Path,
                      threads: int) -> dict[str, Any]:
        """Write the artifact for `spec.native_runtime` into `out_dir`; return its manifest.

        The manifest's entries go to out_dir/artifact.json for the C++ runtime (paths relative
        to out_dir, settings), except these, which runner/native.py reads itself:
        `args` every argument of the exported function as arrays (default: the batch `x`
        alone), `input` entries added to the last argument's (e.g. its tensor name),
        `stages_s` export stages in seconds (default: the whole call as `export`), `info`
        what the record stores in backend_info (`same_compiler`: whether the native side
        runs the compiler the Python side does). A refusal raises ConversionError.
        `threads`: the CPUs both sides may use.
        """


def make_runners(backend: Any, model: Any, mode: str, x: Any, n: int) -> list[Runner]:
    """`n` runners that may step at the same time, one per LoadGen thread: the backend
    module's `make_runners`, or its one runner where `n` is 1."""
    own = getattr(backend, "make_runners", None)
    if own is not None:
        runners: list[Runner] = own(model, mode, x, n)
        return runners
    if n > 1:
        raise ValueError(f"{backend.__name__} has no make_runners: it runs one query batch at a "
                         f"time, not {n}")
    return [backend.make_runner(model, mode, x)]


def package_version(package: str, missing: str = "missing") -> str:
    """The installed version of distribution `package`, or `missing`."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return missing


def is_oom(exc: BaseException) -> bool:
    """Whether an exception means the device or host ran out of memory."""
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, MemoryError) or any(marker in text for marker in OOM_MARKERS)


def input_dtype(spec: Spec) -> str:
    """A bf16 model is fed bfloat16; fp32 and mixed ones float32 (mixed casts inside the
    layers), as is a runtime's fp32 model whatever precision the runtime executes."""
    return "bfloat16" if model_precision(spec.backend, spec.precision) == "bf16" else "float32"


def keras_input(spec: Spec) -> Any:
    """Seeded uniform pixels in [0, 255] (models carry their own rescaling), on the device."""
    import keras

    shape = (spec.batch_size, spec.resolution, spec.resolution, spec.channels)
    return keras.random.uniform(shape, 0.0, 255.0, dtype=input_dtype(spec), seed=spec.seed)


def seed_all(seed: int, backend: str) -> None:
    """Seed Python, NumPy, Keras' global seed generator and the framework (the backend
    module's `seed_framework`, where it has one).

    keras.utils.set_random_seed does the same, but it also imports TensorFlow to seed it
    whenever TensorFlow is installed; in a JAX or torch worker that costs seconds and memory
    (and, on a GPU, TensorFlow may claim the device), so only TensorFlow's module seeds it.
    """
    import keras

    from xlabench.backends import load

    try:
        from keras.src.backend.common import global_state
        from keras.src.random import seed_generator
        from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED
    except ImportError:  # Keras moved its internals: fall back to the public call
        keras.utils.set_random_seed(seed)
        return
    import random

    import numpy as np

    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    seed_framework = getattr(load(backend), "seed_framework", None)
    if seed_framework is not None:
        seed_framework(seed)
