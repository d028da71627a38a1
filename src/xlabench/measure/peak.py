"""The device's measured peak: the best dense matrix-multiply throughput of the GEMM libraries
installed, fp32 and bf16, in GFLOP/s, stored beside the CPU's theoretical peak.

CPUs have no datasheet peak in `analysis.gflops` (it depends on cores, clocks, vector width
and matrix units such as AMX), so "% of peak" on a CPU is read against a measured one. One
library's GEMM is not the device's roof: on a 2-core Zen machine `torch.matmul` reached about
155 GFLOP/s fp32 where NumPy's OpenBLAS reached 200 and an OpenVINO MatMul 185, and a model
compiled by OpenVINO ran its convolutions faster than torch's "peak". So every GEMM below
that is installed is timed, and the best one is the peak:

    torch     torch.matmul(a, b, out=c), fp32 and bf16, torch's default threads;
    numpy     np.matmul(a, b, out=c) (its BLAS, OpenBLAS in the wheels), fp32 only: NumPy
              has no native bfloat16 (ml_dtypes' bfloat16 matmul is not a BLAS call);
    openvino  a one-MatMul model (x @ W, W a Constant as a model's weights are) compiled on
              "CPU" with INFERENCE_PRECISION_HINT f32 or bf16, one stream and one thread per
              CPU of the process; the precision its runtime graph says it executed must be
              the one asked for, else the candidate is skipped.

Each library is timed on square n x n matrices (2 n^3 FLOPs), the median of `calls` timed
calls after `WARMUP_CALLS` untimed ones, and its best size counts. A library that is not
installed or fails is skipped and listed with why (`candidates`). The CPU's theoretical peak
(`core.cpu`: FMA units x lanes x 2 x cores x clock) is stored with it. Run in its own process

    python -m xlabench.measure.peak OUT.json [--sizes 1024,2048,3072] [--calls 5]
        [--libraries torch,numpy,openvino]

so the measurement sees the same thread defaults a worker does and nothing else is loaded
(about 20-30 s on 2 cores).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from xlabench.core.cpu import read_cpu_facts, theoretical_peak_gflops_s
from xlabench.core.result import interference_reason
from xlabench.measure import interference

#: Square sizes tried, smallest first; the best median wins (larger ones amortise packing).
DEFAULT_SIZES = (1024, 2048, 3072)
#: Timed calls per size (after warm-up); their median is the figure.
DEFAULT_CALLS = 5
#: Untimed calls first: the first ones allocate, pick kernels and (AMX) request tile state.
WARMUP_CALLS = 2
#: A larger size is tried only while the last median predicts (n^3) a call of at most this:
#: a larger one would only cost time (bf16 without matrix units can be ~10x slower than fp32).
MAX_CALL_S = 1.0
DTYPES = ("fp32", "bf16")
LIBRARIES = ("torch", "numpy", "openvino")
#: Pause between libraries: OpenBLAS and OpenMP worker threads keep spinning a while after
#: their last call (OpenBLAS about 0.1 s) and would take the cores from the next library.
SETTLE_S = 0.3
#: The library of peaks stored before every installed GEMM was compared.
LEGACY_LIBRARY = "torch"


class SkippedError(Exception):
    """A library that cannot measure a dtype here; the message says why."""


@dataclass(frozen=True)
class Gemm:
    """One library's GEMM for one dtype: `prepare(n)` allocates n x n operands and returns
    one call, which returns when the product is written."""

    library: str
    version: str
    threads: int
    prepare: Callable[[int], Callable[[], object]]
    detail: Callable[[], dict[str, Any]] = dict  # what it ran (kernel, precision executed)


@dataclass(frozen=True)
class MatmulPeak:
    """One dtype's measured matmul peak (the best library), how it was measured, every
    library's figure, and the CPU's theoretical peak."""

    dtype: str
    gflops_s: float
    size: int  # n of the n x n @ n x n product that gave gflops_s
    sizes_tried: tuple[int, ...]
    calls: int
    median_s: float
    threads: int
    library: str  # the winner
    library_version: str
    device: str = "cpu"
    #: Every library: {library, library_version, size, gflops_s, median_s, sizes_tried,
    #: threads, ...} or {library, skipped: why}.
    candidates: tuple[dict[str, Any], ...] = ()
    theoretical_gflops_s: float | None = None
    theoretical_how: str = ""
    microarchitecture: str | None = None
    method: str = ""
    #: Share of the CPUs other processes used while the peaks were measured.
    other_busy_frac: float | None = None

    @property
    def source(self) -> str:
        """How the report names this peak."""
        return f"measured matmul {self.dtype}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sizes_tried": list(self.sizes_tried),
                "candidates": [dict(c) for c in self.candidates]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MatmulPeak:
        """From `to_dict` or a stored method dict; peaks stored before libraries were
        compared have torch's fields only (their library is torch where it is missing)."""
        fields = {"library": LEGACY_LIBRARY, "library_version": "", "threads": 0,
                  "calls": 0, "median_s": float("nan"), "size": 0, **data,
                  "sizes_tried": tuple(data.get("sizes_tried") or ()),
                  "candidates": tuple(dict(c) for c in data.get("candidates") or ())}
        return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})


