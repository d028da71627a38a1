"""Checks shared by the runtime worker tests."""

from __future__ import annotations

from xlabench.core import Status


def assert_runtime_measured(record) -> None:
    """Measured, with parity against Keras eager on the exporting backend (same weights, same
    input) within fp32 rounding."""
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    assert record.throughput is not None and record.throughput.median_sps > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    assert record.parity is not None and record.parity.reference_mode == "keras_eager"
    assert record.parity.passed and record.parity.max_rel_diff < 1e-4, record.parity
