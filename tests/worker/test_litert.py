"""LiteRT for real: Keras' LiteRT export run by the ai_edge_litert interpreter in a worker,
with and without its default XNNPACK delegate, and the proof of which one ran."""

from __future__ import annotations

import numpy as np
import pytest

from tests.worker.checks import QUICK, assert_runtime_measured, quick_spec
from xlabench.core import Spec, Status
from xlabench.runner import run_isolated

RESOLVER = {"basic": "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "compiled": "BUILTIN"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(measured) -> dict[str, object]:
    """Both modes' runs (test_modes checks the same ones)."""
    done = {mode: measured(quick_spec("litert", mode)) for mode in ("basic", "compiled")}
    for mode, record in done.items():  # the figure the test output reports (pytest -s)
        if record.throughput is not None:
            print(f"\nlitert/{mode} mobilenet_v3_small@32 b2: "
                  f"{record.throughput.median_sps:.0f} samples/s")
    return done


@pytest.mark.parametrize("mode", ["basic", "compiled"])
def test_litert_measures_with_parity_and_says_what_ran(records, mode: str) -> None:
    record = records[mode]
    assert_runtime_measured(record)
    assert set(record.warmup.compile_stages_s) == {"export", "convert", "compile"}
    runtime = record.env["runtime"]
    assert runtime["framework"] == "litert" and runtime["export_backend"] == "tensorflow"
    assert runtime["interpreter"] == "ai_edge_litert.interpreter.Interpreter"
    assert runtime["converter"].startswith("tf.lite.TFLiteConverter (TensorFlow ")
    assert record.env["packages"]["ai-edge-litert"] == runtime["framework_version"]
    info = record.backend_info
    config = info["litert_config"]
    assert config["op_resolver"] == RESOLVER[mode]
    assert config["num_threads"] == runtime["threads"] >= 1
    assert info["tflite_bytes"] > 0 and info["litert_flex_nodes"] == 0
    assert info["litert_converter_route"] == "frozen concrete function"


def test_litert_basic_ran_no_delegate_and_compiled_ran_xnnpack(records) -> None:
    """The interpreter's own nodes say whether XNNPACK took the graph: a delegate replaces the
    nodes it takes with DELEGATE nodes. Fails if `basic` was given the default delegate."""
    basic, compiled = records["basic"].backend_info, records["compiled"].backend_info
    assert basic["litert_delegate_nodes"] == 0, basic
    assert compiled["litert_delegate_nodes"] >= 1, compiled
    # the delegate's kernels are appended to the interpreter's node list
    assert compiled["litert_nodes"] == basic["litert_nodes"] + compiled["litert_delegate_nodes"]


def test_litert_outputs_have_the_model_shape_and_no_nan(records) -> None:
    """The interpreter's output is the classifier's (batch, classes); an ok record had no
    NaN/inf (the worker fails a run on any) and matched Keras' shapes (parity checks them)."""
    for record in records.values():
        assert record.backend_info["litert_output_shapes"] == [[2, 1000]]
        assert record.status is Status.OK and np.isfinite(record.parity.max_abs_diff)


def test_litert_refuses_other_precisions_with_one_line() -> None:
    spec = Spec("mobilenet_v3_small", "litert", "compiled", 32, batch_size=1, precision="bf16",
                measure=QUICK)
    record = run_isolated(spec, timeout_s=600)
    assert record.status is Status.FAILED
    assert record.error.startswith("ConversionError: litert runs fp32 only")
    assert "\n" not in record.error
