"""A crash, a hang, an OOM in one worker is a stored record; other results survive.

Each fault takes the path production takes (`tests.conftest.run_one_process`): the dispatch
loop of `run` and `sweep`, the local executor, a real isolated worker, the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_one_process
from xlabench.core import MeasureSettings, Spec, Status
from xlabench.runner import Placement
from xlabench.runner.isolate import _exit_status, oom_kill_count, oom_killer_ran_since
from xlabench.runner.worker import FAULT_ENV
from xlabench.store import ResultStore

pytestmark = pytest.mark.slow
QUICK = MeasureSettings(min_sample_s=0.02, budget_s=1.0, warmup_min_s=0.1, latency_steps=3)


def _spec(**kwargs) -> Spec:
    return Spec("mobilenet_v3_small", "jax", "eager", 32, batch_size=1, measure=QUICK, **kwargs)


@pytest.mark.parametrize(
    ("fault", "timeout_s", "status", "reason"),
    [
        ("segfault", 600, Status.CRASHED, "SIGSEGV"),
        ("exit", 600, Status.CRASHED, "exited with code 3"),
        ("sysexit", 600, Status.FAILED, "sys.exit(4) called while measuring"),
        ("badrecord", 600, Status.CRASHED, "the worker's record could not be read"),
        ("hang", 30, Status.TIMEOUT, "timed out after 30 s"),
        ("memoryerror", 600, Status.OOM, "out of host memory"),
        # the kernel's OOM killer did not run meanwhile (a kill by hand): not called an OOM
        ("sigkill", 600, Status.CRASHED, "killed by SIGKILL (out of memory, or killed by hand)"),
    ],
)
def test_faults_become_records(tmp_path: Path, record_factory, fault, timeout_s, status, reason):
    with ResultStore(tmp_path / "r.db") as store:
        earlier = record_factory()
        store.save(earlier)
        record = run_one_process(_spec(seed=hash(fault) % 1000), store, timeout_s,
                                 Placement(env={FAULT_ENV: fault}))
        assert record.status is status
        assert reason in record.error
        rows = store.rows()
        (result,) = store.combined()
    assert [r["status"] for r in rows] == ["ok", status.value]
    assert rows[0]["spec_id"] == earlier.spec_id
    assert rows[1]["error"] == record.error and rows[1]["family"] == "MobileNet_V3"
    assert result.status == status.value and result.result_id == record.process.result_id


def test_known_unsupported_combination_is_stored_as_unsupported(tmp_path: Path) -> None:
    spec = Spec("nasnet_mobile", "torch", "eager", 32, batch_size=1, measure=QUICK)
    with ResultStore(tmp_path / "r.db") as store:
        record = run_one_process(spec, store, 300)
        (row,) = store.rows()
    assert record.status is Status.UNSUPPORTED and "refuses NASNetMobile" in record.error
    assert row["status"] == "unsupported"


def test_a_sigkill_while_the_kernels_oom_killer_ran_is_stored_as_oom() -> None:
    """The kernel's count is what tells an OOM kill from a kill by hand (a real one: tf2onnx
    converting mixer_l16 on a 24 GB machine, docs/coverage.md; not reproducible in a test
    without filling the machine's memory)."""
    assert isinstance(oom_kill_count(), int)  # Linux 4.13+: /proc/vmstat has oom_kill
    assert not oom_killer_ran_since(oom_kill_count()) and not oom_killer_ran_since(None)
    assert oom_killer_ran_since(oom_kill_count() - 1)  # type: ignore[operator]
    status, reason = _exit_status(-9, "", oom_killer_ran=True)
    assert status is Status.OOM and "OOM killer" in reason and "out of host memory" in reason
    assert _exit_status(-9, "", oom_killer_ran=False)[0] is Status.CRASHED
    assert _exit_status(-11, "", oom_killer_ran=True)[0] is Status.CRASHED  # not a kill
