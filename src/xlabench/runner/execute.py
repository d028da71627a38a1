"""Run a spec with its model costs attached, and store the result; measure the device's peak
once per environment."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xlabench.core import Costs, Record, Spec
from xlabench.measure.peak import MatmulPeak
from xlabench.runner.isolate import (
    DEFAULT_TIMEOUT_S,
    LOCAL,
    Placement,
    current_env_id,
    run_isolated,
)
from xlabench.store import ResultStore

COSTS_TIMEOUT_S = 900.0
#: The peak (every installed GEMM library, fp32 and bf16) takes 20-30 s on 2 cores; two
#: minutes means something is wrong (a loaded machine).
PEAK_TIMEOUT_S = 120.0
#: Extra arguments of the peak process (`python -m xlabench.measure.peak --help`) where none
#: are passed: the test suite makes it small (`tests/conftest.py`); a peak so measured is
#: stored like any other, so never set it where results count.
PEAK_ARGS_ENV = "XLABENCH_PEAK_ARGS"


def compute_costs(spec: Spec, timeout_s: float = COSTS_TIMEOUT_S) -> dict[str, Any]:
    """Params, MACs and FLOPs per image of the spec's model at its resolution, in a fresh JAX
    worker (the counter needs a jaxpr).

    Returns a dict whose `method` says why the counts are missing if they could not be made.
    """
    with tempfile.TemporaryDirectory(prefix="xlabench-costs-") as tmp:
        out, spec_path = Path(tmp) / "costs.json", Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec.to_dict()))
        command = [sys.executable, "-m", "xlabench.runner.worker", "--costs-only",
                   str(spec_path), str(out)]
        env = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "2"}
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"method": f"unavailable: cost counting timed out after {timeout_s:g} s"}
        if done.returncode != 0 or not out.exists():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return {"method": f"unavailable: {last[:200]}"}
        return json.loads(out.read_text())


def with_costs(record: Record, costs: dict[str, Any] | None) -> Record:
    """The record with MACs/FLOPs filled in from `costs`, keeping its own measured params."""
    if not costs or record.costs.macs_per_image is not None:
        return record
    merged = Costs(
        params=record.costs.params if record.costs.params is not None else costs.get("params"),
        macs_per_image=costs.get("macs_per_image"),
        flops_per_image=costs.get("flops_per_image"),
        method=costs.get("method", ""),
    )
    return record.replace(costs=merged)


def run_with_costs(
    spec: Spec, timeout_s: float, want_costs: bool, placement: Placement = LOCAL
) -> Record:
    """Run `spec` in a worker; if asked, count the model's costs (in the worker on JAX, else in
    a separate JAX worker), so a remote executor can do the whole job on its node."""
    on_jax = spec.backend == "jax"
    record = run_isolated(spec, timeout_s, want_costs=want_costs and on_jax, placement=placement)
    if want_costs and record.ok and record.costs.macs_per_image is None:
        record = with_costs(record, compute_costs(spec))
    return record


def execute(
    spec: Spec,
    store: ResultStore,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    placement: Placement = LOCAL,
    sweep_id: str | None = None,
) -> Record:
    """Run one spec locally, attach cached or fresh costs, store the record, return it.

    The device peak is not measured here: `run` and `sweep` measure it once per environment
    (`sweep.run.measure_local_peaks`); one record alone does not need it."""
    cached = store.get_costs(spec.model, spec.resolution)
    record = run_with_costs(spec, timeout_s, want_costs=cached is None, placement=placement)
    record = with_costs(record, cached)
    remember_costs(store, record, cached)
    store.save(record, sweep_id)
    return record


def remember_costs(store: ResultStore, record: Record, cached: dict[str, Any] | None) -> None:
    if cached is None and record.costs.macs_per_image is not None:
        costs = record.costs
        store.put_costs(record.spec.model, record.spec.resolution, {
            "params": costs.params, "macs_per_image": costs.macs_per_image,
            "flops_per_image": costs.flops_per_image, "method": costs.method,
        })


def measure_peaks_isolated(
    timeout_s: float = PEAK_TIMEOUT_S, worker_args: tuple[str, ...] = ()
) -> tuple[dict[str, MatmulPeak], str]:
    """The device's matmul peaks, measured in a fresh process with the default threads.

    Returns:
        The peaks by dtype ({} if they could not be measured) and why not ("" if measured).
    """
    worker_args = worker_args or tuple(shlex.split(os.environ.get(PEAK_ARGS_ENV, "")))
    with tempfile.TemporaryDirectory(prefix="xlabench-peak-") as tmp:
        out = Path(tmp) / "peaks.json"
        command = [sys.executable, "-m", "xlabench.measure.peak", str(out), *worker_args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {}, f"peak measurement timed out after {timeout_s:g} s"
        if done.returncode != 0 or not out.exists():
            return {}, (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        peaks = [MatmulPeak.from_dict(p) for p in json.loads(out.read_text())]
    return {p.dtype: p for p in peaks}, ""


def ensure_peaks(
    store: ResultStore, env_id: str | None = None, timeout_s: float = PEAK_TIMEOUT_S,
    worker_args: tuple[str, ...] = (), note: Callable[[str], None] | None = None,
) -> dict[str, MatmulPeak]:
    """The stored peaks of this machine's environment, measured and stored first if absent.

    Once per environment: every record of it is read against the same peak, and a resumed or
    second sweep does not measure again. A failed measurement stores nothing (the next run
    tries again) and never stops a benchmark; `note` gets one line saying why.
    """
    env_id = env_id or current_env_id()
    stored = store.get_peaks(env_id)
    if stored:
        return {dtype: MatmulPeak.from_dict(p) for dtype, p in stored.items()}
    peaks, why = measure_peaks_isolated(timeout_s, worker_args)
    if peaks:
        store.put_peaks(env_id, [p.to_dict() for p in peaks.values()])
    elif note is not None:
        note(f"device peak not measured ({why}); CPU rows get no % of peak")
    return peaks
