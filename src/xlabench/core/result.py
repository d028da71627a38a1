"""A result is several worker processes: how many to run, when one is flagged, what is combined.

One worker process gives one Record (its own samples). Processes of the same configuration
differ more than one process's samples do, so the figure we report for a configuration
combines `k` independent processes (`Result`). The rules that decide how many processes, and
when a process was measured on a busy machine, are policy: they live here, in one place, and
every layer that judges (worker, store, sweep, analysis, report) asks these functions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xlabench.core.backends import BACKENDS
from xlabench.core.errors import UserError
from xlabench.core.record import Interference

#: A process is flagged when other processes used more than this share of its CPUs' capacity
#: during its timed phases. Quiet runs here measure 0-3% (kernel threads, the idle parent);
#: one CPU hog on one of two cores reads ~50%. 10% sits well clear of both.
OTHER_BUSY_MAX_FRAC = 0.10
#: ... or when the hypervisor stole more than this share (a busy host under a VM).
STEAL_MAX_FRAC = 0.05
#: Confidence of every between-process interval we compute.
CONFIDENCE = 0.95
#: How a one-process figure's interval was made (a result of one process, or a row from
#: before results had processes): that process's own, which says nothing about other processes.
ONE_PROCESS_METHOD = ("one process: order-statistic interval of its own samples "
                      "(no between-process spread)")
#: The same for one process of a LoadGen scenario: its figure has no interval of its own.
ONE_SCENARIO_PROCESS_METHOD = ("one process: LoadGen's figure, no interval (run more "
                               "processes for one)")


@dataclass(frozen=True)
class ResultPolicy:
    """How many processes make one result, and when the sweep stops adding them.

    Attributes:
        min_processes: every result runs at least this many clean processes (interference
            re-runs included) unless a process fails.
        max_processes: never more processes than this (flagged ones included).
        target_rel_ci: add processes while the combined interval's half-width is wider than
            this share of the estimate ...
        budget_s: ... and the configuration's processes have used less than this much wall time
            (a process is only started if the median process so far still fits).
        rerun_flagged: after the grid, configurations left with fewer than `min_processes`
            clean processes get up to this many more rounds (one process each), to replace
            the flagged ones.
        keep_flagged: combine every successful process, flagged ones too (the result is
            still flagged and says how many). For the sides of a paired comparison
            (`xlabench ab`): both processes of a round ran back to back in the machine's state
            of the moment, a busy neighbour or a stealing hypervisor included, and the paired
            ratio cancels what they share; dropping a flagged process would unpair its round,
            and on a VM whose steal comes with its second core nothing would ever decide.
    """

    min_processes: int = 3
    max_processes: int = 6
    target_rel_ci: float = 0.05
    budget_s: float = 120.0
    rerun_flagged: int = 3
    keep_flagged: bool = False

    def __post_init__(self) -> None:
        for name in ("min_processes", "max_processes", "rerun_flagged"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise UserError(f"{name.replace('_', ' ')} must be an integer, got {value!r}")
        if self.min_processes < 1:
            raise UserError(f"processes must be >= 1, got {self.min_processes}")
        if self.max_processes < self.min_processes:
            raise UserError(f"max processes ({self.max_processes}) must be >= processes "
                            f"({self.min_processes})")
        if self.rerun_flagged < 0:
            raise UserError(f"rerun flagged must be >= 0, got {self.rerun_flagged}")
        if not 0 < self.target_rel_ci < 1:
            raise UserError(f"result target CI must be between 0 and 1, got {self.target_rel_ci}")
        if not self.budget_s > 0:
            raise UserError(f"result budget must be positive, got {self.budget_s}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: What makes two environments the same machine (their software may differ): the
#: between-run variation of a result's interval is pooled over every environment of its machine.
MACHINE_KEYS = ("hostname", "cpu_model", "cpu_count", "machine", "accelerator", "gpus")


#: The packages whose version can change a backend's speed (beside Keras, NumPy and
#: xlabench, which every backend runs). Two environments of one machine that differ only in
#: other packages (a runtime installed for another backend) hold re-runs of the same software
#: for that backend's configurations: the between-run variation is estimated across them.
COMMON_PACKAGES = ("keras", "keras-hub", "numpy", "xlabench")
BACKEND_PACKAGES: dict[str, tuple[str, ...]] = {
    b.name: b.identifying_packages for b in BACKENDS}


def software_id(env: Mapping[str, Any], backend: str) -> str:
    """A hash of what in the environment can change `backend`'s speed: its machine, its
    packages (BACKEND_PACKAGES; every package for a backend not listed), Python and the
    result-changing flags. Re-runs with the same software id measure the same thing, so
    their spread is the machine's between-run variation."""
    packages = env.get("packages") or {}
    wanted = BACKEND_PACKAGES.get(backend)
    chosen = (packages if wanted is None else
              {name: packages.get(name) for name in (*COMMON_PACKAGES, *wanted)})
    text = json.dumps({"machine": machine_id(env), "packages": chosen,
                       "python": env.get("python"), "flags": env.get("flags")},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def machine_id(env: Mapping[str, Any]) -> str:
    """A hash of the record environment's machine keys (see MACHINE_KEYS)."""
    gpus = [{k: v for k, v in g.items() if k != "clocks_mhz"} for g in env.get("gpus") or []]
    keys = {k: env.get(k) for k in MACHINE_KEYS if k != "gpus"}
    text = json.dumps({**keys, "gpus": gpus}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def interference_reason(figures: Interference | None) -> str | None:
    """Why a process counts as measured under interference, or None if it is clean."""
    if figures is None:
        return None
    if figures.other_frac > OTHER_BUSY_MAX_FRAC:
        return (f"other processes used {100 * figures.other_frac:.0f}% of its CPUs "
                f"(threshold {100 * OTHER_BUSY_MAX_FRAC:.0f}%)")
    if figures.steal_frac > STEAL_MAX_FRAC:
        return (f"the hypervisor stole {100 * figures.steal_frac:.0f}% of its CPUs "
                f"(threshold {100 * STEAL_MAX_FRAC:.0f}%)")
    return None


@dataclass(frozen=True)
class Result:
    """The combined figure of one configuration's processes.

    `median_sps` is the estimate (for k >= 2: the geometric mean of the clean processes'
    median throughputs); `ci_low_sps`/`ci_high_sps` its interval with the confidence it really
    has (`ci_confidence`) and how it was made (`ci_method`). With k = 1 the interval is that
    one process's own and says nothing about other processes: `between_processes` is False.
    """

    result_id: str
    spec_id: str
    env_id: str
    status: str  # ok when at least one clean (or, failing that, any) process succeeded
    k: int  # processes that produced a throughput and went into the figure
    k_total: int  # every process run for this result, failed and flagged ones included
    k_flagged: int  # processes measured under interference (kept, not combined if avoidable)
    median_sps: float | None
    ci_low_sps: float | None
    ci_high_sps: float | None
    ci_confidence: float | None
    ci_method: str
    between_processes: bool
    target_rel_ci: float | None
    target_met: bool
    flagged: bool  # too few clean processes: the figure includes interference or is thin
    flag_reason: str
    process_medians_sps: tuple[float, ...]  # of the processes combined, in run order
    process_rounds: tuple[int, ...]  # their sweep rounds (pairing for speedups)
    error: str | None = None
    # The interval of this run's processes alone; ci_low/high_sps add the environment's
    # between-run variation when the store had re-runs to measure it (drift_* say how much,
    # from how many results); without it the two intervals are the same.
    run_ci_low_sps: float | None = None
    run_ci_high_sps: float | None = None
    drift_rel_sd: float | None = None
    drift_results: int = 0
    drift_df: float | None = None  # degrees of freedom of the drift estimate (compare needs it)
    # Which processes the figure combined (their `ProcessInfo.index`): combine's decision, kept
    # so that no reader judges it again; () in a result stored before it was kept.
    process_indices: tuple[int, ...] = ()
    # How far apart the machine's speed was over the combined processes (`measure.probe`:
    # highest / lowest probe - 1); None where fewer than two probes were taken. It explains the
    # figure, it never rescales it.
    probe_spread_rel: float | None = None
    # Each combined process's probe readings (GFLOP/s) before and after its timed phases,
    # aligned with process_medians_sps (None: not taken; () in a result stored before they
    # were kept). Pairing by round reads them: a round whose processes ran in different
    # machine states is set aside (`measure.combine.matched_rounds`).
    process_probe_before_gflops: tuple[float | None, ...] = ()
    process_probe_after_gflops: tuple[float | None, ...] = ()
    # Each combined process's turns (`measure.turns`): True where it took turns with the other
    # side of its `xlabench ab` round, slice by slice, so both saw the same machine states and
    # the round is never set aside for them; aligned with process_medians_sps.
    process_took_turns: tuple[bool, ...] = ()

    @property
    def rel_ci_halfwidth(self) -> float | None:
        if self.median_sps is None or self.ci_low_sps is None or self.ci_high_sps is None:
            return None
        return max(self.median_sps - self.ci_low_sps, self.ci_high_sps - self.median_sps) \
            / self.median_sps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**fixed)

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))
