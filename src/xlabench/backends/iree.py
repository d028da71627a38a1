"""IREE: the jax.export StableHLO of Keras-on-JAX's forward, compiled by IREE for this CPU.

The exporting backend is Keras-on-JAX (not TensorFlow, as for OpenVINO and ONNX Runtime): the
artifact is `jax.export` of the jitted `stateless_call` the jax/xla mode compiles, variables as
arguments (`backends.jax.export_stateless`, shared with the native runner's PJRT path; unused
arguments are dropped by jax.export and not fed). Stages of the first call (each timed):
`export` (jax.export), `compile` (`iree.compiler.compile_str` of the StableHLO text for the
llvm-cpu backend and the host CPU, the vmfb written to the worker's scratch directory) and
`load` (the local-task device, the vmfb into a VM context, the weights copied to the device
once). Each step calls the module's `main` and copies its outputs to host NumPy arrays.

fp32 only: the guard checks that every floating argument and result of the exported function,
and every output the compiled one returns, is float32. Why not bf16 (the table's
precision_note; checked with iree-base-compiler 3.13 on a Zen 4 VM, AVX512_BF16):
`--iree-global-opt-demote-contraction-inputs-type=bf16` demotes named matmuls only; Keras'
convolutions reach that pass as linalg.generic and stay f32 (iree-org/iree#17484: ResNet50's
classifier alone went bf16). A bfloat16 Keras-on-JAX export compiles and runs in bf16, but
ResNet50 at 32 px missed bf16 parity against Keras eager bf16 (max rel diff 0.078 > 0.06).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from xlabench.backends import jax as jax_backend
from xlabench.backends import runtime
from xlabench.backends.base import Runner, package_version
from xlabench.core.backends import EXPORT_BACKENDS
from xlabench.core.spec import Spec

#: Keras backend that builds and exports the model for IREE.
EXPORT_BACKEND = EXPORT_BACKENDS["iree"]  # its entry in core/backends.py
SYNC = ("each step copies the outputs to host NumPy arrays (DeviceArray.to_host); the "
        "local-task invocation returns when they are computed")
DRIVER = "local-task"
#: iree-compile flags: StableHLO in, one local device, LLVM CPU code for this machine's CPU.
COMPILE_FLAGS = (
    "--iree-input-type=stablehlo",
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)
ENTRY = "main"
PACKAGES = ("iree-base-compiler", "iree-base-runtime")

make_input = runtime.make_input
peak_device_memory_mb = runtime.peak_device_memory_mb
build_context = jax_backend.build_context


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    return {
        **jax_backend.environment(spec, environ, scratch),
        "KERAS_BACKEND": EXPORT_BACKEND,
        runtime.ARTIFACTS_ENV: scratch,
        # Runtime flags parsed at import would change the device behind our back.
        "IREE_PY_RUNTIME_FLAGS": None,
        "IREE_SAVE_TEMPS": None,
    }


def setup(spec: Spec) -> dict[str, Any]:
    runtime.require_precision(spec)  # fp32 only: the table says why
    import keras

    exporter = jax_backend.setup(spec)
    versions = {p: package_version(p) for p in PACKAGES}
    return {
        "framework": "iree",
        "framework_version": versions["iree-base-runtime"],
        "compiler_version": versions["iree-base-compiler"],
        "device": DRIVER,
        "export_backend": EXPORT_BACKEND,
        "export_framework_version": exporter["framework_version"],
        "export_platform": exporter["platform"],
        "keras_version": keras.__version__,
        "threads": runtime.cpu_count(),
    }


def runtime_flags(threads: int) -> tuple[str, ...]:
    """Process-wide runtime flags, parsed before the local-task driver is created: one task
    worker per CPU the worker may use (the default is one per physical core of the machine)."""
    return (f"--task_topology_group_count={threads}",)


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if runtime.is_reference(mode):
        return Runner(lambda: model(x, training=False))  # Keras eager on JAX
    runner = runtime.compiled_on_first_call(  # export, compile, load; each timed
        lambda info: compile_model(model, x, runtime.cpu_count(), info),
        lambda loaded: _to_host(loaded[0](*loaded[1])))
    runner.finish = lambda: runner.info.update(iree_worker_threads=worker_threads())
    return runner


def worker_threads() -> int:
    """IREE's task worker threads in this process (named iree-worker-N): the topology we set,
    as the runtime made it."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="ascii") as handle:
                count += handle.read().startswith("iree-worker")
        except OSError:  # the thread ended meanwhile
            continue
    return count


