"""The worker: one configuration, one fresh process, always a record.

    python -m xlabench.runner.worker JOB.json RECORD.json
    python -m xlabench.runner.worker --costs-only JOB.json OUT.json

JOB.json is a `runner.isolate.WorkerJob`: the spec and this process's run-time settings.

The backend is chosen (KERAS_BACKEND and the backend's own variables) before Keras is imported.
Any exception becomes a record with a status and a one-line reason; only a kill or a crash of
the interpreter leaves no record, and the parent turns that into one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from typing import Any

from xlabench import backends
from xlabench.backends.base import Runner, is_oom, seed_all
from xlabench.core import (
    Costs,
    MeasureSettings,
    Memory,
    Record,
    Spec,
    Status,
    UserError,
    Warmup,
    failure,
    utc_now,
)
from xlabench.core.backends import COST_BACKEND, model_precision
from xlabench.measure import env as envinfo
from xlabench.measure import interference, probe, stats, summarize, timing
from xlabench.measure import parity as paritylib
from xlabench.measure.turns import Turns, TurnsEndedError, no_turns
from xlabench.runner import native, scenario_run
from xlabench.runner.isolate import WorkerJob
from xlabench.zoo import build_for, entry_for

DTYPE_POLICY = {"fp32": "float32", "bf16": "bfloat16", "mixed": "mixed_bfloat16"}
#: Fault injection for the isolation tests: real crashes and hangs of a real worker, after
#: the model is built. Values: segfault, hang, exit (os._exit), sysexit (sys.exit in the
#: measured code), memoryerror, sigkill (as the OOM killer or a user would end it),
#: badrecord (a record file the parent cannot parse); costs (only the cost count fails, in
#: `--costs-only`); slow-sut:MS (a LoadGen scenario's every query batch sleeps MS ms more).
FAULT_ENV = "XLABENCH_INJECT_FAULT"


class NonFiniteOutputError(Exception):
    """The model produced NaN or inf: never report such a run as fast."""


def prepare_process(spec: Spec, scratch: str) -> None:
    """Choose the framework before anything imports Keras."""
    backend = backends.load(spec.backend)
    os.environ["KERAS_BACKEND"] = spec.backend
    for name, value in backend.environment(spec, dict(os.environ), scratch).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def run_spec(spec: Spec, sampling_target_rel_ci: float | None = None,
             scratch: str | None = None, check_parity: bool = True,
             turns: Turns | None = None) -> Record:
    """Measure `spec` in this process (sampling to the relaxed target if one is given, see
    `WorkerJob`; `scratch`: the worker's own directory, for LoadGen's logs; `turns`: taking
    turns with another worker, `measure.turns`). Never raises: failures come back as records
    (an ended pair, TurnsEndedError, aside: nobody reads the record then)."""
    turns = turns or no_turns()
    fingerprint = envinfo.static_fingerprint()
    started, start = utc_now(), time.perf_counter()
    entry_fields: dict[str, Any] = {}
    try:
        entry = entry_for(spec)
        entry_fields = {"family": entry.family, "kind": entry.kind}
        problem = entry.unsupported_reason(spec.backend) or backends.missing_framework(spec.backend)
        if problem:
            return failure(spec, Status.UNSUPPORTED, problem, **entry_fields)
        scenario_run.require_loadgen(spec)
        record = _measure(spec, entry, sampling_settings(spec, sampling_target_rel_ci), scratch,
                          check_parity, turns)
    except TurnsEndedError:
        raise
    except UserError as exc:
        record = failure(spec, Status.FAILED, str(exc), **entry_fields)
    except NonFiniteOutputError as exc:
        record = failure(spec, Status.FAILED, str(exc), **entry_fields)
    except SystemExit as exc:  # a library (or an own model's factory) exiting: still a record
        record = failure(spec, Status.FAILED, f"sys.exit({exc.code!r}) called while measuring",
                         traceback.format_exc(limit=20), **entry_fields)
    except Exception as exc:  # noqa: BLE001 (failure is data)
        status = Status.OOM if is_oom(exc) else Status.FAILED
        record = failure(spec, status, f"{type(exc).__name__}: {exc}",
                         traceback.format_exc(limit=20), **entry_fields)
    env = {**fingerprint, "runtime": record.env.get("runtime", {})}
    memory = record.memory if record.ok else Memory(peak_host_mb=_peak_rss_mb())
    if turns.active:  # the record says it took turns, and how long it waited for them
        record = record.replace(backend_info={**record.backend_info, "turns": turns.summary()})
    return record.replace(env=env, started_at=started, memory=memory,
                          duration_s=time.perf_counter() - start)


def _measure(spec: Spec, entry: Any, settings: MeasureSettings, scratch: str | None = None,
             check_parity: bool = True, turns: Turns | None = None) -> Record:
    backend = backends.load(spec.backend)
    import keras

    # A runtime converts the fp32 model and executes spec.precision itself (core/backends.py).
    keras.config.set_dtype_policy(DTYPE_POLICY[model_precision(spec.backend, spec.precision)])
    seed_all(spec.seed, spec.backend)
    runtime = backend.setup(spec)
    host_before = _current_rss_mb()
    with getattr(backend, "build_context", _no_context)(spec.seed):
        model = build_for(spec, entry)
    if spec.own_model:
        _check_compute_dtype(spec, model)
    _inject_fault(os.environ.get(FAULT_ENV, ""))
    x = backend.make_input(spec)
    if spec.runner == "native":  # xlabench-native times the exported artifact
        record = native.measure(spec, entry, backend, model, x, runtime, settings)
        return record.replace(costs=Costs(params=int(model.count_params())))
    if spec.scenario:  # MLPerf's LoadGen issues the queries
        record = scenario_run.measure(
            spec, backend, model, x,
            lambda out: _parity(spec, backend, model, x, _finite_outputs(backend.to_numpy(out),
                                                                         spec)),
            scratch, os.environ.get(FAULT_ENV, ""))
        memory = dataclasses.replace(record.memory, peak_host_mb=_peak_rss_mb(),
                                     host_mb_before_build=host_before)
        return record.replace(family=entry.family, kind=entry.kind, env={"runtime": runtime},
                              costs=Costs(params=int(model.count_params())), memory=memory)
    runner = backend.make_runner(model, spec.mode, x)
    first_s, out = timing.time_call(runner.step, backend.sync)
    outputs = _finite_outputs(backend.to_numpy(out), spec)
    parity = _parity(spec, backend, model, x, outputs) if check_parity else None
    if not check_parity:
        runner.info["parity"] = "not checked in this process (checked in its side's first)"
    del out
    timed = _time_runner(spec, backend, runner, settings, turns or no_turns())
    runner.finish()
    costs = Costs(params=int(model.count_params()))  # MACs/FLOPs: `costs_only`, once per model
    steady_s = timed["throughput"].batch_time_ms_median / 1000.0
    warmup = Warmup(
        first_call_s=first_s,
        compile_s=max(0.0, first_s - steady_s),
        steps=timed["warmup"].steps,
        seconds=timed["warmup"].seconds,
        compile_stages_s=runner.info.pop("compile_stages_s", {}),
    )
    memory = Memory(peak_host_mb=_peak_rss_mb(), host_mb_before_build=host_before,
                    peak_device_mb=backend.peak_device_memory_mb())
    return Record(
        spec=spec, status=Status.OK, family=entry.family, kind=entry.kind,
        throughput=timed["throughput"], latency=timed["latency"], warmup=warmup,
        parity=parity, costs=costs, memory=memory, env={"runtime": runtime},
        backend_info={**runner.info, "warmup_steady": timed["warmup"].steady},
        sync=backend.SYNC, interference=timed["interference"],
        probe_before=timed["probe_before"], probe_after=timed["probe_after"],
    )


#: The compute dtype each precision asks of the model's layers.
COMPUTE_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "mixed": "bfloat16"}


def _check_compute_dtype(spec: Spec, model: Any) -> None:
    """A saved model keeps the dtype policy it was saved with, whatever the global policy
    says: never time a float32 model under a bf16 label (the layers that hold weights say
    what is computed)."""
    wanted = COMPUTE_DTYPE[model_precision(spec.backend, spec.precision)]
    computing = {layer.compute_dtype for layer in model._flatten_layers(include_self=False)
                 if layer.weights}
    have = next(iter(computing - {wanted}), None)
    if have is not None:
        raise UserError(f"{spec.model} computes in {have}, not {wanted} ({spec.precision}): a "
                        "saved model keeps the dtype it was saved with; for another precision "
                        "pass a factory that builds it under the dtype policy")


def sampling_settings(spec: Spec, relaxed_target: float | None) -> MeasureSettings:
    """The spec's measure settings, with the sampling target the scheduler may have relaxed for
    this process (`WorkerJob`): once the between-process spread is known, sampling one process
    far below it buys nothing. The spec, and so its id, is unchanged."""
    if not relaxed_target:
        return spec.measure
    target = min(0.5, max(spec.measure.target_rel_ci, relaxed_target))
    return dataclasses.replace(spec.measure, target_rel_ci=target)


@contextlib.contextmanager
def _no_context(seed: int) -> Iterator[None]:
    yield


def _inject_fault(fault: str) -> None:
    if fault == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "hang":
        while True:
            time.sleep(60)
    elif fault == "exit":
        os._exit(3)
    elif fault == "sysexit":
        sys.exit(4)
    elif fault == "memoryerror":
        raise MemoryError("injected: out of host memory")
    elif fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)


def _time_runner(spec: Spec, backend: Any, runner: Runner, settings: MeasureSettings,
                 turns: Turns) -> dict[str, Any]:
    """Warm-up, calibration, samples, latency: the method of measure.timing, in order.

    What else used this worker's CPUs is measured over the timed phases (calibration, samples,
    latency), the part of the run whose numbers are reported, and of those only the stretches
    this process held the machine when it takes turns with another (`measure.turns`); the
    machine's speed (the probe) just before and just after them, outside their clocks.
    """
    warm = timing.warm_up(runner.step, backend.sync, settings)
    step_s = stats.median(warm.step_s[-3:])
    probe_before = probe.run_probe()
    turns.open_windows()
    steps = timing.calibrate(runner.step, backend.sync, settings, step_s)
    samples = timing.collect_samples(runner.step, backend.sync, settings, steps, turns=turns)
    turns.take()
    latency_s = timing.time_latency(
        runner.step, backend.sync, settings.latency_steps, budget_s=settings.latency_budget_s
    )
    used = interference.over(turns.close_windows())
    return {
        "interference": used, "probe_before": probe_before, "probe_after": probe.run_probe(),
        "warmup": warm,
        "throughput": summarize.throughput_stats(
            spec.batch_size, samples.steps_per_sample, samples.sample_s, samples.target_met
        ),
        "latency": summarize.latency_stats(latency_s),
    }


def _finite_outputs(output: Any, spec: Spec) -> list[Any]:
    arrays = paritylib.flatten_outputs(output)
    bad = paritylib.non_finite_count(arrays)
    if bad:
        raise NonFiniteOutputError(
            f"{spec.model} produced {bad} NaN/inf output values in {spec.mode}"
        )
    return arrays


def _parity(spec: Spec, backend: Any, model: Any, x: Any, outputs: list[Any]) -> Any:
    """Compare this mode's output with the eager output of the same backend, same input."""
    if spec.mode == spec.baseline_mode:
        return None
    return paritylib.against_reference(outputs, backend, model, spec.baseline_mode, x,
                                       paritylib.rtol_for(spec.precision, spec.tf32))


