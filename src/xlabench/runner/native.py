"""The native runner: the worker exports the compiled artifact and `xlabench-native` times it.

The worker keeps everything but the timed loop: it builds the model, exports the artifact into
its scratch directory (export times become compile stages), writes the input and the Keras eager
reference output, starts the C++ program under a deadline, reads its JSON, checks parity and
returns an ordinary Record (`spec.runner == "native"`). No statistic is computed here that the
C++ side already computed: the samples come from its JSON and go through measure/summarize.py.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xlabench.core import Memory, Record, Spec, Status, UserError, Warmup, failure
from xlabench.measure import interference, summarize
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
INSTALL_HINTS: dict[str, str] = {
    "tf_c": "pip install tensorflow-cpu (its wheel ships the C API), then `make setup`",
    "aoti": "pip install torch (libtorch ships in its wheel), then `make setup`",
    "pjrt": "pip install xla-cpu-pjrt (the PJRT CPU plugin), then `make setup`",
    "openvino": "pip install openvino (its wheel ships the C++ runtime and OpenVINOConfig.cmake), "
                "then `make setup`",
}
SYNC = {
    "tf_c": "TF_SessionRun returns when its outputs are computed (CPU): each step is synced",
    "aoti": "AOTIModelPackageLoader::run returns when its outputs are computed (CPU)",
    "pjrt": "PJRT_Event_Await on the last execution's completion event",
    "openvino": "ov::InferRequest::infer is synchronous: it returns when its outputs are computed "
                "(CPU)",
}


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
                        f"(compiled in: {have}); {INSTALL_HINTS[runtime]}")


def threads() -> int:
    """Threads for both sides: the CPUs this worker may use (its placement pins it)."""
    return len(os.sched_getaffinity(0))


def measure(spec: Spec, entry: Any, backend: Any, model: Any, x: Any,
            runtime_info: dict[str, Any]) -> Record:
    """Export, run natively, check parity; failures come back as failed records."""
    runtime = spec.native_runtime
    if runtime is None or runtime not in EXPORTERS:
        return failure(spec, Status.UNSUPPORTED, f"no native exporter for {spec.backend}/"
                       f"{spec.mode} yet", family=entry.family, kind=entry.kind)
    if spec.precision != "fp32":
        return failure(spec, Status.UNSUPPORTED, "the native runner feeds float32 only (fp32)",
                       family=entry.family, kind=entry.kind)
    with tempfile.TemporaryDirectory(prefix="xlabench-native-") as scratch:
        artifact = Path(scratch)
        try:
            return _measure_in(spec, entry, backend, model, x, runtime_info, artifact)
        except NativeError as exc:
            return failure(spec, Status.FAILED, str(exc), family=entry.family, kind=entry.kind)


def _measure_in(spec: Spec, entry: Any, backend: Any, model: Any, x: Any,
                runtime_info: dict[str, Any], artifact: Path) -> Record:
    runtime = str(spec.native_runtime)
    count = threads()
    x_np = np.asarray(backend.to_numpy(x), dtype=np.float32)
    start = time.perf_counter()
    exported = EXPORTERS[runtime](model, x, spec, artifact, count)
    stages_s = exported.pop("stages_s", None) or {"export": time.perf_counter() - start}
    write_artifact(artifact, runtime, x_np, exported)
    _inject_fault(artifact, os.environ.get(FAULT_ENV, ""))
    reference = paritylib.flatten_outputs(
        backend.to_numpy(backend.make_runner(model, spec.baseline_mode, x).step()))
    spec_path = write_run_spec(artifact, spec, count)
    before = interference.snapshot()
    run = _native_timed_phase(artifact, spec_path, deadline_s(spec), count)
    # the native process is a waited-for child: its CPU time counts as this worker's own
    figures = interference.between(before, interference.snapshot())
    outputs = read_outputs(artifact, run.result)
    bad = paritylib.non_finite_count(outputs)
    if bad:  # as in the Python path: a NaN/inf output fails the whole run
        raise NativeError(f"{spec.model} produced {bad} NaN/inf output values natively")
    rtol = paritylib.rtol_for(spec.precision, spec.tf32)
    parity = paritylib.compare(outputs, reference, rtol, spec.baseline_mode)
    record = to_record(spec, entry, run, parity, runtime_info, stages_s,
                       {**exported.get("info", {}), "threads": count})
    return record.replace(interference=figures)


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


def deadline_s(spec: Spec) -> float:
    """The subprocess's deadline: the method's own bounds plus loading and compiling."""
    m = spec.measure
    return LOAD_ALLOWANCE_S + m.warmup_max_s + 2 * m.budget_s + latency_budget_s(spec)


def latency_budget_s(spec: Spec) -> float:
    return max(1.0, spec.measure.budget_s / 4)  # as runner/worker.py _time_runner


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


def write_run_spec(artifact: Path, spec: Spec, count: int) -> Path:
    path = artifact / "spec.json"
    doc = {**spec.to_dict(), "latency_budget_s": latency_budget_s(spec), "threads": count,
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
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    except OSError as exc:
        raise NativeError(f"cannot start {PROGRAM}: {exc}") from exc
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise NativeError(f"{PROGRAM} timed out after {timeout_s:g} s (killed)") from None
    wall_s = time.perf_counter() - start
    if proc.returncode != 0:
        lines = [line for line in err.splitlines() if line.strip()] or ["no message"]
        last = lines[-1].strip().removeprefix(f"{PROGRAM}: ")  # the reason is its last line
        raise NativeError(f"{PROGRAM} exit {proc.returncode}: {last}")
    result = parse_result(out)
    if result.get("pid") != proc.pid:  # the samples must come from the process we started
        raise NativeError(f"{PROGRAM} output names pid {result.get('pid')}, not {proc.pid}")
    return NativeRun(result, proc.pid, wall_s)


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
    if result["runtime"] == "openvino":  # what compile_model reported, as the backend records it
        backend_info["openvino_properties"] = {
            k.removeprefix("reported."): v for k, v in metadata.items()
            if k.startswith("reported.")}
    if "self_check" in result:
        backend_info["native_self_check"] = result["self_check"]
    return Record(
        spec=spec, status=Status.OK, family=entry.family, kind=entry.kind,
        throughput=throughput, latency=summarize.latency_stats(result["latency"]["step_s"]),
        warmup=warmup, parity=parity, memory=Memory(), env={"runtime": runtime_info},
        backend_info=backend_info, sync=SYNC.get(result["runtime"], ""),
    )


def _export_tf_c(model: Any, x: Any, spec: Spec, artifact: Path, count: int) -> dict[str, Any]:
    """A SavedModel whose serving function is the forward (jit_compile on for tensorflow/xla)."""
    import keras
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2, saved_model_pb2

    def forward(inputs: Any) -> Any:
        return model(inputs, training=False)

    jit = spec.mode == "xla"
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serve", tf.function(forward, jit_compile=jit, autograph=False),
                         input_signature=[tf.TensorSpec(x.shape, tf.float32)])
    archive.write_out(str(artifact / "saved_model"), verbose=False)
    saved = saved_model_pb2.SavedModel.FromString(
        (artifact / "saved_model" / "saved_model.pb").read_bytes())
    signature = saved.meta_graphs[0].signature_def["serving_default"]
    if len(signature.inputs) != 1:
        raise NativeError(f"the serving signature has {len(signature.inputs)} inputs, not 1")
    # Keras flattens dict outputs by sorted key, and the signature names them output_0, ...
    keys = sorted(signature.outputs, key=lambda k: (len(k), k))
    # The same thread counts TensorFlow's Python side uses by default on this machine.
    config = config_pb2.ConfigProto(intra_op_parallelism_threads=count,
                                    inter_op_parallelism_threads=count)
    (artifact / "session_config.pb").write_bytes(config.SerializeToString())
    size = sum(p.stat().st_size for p in (artifact / "saved_model").rglob("*") if p.is_file())
    return {
        "saved_model": "saved_model", "session_config": "session_config.pb",
        "input": {"tensor": next(iter(signature.inputs.values())).name},
        "outputs": [{"tensor": signature.outputs[k].name} for k in keys],
        "info": {"artifact": "SavedModel", "artifact_bytes": size, "jit_compile": jit,
                 "same_compiler": True},
    }


def _export_aoti(model: Any, x: Any, spec: Spec, artifact: Path, count: int) -> dict[str, Any]:
    """An AOTInductor package of the same torch.export capture the torch backend compiles.

    Keras emits an in-place rsqrt_ that AOTInductor refuses ("entirely functional graph"):
    run_decompositions() first. The package is built for this CPU (-march=native).
    """
    import torch

    from xlabench.backends.torch import _forward_module

    torch.set_num_threads(count)
    with torch.no_grad():
        start = time.perf_counter()
        exported = torch.export.export(_forward_module(model), (x,), strict=False)
        exported = exported.run_decompositions()
        export_s = time.perf_counter() - start
        package = str(artifact / "model.pt2")
        torch._inductor.aoti_compile_and_package(exported, package_path=package)
    package_s = time.perf_counter() - start - export_s
    return {
        "package": "model.pt2",
        "stages_s": {"export": export_s, "package": package_s},
        "info": {"artifact": "AOTInductor package (.pt2)",
                 "artifact_bytes": os.path.getsize(package),
                 "capture": "torch.export(strict=False), run_decompositions, AOTInductor",
                 "same_compiler": False,
                 "compiler_note": "the Python side runs torch.compile (Inductor, compiled in "
                                  "the worker), the native side an AOTInductor package: one "
                                  "compiler, two compile paths"},
    }


def pjrt_plugin() -> Path | None:
    """The PJRT CPU plugin of pip's xla-cpu-pjrt, if installed (found without importing jax)."""
    found = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / "xla_cpu_pjrt.so"
    return path if path.is_file() else None


