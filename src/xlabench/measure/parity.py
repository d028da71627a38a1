"""Does the compiled output match the eager output? Logits compared, not probabilities."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from xlabench.core.record import Parity

#: Tolerances on max|out - ref| / max|ref|. XLA and Inductor reorder reductions, fuse ops and
#: pick other convolution algorithms, so float32 outputs differ in the last bits, amplified by
#: depth; bfloat16 keeps 8 bits of mantissa, so differences of a few percent are normal there.
RTOL_BY_PRECISION: dict[str, float] = {"fp32": 2e-3, "bf16": 6e-2, "mixed": 6e-2}
#: TF32 keeps 10 bits of mantissa: tolerate more when it may have been used.
RTOL_TF32 = 2e-2


def flatten_outputs(output: Any) -> list[np.ndarray]:
    """Every array in a (possibly nested) model output, as float64 NumPy, in a stable order."""
    if isinstance(output, dict):
        return [a for key in sorted(output) for a in flatten_outputs(output[key])]
    if isinstance(output, (list, tuple)):
        return [a for item in output for a in flatten_outputs(item)]
    return [np.asarray(output, dtype=np.float64)]


def non_finite_count(arrays: Iterable[np.ndarray]) -> int:
    return int(sum(np.size(a) - np.count_nonzero(np.isfinite(a)) for a in arrays))


def rtol_for(precision: str, tf32: bool) -> float:
    rtol = RTOL_BY_PRECISION[precision]
    return max(rtol, RTOL_TF32) if tf32 and precision == "fp32" else rtol


def compare(
    outputs: list[np.ndarray], reference: list[np.ndarray], rtol: float, reference_mode: str
) -> Parity:
    """Parity of `outputs` against `reference`; NaN or inf anywhere is a failure."""
    shapes = [a.shape for a in outputs], [a.shape for a in reference]
    if shapes[0] != shapes[1]:
        return Parity(reference_mode, float("nan"), float("nan"), rtol, False,
                      f"output shapes differ: {shapes[0]} vs {shapes[1]}")
    bad = non_finite_count(outputs) + non_finite_count(reference)
    if bad:
        return Parity(reference_mode, float("nan"), float("nan"), rtol, False,
                      f"{bad} non-finite values in the outputs")
    pairs = zip(outputs, reference, strict=True)
    max_abs = max((float(np.max(np.abs(o - r))) for o, r in pairs), default=0.0)
    scale = max((float(np.max(np.abs(r))) for r in reference), default=0.0)
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    passed = max_rel <= rtol
    reason = "" if passed else f"max rel diff {max_rel:.3g} > {rtol:g}"
    return Parity(reference_mode, max_abs, max_rel, rtol, passed, reason)
