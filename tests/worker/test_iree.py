"""IREE for real: Keras-on-JAX exported, compiled by iree-compile and measured by the worker."""

from __future__ import annotations

import importlib.util

import pytest

from tests.worker.checks import QUICK, quick_spec
from xlabench.core import Spec, Status
from xlabench.runner import run_isolated
from xlabench.store import ResultStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("iree") is None,
                       reason="iree-base-compiler/runtime not installed"),
]


def test_iree_measures_the_jax_export(measured, tmp_path) -> None:
    spec = quick_spec("iree", "compiled")
    record = measured(spec)
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.throughput is not None and record.throughput.median_sps > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    # Parity against Keras eager on JAX, the exporting backend: same weights, same input.
    assert record.parity is not None and record.parity.reference_mode == "keras_eager"
    assert record.parity.passed, record.parity
    assert record.parity.max_rel_diff < 1e-4
    stages = record.warmup.compile_stages_s
    assert set(stages) == {"export", "compile", "load"} and all(s >= 0 for s in stages.values())
    assert stages["compile"] > stages["load"]  # iree-compile is the costly stage
    runtime = record.env["runtime"]
    assert runtime["framework"] == "iree" and runtime["export_backend"] == "jax"
    assert runtime["export_framework_version"] and runtime["threads"] >= 1
    packages = record.env["packages"]
    assert packages["iree-base-runtime"] == runtime["framework_version"]
    assert packages["iree-base-compiler"] == runtime["compiler_version"]
    assert "to_host" in record.sync
    info = record.backend_info
    config = info["iree_config"]
    assert "--iree-llvmcpu-target-cpu=host" in config["compile_flags"]
    assert "--iree-input-type=stablehlo" in config["compile_flags"]
    assert config["driver"] == "local-task"
    assert config["task_topology_group_count"] == runtime["threads"]
    assert info["iree_worker_threads"] == runtime["threads"]  # what the runtime really made
    assert info["artifact"].startswith("jax.export StableHLO of Keras-on-JAX")
    assert 0 < info["kept_args"] <= info["all_args"] and info["vmfb_bytes"] > 0
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record)
        (stored,) = store.records(backend="iree")
    assert stored.spec == spec and stored.backend_info == info


def test_iree_refuses_bf16_with_one_line() -> None:
    spec = Spec("mobilenet_v3_small", "iree", "compiled", 32, batch_size=1, precision="bf16",
                measure=QUICK)
    record = run_isolated(spec, timeout_s=300)
    assert record.status is Status.FAILED
    assert record.error.startswith("ConversionError: iree runs fp32 only")
    assert "\n" not in record.error
