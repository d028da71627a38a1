"""One library's dense matrix multiply, as the device's measured peak times it.

`measure.peak` times any `Gemm` without knowing its library; a backend module that provides
one names its maker in its `core.backends` entry (`peak_gemm`), and `runner.peaks` hands those
to the peak. Standard library only: the backends and measure layers both use these types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class GemmSkippedError(Exception):
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


#: Makes a library's `Gemm` for a dtype ("fp32", "bf16"); raises ImportError when the library
#: is not installed and `GemmSkippedError` when it cannot run that dtype here.
GemmMaker = Callable[[str], Gemm]
