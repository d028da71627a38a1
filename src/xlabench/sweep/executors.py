"""Where the workers run: a local pool (pinned cores or one GPU per worker) or a Ray cluster.

Executors only run specs and hand records back as they finish; the sweep (run.py) alone
decides what to run and writes the database (model costs included, counted before any
executor starts), so there is exactly one writer whichever executor is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xlabench.core import Record, Spec, Status, UserError, failure, one_line
from xlabench.measure import env as envinfo
from xlabench.runner import Placement, current_env_id, run_isolated

#: How long the Ray environment probe may wait for a free slot on every node.
RAY_PROBE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Finished:
    """A finished process of a configuration: its record."""

    spec: Spec
    record: Record


class Hooks(Protocol):
    """What an executor asks the sweep at dispatch time."""

    def started(self, spec: Spec) -> None:
        """Called when `spec` is handed to a worker (for progress)."""

    def sampling_target(self, spec: Spec) -> float | None:
        """The relaxed sampling target of this spec's next process (`runner.WorkerJob`)."""


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
    start_s: float
    end_s: float | None = None
    host: str | None = None  # where it ran, if known (a Ray node's address)
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
                job = _Job(pending.popleft(), time.monotonic())
                beside = tuple(j.label for j in running.values())
                placement = dataclasses.replace(self.slots[slot], beside=beside)
                running[slot] = job
                history.append(job)
                self._launch(slot, job, placement, hooks.sampling_target(job.spec), results)
                hooks.started(job.spec)
            slot, record = results.get()
            job = running.pop(slot)
            job.end_s = time.monotonic()
            free.append(slot)
            record = record.replace(beside=_overlapping(job, history))
            yield Finished(job.spec, record)

    def _launch(self, slot: int, job: _Job, placement: Placement,
                sampling_target: float | None, results: queue.Queue) -> None:
        def work() -> None:
            try:
                record = run_isolated(job.spec, self.timeout_s, placement=placement,
                                      sampling_target_rel_ci=sampling_target)
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
#: Environment variables that set a worker's thread pools (recorded with its placement).
THREAD_VARS = ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS",
               "MKL_NUM_THREADS")


@dataclass(frozen=True)
class RayNode:
    """A Ray node that runs one CPU benchmark task at a time, the task owning all its CPUs."""

    node_id: str
    ip: str
    cpus: int  # the CPUs the node declared (`ray start --num-cpus`), whole ones


def ray_cpu_nodes(nodes: Iterable[Mapping[str, Any]]) -> list[RayNode]:
    """The nodes of `ray.nodes()` a CPU task can own: alive, with at least one whole CPU.

    A head started with `--num-cpus 0` (a common way to keep work off it) is left out.
    """
    found = []
    for node in nodes:
        cpus = int(node.get("Resources", {}).get("CPU", 0))  # whole CPUs: 2.5 declared -> 2
        if node.get("Alive") and cpus >= 1:
            found.append(RayNode(str(node["NodeID"]), str(node.get("NodeManagerAddress", "")),
                                 cpus))
    return found


def owned_cpus(
    affinity: Iterable[int], declared: int, cores: Sequence[tuple[int, ...]] | None = None
) -> tuple[int, ...]:
    """The cores a task that owns its node pins its worker to.

    The CPUs the node's processes may use (their affinity: `taskset -c 2,3 ray start ...` gives
    {2, 3}), at most as many as the node declared to Ray: whole physical cores (`cores`,
    sibling groups) first, then single hyper-threads if the declared count splits a core.
    """
    cpus = sorted(set(affinity))
    if declared >= len(cpus):
        return tuple(cpus)
    chosen: list[int] = []
    for unit in cores or [(cpu,) for cpu in cpus]:
        if len(chosen) + len(unit) <= declared:
            chosen.extend(unit)
    for cpu in cpus:
        if len(chosen) >= declared:
            break
        if cpu not in chosen:
            chosen.append(cpu)
    return tuple(sorted(chosen))


