"""How fast this machine runs a study process against the one the cost line was fitted on.

The cost line (`sweep.cost`) is Zen 4's: on a machine with no history of its own, a tier's
estimate is that machine's time. A Zen 3 VM took 1.7 times it (tier 1: 125 min against a
73-min dry run) while its matmul peak was only 1.12 times lower (184 against 207 GFLOP/s),
because most of a process is not matmul: starting Python, importing TensorFlow, building,
converting and compiling run on one core, and a noisier machine samples longer before its
interval is tight. So the pace is measured as the line was: a few real processes of one
configuration, their median wall time over the same configuration's median on the line's
machine. ResNet50 at 224 px on TF graph is the line's middle anchor. On the committed data
(`bench/study_time.py`) Zen 3's first three of it give 1.69, and tier 1 at that pace is
estimated at 2 h 03 min; it took 2 h 05 min.

Measured only where it matters: no history here, and a plan long enough (`MIN_MODELLED_S`)
that about a minute of pilot processes is worth a truer estimate. The pilots are measurements
of the machine, not results: nothing is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xlabench.core import Spec
from xlabench.measure import stats
from xlabench.sweep.executors import Executor

#: The pilot configuration (default measurement settings, as the study's).
PILOT = Spec(model="resnet50_v1", backend="tensorflow", mode="graph", resolution=224,
             batch_size=4, precision="fp32")
#: Its median process wall time on the line's machine (2-vCPU Zen 4 VM, `results/cpu/`).
REFERENCE_PILOT_S = 18.0
REFERENCE_MACHINE = "AMD EPYC (Zen 4) x2"
#: Pilot processes, one after another: a process's wall time varies by 2x on a busy VM.
PILOT_PROCESSES = 3
#: A plan whose cost-line part is shorter than this is not worth a minute of pilots.
MIN_MODELLED_S = 30 * 60.0


@dataclass(frozen=True)
class Pace:
    """This machine's pace: the pilots' median over the reference's (>1: slower)."""

    pilot_s: tuple[float, ...]  # each successful pilot process's wall time

    @property
    def factor(self) -> float:
        return stats.median(list(self.pilot_s)) / REFERENCE_PILOT_S

    def describe(self) -> str:
        median_s = stats.median(list(self.pilot_s))
        return (f"this machine's pace {self.factor:.2f}x the line's ({len(self.pilot_s)} pilot "
                f"processes of {PILOT.model}@{PILOT.resolution} {PILOT.backend}/{PILOT.mode}, "
                f"median {median_s:.0f} s against {REFERENCE_PILOT_S:.0f} s on "
                f"{REFERENCE_MACHINE})")


class _PilotHooks:
    def started(self, spec: Spec) -> None:
        pass

    def sampling_target(self, spec: Spec) -> float | None:
        return None


def measure_pace(executor: Executor, note: Callable[[str], None],
                 processes: int = PILOT_PROCESSES) -> Pace | None:
    """Run the pilot `processes` times, one at a time; None if none succeeded."""
    note(f"no history on this machine: measuring its pace with {processes} processes of "
         f"{PILOT.model}@{PILOT.resolution} {PILOT.backend}/{PILOT.mode} (about a minute)")
    seconds = []
    for _ in range(processes):
        for finished in executor.run([PILOT], _PilotHooks()):
            record = finished.record
            if record.ok and record.duration_s:
                seconds.append(record.duration_s)
            else:
                note(f"pilot process failed: {(record.error or '?')[:160]}")
    if not seconds:
        note("pace not measured: the estimate is the cost line's, at Zen 4's pace")
        return None
    return Pace(tuple(seconds))
