"""A model's costs (params, MACs, FLOPs per image), counted once per model and resolution and
kept in the store: a step of its own before the benchmarks, never part of a timed worker.

They depend on the model (an own model's name carries its identity, and with it its input's
channels) and the resolution only, so one JAX trace per pair serves every backend, mode,
batch size and precision. A count that fails is stored as data (no MACs, `method` says why),
attached to the records like counted costs, and tried again by the next run; it never costs
a result.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from xlabench.core import Costs, Record, Spec, one_line
from xlabench.core.backends import COST_BACKEND
from xlabench.core.child import run_child
from xlabench.runner.isolate import WorkerJob
from xlabench.store import ResultStore

COSTS_TIMEOUT_S = 900.0
CostKey = tuple[str, int]
#: Counts one spec's model costs: `count_costs`, or a stand-in in tests.
CostCounter = Callable[[Spec], dict[str, Any]]


def cost_key(spec: Spec) -> CostKey:
    return spec.model, spec.resolution


def count_costs(spec: Spec, timeout_s: float = COSTS_TIMEOUT_S) -> dict[str, Any]:
    """Params, MACs and FLOPs per image of the spec's model at its resolution, in a fresh JAX
    worker (the counter needs a jaxpr).

    Returns a dict whose `method` says why the counts are missing if they could not be made.
    """
    with tempfile.TemporaryDirectory(prefix="xlabench-costs-") as tmp:
        out, job_path = Path(tmp) / "costs.json", Path(tmp) / "job.json"
        job_path.write_text(WorkerJob(spec).to_json())
        command = [sys.executable, "-m", "xlabench.runner.worker", "--costs-only",
                   str(job_path), str(out)]
        env = {**os.environ, "KERAS_BACKEND": COST_BACKEND, "TF_CPP_MIN_LOG_LEVEL": "2"}
        try:
            done = run_child(command, timeout_s, env=env, keep_chars=4000)
        except OSError as exc:
            return {"method": one_line(f"unavailable: cannot start the cost count: {exc}")}
        if done.timed_out:
            return {"method": f"unavailable: cost counting timed out after {timeout_s:g} s"}
        if not done.ok or not out.exists():
            return {"method": f"unavailable: {done.last_line()[:200]}"}
        return dict(json.loads(out.read_text()))


def counted(costs: dict[str, Any] | None) -> bool:
    """Whether a stored cost row holds counts (not a failed count's reason)."""
    return costs is not None and costs.get("macs_per_image") is not None


def ensure_costs(
    store: ResultStore, specs: Iterable[Spec], note: Callable[[str], None] | None = None,
    counter: CostCounter = count_costs,
) -> None:
    """Count and store the costs of every (model, resolution) of `specs` that the store has
    no counts for (never counted, or a count that failed before), one at a time, each in its
    own process. A failed count is stored with its reason; `note` gets one line about it."""
    missing: dict[CostKey, Spec] = {}
    for spec in specs:
        key = cost_key(spec)
        if key not in missing and not counted(store.get_costs(*key)):
            missing[key] = spec
    if missing and note is not None:
        note(f"counting MACs/FLOPs: {len(missing)} model(s) at a resolution, once each, in "
             "a process of their own")
    for (model, resolution), spec in missing.items():
        costs = counter(spec)
        store.put_costs(model, resolution, costs)
        if not counted(costs) and note is not None:
            note(f"{model}@{resolution}: MACs/FLOPs not counted "
                 f"({costs.get('method', 'no reason')}); its records are kept without them")


def with_costs(record: Record, costs: dict[str, Any] | None) -> Record:
    """The record with its model's stored costs (`store.get_costs`) filled in, keeping its
    own measured params; a failed count's reason goes in as the costs' `method`."""
    if not costs or record.costs.macs_per_image is not None:
        return record
    merged = Costs(
        params=record.costs.params if record.costs.params is not None else costs.get("params"),
        macs_per_image=costs.get("macs_per_image"),
        flops_per_image=costs.get("flops_per_image"),
        method=costs.get("method") or "",
    )
    return record.replace(costs=merged)
