"""The native runner: the worker exports the compiled artifact and `xlabench-native` times it.

The worker keeps everything but the timed loop: it builds the model, has its backend module
export the artifact (`export_native`) into its scratch directory (export times become compile
stages), writes the input and the Keras eager reference output, starts the C++ program under a
deadline, reads its JSON, checks parity and returns an ordinary Record (`spec.runner ==
"native"`). No statistic is computed here that the C++ side already computed: the samples come
from its JSON and go through measure/summarize.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xlabench.backends.base import ConversionError
from xlabench.core import (
    MeasureSettings,
    Memory,
    Record,
    Spec,
    Status,
    UserError,
    Warmup,
    failure,
)
from xlabench.core.backends import NATIVE_BY_NAME
from xlabench.core.child import run_child
from xlabench.measure import interference, probe, summarize
from xlabench.measure import parity as paritylib

#: Overrides where the binary is looked up (default: build/native/ of this checkout, then PATH).
BINARY_ENV = "XLABENCH_NATIVE"
PROGRAM = "xlabench-native"
SCHEMA_VERSION = 1
#: Fault injection for the tests: damage the exported artifact before xlabench-native reads it.
#: Values: missing (no model files), corrupt (garbage model file), unknown-runtime.
FAULT_ENV = "XLABENCH_NATIVE_FAULT"
#: The harness self-check (bench/native_overhead.py): this many rounds of one library sample
#: and one block timed from outside the C++ timing library; the record keeps both.
SELF_CHECK_ENV = "XLABENCH_NATIVE_SELF_CHECK"
#: Loading and compiling before the method starts, on top of the method's own budgets.
LOAD_ALLOWANCE_S = 600.0

class NativeError(Exception):
    """xlabench-native failed or said something we cannot use: one line, a failed record."""


@dataclass(frozen=True)
class NativeRun:
    """What came back from one `xlabench-native run`: its JSON and the process that wrote it."""

    result: dict[str, Any]
    pid: int
    wall_s: float


def binary() -> Path | None:
    """The xlabench-native executable, or None when it was not built."""
    override = os.environ.get(BINARY_ENV)
    if override:
        return Path(override) if Path(override).is_file() else None
    built = Path(__file__).resolve().parents[3] / "build" / "native" / PROGRAM
    if built.is_file():
        return built
    found = shutil.which(PROGRAM)
    return Path(found) if found else None


def compiled_runtimes() -> tuple[str, ...]:
    """The runtimes `xlabench-native --list` says are compiled in (none if it is not built)."""
    path = binary()
    return () if path is None else _listed_runtimes(str(path))


@cache
def _listed_runtimes(path: str) -> tuple[str, ...]:
    try:
        done = subprocess.run([path, "--list"], capture_output=True, text=True, timeout=60)
        return tuple(json.loads(done.stdout)["runtimes"]) if done.returncode == 0 else ()
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError):
        return ()


def require_runtime(spec: Spec) -> None:
    """Refuse a native spec whose runtime is not compiled in, saying what to install."""
    runtime = spec.native_runtime
    if spec.runner != "native" or runtime is None:
        return
    if binary() is None:
        raise UserError(f"{PROGRAM} is not built: run `make setup` (needs cmake and g++)")
    if runtime not in compiled_runtimes():
        have = ", ".join(compiled_runtimes()) or "none"
        raise UserError(f"{PROGRAM} has no {runtime} runtime for {spec.backend}/{spec.mode} "
                        f"(compiled in: {have}); {NATIVE_BY_NAME[runtime].install_hint}")


def threads() -> int:
    """Threads for both sides: the CPUs this worker may use (its placement pins it)."""
    return len(os.sched_getaffinity(0))


def measure(spec: Spec, entry: Any, backend: Any, model: Any, x: Any,
            runtime_info: dict[str, Any], settings: MeasureSettings) -> Record:
    """Export, run natively, check parity; failures come back as failed records. `settings`:
    what xlabench-native measures with, the spec's own or with the sampling target the
    scheduler relaxed for this process (`worker.sampling_settings`)."""
    if spec.native_runtime is None or not hasattr(backend, "export_native"):
        return failure(spec, Status.UNSUPPORTED, f"no native exporter for {spec.backend}/"
                       f"{spec.mode} yet", family=entry.family, kind=entry.kind)
    if spec.precision != "fp32":
        return failure(spec, Status.UNSUPPORTED, "the native runner feeds float32 only (fp32)",
                       family=entry.family, kind=entry.kind)
    with tempfile.TemporaryDirectory(prefix="xlabench-native-") as scratch:
        artifact = Path(scratch)
        try:
            return _measure_in(spec, entry, backend, model, x, runtime_info, settings,
                               artifact)
        except (NativeError, ConversionError) as exc:  # the export's refusal, or ours
            return failure(spec, Status.FAILED, str(exc), family=entry.family, kind=entry.kind)


def _measure_in(spec: Spec, entry: Any, backend: Any, model: Any, x: Any,
                runtime_info: dict[str, Any], settings: MeasureSettings,
                artifact: Path) -> Record:
    runtime = str(spec.native_runtime)
    count = threads()
    x_np = np.asarray(backend.to_numpy(x), dtype=np.float32)
    start = time.perf_counter()
    exported = backend.export_native(spec, model, x, artifact, count)  # base.NativeExporter
    stages_s = exported.pop("stages_s", None) or {"export": time.perf_counter() - start}
    write_artifact(artifact, runtime, x_np, exported)
    _inject_fault(artifact, os.environ.get(FAULT_ENV, ""))
    reference = paritylib.reference_outputs(backend, model, spec.baseline_mode, x)
    spec_path = write_run_spec(artifact, spec, count, settings)
    probe_before = probe.run_probe()  # the machine's speed, outside the timed phase
    before = interference.snapshot()
    run = _native_timed_phase(artifact, spec_path, deadline_s(settings), count)
    # the native process is a waited-for child: its CPU time counts as this worker's own
    figures = interference.between(before, interference.snapshot())
    probe_after = probe.run_probe()
    outputs = read_outputs(artifact, run.result)
    bad = paritylib.non_finite_count(outputs)
    if bad:  # as in the Python path: a NaN/inf output fails the whole run
        raise NativeError(f"{spec.model} produced {bad} NaN/inf output values natively")
    parity = paritylib.against_reference(
        outputs, backend, model, spec.baseline_mode, x,
        paritylib.rtol_for(spec.precision, spec.tf32), reference)
    record = to_record(spec, entry, run, parity, runtime_info, stages_s,
                       {**exported.get("info", {}), "threads": count})
    return record.replace(interference=figures, probe_before=probe_before,
                          probe_after=probe_after)


def _inject_fault(artifact: Path, fault: str) -> None:
    manifest = artifact / "artifact.json"
    if fault == "missing":
        for path in artifact.iterdir():
            if path.is_dir():
                shutil.rmtree(path)
    elif fault == "corrupt":
        for pattern in ("saved_model.pb", "model.xml"):
            for path in artifact.rglob(pattern):
                path.write_bytes(b"\x00not a model\xff" * 64)
    elif fault == "unknown-runtime":
        doc = json.loads(manifest.read_text(encoding="utf-8"))
        manifest.write_text(json.dumps({**doc, "runtime": "nope"}), encoding="utf-8")


def deadline_s(settings: MeasureSettings) -> float:
    """The subprocess's deadline: the method's own bounds plus loading and compiling."""
    return (LOAD_ALLOWANCE_S + settings.warmup_max_s + 2 * settings.budget_s
            + settings.latency_budget_s)


def write_artifact(artifact: Path, runtime: str, x: np.ndarray, exported: dict[str, Any]) -> None:
    """artifact.json (the manifest xlabench-native reads) and the raw float32 arguments.

    The arguments are the batch alone, or (pjrt) every argument of the exported function.
    """
    args = exported.get("args") or [x]
    inputs = []
    for index, value in enumerate(args):
        array = np.asarray(value)
        if array.dtype != np.float32:
            raise NativeError(f"argument {index} is {array.dtype}: the native runner feeds float32")
        name = "input.bin" if len(args) == 1 else f"arg_{index}.bin"
        array.astype("<f4").tofile(artifact / name)
        inputs.append({"file": name, "shape": list(array.shape)})
    inputs[-1].update(exported.get("input", {}))
    manifest = {
        "runtime": runtime, "inputs": inputs,
        **{k: v for k, v in exported.items() if k not in ("info", "input", "args")},
    }
    (artifact / "artifact.json").write_text(json.dumps(manifest), encoding="utf-8")


def write_run_spec(artifact: Path, spec: Spec, count: int,
                   settings: MeasureSettings | None = None) -> Path:
    """spec.json, what xlabench-native runs: the spec, measured with `settings` (default: the
    spec's own)."""
    settings = settings or spec.measure
    path = artifact / "spec.json"
    doc = {**spec.to_dict(), "measure": dataclasses.asdict(settings),
           "latency_budget_s": settings.latency_budget_s, "threads": count,
           "self_check_rounds": int(os.environ.get(SELF_CHECK_ENV, "0") or 0)}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _native_timed_phase(artifact: Path, spec_path: Path, timeout_s: float,
                        count: int) -> NativeRun:
    """The timed phase: `xlabench-native run` as a subprocess, nothing else in this process.

    One function on purpose: the interference monitor (what else used the CPUs while the
    samples were taken) wraps exactly this call.
    """
    path = binary()
    if path is None:
        raise NativeError(f"{PROGRAM} is not built: run `make setup`")
    env = {**os.environ, "OMP_NUM_THREADS": str(count), "TF_CPP_MIN_LOG_LEVEL": "2"}
    command = [str(path), "run", str(artifact), "--spec", str(spec_path)]
    start = time.perf_counter()
    try:
        done = run_child(command, timeout_s, env=env)
    except OSError as exc:
        raise NativeError(f"cannot start {PROGRAM}: {exc}") from exc
    wall_s = time.perf_counter() - start
    if done.timed_out:
        raise NativeError(f"{PROGRAM} timed out after {timeout_s:g} s (killed)")
    if not done.ok:
        last = done.last_line().removeprefix(f"{PROGRAM}: ")  # the reason is its last line
        raise NativeError(f"{PROGRAM} exit {done.code}: {last}")
    result = parse_result(done.stdout)
    if result.get("pid") != done.pid:  # the samples must come from the process we started
        raise NativeError(f"{PROGRAM} output names pid {result.get('pid')}, not {done.pid}")
    return NativeRun(result, done.pid, wall_s)


def parse_result(stdout: str) -> dict[str, Any]:
    try:
        result = json.loads(stdout)
    except ValueError as exc:
        raise NativeError(f"{PROGRAM} printed no JSON: {exc}") from exc
    if result.get("program") != PROGRAM or result.get("schema_version") != SCHEMA_VERSION:
        raise NativeError(f"unexpected {PROGRAM} output schema: {result.get('schema_version')}")
    return result


def read_outputs(artifact: Path, result: dict[str, Any]) -> list[np.ndarray]:
    """The output tensors xlabench-native wrote (raw float32 + shape), as float64 for parity."""
    arrays = []
    for entry in result["outputs"]:
        data = np.fromfile(artifact / entry["file"], dtype="<f4")
        shape = tuple(entry["shape"])
        if data.size != int(np.prod(shape)):
            raise NativeError(f"native output {entry['file']} does not match shape {shape}")
        arrays.append(data.reshape(shape).astype(np.float64))
    return arrays


def to_record(spec: Spec, entry: Any, run: NativeRun, parity: Any, runtime_info: dict[str, Any],
              stages_s: dict[str, float], info: dict[str, Any]) -> Record:
    """An ordinary Record from the C++ JSON; the statistics come from measure/summarize.py."""
    result = run.result
    tp = result["throughput"]
    throughput = summarize.throughput_stats(
        spec.batch_size, int(tp["steps_per_sample"]), tp["sample_s"], bool(tp["target_met"]))
    steady_s = throughput.batch_time_ms_median / 1000.0
    native_stages = {f"native_{k}": float(v) for k, v in result["stages_s"].items()}
    # The Python side compiles inside its first call; here export, packaging, loading and
    # compiling happen before it: counted in, first call and compile time mean the same on both.
    ahead_s = sum(stages_s.values()) + sum(native_stages.values())
    first_s = float(result["first_call_s"]) + ahead_s
    warm = result["warmup"]
    warmup = Warmup(first_call_s=first_s, compile_s=max(0.0, first_s - steady_s),
                    steps=int(warm["steps"]), seconds=float(warm["seconds"]),
                    compile_stages_s={**stages_s, **native_stages})
    metadata = result.get("runtime_metadata", {})
    backend_info = {
        **info, "runner": "native", "native_program": result["program"],
        "native_pid": run.pid, "native_runtime": result["runtime"],
        "native_version": metadata.get("version", ""), "native_metadata": metadata,
        "native_settings": result["settings"], "native_wall_s": run.wall_s,
        "warmup_steady": bool(warm["steady"]),
    }
    reported = {k.removeprefix("reported."): v for k, v in metadata.items()
                if k.startswith("reported.")}
    if reported:  # what the runtime's compiled model says back, under the backend's own key
        backend_info[f"{spec.backend}_properties"] = reported
    if "self_check" in result:
        backend_info["native_self_check"] = result["self_check"]
    return Record(
        spec=spec, status=Status.OK, family=entry.family, kind=entry.kind,
        throughput=throughput, latency=summarize.latency_stats(result["latency"]["step_s"]),
        warmup=warmup, parity=parity, memory=Memory(), env={"runtime": runtime_info},
        backend_info=backend_info, sync=_sync(result["runtime"]),
    )


def _sync(runtime: str) -> str:
    """How the native runtime's timed loop syncs (core/backends.py), stored with the record."""
    described = NATIVE_BY_NAME.get(runtime)
    return described.sync if described else ""
