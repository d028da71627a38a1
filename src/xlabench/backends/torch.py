"""Keras 3 on PyTorch: eager under torch.no_grad() and torch.compile of the same function."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xlabench.backends.base import Runner, keras_input
from xlabench.core.gemm import Gemm
from xlabench.core.spec import Spec

SYNC = "torch.cuda.synchronize() after the last step of each sample (CPU ops are synchronous)"


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    # A fresh Inductor cache per worker: compile times are cold, as for the other backends.
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(scratch, "inductor"),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def setup(spec: Spec) -> dict[str, Any]:
    import torch

    # Keras sets none of these; PyTorch's defaults differ between matmul and cuDNN: pin both.
    torch.backends.cuda.matmul.allow_tf32 = spec.tf32
    torch.backends.cudnn.allow_tf32 = spec.tf32
    torch.set_float32_matmul_precision("high" if spec.tf32 else "highest")
    cuda = torch.cuda.is_available()
    return {
        "framework": "torch",
        "framework_version": torch.__version__,
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        or ["cpu"],
        "cuda": torch.version.cuda if cuda else None,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "intra_op_threads": torch.get_num_threads(),
    }


def seed_framework(seed: int) -> None:
    """torch's global generator (what keras.utils.set_random_seed adds on torch)."""
    import torch

    torch.manual_seed(seed)


def make_input(spec: Spec) -> Any:
    return keras_input(spec)


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    def forward(inputs: Any) -> Any:
        return model(inputs, training=False)

    if mode == "eager":
        return Runner(_no_grad(forward, x))
    return _compiled_runner(model, forward, x)


def _compiled_runner(model: Any, forward: Any, x: Any) -> Runner:
    """torch.compile of the forward, captured first with torch.export (non-strict).

    Dynamo tracing straight through Keras' functional call loop graph-breaks (lazy imports,
    signature inspection) and recompiles per layer type until it hits the recompile limit and
    falls back to eager with guard overhead: slower than eager (keras-team/keras#21851). A
    non-strict export records the ATen ops the same Python call runs, giving Inductor one
    whole graph. If export fails we compile the forward directly, limits raised, and record
    the graph breaks.
    """
    import torch

    torch._dynamo.reset()
    info: dict[str, Any] = {"dynamic": False}
    compiled = None
    with torch.no_grad():
        try:
            exported = torch.export.export(_forward_module(model), (x,), strict=False)
            compiled = torch.compile(exported.module(), dynamic=False)
            info["capture"] = "torch.export(strict=False) then torch.compile"
        except Exception as exc:  # noqa: BLE001 (any capture failure: fall back, say why)
            info["capture"] = "torch.compile (dynamo) after export failed"
            info["export_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            torch._dynamo.config.recompile_limit = 10_000
            torch._dynamo.config.accumulated_recompile_limit = 100_000
            compiled = torch.compile(forward, dynamic=False)
    runner = Runner(_no_grad(compiled, x), info)

    def finish() -> None:
        from torch._dynamo.utils import counters

        info["graph_breaks"] = sum(counters["graph_break"].values())
        info["unique_graphs"] = counters["stats"].get("unique_graphs", 0)

    runner.finish = finish
    return runner


def export_native(spec: Spec, model: Any, x: Any, out_dir: Path,
                  threads: int) -> dict[str, Any]:
    """aoti: an AOTInductor package of the same torch.export capture the compiled mode
    compiles (`base.NativeExporter`).

    Keras emits an in-place rsqrt_ that AOTInductor refuses ("entirely functional graph"):
    run_decompositions() first. The package is built for this CPU (-march=native).
    """
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        start = time.perf_counter()
        exported = torch.export.export(_forward_module(model), (x,), strict=False)
        exported = exported.run_decompositions()
        export_s = time.perf_counter() - start
        package = str(out_dir / "model.pt2")
        torch._inductor.aoti_compile_and_package(exported, package_path=package)
    package_s = time.perf_counter() - start - export_s
    return {
        "package": "model.pt2",
        "stages_s": {"export": export_s, "package": package_s},
        "info": {"artifact": "AOTInductor package (.pt2)",
                 "artifact_bytes": os.path.getsize(package),
                 "capture": "torch.export(strict=False), run_decompositions, AOTInductor",
                 "same_compiler": False,
                 "compiler_note": "the Python side runs torch.compile (Inductor, compiled in "
                                  "the worker), the native side an AOTInductor package: one "
                                  "compiler, two compile paths"},
    }


def _forward_module(model: Any) -> Any:
    """An nn.Module around the Keras model (torch is imported lazily, so no class at import)."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, inputs: Any) -> Any:
            return self.model(inputs, training=False)

    return Forward()


def _no_grad(function: Any, x: Any) -> Any:
    import torch

    def step() -> Any:
        # Keras weights require grad: without no_grad every call would build an autograd graph.
        with torch.no_grad():
            return function(x)

    return step


def sync(output: Any) -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def to_numpy(output: Any) -> Any:
    import torch

    def convert(t: Any) -> Any:
        return t.detach().float().cpu().numpy() if isinstance(t, torch.Tensor) else t

    return torch.utils._pytree.tree_map(convert, output)


def peak_device_memory_mb() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.max_memory_allocated() / 2**20


def peak_gemm(dtype: str) -> Gemm:
    """torch.matmul(a, b, out=c) on the CPU in `dtype` (fp32, bf16), torch's default threads:
    its GEMM for the device's measured peak (`core.gemm`)."""
    import torch

    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]

    def prepare(n: int) -> Callable[[], object]:
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(n, n, generator=generator).to(torch_dtype)
        b = torch.randn(n, n, generator=generator).to(torch_dtype)
        out = torch.empty(n, n, dtype=torch_dtype)  # written in place: no allocation timed
        return lambda: torch.matmul(a, b, out=out)  # a CPU matmul returns when written

    return Gemm("torch", str(torch.__version__), torch.get_num_threads(), prepare)
