"""What one process of a configuration costs in wall time before it has run anywhere.

A fixed part (starting Python, importing the framework, the machine-state probes) and a part
that grows with the multiply-accumulates per image, less than linearly: most of a process is
building, tracing, converting and compiling, which follow a network's depth more than its
arithmetic, and its warm-up and sampling phases have time budgets. The shape (fixed part three
times the growing part at 1 GMAC, growing as GMACs^0.6) is the one whose estimates, made as
the sweep plan makes them, came closest to the study's 2026-12-06/07 sittings on 2-vCPU AMD
EPYC VMs: each configuration estimated from what had run before it on the same VM, the line
scaled by its family's ratio there (`sweep.plan`), a root mean square log error of 0.34 over
222 configurations against 0.48 for the straight line it replaced (14 s + 2.8 s a GMAC, fitted
through EfficientNet-B7, which over-counted VGG16, YOLOv8 and RetinaNet 2-4 times); 0.326 over
232 with the plan's ratio of the family's member nearest in size (`bench/cost_fit.py`). The scale is
the Zen 4 VM's, the pace's reference machine (`sweep.pace`): its 330 study processes sum to
what the line says for them (a fresh machine's ETA is such a sum).

It checks that each of the study's frozen tiers still fits a sitting (`sweep.presets`), and
it is the sweep plan's estimate for a configuration with no history, scaled there by how this
machine's own history compares with it (`sweep.plan`). A per-model figure is rough; a tier's
sum of tens of models is what it is for.
"""

from __future__ import annotations

from xlabench.core import Spec, UserError
from xlabench.zoo import REGISTRY

#: Seconds of a process that do not grow with the model.
FIXED_S = 16.1
#: Seconds of the growing part at one billion multiply-accumulates per image (batch 4).
GROWING_S_AT_1_GMAC = 5.37
#: How the growing part scales with the multiply-accumulates.
MAC_EXPONENT = 0.6


def process_s(macs_per_image: float) -> float:
    """One process's estimated wall time for a model of `macs_per_image` at batch 4."""
    return FIXED_S + GROWING_S_AT_1_GMAC * (macs_per_image / 1e9) ** MAC_EXPONENT


def configuration_process_s(model: str, resolution: int, batch_size: int) -> float | None:
    """`process_s` for a registry model at `resolution` and `batch_size`; None for a model file
    or a model with no pinned count."""
    macs = configuration_macs(model, resolution, batch_size)
    return None if macs is None else process_s(macs)


def configuration_macs(model: str, resolution: int, batch_size: int) -> float | None:
    """The multiply-accumulates the line reads for a registry model at `resolution` and
    `batch_size`: its pinned count per image (at its default resolution) grown with the pixels
    and with the batch over 4; None for a model file or a model with no pinned count."""
    try:
        entry = REGISTRY.get(model)
    except UserError:
        return None
    if entry.macs is None:
        return None
    return entry.macs * (resolution / entry.default_resolution) ** 2 * batch_size / 4


def spec_process_s(spec: Spec) -> float | None:
    return configuration_process_s(spec.model, spec.resolution, spec.batch_size)
