"""The device's measured peak: dense matrix-multiply throughput, fp32 and bf16, in GFLOP/s.

CPUs have no datasheet peak in `analysis.compute` (it depends on cores, clocks, vector width
and matrix units such as AMX), so "% of peak" on a CPU is measured instead: the best median
GFLOP/s of `torch.matmul` on square matrices, with every thread the process gets by default.
A benchmark's achieved GFLOP/s can be read against it. Run in its own process

    python -m xlabench.measure.peak OUT.json [--sizes 1024,2048] [--calls 5]

so the measurement sees the same thread defaults a worker does and nothing else is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

#: Square sizes tried, smallest first; the best median wins (larger ones amortise packing).
DEFAULT_SIZES = (1024, 2048)
#: Timed calls per size (after warm-up); their median is the figure.
DEFAULT_CALLS = 5
#: Untimed calls first: the first ones allocate, pick kernels and (AMX) request tile state.
WARMUP_CALLS = 2
#: A size whose median call takes longer than this ends the search: a larger one would only
#: cost time (bf16 without matrix units can be ~10x slower than fp32).
MAX_CALL_S = 1.0
DTYPES = ("fp32", "bf16")
LIBRARY = "torch"


@dataclass(frozen=True)
class MatmulPeak:
    """One dtype's measured matmul peak and how it was measured."""

    dtype: str
    gflops_s: float
    size: int  # n of the n x n @ n x n product that gave gflops_s
    sizes_tried: tuple[int, ...]
    calls: int
    median_s: float
    threads: int
    library: str
    library_version: str
    device: str = "cpu"

    @property
    def source(self) -> str:
        """How the report names this peak."""
        return f"measured matmul {self.dtype}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sizes_tried": list(self.sizes_tried)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MatmulPeak:
        fields = {**data, "sizes_tried": tuple(data.get("sizes_tried") or ())}
        return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})


def matmul_flops(n: int) -> int:
    """FLOPs of one n x n by n x n product: n^2 outputs of n multiply-adds."""
    return 2 * n**3


def measure_dtype(
    dtype: str, sizes: tuple[int, ...] = DEFAULT_SIZES, calls: int = DEFAULT_CALLS
) -> MatmulPeak:
    """The best median GFLOP/s over `sizes` of `torch.matmul` in `dtype` on the CPU."""
    import torch

    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    best: tuple[float, int, float] | None = None  # (gflops_s, size, median_s)
    tried: list[int] = []
    for n in sorted(sizes):
        median_s = _median_call_s(torch, n, torch_dtype, calls)
        tried.append(n)
        gflops_s = matmul_flops(n) / median_s / 1e9
        if best is None or gflops_s > best[0]:
            best = (gflops_s, n, median_s)
        if median_s > MAX_CALL_S:
            break
    assert best is not None, "no sizes to measure"
    return MatmulPeak(dtype=dtype, gflops_s=best[0], size=best[1], sizes_tried=tuple(tried),
                      calls=calls, median_s=best[2], threads=torch.get_num_threads(),
                      library=LIBRARY, library_version=str(torch.__version__))


def _median_call_s(torch: Any, n: int, dtype: Any, calls: int) -> float:
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=generator).to(dtype)
    b = torch.randn(n, n, generator=generator).to(dtype)
    out = torch.empty(n, n, dtype=dtype)  # written in place: no allocation is timed
    for _ in range(WARMUP_CALLS):
        torch.matmul(a, b, out=out)
    times_s = []
    for _ in range(calls):
        start = time.perf_counter()
        torch.matmul(a, b, out=out)  # CPU matmul returns when the result is written
        times_s.append(time.perf_counter() - start)
    return statistics.median(times_s)


def measure_peaks(
    sizes: tuple[int, ...] = DEFAULT_SIZES, calls: int = DEFAULT_CALLS
) -> dict[str, MatmulPeak]:
    """fp32 and bf16 peaks of this process, keyed by dtype."""
    return {dtype: measure_dtype(dtype, sizes, calls) for dtype in DTYPES}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m xlabench.measure.peak")
    parser.add_argument("out")
    parser.add_argument("--sizes", default=",".join(str(n) for n in DEFAULT_SIZES))
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS)
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(","))
    peaks = measure_peaks(sizes, args.calls)
    tmp = f"{args.out}.tmp"  # write-then-rename: the parent never reads half a file
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump([p.to_dict() for p in peaks.values()], handle)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
