"""ExecuTorch for real: Keras-on-PyTorch's torch.export lowered by ExecuTorch and run by its
runtime in a worker, on its CPU kernels and with the XNNPACK delegate, and the proof of
which one ran."""

from __future__ import annotations

import pytest

from tests.worker.checks import assert_runtime_measured, quick_spec
from xlabench.store import ResultStore

PARTITIONER = {"basic": None, "compiled": "XnnpackPartitioner"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(measured) -> dict[str, object]:
    """Both modes' runs (test_modes checks the same ones)."""
    return {mode: measured(quick_spec("executorch", mode)) for mode in ("basic", "compiled")}


@pytest.mark.parametrize("mode", ["basic", "compiled"])
def test_executorch_measures_with_parity_and_says_what_ran(records, mode: str,
                                                          tmp_path) -> None:
    record = records[mode]
    assert_runtime_measured(record)
    stages = record.warmup.compile_stages_s
    assert set(stages) == {"export", "lower", "emit", "load"}
    assert all(s >= 0 for s in stages.values())
    runtime = record.env["runtime"]
    assert runtime["framework"] == "executorch" and runtime["export_backend"] == "torch"
    assert record.env["packages"]["executorch"] == runtime["framework_version"]
    assert record.env["packages"]["torch"] == runtime["export_framework_version"]
    info = record.backend_info
    config = info["executorch_config"]
    assert config["partitioner"] == PARTITIONER[mode] and config["method"] == "forward"
    assert config["threadpool_threads"] == runtime["threads"] >= 1
    assert info["pte_bytes"] > 0
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record)
        (stored,) = store.records(backend="executorch")
    assert stored.spec == record.spec and stored.backend_info == info


def test_executorch_basic_delegated_nothing_and_compiled_ran_xnnpack(records) -> None:
    """The lowered program's delegate calls say whether XNNPACK took the graph; XNNPACK takes
    every convolution (their kernels are folded to constants before lowering)."""
    basic, compiled = records["basic"].backend_info, records["compiled"].backend_info
    assert basic["executorch_delegate_calls"] == 0, basic
    assert basic["executorch_kernel_ops"]["aten.convolution.default"] > 0
    assert compiled["executorch_delegate_calls"] >= 1, compiled
    assert "aten.convolution.default" not in compiled["executorch_kernel_ops"]
