"""ExecuTorch: PyTorch's deployment runtime, on the `torch.export` of Keras-on-PyTorch.

The exporting backend is Keras-on-PyTorch: `torch.export` (non-strict) of the model's forward,
the capture torch/compiled uses. `executorch.exir.to_edge_transform_and_lower` turns it into
the Edge dialect and hands the partitioner what it takes; `to_executorch` plans the memory and
serialises the program (.pte, written to the worker's scratch directory); the runtime
(`executorch.runtime.Runtime`) loads it and runs its `forward` method. Stages of the first call
(each timed): `export`, `lower`, `emit` (to_executorch and the .pte bytes) and `load`
(load_program + load_method: a delegate builds its runtime and packs its weights here).

`basic` lowers with no partitioner: every op runs on the CPU kernels the wheel's runtime
registers (its optimised kernel library: optimised kernels for some ops, e.g. add, mul, mm, and
the portable ones, ExecuTorch's reference kernels, for the rest, e.g. convolution). `compiled`
lowers with the XNNPACK partitioner: the subgraphs XNNPACK takes run as XNNPACK delegate
calls, the rest (e.g. a mean over H and W of an NHWC tensor) on those CPU kernels. Which mode
really ran is checked, not assumed: the lowered program's delegate calls are counted
(`backend_info.executorch_delegate_calls`); `basic` with one, or `compiled` without one, is
refused.

Both modes lower the same program, rewritten twice (neither rewrite changes a value); only
the partitioner differs:
- Every tensor in the default (contiguous) dim order. Keras-on-PyTorch makes a convolution's
  input and kernel channels-last (`Tensor.contiguous(memory_format=torch.channels_last)`) and
  the exported graph keeps those dim orders; the CPU kernels refuse a `permute_copy` whose
  input and output dim orders differ (error 0x12 at the first convolution's output) and are
  only partly channels-last aware (pytorch/executorch#12914, #11086).
- Constant folding (`constant_prop_pass`): Keras transposes each kernel from HWIO to OIHW
  inside the forward, so without folding every convolution's weight is a computed tensor,
  and XNNPACK delegates a convolution only with a constant weight.

Natively (`--runner native`, both modes): `export_native` writes the same .pte (same export,
lowering and emission) and xlabench-native runs it with ExecuTorch's C++ runtime
(native/src/runtimes/executorch.cc: Program and Method on memory planned from the method's
MethodMeta), linked against the shared libraries of this wheel that the pybindings use too.

fp32 only: ExecuTorch's XNNPACK partitioner delegates bfloat16 only for fully connected layers,
and only when asked (`enable_bf16`); a bf16 convolution would run on the CPU kernels instead
(checked with executorch 1.5.1: a bf16 conv net lowered with the default partitioner delegates
nothing, and with `enable_bf16` its program failed to load, error 0x1).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from xlabench.backends import runtime
from xlabench.backends import torch as torch_backend
from xlabench.backends.base import Runner, package_version
from xlabench.core.backends import EXPORT_BACKENDS
from xlabench.core.spec import Spec

#: Keras backend that builds and exports the model for ExecuTorch.
EXPORT_BACKEND = EXPORT_BACKENDS["executorch"]  # its entry in core/backends.py
SYNC = ("none needed: Method.execute runs on the CPU and returns when its outputs are "
        "computed (host tensors, copied out of the planned memory)")
#: The partitioner per mode (None: no delegate, the runtime's CPU kernels run every op).
PARTITIONER = {"basic": None, "compiled": "XnnpackPartitioner"}
DELEGATE = {"basic": "none (the runtime's CPU kernels)",
            "compiled": "XNNPACK (XnnpackPartitioner)"}
METHOD = "forward"
#: How the Edge program is rewritten before lowering (see the module docstring), in words.
PASSES = ("default dim order for every tensor", "constant_prop_pass")
#: The target of a delegate call in the lowered graph.
DELEGATE_CALL = "executorch_call_delegate"
#: The serialised program, in the worker's scratch directory (Python) or the native artifact.
PROGRAM_FILE = "model.pte"

make_input = runtime.make_input
seed_framework = torch_backend.seed_framework  # the model is built on Keras-on-PyTorch
peak_device_memory_mb = runtime.peak_device_memory_mb
to_numpy = torch_backend.to_numpy  # the outputs and the reference are both torch tensors


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    return {
        **torch_backend.environment(spec, environ, scratch),
        "KERAS_BACKEND": EXPORT_BACKEND,
        runtime.ARTIFACTS_ENV: scratch,
        # The program runs on the CPU: the model is built, exported and run for the parity
        # reference there too (on a GPU, Keras-on-PyTorch would export CUDA tensors).
        "CUDA_VISIBLE_DEVICES": "",
    }


def setup(spec: Spec) -> dict[str, Any]:
    runtime.require_precision(spec)  # fp32 only: the table says why
    import keras

    exporter = torch_backend.setup(spec)
    return {
        "framework": "executorch",
        "framework_version": package_version("executorch"),
        "runtime": "executorch.runtime.Runtime",
        "export_backend": EXPORT_BACKEND,
        "export_framework_version": exporter["framework_version"],
        "keras_version": keras.__version__,
        "threads": runtime.cpu_count(),
    }


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if runtime.is_reference(mode):  # Keras eager on PyTorch, as torch's eager mode runs it
        return torch_backend.make_runner(model, "eager", x)
    return runtime.compiled_on_first_call(  # export, lower, emit, load; each timed
        lambda info: compile_model(model, x, mode, runtime.cpu_count(), info),
        lambda loaded: loaded[1].execute([x]))


def sync(output: Any) -> None:
    """Nothing to wait for: ExecuTorch and the Keras-on-PyTorch reference run on the CPU."""


def convert_and_run(model: Any, x: Any, threads: int, tf_graph: Any) -> list[Any]:
    """Export, lower for XNNPACK (the mode a deployment runs) and run once on `x`
    (backends/coverage.py; `tf_graph` is for the runtimes that take the TensorFlow graph)."""
    _program, method = compile_model(model, x, "compiled", threads, {})
    return [t.numpy() for t in method.execute([x])]


def compile_model(model: Any, x: Any, mode: str, threads: int,
                  info: dict[str, Any]) -> tuple[Any, Any]:
    """(program, its loaded `forward` method); stages, settings and what was delegated go to
    `info`."""
    stages: dict[str, float] = {}
    info["compile_stages_s"] = stages
    program = program_bytes(model, x, mode, stages, info)
    with open(os.path.join(runtime.artifacts_dir(), PROGRAM_FILE), "wb") as handle:
        handle.write(program)
    loaded = runtime.timed(stages, "load", load, program, threads)
    info["executorch_config"] = {**executorch_config(mode),
                                 "threadpool_threads": threadpool_threads()}
    return loaded


def program_bytes(model: Any, x: Any, mode: str, stages: dict[str, float],
                  info: dict[str, Any]) -> bytes:
    """The .pte of `mode`: export, lower, emit (each timed into `stages`); what was delegated
    goes to `info`, and a program that is not what `mode` says is refused."""
    exported = runtime.timed(stages, "export", export, model, x)
    lowered = runtime.timed(stages, "lower", lower, exported, mode)
    info.update(lowered_ops(lowered))
    check_delegation(mode, info["executorch_delegate_calls"])
    program: bytes = runtime.timed(stages, "emit", lambda: lowered.to_executorch().buffer)
    info["pte_bytes"] = len(program)
    return program


def executorch_config(mode: str) -> dict[str, Any]:
    return {"partitioner": PARTITIONER[mode], "delegate": DELEGATE[mode],
            "passes": list(PASSES), "method": METHOD}


def export_native(spec: Spec, model: Any, x: Any, out_dir: Path,
                  threads: int) -> dict[str, Any]:
    """executorch: the .pte the mode's Python run loads, from the same export, lowering and
    emission (`base.NativeExporter`); xlabench-native loads it with ExecuTorch's C++ runtime
    (Program and Method, the same library the Python runtime wraps) on a threadpool of
    `threads` threads. Its input is the batch `x` (float32, default dim order: see PASSES).
    """
    stages: dict[str, float] = {}
    info: dict[str, Any] = {}
    try:
        program = program_bytes(model, x, spec.mode, stages, info)
    except runtime.ConversionError as exc:
        raise runtime.ConversionError(f"{spec.backend} {exc}") from exc
    (out_dir / PROGRAM_FILE).write_bytes(program)
    return {
        "program": PROGRAM_FILE, "method": METHOD, "stages_s": stages,
        "info": {"artifact": "ExecuTorch program (.pte)", "artifact_bytes": len(program),
                 "executorch_config": executorch_config(spec.mode),
                 "same_compiler": True, **info},
    }


def export(model: Any, x: Any) -> Any:
    """`torch.export` (non-strict) of the forward, as torch/compiled captures it."""
    import torch

    with torch.no_grad():
        return torch.export.export(torch_backend._forward_module(model), (x,), strict=False)


def lower(exported: Any, mode: str) -> Any:
    """The Edge program, rewritten (PASSES) and lowered to the mode's partitioner."""
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.pass_manager import ExportedProgramPassManager

    partitioners = []
    if PARTITIONER[mode] is not None:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        partitioners.append(XnnpackPartitioner())
    passes = ExportedProgramPassManager([_default_dim_order_pass(), _constant_folding_pass()])
    return to_edge_transform_and_lower(exported, transform_passes=passes,
                                       partitioner=partitioners)