def matmul_flops(n: int) -> int:
    """FLOPs of one n x n by n x n product: n^2 outputs of n multiply-adds."""
    return 2 * n**3


def measure_dtype(
    dtype: str, sizes: tuple[int, ...] = DEFAULT_SIZES, calls: int = DEFAULT_CALLS,
    libraries: Iterable[str] = LIBRARIES,
) -> MatmulPeak:
    """The best median GFLOP/s in `dtype` over `libraries` and `sizes` on the CPU.

    Raises:
        RuntimeError: no library could measure it (the message lists why).
    """
    candidates = [_candidate(library, dtype, sizes, calls) for library in libraries]
    peak = best_peak(dtype, candidates, sizes, calls)
    if peak is None:
        raise RuntimeError(f"no {dtype} peak: " + _skips(candidates))
    return peak


def measure_peaks(
    sizes: tuple[int, ...] = DEFAULT_SIZES, calls: int = DEFAULT_CALLS,
    libraries: Iterable[str] = LIBRARIES,
) -> dict[str, MatmulPeak]:
    """fp32 and bf16 peaks of this process, keyed by dtype; a dtype no library could measure
    is left out."""
    found = measure_candidates(sizes, calls, libraries)
    peaks = {dtype: best_peak(dtype, candidates, sizes, calls)
             for dtype, candidates in found.items()}
    return {dtype: peak for dtype, peak in peaks.items() if peak is not None}


def measure_candidates(
    sizes: tuple[int, ...] = DEFAULT_SIZES, calls: int = DEFAULT_CALLS,
    libraries: Iterable[str] = LIBRARIES,
) -> dict[str, list[dict[str, Any]]]:
    """Every library's figure (or why it was skipped) by dtype. One library at a time (both
    dtypes), with a pause between libraries for the last one's threads to go idle."""
    by_dtype: dict[str, list[dict[str, Any]]] = {dtype: [] for dtype in DTYPES}
    for i, library in enumerate(libraries):
        if i:
            time.sleep(SETTLE_S)
        for dtype in DTYPES:
            by_dtype[dtype].append(_candidate(library, dtype, sizes, calls))
    return by_dtype


def best_peak(
    dtype: str, candidates: list[dict[str, Any]], sizes: tuple[int, ...], calls: int
) -> MatmulPeak | None:
    """The fastest measured candidate as a `MatmulPeak` with every candidate and the CPU's
    theoretical peak; None if every candidate was skipped."""
    measured = [c for c in candidates if "skipped" not in c]
    if not measured:
        return None
    best = max(measured, key=lambda c: c["gflops_s"])
    facts = read_cpu_facts()
    theoretical, how = theoretical_peak_gflops_s(facts, facts.get("cores"), dtype)
    return MatmulPeak(
        dtype=dtype, gflops_s=best["gflops_s"], size=best["size"],
        sizes_tried=tuple(best["sizes_tried"]), calls=calls, median_s=best["median_s"],
        threads=best["threads"], library=best["library"],
        library_version=best["library_version"], candidates=tuple(candidates),
        theoretical_gflops_s=theoretical, theoretical_how=how,
        microarchitecture=facts.get("microarchitecture"),
        method=_method(candidates, sizes, calls),
    )


