"""Does the compiled output match the eager output? Logits compared, not probabilities."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


def max_differences(outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray]
                    ) -> tuple[float, float]:
    """(max|out - ref|, that over max|ref|) over every output tensor: the one measure of how
    far two outputs are apart, relative to the reference's scale."""
    pairs = zip(outputs, reference, strict=True)
    max_abs = max((float(np.max(np.abs(o - r))) for o, r in pairs), default=0.0)
    scale = max((float(np.max(np.abs(r))) for r in reference), default=0.0)
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return max_abs, max_rel


def compare(
    outputs: list[np.ndarray], reference: list[np.ndarray], rtol: float, reference_mode: str,
    own_spread: Callable[[], float] | None = None,
) -> Parity:
    """Parity of `outputs` against `reference`; NaN or inf anywhere is a failure.

    Beyond `rtol`, and where `own_spread` can say how far the reference mode differs from
    itself (`reference_spread`), the tolerance is that spread: a mode can be no closer to the
    reference than the reference is to itself. Both figures are kept (`Parity`).
    """
    shapes = [a.shape for a in outputs], [a.shape for a in reference]
    if shapes[0] != shapes[1]:
        return Parity(reference_mode, float("nan"), float("nan"), rtol, False,
                      f"output shapes differ: {shapes[0]} vs {shapes[1]}")
    bad = non_finite_count(outputs) + non_finite_count(reference)
    if bad:
        return Parity(reference_mode, float("nan"), float("nan"), rtol, False,
                      f"{bad} non-finite values in the outputs")
    max_abs, max_rel = max_differences(outputs, reference)
    if max_rel <= rtol:
        return Parity(reference_mode, max_abs, max_rel, rtol, True)
    beyond = f"max rel diff {max_rel:.3g} > {rtol:g}"
    if own_spread is None:
        return Parity(reference_mode, max_abs, max_rel, rtol, False, beyond)
    try:
        spread = own_spread()
    except Exception as exc:  # noqa: BLE001 - a refinement: the difference stands without it
        return Parity(reference_mode, max_abs, max_rel, rtol, False,
                      f"{beyond} ({reference_mode}'s own spread not measured: "
                      f"{type(exc).__name__}: {exc})")
    if max_rel <= spread:
        return Parity(reference_mode, max_abs, max_rel, rtol, True,
                      f"{beyond}, within {reference_mode}'s own {spread:.3g} (an image alone "
                      "against itself in the batch): this network amplifies rounding",
                      own_spread_rel=spread)
    return Parity(reference_mode, max_abs, max_rel, rtol, False,
                  f"{beyond} and > {reference_mode}'s own spread {spread:.3g}",
                  own_spread_rel=spread)


def reference_spread(backend: Any, model: Any, mode: str, x: Any,
                     reference: Sequence[np.ndarray]) -> float:
    """How far `mode` (the reference) differs from itself: its output for the first image run
    alone against that image's row of `reference` (its output for the whole batch `x`). Only
    the batch size changes, so only the kernels' blocking and summation order do. For a batch of
    one, the image twice stands in for the batch (its first row against `reference`).
    `backend`: a backend module (`backends.base.Backend`); Keras models take NumPy input."""
    batch = int(x.shape[0])
    if batch > 1:
        regrouped = x[:1]
    else:
        host = x if isinstance(x, np.ndarray) else backend.to_numpy(x)
        regrouped = np.concatenate([host, host], axis=0)
    out = backend.make_runner(model, mode, regrouped).step()
    alone = flatten_outputs(backend.to_numpy(out))
    if batch > 1:
        return max_differences(alone, [r[:1] for r in reference])[1]
    return max_differences([a[:1] for a in alone], reference)[1]


def reference_outputs(backend: Any, model: Any, mode: str, x: Any) -> list[np.ndarray]:
    """The reference mode's output for `x`, flattened (`flatten_outputs`)."""
    return flatten_outputs(backend.to_numpy(backend.make_runner(model, mode, x).step()))


def against_reference(outputs: list[np.ndarray], backend: Any, model: Any, mode: str, x: Any,
                      rtol: float, reference: list[np.ndarray] | None = None) -> Parity:
    """`outputs` against `mode`'s (the reference's) output for the same `x` and weights
    (`reference`, where the caller has run it already), with the reference's own spread
    measured should the difference exceed `rtol` (`compare`): the one parity check of the
    Python, native and LoadGen paths."""
    if reference is None:
        reference = reference_outputs(backend, model, mode, x)
    return compare(outputs, reference, rtol, mode,
                   lambda: reference_spread(backend, model, mode, x, reference))
