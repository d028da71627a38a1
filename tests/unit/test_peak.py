"""The device's matmul peak: a real (small) measurement, stored once per environment."""

from __future__ import annotations

import importlib
import io
import math
from pathlib import Path

import pytest

from tests.sweep.conftest import ScriptedExecutor
from xlabench.measure import peak as peaklib
from xlabench.runner.isolate import Placement
from xlabench.store import ResultStore
from xlabench.sweep import build_config, run_sweep
from xlabench.sweep import run as sweep_run
from xlabench.sweep.executors import LocalExecutor

torch = pytest.importorskip("torch")
#: The module (the package exports a function of the same name).
execute = importlib.import_module("xlabench.runner.execute")
#: Small and few: a real matmul, not a benchmark (about a second on 2 cores).
SMALL = ("--sizes", "128,256", "--calls", "3")


def test_peak_is_a_real_matmul_with_its_method() -> None:
    peaks = peaklib.measure_peaks(sizes=(128, 256), calls=3)
    assert set(peaks) == {"fp32", "bf16"}
    for dtype, peak in peaks.items():
        assert peak.dtype == dtype and peak.source == f"measured matmul {dtype}"
        assert math.isfinite(peak.gflops_s) and peak.gflops_s > 0
        assert peak.size in (128, 256) and peak.sizes_tried[0] == 128 and peak.calls == 3
        # The figure is the FLOPs of the kept size over its median call, nothing else.
        assert peak.gflops_s == pytest.approx(2 * peak.size**3 / peak.median_s / 1e9)
        assert peak.threads == torch.get_num_threads() >= 1
        assert (peak.library, peak.library_version) == ("torch", torch.__version__)
        assert peaklib.MatmulPeak.from_dict(peak.to_dict()) == peak


def test_peak_is_measured_once_per_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        first = execute.ensure_peaks(store, "envA", worker_args=SMALL)  # a real worker process
        assert set(first) == {"fp32", "bf16"}
        stored = store.get_peaks("envA")
        assert {d: p["gflops_s"] for d, p in stored.items()} == {
            d: p.gflops_s for d, p in first.items()}
        assert stored["bf16"]["size"] in (128, 256) and stored["fp32"]["library"] == "torch"

        def measure_again(*args: object, **kwargs: object) -> None:
            raise AssertionError("measured again although the store has the peaks")

        monkeypatch.setattr(execute, "measure_peaks_isolated", measure_again)
        assert execute.ensure_peaks(store, "envA") == first
        assert store.get_peaks("envA") == stored
        with pytest.raises(AssertionError, match="measured again"):
            execute.ensure_peaks(store, "envB")  # another environment is measured


def test_a_failed_peak_stores_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "measure_peaks_isolated", lambda *a, **k: ({}, "no torch"))
    notes: list[str] = []
    with ResultStore(tmp_path / "r.db") as store:
        assert execute.ensure_peaks(store, "envA", note=notes.append) == {}
        assert store.all_peaks() == {}
    assert notes and "no torch" in notes[0]


def test_sweeps_measure_the_local_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record_factory
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(sweep_run, "ensure_peaks",
                        lambda store, env_id, note: calls.append(env_id) or {})
    with ResultStore(tmp_path / "r.db") as store:
        sweep_run.measure_local_peaks(store, LocalExecutor(1.0, [Placement()]), print)
    assert calls == [sweep_run.current_env_id()]
    config = build_config(overrides={"models": "resnet50_v1", "backends": "jax",
                                     "modes": "eager", "resolutions": "32", "processes": 1,
                                     "db": str(tmp_path / "s.db")})
    run_sweep(config, io.StringIO(), executor=ScriptedExecutor(record_factory), tty=False)
    assert calls == [sweep_run.current_env_id()]  # a test executor runs nothing: no peak
