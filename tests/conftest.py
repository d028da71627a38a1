"""Shared fixtures: synthetic records, a fresh database, the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from xlabench.core import Costs, Latency, Parity, Record, Spec, Status, Throughput, Warmup

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"

# Tests never touch the network; real-weight downloads are refused up front.
os.environ.setdefault("XLABENCH_OFFLINE", "1")
# The device peak (measured once per new database) small and stored on a busy machine too:
# tests run two at a time, and the full measurement takes half a minute.
os.environ.setdefault("XLABENCH_PEAK_ARGS", "--sizes 128 --calls 2 --allow-busy")


def make_record(
    model: str = "resnet50_v1",
    backend: str = "tensorflow",
    mode: str = "xla",
    throughput: float = 100.0,
    status: Status = Status.OK,
    accelerator: str = "a100",
    resolution: int = 224,
    family: str = "ResNet_V1",
    kind: str = "cnn",
    **spec_fields: object,
) -> Record:
    """A plausible record without running anything."""
    spec = Spec(model, backend, mode, resolution, **spec_fields)  # type: ignore[arg-type]
    if status is not Status.OK:
        return Record(spec=spec, status=status, error=f"{status.value} on purpose",
                      family=family, kind=kind, env={"accelerator": accelerator}, env_id="e1")
    samples = tuple(4 * 10 / (throughput * f) for f in (0.98, 0.99, 1.0, 1.01, 1.02))
    return Record(
        spec=spec, status=status, family=family, kind=kind,
        throughput=Throughput(throughput, throughput * 0.98, throughput * 1.02, 0.97, 0.02, True,
                              10, samples, 4000 / throughput),
        latency=Latency(10.0, 11.0, 12.0, (0.01, 0.011, 0.012)),
        warmup=Warmup(3.0, 2.9, 10, 1.0),
        parity=Parity("eager", 1e-6, 1e-7, 2e-3, True) if spec.mode != spec.baseline_mode else None,
        costs=Costs(params=25_636_712, macs_per_image=4.1e9, flops_per_image=8.2e9, method="test"),
        env={"accelerator": accelerator, "cpu_model": "test cpu"}, env_id="e1",
        sync="test sync", started_at="2026-11-30T00:00:00+00:00",
    )


@pytest.fixture
def record_factory() -> Callable[..., Record]:
    return make_record


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `xlabench ARGS` as a real subprocess in tmp_path."""

    def run(*args: str, timeout: float = 600, env: dict[str, str] | None = None):
        return subprocess.run(
            [sys.executable, "-m", "xlabench.cli.main", *args], cwd=tmp_path,
            capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
        )

    return run
