"""Shared fixtures: synthetic records, a fresh database, the CLI as a subprocess."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from xlabench.core import Costs, Latency, Parity, Record, Spec, Status, Throughput, Warmup
from xlabench.core.result import ResultPolicy
from xlabench.runner import Placement, current_env_id
from xlabench.store import ResultStore

REPO = Path(__file__).resolve().parents[1]
#: CI (`.ci/run` sets CI=true): a test skipped for want of something `make setup` installs
#: fails instead, so a broken install cannot pass as skips.
STRICT_SKIPS = os.environ.get("CI") == "true"
#: Skip reasons that name something `make setup` (with `make browser`) installs, each with a
#: check that it is in fact missing: a reason may name a machine's limit as well ("needs two
#: cores and taskset"). The skips that stay skips under CI are the machine's own: one core
#: (tests/unit/test_merge.py, tests/sweep/test_ray_placement.py) and a CPU without bf16
#: inference in OpenVINO (tests/unit/test_runtimes.py).
MISSING_SETUP: tuple[tuple[re.Pattern[str], Callable[[], bool]], ...] = (
    # pytest.importorskip: the module cannot be imported, or is older than asked
    (re.compile(r"could not import '|module '[^']+' has __version__"), lambda: True),
    # the C++ runner, its runtimes, the PJRT plugin, IREE
    (re.compile(r"xlabench-native|xla-cpu-pjrt|not installed"), lambda: True),
    (re.compile(r"taskset"), lambda: shutil.which("taskset") is None),
    (re.compile(r"chromium", re.IGNORECASE), lambda: shutil.which("chromium") is None),
)


def missing_setup(reason: str) -> bool:
    """Whether a skip's reason is that something `make setup` installs is missing."""
    return any(pattern.search(reason) and missing() for pattern, missing in MISSING_SETUP)


def _fail_if_setup_is_missing(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not (STRICT_SKIPS and report.skipped) or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
    if missing_setup(reason):
        report.outcome = "failed"
        report.longrepr = (f"skipped under CI=true: {reason} (`make setup` installs it; a "
                           "broken install must not pass as skips)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    _fail_if_setup_is_missing(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield  # a module-level importorskip skips the whole module here
    _fail_if_setup_is_missing(outcome.get_result())  # type: ignore[attr-defined]
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


#: One process, no re-run: what a test of one worker process runs.
ONE_PROCESS = ResultPolicy(min_processes=1, max_processes=1, rerun_flagged=0)


def run_one_process(spec: Spec, store: ResultStore, timeout_s: float,
                    placement: Placement | None = None) -> Record:
    """One process of `spec` stored as production stores it: `run_result` (what `xlabench
    run` uses; a sweep runs the same dispatch loop) on the local executor, a real isolated
    worker. The device peak is seeded, not measured: no test here is about it."""
    from xlabench.sweep import run_result
    from xlabench.sweep.executors import LocalExecutor

    store.put_peaks(current_env_id(), [{"dtype": "fp32", "gflops_s": 1.0, "method": "test"}])
    executor = LocalExecutor(timeout_s, [placement or Placement()])
    _, (record,) = run_result(spec, store, ONE_PROCESS, io.StringIO(), timeout_s, executor)
    return record


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