def _method(candidates: list[dict[str, Any]], sizes: tuple[int, ...], calls: int) -> str:
    used = ", ".join(c["library"] for c in candidates if "skipped" not in c)
    text = (f"best median of {calls} calls over {used}; square n in "
            f"{', '.join(str(n) for n in sorted(sizes))} (2 n^3 FLOPs)")
    skipped = [c for c in candidates if "skipped" in c]
    return text + (f"; skipped: {_skips(skipped)}" if skipped else "")


def _skips(candidates: list[dict[str, Any]]) -> str:
    return "; ".join(f"{c['library']} ({c['skipped']})" for c in candidates if "skipped" in c)


def _candidate(library: str, dtype: str, sizes: tuple[int, ...], calls: int) -> dict[str, Any]:
    """One library's best size in `dtype`, or {library, skipped: why}."""
    if library not in _GEMMS:
        return {"library": library, "skipped": f"unknown library (known: {', '.join(LIBRARIES)})"}
    try:
        gemm = _GEMMS[library](dtype)
        found = _best_size(gemm, sizes, calls)
    except ImportError as error:
        return {"library": library, "skipped": f"not installed ({error})"[:200]}
    except SkippedError as error:
        return {"library": library, "skipped": str(error)[:200]}
    except Exception as error:  # noqa: BLE001 - any library failure skips that library only
        return {"library": library, "skipped": f"{type(error).__name__}: {error}"[:200]}
    return {"library": library, "library_version": gemm.version, "threads": gemm.threads,
            **found, **gemm.detail()}


def _best_size(gemm: Gemm, sizes: tuple[int, ...], calls: int) -> dict[str, Any]:
    ordered = sorted(sizes)
    if not ordered:
        raise ValueError("no sizes to measure")
    best: dict[str, Any] | None = None
    tried: list[int] = []
    for i, n in enumerate(ordered):
        median_s = _median_call_s(gemm.prepare(n), calls)
        tried.append(n)
        gflops_s = matmul_flops(n) / median_s / 1e9
        if best is None or gflops_s > best["gflops_s"]:
            best = {"size": n, "gflops_s": gflops_s, "median_s": median_s}
        larger = ordered[i + 1] if i + 1 < len(ordered) else None
        if larger is not None and median_s * (larger / n) ** 3 > MAX_CALL_S:
            break
    assert best is not None
    return {**best, "sizes_tried": tried}


def _median_call_s(call: Callable[[], object], calls: int) -> float:
    for _ in range(WARMUP_CALLS):
        call()
    times_s = []
    for _ in range(max(1, calls)):
        start = time.perf_counter()
        call()
        times_s.append(time.perf_counter() - start)
    return statistics.median(times_s)


def _process_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# ------------------------------------------------------------------------- libraries
def _torch(dtype: str) -> Gemm:
    import torch

    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]

    def prepare(n: int) -> Callable[[], object]:
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(n, n, generator=generator).to(torch_dtype)
        b = torch.randn(n, n, generator=generator).to(torch_dtype)
        out = torch.empty(n, n, dtype=torch_dtype)  # written in place: no allocation timed
        return lambda: torch.matmul(a, b, out=out)  # a CPU matmul returns when written

    return Gemm("torch", str(torch.__version__), torch.get_num_threads(), prepare)


def _numpy(dtype: str) -> Gemm:
    if dtype != "fp32":
        raise SkippedError("numpy has no native bfloat16 (ml_dtypes' bfloat16 matmul is not BLAS)")
    import numpy as np

    rng = np.random.default_rng(0)

    def prepare(n: int) -> Callable[[], object]:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), dtype=np.float32)
        return lambda: np.matmul(a, b, out=out)

    blas, threads = _numpy_blas(np)
    version = f"{np.__version__} ({blas})" if blas else str(np.__version__)
    return Gemm("numpy", version, threads, prepare)