def costs_only(spec: Spec) -> dict[str, Any]:
    """Params, MACs and FLOPs per image of a spec's model at its resolution (JAX backend,
    batch 1, float32: they depend on the model and the resolution only)."""
    from xlabench.backends import jax as jax_backend

    if os.environ.get(FAULT_ENV) == "costs":
        raise RuntimeError("injected: the cost count failed")
    spec = dataclasses.replace(spec, backend=COST_BACKEND, mode="eager", precision="fp32",
                               weights="random", runner="python")
    seed_all(0, COST_BACKEND)
    with jax_backend.build_context(0):
        model = build_for(spec, entry_for(spec))
    return {"params": int(model.count_params()),
            **jax_backend.count_costs(model, spec.resolution, spec.channels)}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _current_rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def write_json_atomic(path: str, text: str) -> None:
    """Write-then-rename, so the parent never reads half a record."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def read_job(path: str) -> WorkerJob:
    with open(path, encoding="utf-8") as handle:
        return WorkerJob.from_json(handle.read())


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--costs-only":
        job = read_job(argv[1])
        os.environ["KERAS_BACKEND"] = COST_BACKEND
        write_json_atomic(argv[2], json.dumps(costs_only(job.spec)))
        return 0
    job, record_path = read_job(argv[0]), argv[1]
    turns = Turns.from_env()
    scratch = tempfile.mkdtemp(prefix="xlabench-worker-")
    try:
        # A worker taking turns (`xlabench ab`) holds the machine from here: building and
        # compiling are its own, and never overlap the other side's samples.
        turns.take()
        prepare_process(job.spec, scratch)
        record = run_spec(job.spec, job.sampling_target_rel_ci, scratch, job.check_parity,
                          turns)
        bad = os.environ.get(FAULT_ENV) == "badrecord"
        write_json_atomic(record_path, "{half a record" if bad else record.to_json())
    except TurnsEndedError as exc:
        print(f"xlabench worker: {exc}", file=sys.stderr)
        return 3
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
