"""The device's measured peak: the best dense matrix-multiply throughput of the GEMM libraries
installed, fp32 and bf16, in GFLOP/s, stored beside the CPU's theoretical peak.

CPUs have no datasheet peak in `analysis.gflops` (it depends on cores, clocks, vector width
and matrix units such as AMX), so "% of peak" on a CPU is read against a measured one. One
library's GEMM is not the device's roof: on a 2-core Zen machine `torch.matmul` reached about
155 GFLOP/s fp32 where NumPy's OpenBLAS reached 200 and an OpenVINO MatMul 185, and a model
compiled by OpenVINO ran its convolutions faster than torch's "peak". So every GEMM that is
installed is timed, and the best one is the peak (`LIBRARIES`):

    each backend that provides one (`peak_gemm` in its core/backends.py entry; its module says
              what it runs, e.g. torch.matmul, or a one-MatMul OpenVINO model whose executed
              precision must be the one asked for), handed in by runner/peaks.py: this module
              imports no framework;
    numpy     np.matmul(a, b, out=c) (its BLAS, OpenBLAS in the wheels), fp32 only: NumPy
              has no native bfloat16 (ml_dtypes' bfloat16 matmul is not a BLAS call).

Each library is timed on square n x n matrices (2 n^3 FLOPs), the median of `calls` timed
calls after `WARMUP_CALLS` untimed ones, and its best size counts. A library that is not
installed or fails is skipped and listed with why (`candidates`). The CPU's theoretical peak
(`core.cpu`: FMA units x lanes x 2 x cores x clock) is stored with it. It runs in a process of
its own (`python -m xlabench.runner.peak_worker`), so the measurement sees the same thread
defaults a worker does and nothing else is loaded (about 20-30 s on 2 cores).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from xlabench.core.backends import GEMM_BACKENDS
from xlabench.core.cpu import read_cpu_facts, theoretical_peak_gflops_s
from xlabench.core.gemm import Gemm, GemmMaker, GemmSkippedError

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
#: Pause between libraries: OpenBLAS and OpenMP worker threads keep spinning a while after
#: their last call (OpenBLAS about 0.1 s) and would take the cores from the next library.
SETTLE_S = 0.3
#: The library of peaks stored before every installed GEMM was compared.
LEGACY_LIBRARY = "torch"


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
    dtype: str, makers: Mapping[str, GemmMaker], sizes: tuple[int, ...] = DEFAULT_SIZES,
    calls: int = DEFAULT_CALLS, libraries: Iterable[str] | None = None,
) -> MatmulPeak:
    """The best median GFLOP/s in `dtype` over `libraries` (default: every one of `makers`,
    library name -> its GEMM) and `sizes` on the CPU.

    Raises:
        RuntimeError: no library could measure it (the message lists why).
    """
    candidates = [_candidate(makers, library, dtype, sizes, calls)
                  for library in _named(makers, libraries)]
    peak = best_peak(dtype, candidates, sizes, calls)
    if peak is None:
        raise RuntimeError(f"no {dtype} peak: " + describe_skips(candidates))
    return peak


def measure_peaks(
    makers: Mapping[str, GemmMaker], sizes: tuple[int, ...] = DEFAULT_SIZES,
    calls: int = DEFAULT_CALLS, libraries: Iterable[str] | None = None,
) -> dict[str, MatmulPeak]:
    """fp32 and bf16 peaks of this process, keyed by dtype; a dtype no library could measure
    is left out."""
    found = measure_candidates(makers, sizes, calls, libraries)
    peaks = {dtype: best_peak(dtype, candidates, sizes, calls)
             for dtype, candidates in found.items()}
    return {dtype: peak for dtype, peak in peaks.items() if peak is not None}


def measure_candidates(
    makers: Mapping[str, GemmMaker], sizes: tuple[int, ...] = DEFAULT_SIZES,
    calls: int = DEFAULT_CALLS, libraries: Iterable[str] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Every library's figure (or why it was skipped) by dtype. One library at a time (both
    dtypes), with a pause between libraries for the last one's threads to go idle."""
    by_dtype: dict[str, list[dict[str, Any]]] = {dtype: [] for dtype in DTYPES}
    for i, library in enumerate(_named(makers, libraries)):
        if i:
            time.sleep(SETTLE_S)
        for dtype in DTYPES:
            by_dtype[dtype].append(_candidate(makers, library, dtype, sizes, calls))
    return by_dtype


def _named(makers: Mapping[str, GemmMaker], libraries: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(makers) if libraries is None else tuple(libraries)


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
    return text + (f"; skipped: {describe_skips(skipped)}" if skipped else "")


def describe_skips(candidates: list[dict[str, Any]]) -> str:
    """The skipped candidates with why, one line."""
    return "; ".join(f"{c['library']} ({c['skipped']})" for c in candidates if "skipped" in c)


def _candidate(makers: Mapping[str, GemmMaker], library: str, dtype: str,
               sizes: tuple[int, ...], calls: int) -> dict[str, Any]:
    """One library's best size in `dtype`, or {library, skipped: why}."""
    if library not in makers:
        return {"library": library, "skipped": f"unknown library (known: {', '.join(makers)})"}
    try:
        gemm = makers[library](dtype)
        found = _best_size(gemm, sizes, calls)
    except ImportError as error:
        return {"library": library, "skipped": f"not installed ({error})"[:200]}
    except GemmSkippedError as error:
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


# ------------------------------------------------------------------ measure's own GEMM
def numpy_gemm(dtype: str) -> Gemm:
    """np.matmul(a, b, out=c) in fp32 (its BLAS); NumPy has no native bfloat16."""
    if dtype != "fp32":
        raise GemmSkippedError(
            "numpy has no native bfloat16 (ml_dtypes' bfloat16 matmul is not BLAS)")
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


#: The GEMMs measure makes itself (no framework: NumPy only), by library name.
OWN_GEMMS: Mapping[str, GemmMaker] = {"numpy": numpy_gemm}
#: The libraries the peak compares, in the order it times them: every backend that provides a
#: GEMM (core/backends.py; runner/peaks.py hands in their makers), then measure's own.
LIBRARIES: tuple[str, ...] = (*GEMM_BACKENDS, *OWN_GEMMS)