def _numpy_blas(np: Any) -> tuple[str, int]:
    """NumPy's BLAS (name and version) and its threads (threadpoolctl where installed, else
    the process's CPUs: OpenBLAS's default)."""
    blas = ""
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{info.get('name', '')} {info.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older numpy: the name is optional
        pass
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            return blas, int(pools[0]["num_threads"])
    except ImportError:
        pass
    return blas, _process_cpus()


def _openvino(dtype: str) -> Gemm:
    import numpy as np
    import openvino as ov

    ops = _opset()
    core = ov.Core()
    hint = {"fp32": "f32", "bf16": "bf16"}[dtype]
    threads = _process_cpus()
    config = {"INFERENCE_PRECISION_HINT": hint, "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads)}
    ran: dict[str, Any] = {}
    rng = np.random.default_rng(0)

    def prepare(n: int) -> Callable[[], object]:
        x = rng.standard_normal((n, n), dtype=np.float32)
        weights = rng.standard_normal((n, n), dtype=np.float32)
        param = ops.parameter([n, n], np.float32)
        model = ov.Model([ops.matmul(param, ops.constant(weights), False, False)], [param],
                         "xlabench_peak_matmul")
        compiled = core.compile_model(model, "CPU", config)
        kernel, executed = _openvino_matmul_node(compiled)
        if executed != hint:
            raise SkippedError(f"OpenVINO executes the MatMul in {executed or 'unknown'} here "
                          f"(asked {hint}; kernel {kernel or 'unknown'})")
        ran.update(kernel=kernel, executed=executed)
        request = compiled.create_infer_request()
        request.set_input_tensor(ov.Tensor(x))
        return request.infer

    return Gemm("openvino", str(ov.get_version()), threads, prepare, lambda: dict(ran))


def _opset() -> Any:
    """The newest opset module of the installed OpenVINO (openvino.opsetN; before 2025,
    openvino.runtime.opsetN)."""
    for parent in ("openvino", "openvino.runtime"):
        for version in range(20, 7, -1):
            try:
                module = importlib.import_module(f"{parent}.opset{version}")
            except ImportError:
                continue
            if hasattr(module, "matmul"):
                return module
    raise ImportError("no openvino opset module with matmul")


def _openvino_matmul_node(compiled: Any) -> tuple[str, str]:
    """(kernel, precision) of the MatMul in the compiled runtime graph (FullyConnected where
    the weights are a Constant), ("", "") if none is found."""
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        keys = set(info.keys())
        if "layerType" not in keys:
            continue
        if str(info["layerType"].astype(str)) in ("FullyConnected", "MatMul"):
            kernel = str(info["primitiveType"].astype(str)) if "primitiveType" in keys else ""
            executed = (str(info["runtimePrecision"].astype(str))
                        if "runtimePrecision" in keys else "")
            return kernel, executed
    return "", ""


_GEMMS: dict[str, Callable[[str], Gemm]] = {
    "torch": _torch, "numpy": _numpy, "openvino": _openvino,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m xlabench.measure.peak")
    parser.add_argument("out")
    parser.add_argument("--sizes", default=",".join(str(n) for n in DEFAULT_SIZES))
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS)
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help="GEMM libraries to compare (default: %(default)s)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="write the peaks even when other processes used the CPUs")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(","))
    libraries = tuple(name.strip() for name in args.libraries.split(",") if name.strip())
    start = interference.snapshot()
    found = measure_candidates(sizes, args.calls, libraries)
    busy = interference.between(start, interference.snapshot())
    why = interference_reason(busy)
    if why and not args.allow_busy:
        # a peak is stored once per environment and every later result is read against it:
        # one taken on a busy machine would stay too low for good
        print(f"not stored: measured under interference ({why})", file=sys.stderr)
        return 3
    peaks = {dtype: peak for dtype, candidates in found.items()
             if (peak := best_peak(dtype, candidates, sizes, args.calls)) is not None}
    if not peaks:
        skipped = [c for candidates in found.values() for c in candidates]
        print(f"no GEMM library could measure a peak: {_skips(skipped)}"[:400], file=sys.stderr)
        return 1
    tmp = f"{args.out}.tmp"  # write-then-rename: the parent never reads half a file
    other = busy.other_frac if busy else None
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump([{**p.to_dict(), "other_busy_frac": other} for p in peaks.values()], handle)
    os.replace(tmp, args.out)
    for peak in peaks.values():
        print(f"{peak.dtype}: {peak.gflops_s:.1f} GFLOP/s ({peak.library}, n={peak.size}); "
              f"theoretical {peak.theoretical_gflops_s or float('nan'):.0f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
