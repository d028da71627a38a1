"""What the CPU is, from the kernel's own files, and its theoretical peak from those facts.

`read_cpu_facts` reads /proc/cpuinfo (vendor, family, model, a few flags, model name), the
cores this process may run on (its affinity, counted as physical cores through
/sys/devices/system/cpu/cpuN/topology) and the highest clock the kernel states (cpufreq's
``cpuinfo_max_freq`` where readable, else /proc/cpuinfo's ``cpu MHz``, the clock when read;
``mhz_source`` says which). `cpu_microarchitecture` names the core (``Zen 4``, ``Sapphire
Rapids``) from vendor, family and model, and `theoretical_peak_gflops_s` multiplies

    FMA units x vector lanes x 2 FLOP (multiply and add) x cores x clock

from a table of known microarchitectures. The figure is an upper bound no GEMM reaches: it
assumes every cycle issues an FMA on every pipe at the stated clock (wide vectors may lower
the clock, and a VM's vCPU may be a host's SMT thread that shares its core's FMA units).
Unknown CPUs get None and the reason.

Standard library only: the device naming of the store and the peak measurement both use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")
SYS_CPU = Path("/sys/devices/system/cpu")
#: The flags that decide vector width, FMA and bf16 support (the rest are not kept).
FLAGS_OF_INTEREST = (
    "sse2", "avx", "fma", "avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni",
    "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16",
)
AMD = "AuthenticAMD"
HYGON = "HygonGenuine"
INTEL = "GenuineIntel"

#: AMD (and Hygon) cores by family and model range: (family, first, last, name, FMA
#: units, fp32 lanes per FMA). Ranges follow the Linux kernel's Zen detection (bsp_init_amd).
#: Zen 4 executes AVX-512 as two 256-bit halves: 2 pipes x 8 lanes. Zen 5 has a full 512-bit
#: datapath on desktop and server parts, a 256-bit one on the mobile Strix and Krackan Point.
_AMD_CORES: tuple[tuple[int, int, int, str, int, int], ...] = (
    (0x17, 0x00, 0x2F, "Zen", 2, 4),
    (0x17, 0x30, 0x4F, "Zen 2", 2, 8),
    (0x17, 0x60, 0x7F, "Zen 2", 2, 8),
    (0x17, 0x84, 0x87, "Zen 2", 2, 8),
    (0x17, 0x90, 0xAF, "Zen 2", 2, 8),
    (0x18, 0x00, 0xFF, "Zen", 2, 4),  # Hygon Dhyana
    (0x19, 0x00, 0x0F, "Zen 3", 2, 8),
    (0x19, 0x20, 0x5F, "Zen 3", 2, 8),
    (0x19, 0x10, 0x1F, "Zen 4", 2, 8),
    (0x19, 0x60, 0xAF, "Zen 4", 2, 8),
    (0x1A, 0x00, 0x1F, "Zen 5", 2, 16),  # Turin, Turin Dense
    (0x1A, 0x20, 0x2F, "Zen 5", 2, 8),  # Strix Point: 256-bit datapath
    (0x1A, 0x40, 0x4F, "Zen 5", 2, 16),  # Granite Ridge
    (0x1A, 0x60, 0x6F, "Zen 5", 2, 8),  # Krackan Point: 256-bit datapath
    (0x1A, 0x70, 0x7F, "Zen 5", 2, 16),  # Strix Halo
)

#: Intel family 6 models by name (the FMA count is not in this table: it comes from the
#: flags, `_intel_fp32`).
_INTEL_MODELS: dict[int, str] = {
    **dict.fromkeys((0x2A, 0x2D), "Sandy Bridge"),
    **dict.fromkeys((0x3A, 0x3E), "Ivy Bridge"),
    **dict.fromkeys((0x3C, 0x3F, 0x45, 0x46), "Haswell"),
    **dict.fromkeys((0x3D, 0x47, 0x4F, 0x56), "Broadwell"),
    **dict.fromkeys((0x4E, 0x5E), "Skylake"),
    **dict.fromkeys((0x8E, 0x9E, 0xA5, 0xA6), "Kaby/Coffee/Comet Lake"),
    0x55: "Skylake-SP",  # or Cascade / Cooper Lake: `cpu_microarchitecture` reads flags
    **dict.fromkeys((0x6A, 0x6C), "Ice Lake-SP"),
    **dict.fromkeys((0x7D, 0x7E), "Ice Lake"),
    **dict.fromkeys((0x8C, 0x8D), "Tiger Lake"),
    0xA7: "Rocket Lake",
    **dict.fromkeys((0x97, 0x9A), "Alder Lake"),
    **dict.fromkeys((0xB7, 0xBA, 0xBF), "Raptor Lake"),
    **dict.fromkeys((0xAA, 0xAC), "Meteor Lake"),
    **dict.fromkeys((0xC5, 0xC6), "Arrow Lake"),
    0xBD: "Lunar Lake",
    0x8F: "Sapphire Rapids",
    0xCF: "Emerald Rapids",
    **dict.fromkeys((0xAD, 0xAE), "Granite Rapids"),
    0xAF: "Sierra Forest",
}
#: Intel cores whose P- and E-cores differ: the figure is the P-cores' (E-cores: half).
_INTEL_HYBRID = {"Alder Lake", "Raptor Lake", "Meteor Lake", "Arrow Lake", "Lunar Lake"}
#: Intel cores with only E-cores: 2 FMA pipes of 128 bits.
_INTEL_ECORE = {"Sierra Forest"}
#: AMX: a 16x32 by 32x16 bf16 tile product (16,384 FLOPs) every 16 cycles per core.
AMX_BF16_FLOP_PER_CYCLE = 1024


def cpu_microarchitecture(
    vendor: str, family: int | None, model: int | None, flags: Iterable[str] = ()
) -> str | None:
    """The core's short name (``Zen 4``, ``Sapphire Rapids``), None where the table has none.

    Args:
        vendor: /proc/cpuinfo's ``vendor_id`` (``AuthenticAMD``, ``GenuineIntel``...).
        family, model: its ``cpu family`` and ``model`` (decimal there).
        flags: its flags (they tell Intel's model 0x55 apart: Skylake-SP, Cascade Lake with
            avx512_vnni, Cooper Lake with avx512_bf16).
    """
    if family is None or model is None:
        return None
    if vendor in (AMD, HYGON):
        entry = _amd_entry(family, model)
        return entry[3] if entry else None
    if vendor == INTEL and family == 6:
        if model == 0x55:
            have = set(flags)
            return ("Cooper Lake" if "avx512_bf16" in have
                    else "Cascade Lake" if "avx512_vnni" in have else "Skylake-SP")
        return _INTEL_MODELS.get(model)
    return None


def read_cpu_facts(cpuinfo: Path = CPUINFO, sys_cpu: Path = SYS_CPU) -> dict[str, Any]:
    """The CPU facts the theoretical peak needs, from /proc and /sys (never raises).

    Returns:
        vendor, family, model (ints or None), model_name, flags (the `FLAGS_OF_INTEREST`
        it has, sorted), microarchitecture, max_mhz (float or None), mhz_source (which file
        gave it), cpus (the CPUs this process may run on), cores (the physical cores among
        them, from the topology files; `cpus` where those are missing), cores_source.
    """
    blocks = _cpuinfo_blocks(cpuinfo)
    first = blocks[0] if blocks else {}
    flags = set(first.get("flags", "").split())
    allowed = _allowed_cpus()
    facts: dict[str, Any] = {
        "vendor": first.get("vendor_id", ""),
        "family": _int(first.get("cpu family")),
        "model": _int(first.get("model")),
        "model_name": first.get("model name", ""),
        "flags": sorted(flags.intersection(FLAGS_OF_INTEREST)),
    }
    facts["microarchitecture"] = cpu_microarchitecture(
        facts["vendor"], facts["family"], facts["model"], facts["flags"])
    facts["max_mhz"], facts["mhz_source"] = _max_mhz(blocks, allowed, sys_cpu)
    facts["cpus"] = len(allowed)
    facts["cores"], facts["cores_source"] = _physical_cores(allowed, sys_cpu)
    return facts


def flop_per_cycle_per_core(facts: Mapping[str, Any], dtype: str) -> tuple[int | None, str]:
    """FLOPs one core can do per cycle in `dtype` (``fp32`` or ``bf16``), and how.

    fp32: FMA units x vector lanes x 2. bf16: AMX where the flags have ``amx_bf16``
    (`AMX_BF16_FLOP_PER_CYCLE`); VDPBF16PS (``avx512_bf16``) does two bf16 products per
    fp32 lane: twice the fp32 rate; without either, bf16 is computed in fp32 at best.
    """
    fp32, how = _fp32_per_cycle(facts)
    if dtype == "fp32" or fp32 is None:
        return fp32, how
    if dtype != "bf16":
        return None, f"no theoretical peak for {dtype}"
    flags = set(facts.get("flags") or ())
    if "amx_bf16" in flags:
        return AMX_BF16_FLOP_PER_CYCLE, ("AMX bf16: a 16x32 by 32x16 tile product "
                                         "(16,384 FLOPs) per 16 cycles")
    if "avx512_bf16" in flags:
        return 2 * fp32, f"avx512_bf16 (VDPBF16PS, 2 products per fp32 lane): 2 x ({how})"
    return fp32, f"no bf16 instructions, so at best the fp32 rate: {how}"


def theoretical_peak_gflops_s(
    facts: Mapping[str, Any], cores: int | None, dtype: str
) -> tuple[float | None, str]:
    """FLOP/cycle/core x cores x max clock in GFLOP/s, and how (or None and why not).

    Args:
        facts: `read_cpu_facts()` (or the same keys from elsewhere).
        cores: the physical cores the work may use.
        dtype: ``fp32`` or ``bf16``.
    """
    per_cycle, how = flop_per_cycle_per_core(facts, dtype)
    if per_cycle is None:
        return None, how
    mhz = facts.get("max_mhz")
    if not mhz:
        return None, f"{how}; no clock known"
    if not cores:
        return None, f"{how}; no core count known"
    value = per_cycle * int(cores) * float(mhz) / 1000
    source = facts.get("mhz_source") or "unknown source"
    return value, (f"{how} = {per_cycle} FLOP/cycle/core x {int(cores)} cores x "
                   f"{float(mhz):.0f} MHz ({source})")


# ----------------------------------------------------------------------------- helpers
def _amd_entry(family: int, model: int) -> tuple[int, int, int, str, int, int] | None:
    for entry in _AMD_CORES:
        if entry[0] == family and entry[1] <= model <= entry[2]:
            return entry
    return None


def _fp32_per_cycle(facts: Mapping[str, Any]) -> tuple[int | None, str]:
    vendor = str(facts.get("vendor") or "")
    family, model = facts.get("family"), facts.get("model")
    flags = set(facts.get("flags") or ())
    if vendor in (AMD, HYGON) and family is not None and model is not None:
        entry = _amd_entry(int(family), int(model))
        if entry is None:
            return None, f"AMD family {int(family):#x} model {int(model):#x} is not in the table"
        _, _, _, name, units, lanes = entry
        return units * lanes * 2, f"{name}: {units} FMA pipes x {lanes} fp32 lanes x 2"
    if vendor == INTEL and family == 6:
        name = cpu_microarchitecture(vendor, family, _int(str(model)), flags)
        return _intel_fp32(name, str(facts.get("model_name") or ""), flags)
    return None, f"CPU vendor {vendor or 'unknown'} family {family} is not in the table"


def _intel_fp32(name: str | None, model_name: str, flags: set[str]) -> tuple[int | None, str]:
    """Intel by flags: AVX-512 server parts (Xeon) have 2 FMA units (some Skylake-SP Silver
    and Bronze parts have one), client AVX-512 parts one; AVX2+FMA cores two of 256 bits."""
    label = name or "Intel"
    if name in _INTEL_ECORE:
        return 16, f"{label}: 2 FMA pipes x 4 fp32 lanes x 2"
    if "avx512f" in flags:
        units = 2 if "xeon" in model_name.lower() else 1
        where = "a Xeon" if units == 2 else "not a Xeon"
        return units * 16 * 2, f"{label} ({where}): {units} FMA units x 16 fp32 lanes x 2"
    if "avx2" in flags and "fma" in flags:
        hybrid = " (P-cores; E-cores half)" if name in _INTEL_HYBRID else ""
        return 32, f"{label}{hybrid}: 2 FMA units x 8 fp32 lanes x 2"
    if "avx" in flags:
        return 16, f"{label}: no FMA, 1 multiply + 1 add of 8 fp32 lanes"
    return None, f"{label}: no AVX in the flags, not in the table"


def _cpuinfo_blocks(path: Path) -> list[dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    blocks = []
    for chunk in re.split(r"\n\s*\n", text):
        fields = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if fields:
            blocks.append(fields)
    return blocks


def _allowed_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def _max_mhz(
    blocks: list[dict[str, str]], allowed: list[int], sys_cpu: Path
) -> tuple[float | None, str]:
    khz = [_read_number(sys_cpu / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq")
           for cpu in allowed]
    found = [k for k in khz if k]
    if found:
        return max(found) / 1000, "cpufreq cpuinfo_max_freq"
    mhz = [_float(b.get("cpu MHz")) for b in blocks
           if _int(b.get("processor")) in allowed or "processor" not in b]
    mhz_found = [m for m in mhz if m]
    if mhz_found:
        return max(mhz_found), "/proc/cpuinfo cpu MHz: the clock when read, not a boost maximum"
    return None, "no clock in cpufreq or /proc/cpuinfo"


def _physical_cores(allowed: list[int], sys_cpu: Path) -> tuple[int, str]:
    cores = set()
    for cpu in allowed:
        topology = sys_cpu / f"cpu{cpu}" / "topology"
        package = _read_number(topology / "physical_package_id")
        core = _read_number(topology / "core_id")
        if package is None or core is None:
            return len(allowed), "the CPUs of the affinity (no topology files)"
        cores.add((package, core))
    return len(cores), "physical cores of the affinity (sysfs topology)"


def _read_number(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _int(text: str | None) -> int | None:
    """A decimal (as /proc/cpuinfo writes) or 0x-prefixed integer; None if neither."""
    if text is None:
        return None
    text = str(text).strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