def _default_dim_order_pass() -> Any:
    """A pass that turns every dim-order copy into one to the default (contiguous) order; it
    re-traces the graph, so every tensor downstream takes that order too."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.pass_base import ExportPass

    copies = {exir_ops.edge.dim_order_ops._clone_dim_order.default,
              exir_ops.edge.dim_order_ops._to_dim_order_copy.default}

    class DefaultDimOrder(ExportPass):
        def call_operator(self, op: Any, args: Any, kwargs: Any, meta: Any) -> Any:
            if op in copies and kwargs.get("dim_order") is not None:
                kwargs = {**kwargs, "dim_order": list(range(len(kwargs["dim_order"])))}
            return super().call_operator(op, args, kwargs, meta)

    return DefaultDimOrder()


def _constant_folding_pass() -> Any:
    """`constant_prop_pass` as a pass of the lowering (it needs the whole ExportedProgram)."""
    from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
    from executorch.exir.passes.constant_prop_pass import constant_prop_pass

    class FoldConstants(ExportedProgramPassBase):
        def call(self, exported_program: Any) -> Any:
            return ExportedProgramPassResult(constant_prop_pass(exported_program), True)

    return FoldConstants()


def lowered_ops(lowered: Any) -> dict[str, Any]:
    """How many delegate calls the lowered program makes, and which ops stay outside them."""
    nodes = [n for n in lowered.exported_program().graph.nodes if n.op == "call_function"]
    names = [getattr(n.target, "__name__", str(n.target)) for n in nodes]
    outside = Counter(name for name in names if DELEGATE_CALL not in name and name != "getitem")
    return {"executorch_delegate_calls": sum(DELEGATE_CALL in name for name in names),
            "executorch_kernel_ops": dict(sorted(outside.items()))}


def check_delegation(mode: str, delegate_calls: int) -> None:
    """Refuse to measure one mode as the other: `basic` must delegate nothing, `compiled` must
    have handed XNNPACK part of the graph (an op it does not take stays on the CPU
    kernels, and a model with none it takes would be `basic` under another name)."""
    if mode == "basic" and delegate_calls:
        raise runtime.ConversionError(f"lower: basic made {delegate_calls} delegate call(s)")
    if mode == "compiled" and not delegate_calls:
        raise runtime.ConversionError("lower: XNNPACK took no part of the graph")


def load(program: bytes, threads: int) -> tuple[Any, Any]:
    """(the loaded program, its `forward` ready to execute) on a threadpool of `threads`
    threads. The method does not keep its program alive: freed, a later execute segfaults,
    so the caller holds both."""
    from executorch.runtime import Runtime

    set_threadpool(threads)
    loaded = Runtime.get().load_program(program)
    return loaded, loaded.load_method(METHOD)


def set_threadpool(threads: int) -> None:
    """One thread per CPU this worker may use: ExecuTorch's threadpool (the one XNNPACK and
    the optimised kernels share) starts with one per CPU of the machine. The only setter is
    the pybindings' `_unsafe_reset_threadpool` (unsafe while a method runs; none does here)."""
    from executorch.extension.pybindings import _C

    if _C._threadpool_get_thread_count() != threads:
        _C._unsafe_reset_threadpool(threads)


def threadpool_threads() -> int:
    from executorch.extension.pybindings import _C

    return int(_C._threadpool_get_thread_count())
