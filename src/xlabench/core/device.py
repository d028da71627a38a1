"""What a result ran on, named for people: a GPU by its short name, a CPU by what it is.

Every CPU used to be "cpu", so a database with an AMD EPYC's and an Intel Xeon's results
showed one device in every per-device finding. A CPU device is named by its model, its
microarchitecture where known, and the cores the worker used: two core counts of one machine
are two devices (throughput scales with them), e.g. ``AMD EPYC (Zen 4) ×2``. GPUs keep the
study's names (``a100``), so imported rows and local GPU rows meet in one device.

Standard library only: the store names the device of every record it saves (and of old ones
when it migrates a database), the analysis reads that column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Marketing words that make CPU model strings long without telling two CPUs apart.
_CPU_NOISE = (
    r"\(R\)", r"\(TM\)", r"\(tm\)", r"\bCPU\b", r"\bProcessor\b", r"\b\d+-Core\b",
    r"@\s*[\d.]+\s*GHz", r"\bwith Radeon.*$",
)


def short_cpu_model(model_name: str) -> str:
    """'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz' -> 'Intel Xeon Platinum 8375C'."""
    text = str(model_name or "")
    for pattern in _CPU_NOISE:
        text = re.sub(pattern, " ", text)
    return re.sub(r"\s+", " ", text).strip() or "cpu"


def device_name(env: Mapping[str, Any]) -> str:
    """The device a record ran on, from its environment fingerprint.

    GPU: its normalised short name (``a100``, ``h200``), as the study named devices. CPU: its
    model, microarchitecture (``cpu_arch``, where the fingerprint has it) and the cores the
    worker could use (``cpu_threads``: its affinity, so pinned workers count their own cores).
    An environment without CPU facts (imported rows, synthetic records) keeps its accelerator.
    """
    accelerator = str(env.get("accelerator") or "unknown")
    if accelerator != "cpu":
        return accelerator
    model = env.get("cpu_model")
    if not model:
        return accelerator
    arch = env.get("cpu_arch")
    name = short_cpu_model(str(model))
    if arch and str(arch) not in name:
        name += f" ({arch})"
    cores = env.get("cpu_threads")
    return f"{name} ×{int(cores)}" if isinstance(cores, int | float) and cores else name


def device_cores(env: Mapping[str, Any]) -> int | None:
    """The CPU cores a record's worker could use (None where the fingerprint has none)."""
    cores = env.get("cpu_threads")
    return int(cores) if isinstance(cores, int | float) and cores else None


def device_slug(name: str) -> str:
    """A device name as a folder name: ``AMD EPYC (Zen 4) ×2`` -> ``amd-epyc-zen-4-x2``
    (lower case; every run of other characters one hyphen; × as x)."""
    text = str(name).replace("×", "x").lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"
