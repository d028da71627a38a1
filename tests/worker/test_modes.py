"""Every backend and mode, for real: a small model, a tiny resolution, a real worker process."""

from __future__ import annotations

import pytest

from tests.worker.checks import quick_spec
from xlabench.core import BACKEND_MODES, Status
from xlabench.runner import count_costs

PAIRS = [(backend, mode) for backend, modes in BACKEND_MODES.items() for mode in modes]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("backend", "mode"), PAIRS, ids=[f"{b}-{m}" for b, m in PAIRS])
def test_mode_measures_for_real(measured, backend: str, mode: str) -> None:
    spec = quick_spec(backend, mode)
    record = measured(spec)
    assert record.status is Status.OK, f"{record.error}\n{record.error_detail}"
    tp = record.throughput
    assert tp is not None and tp.median_sps > 0
    assert tp.ci_low_sps <= tp.median_sps <= tp.ci_high_sps
    assert len(tp.sample_s) >= 3 and all(s > 0 for s in tp.sample_s)
    assert record.warmup is not None and record.warmup.first_call_s > 0
    assert record.latency is not None and record.latency.p50_ms > 0
    assert record.costs.params == 2_554_968
    assert record.env["accelerator"] == "cpu" and record.env["runtime"]["framework"] == backend
    assert record.env_id and record.sync and record.memory.peak_host_mb > 0
    if mode == "eager":
        assert record.parity is None
    else:
        assert record.parity is not None and record.parity.passed, record.parity
    if (backend, mode) == ("jax", "eager"):  # counted apart, once per model and resolution
        costs = count_costs(spec)
        assert costs["params"] == 2_554_968, costs
        assert costs["macs_per_image"] and costs["flops_per_image"]
    if (backend, mode) == ("jax", "xla"):
        assert set(record.warmup.compile_stages_s) == {"trace", "lower", "compile"}
    if backend == "tensorflow" and mode != "eager":
        assert record.backend_info["tracing_count"] == 1  # fixed signature: never retraced
    if (backend, mode) == ("torch", "compiled"):
        assert record.backend_info["unique_graphs"] >= 1
