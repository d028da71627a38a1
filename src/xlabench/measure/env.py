"""Environment fingerprint: what machine and software produced a number.

Standard library only, so the sweep's parent process can compute the same fingerprint as the
worker without importing any framework (the resume check compares them).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
from functools import lru_cache
from typing import Any

from xlabench.core.backends import BACKENDS
from xlabench.core.cpu import read_cpu_facts
from xlabench.core.result import COMMON_PACKAGES

#: The distributions whose versions an environment records: the common ones and each backend's
#: (core/backends.py), so a new backend's version is recorded without an edit here.
PACKAGES = tuple(dict.fromkeys((*COMMON_PACKAGES, *(
    package for backend in BACKENDS for package in backend.identifying_packages))))
#: Environment variables that change what gets measured.
RESULT_FLAGS = (
    "TF_XLA_FLAGS",
    "XLA_FLAGS",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_CUDNN_USE_AUTOTUNE",
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "MKL_NUM_THREADS",
    "MALLOC_ARENA_MAX",
    "GLIBC_TUNABLES",
    "PYTHONHASHSEED",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "JAX_PLATFORMS",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "JAX_COMPILATION_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "CUDA_VISIBLE_DEVICES",
)
#: Fields that change between runs on the same machine; left out of the environment id.
VOLATILE = ("gpu_clocks_mhz", "hostname")
_GPU_PATTERNS = (
    (r"\bgh200\b", "gh200"),
    (r"\bh200\b", "h200"),
    (r"\bh100\b", "h100"),
    (r"\ba100\b", "a100"),
    (r"\bv100\b", "v100"),
    (r"\bt4\b", "t4"),
    (r"\bl4\b", "l4"),
    (r"\bl40s\b", "l40s"),
    (r"\ba10g?\b", "a10"),
    (r"\bp100\b", "p100"),
    (r"\bk80\b", "k80"),
    (r"\bb200\b", "b200"),
)


def normalize_gpu_name(name: str) -> str:
    """'NVIDIA A100-SXM4-80GB' -> 'a100', 'Tesla T4' -> 't4', as the study named devices."""
    lowered = name.lower().replace("-", " ").replace("_", " ")
    for pattern, short in _GPU_PATTERNS:
        if re.search(pattern, lowered):
            return short
    cleaned = re.sub(r"\b(nvidia|geforce|tesla|amd|radeon)\b", " ", lowered)
    return re.sub(r"\s+", "", cleaned) or "gpu"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def cpu_arch() -> str | None:
    """The CPU's microarchitecture (``Zen 4``, ``Sapphire Rapids``), None if not in the table."""
    return read_cpu_facts().get("microarchitecture")


def cpu_threads_available() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def gpus() -> tuple[dict[str, Any], ...]:
    """NVIDIA GPUs visible to nvidia-smi (name, driver, memory, clocks); () if none."""
    if shutil.which("nvidia-smi") is None:
        return ()
    query = "name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    found = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 6:
            found.append({
                "name": parts[0],
                "short_name": normalize_gpu_name(parts[0]),
                "driver": parts[1],
                "memory_mb": _number(parts[2]),
                "clocks_mhz": {"sm": _number(parts[3]), "sm_max": _number(parts[4]),
                               "mem": _number(parts[5])},
            })
    return tuple(found)


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def static_fingerprint() -> dict[str, Any]:
    """Everything about the environment that can be known without importing a framework."""
    gpu_list = gpus()
    return {
        "accelerator": gpu_list[0]["short_name"] if gpu_list else "cpu",
        "cpu_model": cpu_model(),
        "cpu_arch": cpu_arch(),  # the core's name (Zen 4): `core.device` names the device by it
        "cpu_threads": cpu_threads_available(),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": package_versions(),
        "gpus": [{k: v for k, v in g.items() if k != "clocks_mhz"} for g in gpu_list],
        "gpu_clocks_mhz": [g["clocks_mhz"] for g in gpu_list],
        "flags": {name: os.environ[name] for name in RESULT_FLAGS if name in os.environ},
        "hostname": platform.node(),
    }


def env_id(fingerprint: dict[str, Any]) -> str:
    """Hash of the non-volatile part: same machine type and software, same id."""
    stable = {k: v for k, v in fingerprint.items() if k not in VOLATILE and k != "runtime"}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