class RayExecutor:
    """Each configuration is a Ray task that runs the usual isolated worker on its node.

    On a cluster with GPUs each task asks for one GPU (and one CPU), as many at once as there
    are GPUs. On a CPU-only cluster a task owns a whole node: it is scheduled onto that node
    (node affinity) asking for all the CPUs the node declared, and pins its worker to the cores
    the node may use (`owned_cpus`), with thread pools sized to match; so CPU benchmarks never
    share cores, as with the local executor. As many run at once as there are alive nodes with
    CPUs. `workers` caps the tasks in flight either way, so scheduling decisions and progress stay
    current and an interrupted sweep leaves nothing queued. Records stream back with `ray.wait`
    as tasks finish; the driver writes the db. Every record says where it ran
    (`backend_info["placement"]`); an owned node's record also says what ran beside it on the
    same host (nodes may share a machine).
    """

    def __init__(self, timeout_s: float, address: str | None, workers: int | None) -> None:
        self.ray = _import_ray()
        self._started_here = not self.ray.is_initialized()
        if self._started_here:
            _ray_init(self.ray, address)
        resources = self.ray.cluster_resources()
        self.gpus_per_task = 1 if resources.get("GPU", 0) >= 1 else 0
        #: CPU-only cluster: the nodes the tasks own, one task each at a time.
        self.nodes = [] if self.gpus_per_task else ray_cpu_nodes(self.ray.nodes())
        if self.gpus_per_task:
            self.workers = workers or max(1, int(resources.get("GPU", 0)))
        elif self.nodes:  # one task per node
            self.workers = min(workers or len(self.nodes), len(self.nodes))
        else:
            self.close()
            raise UserError("the Ray cluster has no alive node with a CPU to run on")
        self.timeout_s = timeout_s
        self._task = self.ray.remote(num_cpus=1, num_gpus=self.gpus_per_task, max_retries=0)(
            _ray_run
        )

    def env_ids(self) -> list[str]:
        """Env ids as the workers compute them, one probe task per node that will run tasks.

        The driver's own id may differ (other machine, other GPUs, Ray's thread settings), so
        resume must compare against what the workers will write. A probe asks for what a task
        on its node asks for (Ray sets OMP_NUM_THREADS from the CPUs a task holds, and the id
        includes it).
        """
        probe = self.ray.remote(num_cpus=1, num_gpus=0, max_retries=0)(_ray_env_id)
        if self.nodes:
            refs = [probe.options(num_cpus=n.cpus, scheduling_strategy=_on_node(n.node_id))
                    .remote() for n in self.nodes]
        else:
            refs = [probe.options(scheduling_strategy=_on_node(n["NodeID"])).remote()
                    for n in self.ray.nodes() if _runs_gpu_tasks(n)]
        try:
            found = self.ray.get(refs, timeout=RAY_PROBE_TIMEOUT_S)
        except self.ray.exceptions.GetTimeoutError:
            raise UserError("Ray workers did not answer the environment probe within "
                            f"{RAY_PROBE_TIMEOUT_S:g} s (is the cluster busy?)") from None
        except self.ray.exceptions.RayError as exc:
            raise UserError(f"Ray workers cannot run xlabench: {one_line(exc)} "
                            "(install xlabench on every node)") from None
        return sorted(set(found))

    def run(self, specs: Iterable[Spec], hooks: Hooks) -> Iterator[Finished]:
        pending = deque(specs)
        free = deque(self.nodes)  # CPU-only cluster: the nodes no task owns now
        running: dict[Any, tuple[_Job, RayNode | None]] = {}
        history: list[_Job] = []
        try:
            while pending or running:
                while pending and len(running) < self.workers and (self.gpus_per_task or free):
                    node = None if self.gpus_per_task else free.popleft()
                    job = _Job(pending.popleft(), time.monotonic(),
                               host=node.ip if node else None)
                    running[self._submit(job, node, hooks.sampling_target(job.spec))] = (
                        job, node)
                    history.append(job)
                    hooks.started(job.spec)
                if not running:
                    free.extend(self._nodes_back())
                    continue
                ready, _ = self.ray.wait(list(running), num_returns=1)
                for ref in ready:
                    job, node = running.pop(ref)
                    job.end_s = time.monotonic()
                    record, ray_failed = self._record(ref, job.spec)
                    if node is not None:
                        if not ray_failed or self._alive(node):
                            free.append(node)
                        if ray_failed:  # the task wrote nothing: say where it was sent
                            where = {"executor": "ray", "node_id": node.node_id,
                                     "node_ip": node.ip, "owns_node": True,
                                     "declared_cpus": node.cpus}
                            record = record.replace(backend_info={"placement": where})
                        # from the driver's clock: dispatch to result, which holds the run
                        record = record.replace(beside=_overlapping(
                            job, [j for j in history if j.host == job.host]))
                    yield Finished(job.spec, record)
        finally:
            for ref in running:  # interrupted: nothing keeps running for a dead driver
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref, force=True)

    def _submit(self, job: _Job, node: RayNode | None, sampling_target: float | None) -> Any:
        args = (job.spec.to_dict(), self.timeout_s, sampling_target)
        if node is None:
            return self._task.remote(*args, None)
        return self._task.options(
            num_cpus=node.cpus, num_gpus=0, scheduling_strategy=_on_node(node.node_id)
        ).remote(*args, node.cpus)

    def _alive(self, node: RayNode) -> bool:
        return any(n.node_id == node.node_id for n in ray_cpu_nodes(self.ray.nodes()))

    def _nodes_back(self) -> list[RayNode]:
        """Every owned node died with its task: wait for CPU nodes to be alive again.

        Raises:
            UserError: none came back within the probe's timeout.
        """
        deadline = time.monotonic() + RAY_PROBE_TIMEOUT_S
        while time.monotonic() < deadline:
            nodes = ray_cpu_nodes(self.ray.nodes())
            if nodes:
                return nodes
            time.sleep(5.0)
        raise UserError("every Ray node with CPUs died; run the same command again once the "
                        "cluster is back (the finished configurations are kept)")

    def _record(self, ref: Any, spec: Spec) -> tuple[Record, bool]:
        """The task's record, and whether Ray (not the worker) failed it."""
        exceptions = self.ray.exceptions
        try:
            return Record.from_dict(self.ray.get(ref)), False
        except exceptions.OutOfMemoryError as exc:
            return failure(spec, Status.OOM, f"Ray killed the task: {one_line(exc)}"), True
        except exceptions.RayError as exc:
            record = failure(spec, Status.CRASHED, f"Ray task failed: {one_line(exc)}",
                             str(exc))
            return record, True

    def close(self) -> None:
        if self._started_here:
            self.ray.shutdown()


