"""Helpers for sweep tests: tiny real configurations, sweep files, reading W&B offline runs."""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from xlabench.core import Record, Spec, Status
from xlabench.core.record import Interference
from xlabench.store import ResultStore
from xlabench.sweep.executors import Finished, Hooks
from xlabench.zoo import REGISTRY

#: The tiny measurement every real sweep test uses (seconds per worker, not minutes).
QUICK_MEASURE = {
    "min_sample_s": 0.02, "budget_s": 1.0, "warmup_min_s": 0.1, "warmup_max_s": 2.0,
    "latency_steps": 3, "min_samples": 3,
}
#: mobilenet_v3_small at 32, as counted by the JAX cost counter (pinned so tests skip counting).
MOBILENET_COSTS = {"params": 2_554_968, "macs_per_image": 1.2e6, "flops_per_image": 2.4e6,
                   "method": "seeded by the test"}
ENV = "env-test"


def sweep_toml(db: Path, backends: list[str], modes: list[str], **extra: Any) -> str:
    """A sweep file for mobilenet_v3_small at 32, batch 1, on the given backends/modes."""
    lines = [
        'models = ["mobilenet_v3_small"]', "resolutions = [32]", "batch_sizes = [1]",
        f"backends = {backends!r}".replace("'", '"'), f"modes = {modes!r}".replace("'", '"'),
        f'db = "{db}"', "timeout = 300",
    ]
    lines += [f"{k} = {v!r}".replace("'", '"').replace("True", "true").replace("False", "false")
              for k, v in extra.items()]
    lines.append("[measure]")
    lines += [f"{k} = {v}" for k, v in QUICK_MEASURE.items()]
    return "\n".join(lines) + "\n"


def seed_costs(db: Path, model: str = "mobilenet_v3_small", resolution: int = 32) -> None:
    """Put the model's costs in the store so no worker spends time counting them."""
    with ResultStore(db) as store:
        store.put_costs(model, resolution, MOBILENET_COSTS)


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")


def wandb_records(run_file: Path) -> Iterator[Any]:
    """Protobuf records of an offline W&B run file (`run-*.wandb`, a LevelDB-style log).

    The format: a 7-byte file header, then 32 KiB blocks of chunks, each with a 7-byte header
    (crc32, length, type: 1 full, 2 first, 3 middle, 4 last); a record never starts in the
    last 6 bytes of a block.
    """
    from wandb.proto import wandb_internal_pb2

    data, block, pos, pending = run_file.read_bytes(), 32768, 7, b""
    assert data[:4] == b":W&B", f"not a W&B run file: {run_file}"
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def wandb_run(run_file: Path) -> dict[str, Any]:
    """Name, config and last logged metrics of an offline W&B run."""
    import json

    found: dict[str, Any] = {"name": None, "config": {}, "metrics": {}}
    for record in wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            found["name"] = record.run.display_name
            found["config"].update(
                {i.key: json.loads(i.value_json) for i in record.run.config.update}
            )
        elif kind == "history":
            found["metrics"].update(
                {i.nested_key[0] if i.nested_key else i.key: json.loads(i.value_json)
                 for i in record.history.item}
            )
    return found


def process_env_has(marker: str) -> list[int]:
    """Pids of live processes (of this user) whose environment contains `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            pids.append(int(entry.name))
    return pids


#: (spec, how many processes of it ran before) -> (throughput, share of its CPUs others used)
Script = Callable[[Spec, int], tuple[float, float]]


class ScriptedExecutor:
    """Returns a record per spec at once; `fail` maps model -> status to return instead;
    `script` gives each process its throughput and interference (default 100 samples/s, quiet).
    `asked` keeps the label of each process, `targets` the sampling target the scheduler set
    for it (None: the spec's own). `params_only`: its records carry params and no MACs/FLOPs,
    as a real worker's do (the sweep attaches the store's); else the factory's whole costs."""

    def __init__(self, record_factory, fail: dict[str, Status] | None = None,
                 script: Script | None = None, params_only: bool = False) -> None:
        self.make = record_factory
        self.fail = fail or {}
        self.params_only = params_only
        self.script = script or (lambda spec, n: (100.0, 0.0))
        self.workers = 1
        self.asked: list[str] = []
        self.targets: list[float | None] = []
        self._count: dict[str, int] = {}

    def env_ids(self) -> list[str]:
        return [ENV]

    def run(self, specs: Iterable[Spec], hooks: Hooks) -> Iterator[Finished]:
        for spec in specs:
            self.targets.append(hooks.sampling_target(spec))
            hooks.started(spec)
            self.asked.append(spec.label())
            yield Finished(spec, self._record(spec))

    def _record(self, spec: Spec) -> Record:
        entry = REGISTRY.get(spec.model)
        status = self.fail.get(spec.model, Status.OK)
        n = self._count.get(spec.spec_id(), 0)
        self._count[spec.spec_id()] = n + 1
        throughput, other = self.script(spec, n)
        base = self.make(model=spec.model, backend=spec.backend, mode=spec.mode,
                         resolution=spec.resolution, family=entry.family, kind=entry.kind,
                         status=status, batch_size=spec.batch_size, repeat=spec.repeat,
                         measure=spec.measure, throughput=throughput)
        costs = type(base.costs)(params=base.costs.params) if self.params_only else base.costs
        figures = Interference(wall_s=3.0, cpus=(0, 1), busy_frac=1.0, own_frac=1.0 - other,
                               other_frac=other, steal_frac=0.0)
        return base.replace(spec=spec, env_id=ENV, duration_s=2.0, costs=costs,
                            interference=figures if status is Status.OK else None)

    def close(self) -> None:
        pass


def ok_rows(db: Path) -> int:
    """Successful rows so far, read without taking part in the writer's transactions."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM results WHERE status = 'ok'").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is being created
        return 0
    finally:
        conn.close()
