"""What else used this process's CPUs while it was being timed (Linux /proc; stdlib only).

Two snapshots around the timed phases give, for the CPUs this process may run on: their busy
and steal time (/proc/stat), this process's own CPU time (/proc/self/stat: every thread, plus
children it has waited for, such as a native runner), and the wall time between. Other
processes' share = busy - own. On a quiet machine it stays within a few percent; a CPU hog on
the same cores shows up as tens of percent. Where /proc is unreadable the figures are None and
nothing is flagged (the record says so by having no figures).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xlabench.core.record import Interference
from xlabench.core.result import interference_reason

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSnapshot:
    wall_s: float
    cpus: tuple[int, ...]
    busy_ticks: int
    steal_ticks: int
    own_ticks: int
    mhz: float | None
    mhz_source: str


def allowed_cpus() -> tuple[int, ...]:
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return tuple(range(os.cpu_count() or 1))


def _cpu_ticks(cpus: tuple[int, ...]) -> tuple[int, int]:
    """(busy, steal) ticks summed over `cpus` from /proc/stat's per-CPU lines."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = steal = 0
    for line in PROC_STAT.read_text().splitlines():
        fields = line.split()
        if not fields or fields[0] not in wanted:
            continue
        # user nice system idle iowait irq softirq steal (guest time is inside user)
        values = [int(v) for v in fields[1:9]] + [0] * (9 - len(fields))
        user, nice, system, _idle, _iowait, irq, softirq, stolen = values[:8]
        busy += user + nice + system + irq + softirq
        steal += stolen
    return busy, steal


def _own_ticks() -> int:
    """utime + stime + cutime + cstime of this process (fields 14-17 of /proc/self/stat)."""
    text = SELF_STAT.read_text()
    fields = text[text.rindex(")") + 2:].split()  # the command name may contain spaces
    return sum(int(v) for v in fields[11:15])


def _mean_mhz(cpus: tuple[int, ...]) -> tuple[float | None, str]:
    """Mean current frequency of `cpus`: cpufreq where the kernel has it, else /proc/cpuinfo."""
    values = []
    for cpu in cpus:
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
        try:
            values.append(int(path.read_text()) / 1000.0)
        except (OSError, ValueError):
            break
    if len(values) == len(cpus) and values:
        return sum(values) / len(values), "cpufreq scaling_cur_freq"
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None, ""
    mhz = [float(line.split(":")[1]) for line in lines if line.lower().startswith("cpu mhz")]
    picked = [mhz[c] for c in cpus if c < len(mhz)]
    if not picked:
        return None, ""
    return sum(picked) / len(picked), "/proc/cpuinfo cpu MHz (a VM may show a fixed value)"


def snapshot(cpus: tuple[int, ...] | None = None) -> CpuSnapshot | None:
    """The counters now, or None where /proc cannot be read."""
    chosen = cpus or allowed_cpus()
    try:
        busy, steal = _cpu_ticks(chosen)
        own = _own_ticks()
    except (OSError, ValueError, IndexError):
        return None
    mhz, source = _mean_mhz(chosen)
    return CpuSnapshot(time.monotonic(), chosen, busy, steal, own, mhz, source)


def between(start: CpuSnapshot | None, end: CpuSnapshot | None) -> Interference | None:
    """The figures for the time between two snapshots (None if either is missing or too short
    for the kernel's tick counters to mean anything)."""
    return over([(start, end)])


def over(windows: Sequence[tuple[CpuSnapshot | None, CpuSnapshot | None]]
         ) -> Interference | None:
    """The figures for the time inside `windows` (start and end snapshots), added up: a worker
    taking turns with another (`measure.turns`) counts only its own turns, as the other side's
    are not interference. None if a snapshot is missing or the windows are too short in all for
    the kernel's tick counters to mean anything."""
    if not windows or any(start is None or end is None for start, end in windows):
        return None
    pairs = [(start, end) for start, end in windows if start is not None and end is not None]
    first, last = pairs[0][0], pairs[-1][1]
    wall_s = sum(end.wall_s - start.wall_s for start, end in pairs)
    capacity = wall_s * CLOCK_TICKS * len(first.cpus)
    if wall_s < 0.2 or capacity <= 0:
        return None
    busy = sum(end.busy_ticks - start.busy_ticks for start, end in pairs) / capacity
    own = sum(end.own_ticks - start.own_ticks for start, end in pairs) / capacity
    steal = sum(end.steal_ticks - start.steal_ticks for start, end in pairs) / capacity
    return Interference(
        wall_s=wall_s, cpus=first.cpus, busy_frac=busy, own_frac=own,
        other_frac=max(0.0, busy - own), steal_frac=max(0.0, steal),
        cpu_mhz_start=first.mhz, cpu_mhz_end=last.mhz, mhz_source=first.mhz_source,
    )


def busy_before_start(seconds: float = 1.0) -> str | None:
    """One line saying the machine is busy right now (others above the flag threshold over
    `seconds` of idling here), or None when it is quiet or /proc cannot be read. Said before a
    run starts so a user learns it before paying for processes that will be flagged."""
    start = snapshot()
    time.sleep(seconds)
    reason = interference_reason(between(start, snapshot()))
    if reason is None:
        return None
    reason = reason.replace("its CPUs", "the CPUs")
    return (f"warning: the machine is busy before starting: {reason} over {seconds:.0f} s; "
            "processes measured now will be flagged")
