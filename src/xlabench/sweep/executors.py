"""Where the workers run: a local pool (pinned cores or one GPU per worker) or a Ray cluster.

Executors only run specs and hand records back as they finish; the sweep (run.py) alone
decides what to run and writes the database, so there is exactly one writer whichever
executor is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xlabench.core import Record, Spec, Status, UserError, failure
from xlabench.measure import env as envinfo
from xlabench.runner import Placement, current_env_id, run_with_costs

#: How long the Ray environment probe may wait for a free slot on every node.
RAY_PROBE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Finished:
    """A finished configuration: its record and whether its task was asked to count costs."""

    spec: Spec
    record: Record
    wanted_costs: bool


class Hooks(Protocol):
    """What an executor asks the sweep at dispatch time."""

    def want_costs(self, spec: Spec) -> bool:
        """Whether this spec's worker should also count the model's MACs/FLOPs."""

    def started(self, spec: Spec) -> None:
        """Called when `spec` is handed to a worker (for progress)."""

    def process_env(self, spec: Spec) -> dict[str, str]:
        """Extra environment for this spec's next worker process (the scheduler's settings)."""


class Executor(Protocol):
    workers: int

    def env_ids(self) -> list[str]:
        """Environment ids the workers will record (the resume key)."""

    def run(self, specs: Iterable[Spec], hooks: Hooks) -> Iterator[Finished]:
        """Run every spec; yield each record as soon as it is finished."""

    def close(self) -> None: ...


# ------------------------------------------------------------------------------ local
@dataclass
class _Job:
    spec: Spec
    wanted_costs: bool
    start_s: float
    end_s: float | None = None
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.label = self.spec.label()


class LocalExecutor:
    """Up to `len(slots)` workers at once on this machine, each in its own Placement.

    Each running configuration has a daemon thread that waits for its worker process. Daemon
    threads, not a thread pool: if the sweep is interrupted, the interpreter exits without
    waiting for running workers, and the workers die with it (the runner asks the kernel to
    kill a worker whose parent dies).
    """

    def __init__(self, timeout_s: float, slots: Sequence[Placement]) -> None:
        self.timeout_s = timeout_s
        self.slots = list(slots)
        self.workers = len(self.slots)

    def env_ids(self) -> list[str]:
        return [current_env_id()]

    def run(self, specs: Iterable[Spec], hooks: Hooks) -> Iterator[Finished]:
        pending = deque(specs)
        free = deque(range(len(self.slots)))
        running: dict[int, _Job] = {}  # slot -> job
        history: list[_Job] = []
        results: queue.Queue[tuple[int, Record]] = queue.Queue()
        while pending or running:
            while pending and free:
                slot = free.popleft()
                job = _Job(pending.popleft(), False, time.monotonic())
                job.wanted_costs = hooks.want_costs(job.spec)
                beside = tuple(j.label for j in running.values())
                base = self.slots[slot]
                placement = dataclasses.replace(
                    base, beside=beside, env={**base.env, **hooks.process_env(job.spec)})
                running[slot] = job
                history.append(job)
                self._launch(slot, job, placement, results)
                hooks.started(job.spec)
            slot, record = results.get()
            job = running.pop(slot)
            job.end_s = time.monotonic()
            free.append(slot)
            record = record.replace(beside=_overlapping(job, history))
            yield Finished(job.spec, record, job.wanted_costs)

    def _launch(self, slot: int, job: _Job, placement: Placement, results: queue.Queue) -> None:
        def work() -> None:
            try:
                record = run_with_costs(job.spec, self.timeout_s, job.wanted_costs, placement)
            except Exception as exc:  # noqa: BLE001 (failure is data)
                # The runner turns every worker outcome into a record; this is an OS error or a
                # bug, and it must still become a record, not a lost configuration.
                record = failure(job.spec, Status.CRASHED, f"could not run the worker: {exc!r}")
            results.put((slot, record))

        name = f"xlabench-slot{slot}"
        threading.Thread(target=work, name=name, daemon=True).start()

    def close(self) -> None:
        pass


def _overlapping(job: _Job, history: list[_Job]) -> tuple[str, ...]:
    """Labels of every job whose run overlapped `job`'s, including ones started after it.

    Exact once `job` has ended: anything that overlaps it started before its end, and so is
    already in `history`.
    """
    end = job.end_s if job.end_s is not None else time.monotonic()
    return tuple(
        other.label for other in history
        if other is not job and other.start_s < end
        and (other.end_s is None or other.end_s > job.start_s)
    )


def local_slots(workers: int) -> list[Placement]:
    """One Placement per worker: disjoint CPU cores, and one GPU each where GPUs exist.

    One worker gets the whole machine (no pinning), the setting for clean numbers. Several
    workers get equal shares of this process's CPU affinity, whole physical cores first (so two
    workers never share a core's hyper-threads); cores left over from an uneven split stay idle
    for the sweep process itself.

    Raises:
        UserError: more workers than CPUs, or than GPUs on a GPU machine.
    """
    if workers == 1:
        return [Placement()]
    cpus = sorted(os.sched_getaffinity(0))
    gpus = visible_gpus()
    if gpus and workers > len(gpus):
        raise UserError(f"--workers {workers} needs {workers} GPUs; this machine has {len(gpus)}")
    shares = split_cpus(cpus, workers, physical_cores(cpus))
    return [Placement(cpus=share, gpu=gpus[i] if gpus else None) for i, share in enumerate(shares)]


def split_cpus(
    cpus: Sequence[int], parts: int, cores: Sequence[tuple[int, ...]] | None = None
) -> list[tuple[int, ...]]:
    """`parts` disjoint, equal-sized sets of `cpus`, whole `cores` (sibling groups) if possible.

    Raises:
        UserError: fewer CPUs than parts.
    """
    if parts > len(cpus):
        raise UserError(f"--workers {parts} needs at least {parts} CPU cores; "
                        f"this process may use {len(cpus)}")
    units = list(cores) if cores and len(cores) >= parts else [(cpu,) for cpu in cpus]
    size = len(units) // parts
    return [tuple(sorted(c for unit in units[i * size:(i + 1) * size] for c in unit))
            for i in range(parts)]


def physical_cores(cpus: Sequence[int]) -> list[tuple[int, ...]]:
    """`cpus` grouped by physical core (hyper-thread siblings together), from sysfs."""
    allowed, seen, cores = set(cpus), set(), []
    for cpu in cpus:
        if cpu in seen:
            continue
        siblings = _siblings(cpu) & allowed or {cpu}
        seen |= siblings
        cores.append(tuple(sorted(siblings)))
    return cores


def _siblings(cpu: int) -> set[int]:
    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    try:
        return _parse_cpu_list(path.read_text())
    except (OSError, ValueError):
        return {cpu}


def _parse_cpu_list(text: str) -> set[int]:
    """'0-3,8' -> {0, 1, 2, 3, 8} (the kernel's cpu list format)."""
    found: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def visible_gpus() -> list[int]:
    """GPU indices a worker may be given: CUDA_VISIBLE_DEVICES if it lists indices, else all."""
    count = len(envinfo.gpus())
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if count == 0:
        return []
    if listed is not None:
        items = [i.strip() for i in listed.split(",") if i.strip()]
        return [int(i) for i in items] if all(i.isdigit() for i in items) else []
    return list(range(count))


# -------------------------------------------------------------------------------- ray
class RayExecutor:
    """Each configuration is a Ray task that runs the usual isolated worker on its node.

    Tasks ask for one GPU each on a cluster with GPUs (one CPU otherwise). Records stream back
    with `ray.wait` as tasks finish; the driver writes the db. At most `workers` tasks are in
    flight (default: the cluster's GPUs, or CPUs), so cost decisions and progress stay current
    and an interrupted sweep leaves nothing queued.
    """

    def __init__(self, timeout_s: float, address: str | None, workers: int | None) -> None:
        self.ray = _import_ray()
        self._started_here = not self.ray.is_initialized()
        if self._started_here:
            _ray_init(self.ray, address)
        resources = self.ray.cluster_resources()
        self.gpus_per_task = 1 if resources.get("GPU", 0) >= 1 else 0
        capacity = int(resources.get("GPU", 0)) or int(resources.get("CPU", 1))
        self.workers = workers or max(1, capacity)
        self.timeout_s = timeout_s
        self._task = self.ray.remote(num_cpus=1, num_gpus=self.gpus_per_task, max_retries=0)(
            _ray_run
        )

    def env_ids(self) -> list[str]:
        """Env ids as the workers compute them, one probe task per alive node.

        The driver's own id may differ (other machine, other GPUs, Ray's thread settings), so
        resume must compare against what the workers will write.
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = self.ray.remote(num_cpus=1, num_gpus=0, max_retries=0)(_ray_env_id)
        refs = [
            probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], False))
            .remote()
            for n in self.ray.nodes() if n.get("Alive")
        ]
        try:
            found = self.ray.get(refs, timeout=RAY_PROBE_TIMEOUT_S)
        except self.ray.exceptions.GetTimeoutError:
            raise UserError("Ray workers did not answer the environment probe within "
                            f"{RAY_PROBE_TIMEOUT_S:g} s (is the cluster busy?)") from None
        except self.ray.exceptions.RayError as exc:
            raise UserError(f"Ray workers cannot run xlabench: {_first_line(exc)} "
                            "(install xlabench on every node)") from None
        return sorted(set(found))

    def run(self, specs: Iterable[Spec], hooks: Hooks) -> Iterator[Finished]:
        pending = deque(specs)
        running: dict[Any, tuple[Spec, bool]] = {}
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    spec = pending.popleft()
                    wanted = hooks.want_costs(spec)
                    ref = self._task.remote(spec.to_dict(), self.timeout_s, wanted,
                                            hooks.process_env(spec))
                    running[ref] = (spec, wanted)
                    hooks.started(spec)
                ready, _ = self.ray.wait(list(running), num_returns=1)
                for ref in ready:
                    spec, wanted = running.pop(ref)
                    yield Finished(spec, self._record(ref, spec), wanted)
        finally:
            for ref in running:  # interrupted: nothing keeps running for a dead driver
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref, force=True)

    def _record(self, ref: Any, spec: Spec) -> Record:
        exceptions = self.ray.exceptions
        try:
            return Record.from_dict(self.ray.get(ref))
        except exceptions.OutOfMemoryError as exc:
            return failure(spec, Status.OOM, f"Ray killed the task: {_first_line(exc)}")
        except exceptions.RayError as exc:
            return failure(spec, Status.CRASHED, f"Ray task failed: {_first_line(exc)}", str(exc))

    def close(self) -> None:
        if self._started_here:
            self.ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'xlabench[ray]'") from None
    return ray


def _ray_init(ray: Any, address: str | None) -> None:
    import logging

    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, configure_logging=True)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise UserError(f"cannot start or reach Ray at {address or 'default'}: "
                        f"{_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


@contextlib.contextmanager
def _ray_gpu_as_placement() -> Iterator[Placement]:
    """Turn the GPU Ray assigned (CUDA_VISIBLE_DEVICES of this task) into the worker's Placement.

    The env id is computed from this process's environment, and CUDA_VISIBLE_DEVICES is one of
    the flags it hashes: left in place, the id would depend on which GPU Ray picked, and resume
    would never match. Locally the same variable is only set for the worker, never the parent.
    """
    visible = os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        if visible is not None and visible.strip().isdigit():
            yield Placement(gpu=int(visible))
        elif visible is not None:
            yield Placement(env={"CUDA_VISIBLE_DEVICES": visible})  # "" hides GPUs, as Ray meant
        else:
            yield Placement()
    finally:
        if visible is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible


def _ray_run(
    spec_dict: dict[str, Any], timeout_s: float, want_costs: bool, env: dict[str, str]
) -> dict[str, Any]:
    """The Ray task: one isolated worker (plus costs if asked), on whatever node Ray chose."""
    spec = Spec.from_dict(spec_dict)
    with _ray_gpu_as_placement() as placement:
        placement = dataclasses.replace(placement, env={**placement.env, **env})
        return run_with_costs(spec, timeout_s, want_costs, placement).to_dict()


def _ray_env_id() -> str:
    with _ray_gpu_as_placement():
        return current_env_id()
