"""One real run per spec for the whole test run.

Several worker tests check different things of the same run (test_modes checks every backend
and mode; test_runtimes, test_iree and test_executorch check what each runtime records), and a
real run of an exporting runtime costs a minute or more on 2 cores. `measured(spec)` runs a
spec once and hands its record to every test that asks for the same spec, across the xdist
workers too: the first one runs it under a lock, the others wait and read its record.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Callable, Iterator

import pytest

from xlabench.core import Record, Spec
from xlabench.runner import run_isolated


@pytest.fixture(scope="session")
def measured(tmp_path_factory: pytest.TempPathFactory,
             worker_id: str) -> Iterator[Callable[[Spec], Record]]:
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a folder of the run's own, which all workers share
    shared = (base if worker_id == "master" else base.parent) / "measured-records"
    shared.mkdir(exist_ok=True)

    def measure(spec: Spec, timeout_s: float = 900) -> Record:
        key = hashlib.sha256(json.dumps(spec.to_dict(), sort_keys=True).encode()).hexdigest()
        path = shared / f"{key[:20]}.json"
        with open(shared / f"{key[:20]}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if path.exists():
                return Record.from_json(path.read_text())
            record = run_isolated(spec, timeout_s=timeout_s)
            path.write_text(record.to_json())
            return record

    yield measure
