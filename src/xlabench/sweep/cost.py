"""What one process of a configuration costs in wall time before it has run anywhere.

A line in the model's work: a fixed part (starting Python, importing the framework, the
machine-state probes, building the model, the parity check, the timed loop's floor of
samples) and a part that grows with the multiply-accumulates per image (building, converting,
compiling, warming up and timing a bigger network). Fitted to processes measured on 2-vCPU
AMD EPYC VMs at batch 4, averaged over the study's five engines (TF eager, graph, XLA,
OpenVINO, ONNX Runtime):

- MobileNetV3Small at 224 px (0.06 GMACs): 14-18 s a process (Zen 4);
- ResNet50 at 224 px (4.1 GMACs): 18-36 s, mean 26 s (Zen 4, `results/cpu/`);
- EfficientNet-B7 at 600 px (about 38 GMACs): 77-184 s on TF, about 120 s (Zen 5).

It sizes the study's tiers (`sweep.presets`) and is the sweep plan's estimate for a
configuration with no history, scaled there by how this machine's own history compares with
it (`sweep.plan`). A per-model figure is rough (depthwise networks run fewer MACs a second);
a tier's sum of tens of models is what it is for.
"""

from __future__ import annotations

from xlabench.core import Spec, UserError
from xlabench.zoo import REGISTRY

#: Seconds of a process that do not grow with the model.
FIXED_S = 14.0
#: Seconds of a process per billion multiply-accumulates per image (batch 4).
S_PER_GMAC = 2.8


def process_s(macs_per_image: float) -> float:
    """One process's estimated wall time for a model of `macs_per_image` at batch 4."""
    return FIXED_S + S_PER_GMAC * macs_per_image / 1e9


def configuration_process_s(model: str, resolution: int, batch_size: int) -> float | None:
    """`process_s` for a registry model at `resolution` and `batch_size`: its pinned MAC count
    (at the model's default resolution) grown with the pixels and with the batch (over 4);
    None for a model file or a model with no pinned count."""
    try:
        entry = REGISTRY.get(model)
    except UserError:
        return None
    if entry.macs is None:
        return None
    macs = entry.macs * (resolution / entry.default_resolution) ** 2
    return process_s(macs * batch_size / 4)


def spec_process_s(spec: Spec) -> float | None:
    return configuration_process_s(spec.model, spec.resolution, spec.batch_size)
