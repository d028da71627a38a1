"""CPU benchmarks on a Ray cluster own their node: one task per node, pinned to its cores.

The planning is tested without Ray (a scripted stand-in for the `ray` module); the real test
starts two Ray nodes on this machine, each pinned with taskset to one core, and runs a tiny
sweep through them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sweep.conftest import seed_costs, sweep_toml
from tests.sweep.ray_cluster import LocalRayCluster
from xlabench.core import Record, Spec, Status, UserError, failure
from xlabench.store import ResultStore
from xlabench.sweep import executors
from xlabench.sweep.executors import RayExecutor, RayNode, owned_cpus, ray_cpu_nodes


def _node(node_id: str, cpus: float, alive: bool = True, gpus: float = 0, ip: str = "10.0.0.1"
          ) -> dict[str, Any]:
    resources = {"CPU": cpus, "memory": 1e9, f"node:{ip}": 1.0}
    if gpus:
        resources["GPU"] = gpus
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": ip, "Resources": resources}


def test_cpu_nodes_are_the_alive_ones_with_whole_cpus() -> None:
    nodes = [_node("head", 0, ip="10.0.0.1"), _node("a", 8, ip="10.0.0.2"),
             _node("dead", 8, alive=False), _node("b", 2.5, ip="10.0.0.3"), _node("tiny", 0.5)]
    assert ray_cpu_nodes(nodes) == [RayNode("a", "10.0.0.2", 8), RayNode("b", "10.0.0.3", 2)]


def test_owned_cpus_are_the_nodes_affinity_capped_at_what_it_declared() -> None:
    assert owned_cpus({1}, 1) == (1,)  # taskset -c 1 ray start --num-cpus 1
    assert owned_cpus({4, 5, 6, 7}, 4) == (4, 5, 6, 7)
    assert owned_cpus({4, 5, 6, 7}, 16) == (4, 5, 6, 7)  # declared more than it may use
    assert owned_cpus({0, 1, 2, 3}, 2) == (0, 1)
    siblings = [(0, 4), (1, 5), (2, 6), (3, 7)]  # hyper-thread pairs
    assert owned_cpus(range(8), 4, siblings) == (0, 1, 4, 5)  # whole cores first
    assert owned_cpus(range(8), 3, siblings) == (0, 1, 4)  # then single threads


# ------------------------------------------------------------------ planning, scripted Ray
class _Remote:
    def __init__(self, fake: _FakeRay, function: Any, options: dict[str, Any]) -> None:
        self.fake, self.function, self.opts = fake, function, options

    def options(self, **changes: Any) -> _Remote:
        return _Remote(self.fake, self.function, {**self.opts, **changes})

    def remote(self, *args: Any) -> int:
        return self.fake.submit(self.function, self.opts, args)


class _FakeRay:
    """Runs nothing: remembers each task's resources and node, finishes them in order, and
    checks that no node ever holds more CPUs than it declared."""

    class exceptions:  # noqa: N801 (stands in for the module)
        class RayError(Exception):
            pass

        class GetTimeoutError(RayError):
            pass

        class OutOfMemoryError(RayError):
            pass

    def __init__(self, nodes: list[dict[str, Any]], fail: set[str] = frozenset()) -> None:
        self._nodes = nodes
        self.fail = fail  # spec labels whose task Ray fails, and whose node then dies
        self.tasks: dict[int, dict[str, Any]] = {}
        self.held: dict[str, float] = {}  # node -> CPUs held by running tasks
        self.most_in_flight = 0  # nodes busy at once
        self.running = self.most_running = 0  # tasks at once

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for node in self._nodes:
            for key, value in node["Resources"].items():
                total[key] = total.get(key, 0) + value
        return total

    def nodes(self) -> list[dict[str, Any]]:
        return self._nodes

    def remote(self, **options: Any) -> Any:
        return lambda function: _Remote(self, function, options)

    def submit(self, function: Any, options: dict[str, Any], args: tuple[Any, ...]) -> int:
        node = options.get("scheduling_strategy", "any")  # _on_node gives the node id
        cpus = options["num_cpus"]
        self.held[node] = self.held.get(node, 0) + cpus
        if node != "any":
            declared = next(n["Resources"]["CPU"] for n in self._nodes if n["NodeID"] == node)
            assert self.held[node] <= declared, f"node {node} oversubscribed"
        ref = len(self.tasks)
        self.tasks[ref] = {"function": function, "node": node, "num_cpus": cpus, "args": args,
                           "num_gpus": options.get("num_gpus", 0)}
        self.most_in_flight = max(self.most_in_flight, sum(1 for c in self.held.values() if c))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        return ref

    def wait(self, refs: list[int], num_returns: int) -> tuple[list[int], list[int]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: Any, timeout: float | None = None) -> Any:
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        task = self.tasks[ref]
        self.held[task["node"]] -= task["num_cpus"]
        self.running -= 1
        if task["function"] is executors._ray_env_id:
            return f"env-{task['num_cpus']:g}"
        spec = Spec.from_dict(task["args"][0])
        if spec.label() in self.fail:
            for node in self._nodes:
                if node["NodeID"] == task["node"]:
                    node["Alive"] = False
            raise self.exceptions.RayError(f"node {task['node']} died")
        where = {"node_id": task["node"], "declared_cpus": task["args"][3]}
        record = failure(spec, Status.OK, "scripted").replace(
            status=Status.OK, error=None, backend_info={"placement": where})
        return record.to_dict()

    def cancel(self, ref: Any, force: bool = False) -> None:
        pass

    def shutdown(self) -> None:
        pass


class _Hooks:
    def __init__(self) -> None:
        self.labels: list[str] = []

    def started(self, spec: Spec) -> None:
        self.labels.append(spec.label())

    def sampling_target(self, spec: Spec) -> float | None:
        return None


def _executor(monkeypatch: pytest.MonkeyPatch, fake: _FakeRay, workers: int | None = None
              ) -> RayExecutor:
    monkeypatch.setattr(executors, "_import_ray", lambda: fake)
    monkeypatch.setattr(executors, "_on_node", lambda node_id: node_id)
    return RayExecutor(60.0, None, workers)


def _specs(n: int) -> list[Spec]:
    return [Spec("mobilenet_v3_small", "tensorflow", "graph", 32, repeat=i) for i in range(n)]


def _run(executor: RayExecutor, specs: list[Spec]) -> list[Record]:
    return [done.record for done in executor.run(specs, _Hooks())]


def test_each_cpu_task_owns_a_node(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeRay([_node("head", 0), _node("a", 8, ip="10.0.0.2"),
                     _node("b", 4, ip="10.0.0.3"), _node("gone", 8, alive=False)])
    executor = _executor(monkeypatch, fake)
    assert executor.workers == 2  # one per alive node with CPUs
    assert executor.env_ids() == ["env-4", "env-8"]  # each probe shaped like its node's tasks
    records = _run(executor, _specs(5))
    assert len(records) == 5 and all(r.ok for r in records)
    tasks = [t for t in fake.tasks.values() if t["function"] is executors._ray_run]
    # every task asks for all its node's CPUs, and tells the worker how many that is
    assert {(t["node"], t["num_cpus"], t["args"][3]) for t in tasks} == {("a", 8, 8),
                                                                         ("b", 4, 4)}
    assert fake.most_in_flight == 2  # (and _FakeRay.submit checked no node held two)
    assert all(r.beside == () for r in records)  # different hosts: nothing beside


def test_workers_cap_the_nodes_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeRay([_node("a", 2), _node("b", 2), _node("c", 2)])
    executor = _executor(monkeypatch, fake, workers=1)
    assert executor.workers == 1
    assert len(_run(executor, _specs(3))) == 3
    assert fake.most_in_flight == 1
    assert _executor(monkeypatch, _FakeRay([_node("a", 2)]), workers=4).workers == 1


def test_nodes_on_one_host_record_each_other_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeRay([_node("a", 1, ip="10.0.0.9"), _node("b", 1, ip="10.0.0.9")])
    records = _run(_executor(monkeypatch, fake), _specs(2))
    labels = {r.spec.label() for r in records}
    for record in records:  # both dispatched before either came back: they overlapped
        assert record.beside == tuple(labels - {record.spec.label()})


def test_a_dead_node_is_not_used_again(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _specs(4)
    fake = _FakeRay([_node("a", 2), _node("b", 2)], fail={specs[0].label()})
    records = _run(_executor(monkeypatch, fake), specs)
    assert [r.status for r in records] == [Status.CRASHED] + [Status.OK] * 3
    assert records[0].backend_info["placement"]["node_id"] == "a"  # where it was sent
    later = [t["node"] for t in fake.tasks.values() if t["function"] is executors._ray_run][2:]
    assert later == ["b", "b"]


def test_gpu_clusters_keep_one_gpu_per_task(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeRay([_node("head", 0), _node("g1", 16, gpus=2), _node("g2", 16, gpus=2),
                     _node("cpu", 8)])
    executor = _executor(monkeypatch, fake)
    assert executor.workers == 4 and executor.nodes == []
    executor.env_ids()
    probed = [t["node"] for t in fake.tasks.values() if t["function"] is executors._ray_env_id]
    assert probed == ["g1", "g2"]  # the nodes that run GPU tasks
    assert len(_run(executor, _specs(6))) == 6
    tasks = [t for t in fake.tasks.values() if t["function"] is executors._ray_run]
    assert {(t["node"], t["num_cpus"], t["num_gpus"], t["args"][3]) for t in tasks} == {
        ("any", 1, 1, None)}  # Ray picks the node; the worker is not pinned
    assert fake.most_running == 4  # one per GPU


def test_no_cpu_node_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="no alive node with a CPU"):
        _executor(monkeypatch, _FakeRay([_node("head", 0), _node("x", 4, alive=False)]))


# ----------------------------------------------------------- a real two-node local cluster
@pytest.fixture
def two_nodes() -> Iterator[LocalRayCluster]:
    pytest.importorskip("ray")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 or shutil.which("taskset") is None:
        pytest.skip("needs two CPUs and taskset")
    with LocalRayCluster([(cpus[0],), (cpus[1],)]) as cluster:
        yield cluster


@pytest.mark.slow
@pytest.mark.ray
def test_cpu_tasks_own_their_node_on_a_real_cluster(two_nodes: LocalRayCluster,
                                                    tmp_path: Path) -> None:
    """Two configurations, two processes each, on two one-core nodes: every worker pinned to
    its node's core, one task per node at a time."""
    db, config = tmp_path / "r.db", tmp_path / "sweep.toml"
    config.write_text(sweep_toml(db, ["tensorflow"], ["graph", "eager"], executor="ray",
                                 ray_address=two_nodes.address, processes=2, max_processes=2,
                                 rerun_flagged=0))
    seed_costs(db)
    done = subprocess.run(
        [sys.executable, "-m", "xlabench.cli.main", "sweep", "--config", str(config)],
        cwd=tmp_path, env=two_nodes.driver_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with ResultStore(db) as store:
        records = store.records()
    assert len(records) == 4, done.stdout + done.stderr
    assert all(r.ok for r in records), [(r.spec.label(), r.error) for r in records]

    by_node: dict[str, list[Record]] = {}
    for record in records:
        where = record.backend_info["placement"]
        core = two_nodes.node_cpus[where["node_id"]]
        by_node.setdefault(where["node_id"], []).append(record)
        assert where["executor"] == "ray" and where["owns_node"] is True
        assert where["declared_cpus"] == 1
        assert tuple(where["cpus"]) == core  # pinned to its node's core...
        if record.interference is not None:  # None: a timed phase too short to read /proc
            assert record.interference.cpus == core  # ...as the worker itself saw
        assert record.env["cpu_threads"] == 1
        assert where["threads"]["OMP_NUM_THREADS"] == "1"
        assert where["threads"]["TF_NUM_INTRAOP_THREADS"] == "1"
        assert record.env["flags"]["OMP_NUM_THREADS"] == "1"
    assert set(by_node) == set(two_nodes.node_cpus)  # both nodes used
    cpu_sets = {tuple(r.backend_info["placement"]["cpus"]) for r in records}
    assert len(cpu_sets) == 2  # the two nodes' workers never shared a core
    for node_records in by_node.values():  # one task per node at a time
        spans = sorted((r.backend_info["placement"]["started_unix"],
                        r.backend_info["placement"]["ended_unix"]) for r in node_records)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    # the probe asked for what the tasks asked for, so resume compares the same id
    env_ids = {r.env_id for r in records}
    assert len(env_ids) == 1 and f"(environment {env_ids.pop()})" in done.stdout + done.stderr
