"""The native runner end to end: a real worker exports, xlabench-native times, a Record is stored.

A runtime's tests skip where it is not built; `test_every_installed_sdk_is_built_in` fails when
that is because the build missed an SDK that is installed, so a skip cannot hide a broken build.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_one_process
from xlabench.backends.jax import pjrt_plugin
from xlabench.core import MeasureSettings, Spec, Status, UserError
from xlabench.runner import Placement, native, run_isolated
from xlabench.store import ResultStore

pytestmark = pytest.mark.slow
QUICK = MeasureSettings(min_sample_s=0.02, budget_s=1.0, warmup_min_s=0.1, warmup_max_s=3.0,
                        latency_steps=3)
NEEDS_TF_C = pytest.mark.skipif("tf_c" not in native.compiled_runtimes(),
                                reason="xlabench-native without tf_c (run `make setup`)")


#: runtime -> is the SDK it is built from installed here?
INSTALLED_SDKS = {
    "tf_c": lambda: importlib.util.find_spec("tensorflow") is not None,
    "aoti": lambda: importlib.util.find_spec("torch") is not None,
    "pjrt": lambda: pjrt_plugin() is not None,
    "openvino": lambda: importlib.util.find_spec("openvino") is not None,
    "executorch": lambda: importlib.util.find_spec("executorch") is not None,
}


def test_every_installed_sdk_is_built_in() -> None:
    assert native.binary() is not None, "xlabench-native is not built: run `make setup`"
    missing = [rt for rt, installed in INSTALLED_SDKS.items()
               if installed() and rt not in native.compiled_runtimes()]
    assert not missing, f"SDK installed but runtime not compiled in: {missing}"


def _spec(mode: str, seed: int = 0) -> Spec:
    return Spec("mobilenet_v3_small", "tensorflow", mode, 32, batch_size=2, seed=seed,
                measure=QUICK, runner="native")


@NEEDS_TF_C
@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_tf_c_record_is_stored_with_native_samples(tmp_path: Path, mode: str) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(_spec(mode), store, timeout_s=600)
        (row,) = store.rows()
    assert record.ok, record.error
    assert record.spec.runner == "native" and row["spec_id"] == record.spec_id
    info = record.backend_info
    # Only the C++ process writes these: a silent fall back to the Python loop has none.
    assert info["runner"] == "native" and info["native_program"] == "xlabench-native"
    assert info["native_runtime"] == "tf_c" and isinstance(info["native_pid"], int)
    assert info["native_pid"] != os.getpid()
    assert info["jit_compile"] is (mode == "xla") and info["same_compiler"] is True
    assert info["native_settings"]["budget_s"] == QUICK.budget_s
    assert record.parity is not None and record.parity.passed, record.parity
    assert record.parity.reference_mode == "eager"
    tp = record.throughput
    assert tp is not None and len(tp.sample_s) >= 3 and tp.median_sps > 0
    assert record.latency is not None and len(record.latency.step_s) == QUICK.latency_steps
    stages = record.warmup.compile_stages_s
    assert stages["export"] > 0 and stages["native_load"] > 0
    # export and load come before the C++ first call: they are part of the compile time
    assert record.warmup.compile_s >= sum(stages.values()) - 1e-9
    assert record.warmup.first_call_s > record.warmup.compile_s


@NEEDS_TF_C
def test_native_runner_samples_to_the_relaxed_target() -> None:
    """The scheduler's relaxed sampling target reaches xlabench-native, as it reaches the
    Python loop: the record is stamped with it, so the C++ side must have measured with it."""
    relaxed = 0.3
    record = run_isolated(_spec("graph"), 600, sampling_target_rel_ci=relaxed)
    assert record.ok, record.error
    settings = record.backend_info["native_settings"]
    assert settings["target_rel_ci"] == relaxed and QUICK.target_rel_ci != relaxed
    assert settings["budget_s"] == QUICK.budget_s  # only the target is relaxed
    assert record.spec.measure == QUICK  # the spec, and so its id, is unchanged


NEEDS_OPENVINO = pytest.mark.skipif("openvino" not in native.compiled_runtimes(),
                                    reason="xlabench-native without openvino (run `make setup`)")
CORRUPT = [
    pytest.param("tensorflow", "graph", "tf_c: loading SavedModel", marks=NEEDS_TF_C, id="tf_c"),
    pytest.param("openvino", "compiled", "openvino: reading IR", marks=NEEDS_OPENVINO,
                 id="openvino"),
]


@pytest.mark.parametrize(("backend", "mode", "reason"), CORRUPT)
def test_a_corrupt_artifact_is_a_failed_record(tmp_path: Path, backend: str, mode: str,
                                               reason: str) -> None:
    placement = Placement(env={native.FAULT_ENV: "corrupt"})
    spec = Spec("mobilenet_v3_small", backend, mode, 32, batch_size=2, seed=1, measure=QUICK,
                runner="native")
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, timeout_s=600, placement=placement)
        (row,) = store.rows()
    assert record.status is Status.FAILED and row["status"] == "failed"
    assert f"xlabench-native exit 1: {reason}" in record.error
    assert "\n" not in record.error


def _artifact(directory: Path, runtime: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / "input.bin").write_bytes(b"\0" * 16)
    manifest = {"runtime": runtime, "saved_model": "saved_model", "outputs": [],
                "inputs": [{"file": "input.bin", "shape": [1, 4], "tensor": "x:0"}]}
    (directory / "artifact.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("no directory", r"exit 2: artifact directory .* does not exist"),
        ("bad manifest", r"exit 1: bad artifact manifest: .*artifact.json: JSON"),
        ("unknown runtime", r"exit 2: unknown runtime 'nope'; compiled in: "),
        ("missing model", r"exit 1: tf_c: loading SavedModel"),
    ],
)
def test_binary_refuses_bad_artifacts_with_one_line(tmp_path: Path, damage: str,
                                                    reason: str) -> None:
    if damage == "missing model" and "tf_c" not in native.compiled_runtimes():
        pytest.skip("xlabench-native without tf_c")
    if native.binary() is None:
        pytest.skip("xlabench-native is not built (run `make setup`)")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps({"measure": {}, "threads": 1}), encoding="utf-8")
    artifact = tmp_path / "artifact"
    if damage != "no directory":
        _artifact(artifact, "nope" if damage == "unknown runtime" else "tf_c")
    if damage == "bad manifest":
        (artifact / "artifact.json").write_text('{"runtime": "tf_c", "inputs": [', "utf-8")
    with pytest.raises(native.NativeError, match=reason) as caught:
        native._native_timed_phase(artifact, spec_path, 60, 1)
    assert "\n" not in str(caught.value)


def test_native_runner_refuses_what_is_not_compiled_in(tmp_path: Path, monkeypatch) -> None:
    spec = Spec("mobilenet_v3_small", "jax", "xla", 32, runner="native")
    monkeypatch.setenv(native.BINARY_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match="xlabench-native is not built: run `make setup`"):
        native.require_runtime(spec)
    # A build with only tf_c: the jax/xla spec is refused with what to install.
    only_tf = tmp_path / "xlabench-native"
    only_tf.write_text('#!/bin/sh\necho \'{"runtimes": ["tf_c"]}\'\n', encoding="utf-8")
    only_tf.chmod(0o755)
    monkeypatch.setenv(native.BINARY_ENV, str(only_tf))
    with pytest.raises(UserError, match=r"no pjrt runtime .*compiled in: tf_c.*xla-cpu-pjrt"):
        native.require_runtime(spec)
    with pytest.raises(UserError, match=r"no openvino runtime for openvino/compiled .*pip install "
                                        r"openvino"):
        native.require_runtime(Spec("mobilenet_v3_small", "openvino", "compiled", 32,
                                    runner="native"))
    native.require_runtime(Spec("mobilenet_v3_small", "tensorflow", "xla", 32, runner="native"))


@pytest.mark.skipif("aoti" not in native.compiled_runtimes(),
                    reason="xlabench-native without aoti (run `make setup`)")
def test_aoti_package_runs_in_libtorch(tmp_path: Path) -> None:
    # AOTInductor packaging is the slow part (a C++ build of the whole model): 32 px, batch 1.
    spec = Spec("mobilenet_v3_small", "torch", "compiled", 32, batch_size=1, measure=QUICK,
                runner="native")
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, timeout_s=900)
    assert record.ok, record.error
    info = record.backend_info
    assert info["native_runtime"] == "aoti" and info["native_program"] == "xlabench-native"
    assert info["same_compiler"] is False and "two compile paths" in info["compiler_note"]
    assert info["native_metadata"]["intra_op_threads"] == str(info["threads"])
    assert record.parity is not None and record.parity.passed, record.parity
    assert record.warmup.compile_stages_s["package"] > 0
    assert len(record.throughput.sample_s) >= 3


@pytest.mark.skipif("pjrt" not in native.compiled_runtimes() or pjrt_plugin() is None,
                    reason="xlabench-native without pjrt, or no xla-cpu-pjrt plugin")
def test_pjrt_runs_the_jax_export_in_the_plugin(tmp_path: Path) -> None:
    spec = Spec("mobilenet_v3_small", "jax", "xla", 32, batch_size=2, measure=QUICK,
                runner="native")
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, timeout_s=600)
    assert record.ok, record.error
    info = record.backend_info
    assert info["native_runtime"] == "pjrt" and info["native_program"] == "xlabench-native"
    # Unused variables are dropped by jax.export and must not be fed.
    assert 0 < info["kept_args"] <= info["all_args"]
    assert info["plugin_package"] and info["same_compiler"] is False
    assert info["native_metadata"]["pjrt_c_api"]
    assert record.parity is not None and record.parity.passed, record.parity
    assert record.warmup.compile_stages_s["native_prepare"] > 0  # the plugin's compile


@NEEDS_OPENVINO
def test_openvino_ir_runs_in_the_cpp_runtime(tmp_path: Path) -> None:
    spec = Spec("mobilenet_v3_small", "openvino", "compiled", 32, batch_size=2, measure=QUICK,
                runner="native")
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, timeout_s=600)
        (row,) = store.rows()
        python = run_one_process(dataclasses.replace(spec, runner="python"), store, timeout_s=600)
    assert record.ok, record.error
    assert record.spec.runner == "native" and row["spec_id"] == record.spec_id
    info = record.backend_info
    # Only the C++ process writes these: a silent fall back to the Python loop has none.
    assert info["runner"] == "native" and info["native_program"] == "xlabench-native"
    assert info["native_runtime"] == "openvino" and info["native_pid"] != os.getpid()
    assert info["same_compiler"] is True
    assert "InferRequest::infer" in record.sync
    # The backend's own properties were set, and the compiled model says it runs f32.
    assert info["openvino_config"]["INFERENCE_PRECISION_HINT"] == "f32"
    assert info["openvino_config"]["INFERENCE_NUM_THREADS"] == str(info["threads"])
    assert info["openvino_properties"]["INFERENCE_PRECISION_HINT"] == "f32"
    assert info["native_metadata"]["reported.INFERENCE_PRECISION_HINT"] == "f32"
    assert "f32" in info["ir_weight_types"] and "f16" not in info["ir_weight_types"]
    assert record.parity is not None and record.parity.passed, record.parity
    stages = record.warmup.compile_stages_s
    assert stages["convert"] > 0 and stages["native_load"] > 0 and stages["native_prepare"] > 0
    assert len(record.throughput.sample_s) >= 3
    assert python.ok, python.error
    # The same properties as the Python backend's compiled model, spelt by C++ (YES, ANY_CORE)
    # rather than Python (True, SchedulingCoreType.ANY_CORE).
    def spelling(value: str) -> str:
        return {"YES": "True", "NO": "False"}.get(value, value.rsplit(".", 1)[-1])

    python_props = python.backend_info["openvino_properties"]
    assert {k: spelling(v) for k, v in info["openvino_properties"].items()} == {
        k: spelling(v) for k, v in python_props.items()}
    print(f"\nopenvino/compiled mobilenet_v3_small@32 b2: python "
          f"{python.throughput.median_sps:.0f} samples/s, native "
          f"{record.throughput.median_sps:.0f} samples/s")


@NEEDS_OPENVINO
def test_openvino_reports_the_properties_its_manifest_names(tmp_path: Path) -> None:
    """The list is backends/openvino.py REPORTED, passed in the manifest: the C++ side reads
    back exactly the properties named there, no list of its own."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops

    from xlabench.backends import openvino as ov_backend

    artifact = tmp_path / "artifact"
    (artifact / "ir").mkdir(parents=True)
    x = ops.parameter([1, 4], ov.Type.f32)
    ov.save_model(ov.Model([ops.relu(x)], [x]), str(artifact / "ir" / "model.xml"))
    np.zeros((1, 4), np.float32).tofile(artifact / "input.bin")
    named = ["INFERENCE_PRECISION_HINT", "NUM_STREAMS"]  # the precision is checked: named
    manifest = {"runtime": "openvino", "model": "ir/model.xml", "weights": "ir/model.bin",
                "config": ov_backend.compile_config("fp32", 1), "reported": named,
                "inputs": [{"file": "input.bin", "shape": [1, 4]}]}
    (artifact / "artifact.json").write_text(json.dumps(manifest), encoding="utf-8")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps({"measure": dataclasses.asdict(QUICK), "threads": 1}),
                         encoding="utf-8")
    metadata = native._native_timed_phase(artifact, spec_path, 60, 1).result["runtime_metadata"]
    assert sorted(k for k in metadata if k.startswith("reported.")) == [
        f"reported.{name}" for name in named]
    assert metadata["reported.INFERENCE_PRECISION_HINT"] == "f32"


