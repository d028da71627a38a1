"""What the worker tests share: the run they measure and the checks of a runtime's record."""

from __future__ import annotations

from xlabench.core import MeasureSettings, Spec, Status

QUICK = MeasureSettings(min_sample_s=0.02, budget_s=2.0, warmup_min_s=0.2, warmup_max_s=5.0,
                        latency_steps=5, min_samples=5)


def quick_spec(backend: str, mode: str, model: str = "mobilenet_v3_small") -> Spec:
    """A small model at 32 px, batch 2, measured briefly: the one run of each backend and mode
    that test_modes and each runtime's own tests check (`measured` runs it once)."""
    return Spec(model, backend, mode, 32, batch_size=2, measure=QUICK)


def assert_runtime_measured(record) -> None:
    """Measured, with parity against Keras eager on the exporting backend (same weights, same
    input) within fp32 rounding."""
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.throughput is not None and record.throughput.median_sps > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    assert record.parity is not None and record.parity.reference_mode == "keras_eager"
    assert record.parity.passed and record.parity.max_rel_diff < 1e-4, record.parity