def _export_pjrt(model: Any, x: Any, spec: Spec, artifact: Path, count: int) -> dict[str, Any]:
    """jax.export of the jitted stateless_call the jax backend compiles (variables as arguments).

    jax.export drops unused arguments: only module_kept_var_idx are fed. The plugin's XLA is
    older than jaxlib's, so the two sides do not run the same compiler (recorded).
    """
    from jax._src.lib import xla_client

    from xlabench.backends.jax import export_stateless

    plugin = pjrt_plugin()
    if plugin is None:
        raise NativeError(f"no PJRT CPU plugin: {INSTALL_HINTS['pjrt']}")
    start = time.perf_counter()
    exported, kept = export_stateless(model, x)
    export_s = time.perf_counter() - start
    (artifact / "module.mlirbc").write_bytes(exported.mlir_module_serialized)
    options = xla_client.CompileOptions()
    options.executable_build_options.num_replicas = 1  # empty options abort the plugin
    options.executable_build_options.num_partitions = 1
    (artifact / "compile_options.pb").write_bytes(options.SerializeAsString())
    return {
        "plugin": str(plugin), "module": "module.mlirbc", "compile_options": "compile_options.pb",
        "args": [np.asarray(a) for a in kept],
        "stages_s": {"export": export_s},
        "info": {"artifact": "jax.export StableHLO bytecode", "kept_args": len(kept),
                 "all_args": len(exported.in_avals), "plugin": str(plugin),
                 "plugin_package": _version("xla-cpu-pjrt"), "jaxlib": _version("jaxlib"),
                 "same_compiler": False,
                 "compiler_note": "the PJRT plugin's XLA differs from jaxlib's: native vs "
                                  "Python differences are not Python overhead alone"},
    }