NEEDS_EXECUTORCH = pytest.mark.skipif(
    "executorch" not in native.compiled_runtimes(),
    reason="xlabench-native without executorch (run `make setup`)")


@NEEDS_EXECUTORCH
@pytest.mark.parametrize(("mode", "delegates"), [("basic", "none"), ("compiled", "XnnpackBackend")])
def test_executorch_program_runs_in_the_cpp_runtime(tmp_path: Path, mode: str,
                                                    delegates: str) -> None:
    spec = Spec("mobilenet_v3_small", "executorch", mode, 32, batch_size=2, measure=QUICK,
                runner="native")
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, timeout_s=900)
        (row,) = store.rows()
    assert record.ok, record.error
    assert record.spec.runner == "native" and row["spec_id"] == record.spec_id
    info = record.backend_info
    # Only the C++ process writes these: a silent fall back to the Python loop has none.
    assert info["runner"] == "native" and info["native_program"] == "xlabench-native"
    assert info["native_runtime"] == "executorch" and info["native_pid"] != os.getpid()
    assert info["same_compiler"] is True and "Method::execute" in record.sync
    assert info["executorch_config"]["method"] == "forward"
    # The C++ runtime read the delegate calls the Python lowering counted, from the program.
    meta = info["native_metadata"]
    assert meta["delegates"] == delegates
    assert meta["delegate_calls"] == str(info["executorch_delegate_calls"])
    assert meta["threadpool_threads"] == str(info["threads"])
    assert meta["version"] == info["native_version"] != "unknown"
    assert int(meta["planned_bytes"]) > 0
    assert record.parity is not None and record.parity.passed, record.parity
    assert record.parity.reference_mode == "keras_eager"
    stages = record.warmup.compile_stages_s
    assert stages["lower"] > 0 and stages["emit"] > 0 and "native_prepare" in stages
    assert len(record.throughput.sample_s) >= 3


@NEEDS_EXECUTORCH
def test_executorch_refuses_a_corrupt_program_with_one_line(tmp_path: Path) -> None:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps({"measure": {}, "threads": 1}), encoding="utf-8")
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "input.bin").write_bytes(b"\0" * 16)
    (artifact / "model.pte").write_bytes(b"\x00not a program\xff" * 64)
    manifest = {"runtime": "executorch", "program": "model.pte", "method": "forward",
                "inputs": [{"file": "input.bin", "shape": [1, 4]}]}
    (artifact / "artifact.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(native.NativeError, match=r"exit 1: executorch: loading program .*"
                                                 r"model.pte: Error::InvalidProgram") as caught:
        native._native_timed_phase(artifact, spec_path, 60, 1)
    assert "\n" not in str(caught.value)