def _on_node(node_id: str) -> Any:
    """Ray's scheduling strategy for "on this node and no other"."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def _runs_gpu_tasks(node: Mapping[str, Any]) -> bool:
    resources = node.get("Resources", {})
    return bool(node.get("Alive")) and resources.get("GPU", 0) >= 1 and resources.get("CPU", 0) >= 1


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
                        f"{one_line(exc)}") from None


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
    spec_dict: dict[str, Any], timeout_s: float, sampling_target: float | None,
    node_cpus: int | None = None,
) -> dict[str, Any]:
    """The Ray task: one isolated worker on its node.

    `node_cpus` set: the task owns its node, which declared that many CPUs; the worker is
    pinned to the cores the node may use (`owned_cpus`) and its thread pools sized to them
    (Ray set OMP_NUM_THREADS to the CPUs the task holds; the placement sets it again). The
    record says where it ran (`backend_info["placement"]`).
    """
    started = time.time()
    spec = Spec.from_dict(spec_dict)
    with _ray_gpu_as_placement() as placement:
        if node_cpus:
            affinity = sorted(os.sched_getaffinity(0))
            cpus = owned_cpus(affinity, node_cpus, physical_cores(affinity))
            placement = dataclasses.replace(placement, cpus=cpus)
        record = run_isolated(spec, timeout_s, placement=placement,
                              sampling_target_rel_ci=sampling_target)
        where = _ray_placement(placement, node_cpus, started)
    return record.replace(backend_info={**record.backend_info, "placement": where}).to_dict()


def _ray_placement(placement: Placement, node_cpus: int | None, started: float) -> dict[str, Any]:
    """How a Ray task placed its worker: node, cores, GPU, thread settings, when it ran."""
    import ray

    worker_env = {**os.environ, **placement.environment()}
    return {
        "executor": "ray",
        "node_id": ray.get_runtime_context().get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "owns_node": node_cpus is not None,
        "declared_cpus": node_cpus,
        "cpus": list(placement.cpus),  # [] = not pinned
        "gpu": placement.gpu,
        "threads": {name: worker_env[name] for name in THREAD_VARS if name in worker_env},
        "started_unix": round(started, 3),
        "ended_unix": round(time.time(), 3),
    }


def _ray_env_id() -> str:
    with _ray_gpu_as_placement():
        return current_env_id()
