"""bf16 as a deployment choice: OpenVINO executes the fp32 model in bf16 (its precision hint);
every other runtime refuses bf16 with one line that says why (core/backends.py)."""

from __future__ import annotations

import pytest

from tests.worker.checks import QUICK
from xlabench import backends
from xlabench.backends.base import ConversionError
from xlabench.core import Spec, Status
from xlabench.core.backends import BY_NAME, RUNTIMES, model_precision
from xlabench.core.cpu import read_cpu_facts
from xlabench.measure.parity import RTOL_BY_PRECISION
from xlabench.runner import run_isolated

WITHOUT_BF16 = [name for name in RUNTIMES if "bf16" not in BY_NAME[name].precisions]
#: The flags with which OpenVINO's CPU plugin executes bf16 (else it compiles f32).
BF16_FLAGS = {"avx512_bf16", "amx_bf16"}


def test_runtimes_build_the_fp32_model_whatever_they_execute() -> None:
    assert WITHOUT_BF16 == ["onnxruntime", "litert", "iree", "executorch"]
    assert all(model_precision(name, "bf16") == "fp32" for name in RUNTIMES)
    assert model_precision("jax", "bf16") == "bf16" == model_precision("torch", "bf16")


@pytest.mark.slow
def test_openvino_bf16_executes_bf16_and_passes_parity_at_the_bf16_tolerance() -> None:
    spec = Spec("mobilenet_v3_small", "openvino", "compiled", 32, batch_size=2,
                precision="bf16", measure=QUICK)
    record = run_isolated(spec, timeout_s=600)
    if not BF16_FLAGS & set(read_cpu_facts()["flags"]):  # refused, never timed as bf16
        assert record.status is Status.FAILED and "asked bf16" in record.error
        return
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    info = record.backend_info
    assert info["executed_precision"] == "bf16"  # read back from the compiled model
    assert info["openvino_properties"]["INFERENCE_PRECISION_HINT"] == "bf16"
    # The fp32 model, converted as a deployer would: every floating constant f32.
    assert {t for t in info["ir_weight_types"] if t.startswith(("f", "bf"))} == {"f32"}
    parity = record.parity
    assert parity is not None and parity.reference_mode == "keras_eager"  # Keras eager fp32
    assert parity.passed and parity.rtol == RTOL_BY_PRECISION["bf16"], parity
    assert parity.max_rel_diff > 1e-4  # bf16 arithmetic, not f32 (f32 stays below 1e-5)


@pytest.mark.parametrize("backend", WITHOUT_BF16)
def test_a_runtime_without_bf16_refuses_it_in_setup_saying_why(backend: str) -> None:
    spec = Spec("mobilenet_v3_small", backend, BY_NAME[backend].modes[-1], 32,
                precision="bf16")
    with pytest.raises(ConversionError) as refused:
        backends.load(backend).setup(spec)
    message = str(refused.value)
    assert message == (f"{backend} runs fp32 only, not 'bf16': "
                       f"{BY_NAME[backend].precision_note}")
    assert "\n" not in message


@pytest.mark.parametrize("backend", WITHOUT_BF16)
def test_run_with_bf16_on_a_runtime_without_it_is_one_line_and_stores_nothing(
        run_cli, tmp_path, backend: str) -> None:
    result = run_cli("run", "mobilenet_v3_small", "--backend", backend, "--precision", "bf16",
                     "--db", "never.db")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"xlabench: error: {backend} runs fp32 only, not 'bf16': "
                     f"{BY_NAME[backend].precision_note}"]
    assert not (tmp_path / "never.db").exists()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "executorch"])  # a TF and a torch export
def test_a_worker_asked_for_bf16_on_a_runtime_without_it_writes_a_failed_record(
        backend: str) -> None:
    """The worker path (a sweep never asks: the table's precisions decide)."""
    spec = Spec("mobilenet_v3_small", backend, "compiled", 32, batch_size=1,
                precision="bf16", measure=QUICK)
    record = run_isolated(spec, timeout_s=600)
    assert record.status is Status.FAILED
    assert record.error.startswith(f"ConversionError: {backend} runs fp32 only, not 'bf16': ")
    assert "\n" not in record.error