def _export_openvino(model: Any, x: Any, spec: Spec, artifact: Path,
                     count: int) -> dict[str, Any]:
    """The IR the openvino backend compiles: the same trace and conversion, fp32 weights.

    The compile properties are the backend's own (compile_config: the precision hint, one
    stream, LATENCY, INFERENCE_NUM_THREADS = the worker's CPUs); the C++ side sets them on
    compile_model and reports what the compiled model says back.
    """
    import openvino as ov

    from xlabench.backends import openvino as ov_backend
    from xlabench.backends import runtime as rt

    stages: dict[str, float] = {}
    info: dict[str, Any] = {}
    try:
        _, concrete = rt.timed(stages, "export", rt.trace, model, x)
        ov_model = rt.timed(stages, "convert", ov_backend._convert, concrete, info, ov)
        (artifact / "ir").mkdir()
        rt.timed(stages, "save", ov.save_model, ov_model, str(artifact / "ir" / "model.xml"),
                 compress_to_fp16=False)
    except rt.ConversionError as exc:
        raise NativeError(f"openvino {exc}") from exc
    config = ov_backend.compile_config(spec.precision, count)
    weights = sorted({op.get_element_type().get_type_name() for op in ov_model.get_ops()
                      if op.get_type_name() == "Constant"})
    return {
        "model": "ir/model.xml", "weights": "ir/model.bin", "config": config,
        "stages_s": stages,
        "info": {"artifact": "OpenVINO IR (compress_to_fp16=False)",
                 "artifact_bytes": sum(p.stat().st_size for p in (artifact / "ir").iterdir()),
                 "openvino_config": config, "ir_weight_types": weights,
                 "openvino_version": ov.get_version(), "same_compiler": True, **info},
    }


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


EXPORTERS: dict[str, Callable[..., dict[str, Any]]] = {
    "tf_c": _export_tf_c, "aoti": _export_aoti, "pjrt": _export_pjrt,
    "openvino": _export_openvino,
}
