"""The scheduler without real workers: interleaving, how many processes, re-runs of flagged
processes, sampling relaxation, resume of a half-done result, failures (the real-worker path is
covered by tests/sweep/test_sweep_real.py and bench/)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.sweep.conftest import ScriptedExecutor
from xlabench.core import Status
from xlabench.core.result import ResultPolicy
from xlabench.store import ResultStore
from xlabench.sweep import build_config, run_result, run_sweep
from xlabench.sweep.schedule import ResultProcesses, Scheduler


def _config(tmp_path: Path, **overrides):
    values = {"models": "mobilenet_v3_small,resnet50", "resolutions": "32",
              "backends": "tensorflow", "db": str(tmp_path / "r.db"), "processes": 3,
              "max_processes": 3, **overrides}
    return build_config(overrides=values)


def _order(executor: ScriptedExecutor) -> list[str]:
    return [label.split(" ")[0].split("@")[0] + "/" + label.split(" ")[2].split("/")[1]
            for label in executor.asked]


def test_modes_of_a_model_run_interleaved_in_rounds(tmp_path: Path, record_factory) -> None:
    executor = ScriptedExecutor(record_factory)
    summary = run_sweep(_config(tmp_path), io.StringIO(), executor=executor)
    first = _order(executor)[0].split("/")[0]
    one_round = [f"{first}/eager", f"{first}/graph", f"{first}/xla"]
    assert _order(executor)[:9] == one_round * 3  # A B C A B C A B C, not A A A B B B
    assert summary.ok == 6 and summary.ran == 18
    with ResultStore(tmp_path / "r.db") as store:
        results = store.combined()
        rows = store.rows(model="mobilenet_v3_small", mode="xla")
    assert len(results) == 6 and all(r.k == 3 and r.between_processes for r in results)
    assert [r["process_round"] for r in rows] == [0, 1, 2]
    assert [r["process_index"] for r in rows] == [0, 1, 2]


def test_more_processes_while_the_interval_is_too_wide(tmp_path: Path, record_factory) -> None:
    noisy = [100.0, 130.0, 80.0, 110.0, 95.0, 105.0, 120.0, 90.0]
    executor = ScriptedExecutor(record_factory, script=lambda spec, n: (
        noisy[n] if spec.mode == "xla" else 100.0 + 0.1 * n, 0.0))
    config = _config(tmp_path, models="mobilenet_v3_small", max_processes=6,
                     result_target_ci=0.03, result_budget=1000)
    run_sweep(config, io.StringIO(), executor=executor)
    with ResultStore(tmp_path / "r.db") as store:
        by_mode = {store.processes(r.result_id)[0].spec.mode: r for r in store.combined()}
    assert by_mode["xla"].k == 6 and not by_mode["xla"].target_met  # the maximum, still wide
    assert by_mode["eager"].k == 3 and by_mode["eager"].target_met  # tight after 3


def test_the_budget_stops_adding_processes(tmp_path: Path, record_factory) -> None:
    noisy = [100.0, 130.0, 80.0, 110.0, 95.0, 105.0]
    executor = ScriptedExecutor(record_factory, script=lambda spec, n: (noisy[n], 0.0))
    config = _config(tmp_path, models="mobilenet_v3_small", modes="xla", max_processes=6,
                     result_budget=8)  # each scripted process takes 2 s
    run_sweep(config, io.StringIO(), executor=executor)
    with ResultStore(tmp_path / "r.db") as store:
        (result,) = store.combined()
    assert result.k == 4  # 3 + one more (6 s + 2 s <= 8 s), then the budget is spent


def test_flagged_processes_are_rerun_at_the_end(tmp_path: Path, record_factory) -> None:
    busy_first = {0: 0.5, 1: 0.4}  # the first two xla processes ran beside a CPU hog
    executor = ScriptedExecutor(record_factory, script=lambda spec, n: (
        (20.0, busy_first[n]) if (spec.model, spec.mode) == ("mobilenet_v3_small", "xla")
        and n in busy_first else (100.0, 0.01)))
    summary = run_sweep(_config(tmp_path), io.StringIO(), executor=executor)
    order = _order(executor)
    assert order.count("mobilenet_v3_small/xla") == 5  # 3, then 2 re-runs after the grid
    assert order[-2:] == ["mobilenet_v3_small/xla", "mobilenet_v3_small/xla"]
    assert summary.flagged_processes == 2 and summary.flagged == 0
    with ResultStore(tmp_path / "r.db") as store:
        xla = [r for r in store.combined() if store.processes(r.result_id)[0].spec.mode == "xla"
               and store.processes(r.result_id)[0].spec.model == "mobilenet_v3_small"]
    (result,) = xla
    assert (result.k, result.k_total, result.k_flagged) == (3, 5, 2)
    assert result.median_sps == pytest.approx(100.0) and not result.flagged


def test_what_stays_flagged_is_marked(tmp_path: Path, record_factory) -> None:
    executor = ScriptedExecutor(record_factory, script=lambda spec, n: (20.0, 0.6))
    config = _config(tmp_path, models="mobilenet_v3_small", modes="xla", rerun_flagged=1)
    summary = run_sweep(config, io.StringIO(), executor=executor)
    assert len(executor.asked) == 4  # 3 + one bounded re-run round
    with ResultStore(tmp_path / "r.db") as store:
        (result,) = store.combined()
        (row,) = store.result_rows()
    assert result.flagged and summary.flagged == 1
    assert row["interference"].startswith("every process was measured under interference")


def test_sampling_is_relaxed_once_the_spread_between_processes_is_known(
    tmp_path: Path, record_factory
) -> None:
    spread = [100.0, 120.0, 85.0, 110.0]
    executor = ScriptedExecutor(record_factory, script=lambda spec, n: (spread[n], 0.0))
    config = _config(tmp_path, models="mobilenet_v3_small", modes="xla", processes=4,
                     max_processes=4)
    run_sweep(config, io.StringIO(), executor=executor)
    assert executor.targets[:2] == [None, None]
    relaxed = [float(t) for t in executor.targets[2:]]
    assert all(target > 0.05 for target in relaxed)  # half of a ~17% spread
    with ResultStore(tmp_path / "r.db") as store:
        records = store.records(mode="xla")
    assert records[2].process.sampling_target_rel_ci == pytest.approx(relaxed[0], abs=1e-6)
    assert "between-process spread" in records[2].process.sampling_reason


def test_a_killed_sweep_continues_its_half_done_result(tmp_path: Path, record_factory) -> None:
    config = _config(tmp_path, models="mobilenet_v3_small", modes="xla")
    first = ScriptedExecutor(record_factory)
    run_sweep(config, io.StringIO(), executor=first)
    with ResultStore(tmp_path / "r.db") as store:  # as if killed after two processes
        (result,) = store.combined()
        store._conn.execute("DELETE FROM combined_results")
        ids = [r["id"] for r in store.rows()]
        store._conn.execute("DELETE FROM results WHERE id = ?", (ids[-1],))
    again = ScriptedExecutor(record_factory)
    run_sweep(config, io.StringIO(), executor=again)
    assert len(again.asked) == 1  # only the missing third process
    with ResultStore(tmp_path / "r.db") as store:
        (resumed,) = store.combined()
    assert resumed.result_id == result.result_id and resumed.k == 3


def test_a_failed_process_ends_its_configuration(tmp_path: Path, record_factory) -> None:
    executor = ScriptedExecutor(record_factory, fail={"resnet50_v1": Status.CRASHED})
    summary = run_sweep(_config(tmp_path, modes="xla"), io.StringIO(), executor=executor)
    assert _order(executor).count("resnet50_v1/xla") == 1
    assert summary.failed[("crashed", "crashed on purpose")] == 1 and summary.ok == 1


def test_run_result_is_one_configuration_of_several_processes(
    tmp_path: Path, record_factory
) -> None:
    from xlabench.core import Spec

    spec = Spec("mobilenet_v3_small", "jax", "xla", 32)
    executor = ScriptedExecutor(record_factory, script=lambda s, n: (100.0 + n, 0.0))
    with ResultStore(tmp_path / "r.db") as store:
        result, records = run_result(spec, store, ResultPolicy(), io.StringIO(), 60.0, executor)
        assert [r.process.index for r in records] == [0, 1, 2]
        assert store.combined()[0].result_id == result.result_id
    assert result.k == 3 and result.ci_confidence == 0.95


def test_groups_hold_the_modes_of_one_model() -> None:
    from xlabench.core import Spec

    specs = [Spec(m, b, mode, 32) for m in ("mobilenet_v3_small", "resnet50_v1")
             for b, mode in (("jax", "eager"), ("jax", "xla"))]
    scheduler = Scheduler([ResultProcesses(s, f"r{i}", ResultPolicy())
                           for i, s in enumerate(specs)])
    assert [[t.spec.model for t in g] for g in scheduler.groups] == [
        ["mobilenet_v3_small"] * 2, ["resnet50_v1"] * 2]