def compile_model(model: Any, x: Any, threads: int, info: dict[str, Any]) -> Any:
    """(function, device arguments) of the compiled module; stages and knobs go to `info`."""
    stages: dict[str, float] = {}
    info["compile_stages_s"] = stages
    exported, args = runtime.timed(stages, "export", jax_backend.export_stateless, model, x)
    _check_precision(exported)
    info["artifact"] = "jax.export StableHLO of Keras-on-JAX stateless_call (variables as args)"
    info["kept_args"], info["all_args"] = len(args), len(exported.in_avals)
    vmfb = runtime.timed(stages, "compile", compile_stablehlo, exported.mlir_module())
    path = os.path.join(runtime.artifacts_dir(), "model.vmfb")
    with open(path, "wb") as handle:
        handle.write(vmfb)
    info["vmfb_bytes"] = len(vmfb)
    function, device_args = runtime.timed(stages, "load", load, vmfb, args, threads)
    info["iree_config"] = {
        "compile_flags": list(COMPILE_FLAGS),
        "compile_via": "iree.compiler.tools.compile_str (iree-compile on stdin; it adds "
                       "--iree-vm-bytecode-module-output-format=flatbuffer-binary)",
        "driver": DRIVER, "entry": ENTRY,
        "runtime_flags": list(runtime_flags(threads)), "task_topology_group_count": threads,
    }
    return function, device_args


def convert_and_run(model: Any, x: Any, threads: int, tf_graph: Any) -> list[Any]:
    """Exported, compiled and run once on `x` (backends/coverage.py: can IREE take this model?
    It takes the Keras-on-JAX export, not the TF graph)."""
    function, args = compile_model(model, x, threads, {})
    return _to_host(function(*args))


def compile_stablehlo(mlir: str | bytes) -> bytes:
    """The vmfb of a StableHLO module (iree-compile with COMPILE_FLAGS). A refusal raises with
    iree-compile's first `error:` diagnostic as the message (its message is many lines)."""
    from iree.compiler import tools

    input_type = COMPILE_FLAGS[0].split("=", 1)[1]
    try:
        return tools.compile_str(mlir, input_type=input_type, extra_args=list(COMPILE_FLAGS[1:]))
    except tools.CompilerToolError as exc:
        lines = str(exc).splitlines()
        diagnostic = next((line for line in lines if " error: " in f" {line}"), None)
        if diagnostic is None:
            raise
        raise RuntimeError(f"iree-compile: {diagnostic.strip()}") from exc


_FLAGS_SET: list[int] = []  # runtime flags are process-wide: parse them once per worker


_LOADED: list[tuple[Any, ...]] = []


def load(vmfb: bytes, args: list[Any], threads: int) -> tuple[Any, list[Any]]:
    """The module's entry function on a fresh local-task device, and its arguments on it."""
    import iree.runtime as rt

    if not _FLAGS_SET:
        rt.flags.parse_flags(*runtime_flags(threads))
        _FLAGS_SET.append(threads)
    elif _FLAGS_SET[0] != threads:
        raise runtime.ConversionError(
            f"IREE task topology already set to {_FLAGS_SET[0]} threads, asked {threads}")
    device = rt.get_driver(DRIVER).create_default_device()
    config = rt.Config(device=device)
    context = rt.SystemContext(config=config)
    module = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
    context.add_vm_module(module)
    function = context.modules[module.name][ENTRY]
    device_args = [rt.asdevicearray(device, np.asarray(a)) for a in args]
    # The function does not keep its context and device alive: freed when this returns, a later
    # garbage collection of the function or its buffers segfaults. They live as long as the
    # process (a worker loads one module).
    _LOADED.append((device, config, context, module))
    return function, device_args


def _to_host(result: Any) -> list[np.ndarray]:
    results = result if isinstance(result, (list, tuple)) else [result]
    outputs = [r.to_host() if hasattr(r, "to_host") else np.asarray(r) for r in results]
    bad = [str(o.dtype) for o in outputs if o.dtype != np.float32]
    if bad:  # the precision guard, on what the compiled function actually returned
        raise runtime.ConversionError(f"IREE returned {', '.join(bad)} outputs, asked float32")
    return outputs


def _check_precision(exported: Any) -> None:
    """Refuse an artifact with floating arguments or results other than float32 (fp32 spec;
    non-floating arguments, e.g. Keras' seed-generator state, are not arithmetic precision)."""
    dtypes = {np.dtype(a.dtype) for a in (*exported.in_avals, *exported.out_avals)}
    floats = sorted(str(d) for d in dtypes if d.kind not in "biu")
    if floats != ["float32"]:
        raise runtime.ConversionError(
            f"the exported function takes or returns {', '.join(floats)}, asked float32")


def sync(output: Any) -> None:
    """A no-op on the step's host arrays; waits for the Keras-on-JAX reference's."""
    jax_backend.sync(output)


def to_numpy(output: Any) -> Any:
    return jax_backend.to_numpy(output)  # host arrays and jax arrays alike
