"""Orchestration without real workers: resume rules, costs, plan, progress, summary, pinning.

The executor here is a stand-in that returns synthetic records (no framework is faked: the
real-worker paths are covered by the slow tests beside this file).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.sweep.conftest import ScriptedExecutor
from xlabench.core import Spec, Status, UserError
from xlabench.core.record import ProcessInfo
from xlabench.runner import Placement, ensure_costs
from xlabench.store import ResultStore
from xlabench.sweep import (
    Sweep,
    build_config,
    cost,
    format_plan,
    format_summary,
    pace,
    run_sweep,
)
from xlabench.sweep.executors import (
    LocalExecutor,
    _overlapping,
    _parse_cpu_list,
    local_slots,
    split_cpus,
)
from xlabench.sweep.plan import nearest_in_size, needs_pace
from xlabench.sweep.progress import PlannedProcesses, Progress
from xlabench.sweep.trackers import Trackers, run_metrics, run_name
from xlabench.zoo import REGISTRY


def _config(tmp_path: Path, **overrides):
    # One process per result: these tests are about resume, costs and progress; the
    # multi-process scheduling has its own tests (test_schedule.py).
    values = {"models": "mobilenet_v3_small,resnet50", "resolutions": "32",
              "backends": "jax,torch", "modes": "eager", "db": str(tmp_path / "r.db"),
              "processes": 1}
    return build_config(overrides={**values, **overrides})


def test_resume_skips_ok_and_retries_failures(tmp_path: Path, record_factory) -> None:
    config = _config(tmp_path)
    failing = ScriptedExecutor(record_factory, fail={"resnet50_v1": Status.TIMEOUT})
    summary = run_sweep(config, io.StringIO(), executor=failing)
    assert (summary.ok, sum(summary.failed.values()), summary.done_before) == (2, 2, 0)
    assert summary.failed[("timeout", "timeout on purpose")] == 2

    again = ScriptedExecutor(record_factory)
    summary = run_sweep(config, io.StringIO(), executor=again)
    assert [label.split("@")[0] for label in again.asked] == ["resnet50_v1"] * 2
    assert (summary.ok, summary.done_before) == (2, 2)

    with ResultStore(config.db) as store:
        rows = store.rows()
    ok = [r["spec_id"] for r in rows if r["status"] == "ok"]
    assert len(ok) == len(set(ok)) == 4
    assert len({r["sweep_id"] for r in rows}) == 1  # the same grid keeps its sweep id


class _Killed(ScriptedExecutor):
    """Runs processes until `kill(finished, processes_before)` says so, then dies as a killed
    sweep does."""

    def __init__(self, record_factory, kill) -> None:
        super().__init__(record_factory)
        self.kill = kill
        self.finished = 0

    def run(self, specs, hooks):
        for finished in super().run(specs, hooks):
            if self.kill(finished, self.finished):
                raise KeyboardInterrupt
            self.finished += 1
            yield finished


def test_a_killed_sweep_keeps_the_results_it_had_finished(tmp_path: Path, record_factory) -> None:
    # ResNet50's result (it runs first) wants no more processes before MobileNetV3's first
    # starts: the kill leaves it complete, so the resume runs MobileNetV3 alone.
    config = _config(tmp_path, backends="jax")
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, io.StringIO(), executor=_Killed(
            record_factory, lambda finished, _: finished.spec.model == "mobilenet_v3_small"))
    again = ScriptedExecutor(record_factory)
    summary = run_sweep(config, io.StringIO(), executor=again)
    assert summary.done_before == 1
    assert [label.split()[0] for label in again.asked] == ["mobilenet_v3_small@32"]


def test_a_resumed_sweep_is_estimated_at_the_processes_it_lacks(
    tmp_path: Path, record_factory
) -> None:
    # two results of three processes each, killed after two: the resume's plan counts the
    # four processes left, each at its estimate of one
    config = _config(tmp_path, backends="jax", processes=3)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, io.StringIO(),
                  executor=_Killed(record_factory, lambda _, before: before == 2))
    resumed = ScriptedExecutor(record_factory)
    with Sweep(config, executor=resumed) as sweep:
        plan = sweep.plan
        sweep.run(io.StringIO())
    assert len(plan.todo) == 2
    assert sum(plan.processes_left.values()) == 2 * 3 - 2
    assert len(resumed.asked) == sum(plan.processes_left.values())  # what it planned, it ran


def test_asking_for_more_processes_adds_rounds_to_the_same_result(
    tmp_path: Path, record_factory
) -> None:
    """A complete result counts as done only for as many processes as it has: sweeping again
    with more continues it (the same result id, the next round), which is how two databases
    are measured interleaved, one round each in turn (bench/compare_verdicts.py)."""
    one = _config(tmp_path, models="mobilenet_v3_small", backends="jax")
    run_sweep(one, io.StringIO(), executor=ScriptedExecutor(record_factory))
    again = ScriptedExecutor(record_factory)
    assert run_sweep(one, io.StringIO(), executor=again).done_before == 1
    assert again.asked == []

    two = _config(tmp_path, models="mobilenet_v3_small", backends="jax", processes=2)
    more = ScriptedExecutor(record_factory)
    summary = run_sweep(two, io.StringIO(), executor=more)
    assert (len(more.asked), summary.done_before) == (1, 0)
    with ResultStore(two.db) as store:
        (result,) = store.combined()
        processes = store.processes(result.result_id)
    assert (result.k_total, sorted(p.process.round for p in processes)) == (2, [0, 1])
    assert len({p.process.result_id for p in processes}) == 1


class _Counter:
    """Stands in for the cost-counting process: returns `costs` and notes each spec asked."""

    def __init__(self, costs: dict) -> None:
        self.costs = costs
        self.asked: list[str] = []

    def __call__(self, spec: Spec) -> dict:
        self.asked.append(spec.label())
        return dict(self.costs)


COUNTED = {"params": 25_636_712, "macs_per_image": 4.1e9, "flops_per_image": 8.2e9,
           "method": "counted by the test"}


def _sweep_with_costs(config, record_factory, counter: _Counter, notes: list[str]) -> None:
    with Sweep(config, ScriptedExecutor(record_factory, params_only=True)) as sweep:
        sweep.count_costs(notes.append, counter)
        sweep.run(io.StringIO())


def test_costs_are_counted_once_per_model_and_resolution_before_the_run(
    tmp_path: Path, record_factory
) -> None:
    config = _config(tmp_path, backends="torch,jax", modes="eager,compiled,xla")
    counter, notes = _Counter(COUNTED), []
    _sweep_with_costs(config, record_factory, counter, notes)
    assert sorted(label.split("@")[0] for label in counter.asked) == [
        "mobilenet_v3_small", "resnet50_v1"]
    with ResultStore(config.db) as store:
        assert store.get_costs("resnet50_v1", 32)["macs_per_image"] == 4.1e9
        rows = store.rows()
    assert len(rows) == 8 and all(r["macs_per_image"] == 4.1e9 for r in rows)
    again = _Counter(COUNTED)
    with Sweep(config, ScriptedExecutor(record_factory)) as sweep:
        sweep.count_costs(notes.append, again)
    assert again.asked == []  # stored: never counted twice


def test_a_failed_cost_count_is_data_and_loses_no_result(tmp_path: Path, record_factory) -> None:
    config = _config(tmp_path, models="mobilenet_v3_small", modes="eager,xla")
    failing, notes = _Counter({"method": "unavailable: injected"}), []
    _sweep_with_costs(config, record_factory, failing, notes)
    assert len(failing.asked) == 1
    assert any("not counted (unavailable: injected)" in note for note in notes)
    with ResultStore(config.db) as store:
        records = store.records()
        assert store.get_costs("mobilenet_v3_small", 32)["macs_per_image"] is None
    assert len(records) == 3 and all(r.ok for r in records)
    assert all(r.costs.macs_per_image is None and r.costs.params for r in records)
    assert {r.costs.method for r in records} == {"unavailable: injected"}  # stored as data
    again = _Counter(COUNTED)
    with ResultStore(config.db) as store:  # the next run of the model tries again
        ensure_costs(store, [records[0].spec], counter=again)
        assert store.get_costs("mobilenet_v3_small", 32)["macs_per_image"] == 4.1e9
    assert len(again.asked) == 1


def test_dry_run_plan_estimates_from_history(tmp_path: Path, record_factory) -> None:
    db = tmp_path / "r.db"
    config = _config(tmp_path)
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as sweep:
        assert sweep.store is None and not db.exists()
        # no history anywhere: every registry model is estimated by the cost line, as it is
        ids = {s.spec_id() for s in sweep.plan.todo}
        assert sweep.plan.modelled == ids
        assert sweep.plan.estimate_s == {s.spec_id(): cost.spec_process_s(s)
                                         for s in sweep.plan.todo}
    with ResultStore(db) as store:
        for seconds in (10.0, 30.0, 20.0):
            old = record_factory(model="resnet50_v1", backend="torch", mode="eager",
                                 resolution=224, status=Status.FAILED)
            store.save(old.replace(duration_s=seconds))
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as sweep:
        text = format_plan(sweep.plan, config.db, sweep.env_ids)
    plan = sweep.plan
    measured = {s.spec_id() for s in plan.todo if (s.model, s.backend) == ("resnet50_v1",
                                                                           "torch")}
    assert {k: plan.estimate_s[k] for k in measured} == {k: 20.0 for k in measured}
    # the rest: the line, times how this machine's history compares with it (20 s against
    # the line's ResNet50 at 224 px), on torch/eager and, having none, on jax/eager too
    factor = 20.0 / cost.configuration_process_s("resnet50_v1", 224, 4)
    assert plan.modelled == {s.spec_id() for s in plan.todo} - measured
    for spec in plan.todo:
        if spec.spec_id() in plan.modelled:
            assert plan.estimate_s[spec.spec_id()] == pytest.approx(
                cost.spec_process_s(spec) * factor)
    assert "(3 from the cost line)" in text and "at least 1 processes each" in text
    assert "  jax/eager    2" in text and "  torch/eager  2" in text


def test_the_cost_line_is_scaled_by_the_models_family_where_it_has_run_here(
        tmp_path: Path, record_factory) -> None:
    # EfficientNet-B1 took three times the line here, B5 five times, ResNet50 once and VGG16
    # half: B2 and B6 (never run) are estimated at their nearest-sized kin's ratio (B1's and
    # B5's), MobileNetV3 (no kin here) at the engine's median.
    config = _config(tmp_path, models="efficient_b2,efficient_b6,mobilenet_v3_small",
                     backends="torch", resolutions="default")
    ratios = {("efficient_b1", 240): 3.0, ("efficient_b5", 456): 5.0, ("resnet50_v1", 224): 1.0,
              ("vgg16", 224): 0.5}
    with ResultStore(config.db) as store:
        for (model, resolution), ratio in ratios.items():
            line_s = cost.configuration_process_s(model, resolution, 4)
            old = record_factory(model=model, family=REGISTRY.get(model).family, backend="torch",
                                 mode="eager", resolution=resolution)
            store.save(old.replace(duration_s=ratio * line_s))
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as sweep:
        plan = sweep.plan
    by_model = {s.model: s for s in plan.todo}
    assert plan.modelled == {s.spec_id() for s in plan.todo}
    for model, factor in (("efficient_b2", 3.0), ("efficient_b6", 5.0),
                          ("mobilenet_v3_small", 2.0)):
        spec = by_model[model]
        assert plan.estimate_s[spec.spec_id()] == pytest.approx(cost.spec_process_s(spec) * factor)


def test_the_nearest_in_size_is_on_a_log_scale_and_keeps_ties() -> None:
    sizes = [1.0, 4.0, 16.0, None]
    assert nearest_in_size(sizes, 3.0, lambda s: s) == [4.0]
    assert nearest_in_size(sizes, 2.0, lambda s: s) == [1.0, 4.0]  # twice one, half four
    assert nearest_in_size(sizes, 100.0, lambda s: s) == [16.0]
    assert nearest_in_size([None], 1.0, lambda s: s) == []


def test_a_configuration_the_registry_rules_out_is_estimated_at_no_time(
        tmp_path: Path, record_factory) -> None:
    # ConvNeXt is flagged unsupported on ONNX Runtime: its worker stores the reason at once,
    # so neither history (a killed process of 398 s) nor the cost line may count for it.
    config = _config(tmp_path, models="convnext_tiny", resolutions="224",
                     backends="onnxruntime,openvino", modes="compiled")
    with ResultStore(config.db) as store:
        old = record_factory(model="convnext_tiny", backend="onnxruntime", mode="compiled",
                             resolution=224, status=Status.CRASHED)
        store.save(old.replace(duration_s=398.0))
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as sweep:
        plan = sweep.plan
    by_backend = {s.backend: s.spec_id() for s in plan.todo}
    assert plan.estimate_s[by_backend["onnxruntime"]] == 0.0
    assert by_backend["onnxruntime"] not in plan.modelled
    assert plan.estimate_s[by_backend["openvino"]] > 0 and by_backend["openvino"] in plan.modelled


def test_progress_lines_when_not_a_tty(record_factory) -> None:
    out = io.StringIO()
    progress = Progress(out, total=2, tty=False)
    ok = record_factory(mode="eager").replace(duration_s=4.0)
    bad = record_factory(status=Status.OOM).replace(duration_s=2.0)
    for record in (ok, bad):
        progress.started(record.spec)
        progress.record(record)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] resnet50_v1@224 b4 tensorflow/eager fp32: ok  100 samples/s")
    assert "ETA 4 s" in lines[0]
    assert lines[1].startswith("[2/2] resnet50_v1@224 b4 tensorflow/xla fp32: OOM  oom on purpose")


def test_progress_bar_on_a_tty(record_factory) -> None:
    out = io.StringIO()
    progress = Progress(out, total=4, workers=2, tty=True, columns=200)
    record = record_factory().replace(duration_s=10.0)
    progress.started(record.spec)
    progress.note("a warning")
    progress.record(record)
    text = out.getvalue()
    assert "running: resnet50_v1@224 b4 tensorflow/xla fp32" in text
    assert "\r\x1b[Ka warning\n" in text
    assert "1/4  25%  ETA 15 s" in text  # 3 left x 10 s / 2 workers


def test_progress_eta_follows_the_plan_when_slow_models_come_last(record_factory) -> None:
    """Two fast processes done, a slow configuration left: the mean so far (10 s) would say
    20 s; the plan says 2 x 100 s, and this sitting runs at 1.5x the plan's pace."""
    fast = record_factory(mode="eager").replace(duration_s=15.0)
    slow = record_factory(model="nasnet_large", mode="xla")
    planned = PlannedProcesses({fast.spec.spec_id(): 10.0, slow.spec.spec_id(): 100.0},
                               {fast.spec.spec_id(): 2, slow.spec.spec_id(): 2})
    out = io.StringIO()
    progress = Progress(out, total=4, tty=False, planned=planned)
    assert progress.eta_s() is None  # nothing finished: the plan's total is the caller's
    for _ in range(2):
        progress.started(fast.spec)
        progress.record(fast)
    assert progress.eta_s() == pytest.approx(2 * 100.0 * 1.5)
    unplanned = Progress(io.StringIO(), total=4, tty=False)
    for _ in range(2):
        unplanned.record(fast)
    assert unplanned.eta_s() == pytest.approx(2 * 15.0)  # no plan: the mean so far


def test_summary_groups_failures(tmp_path: Path, record_factory) -> None:
    config = _config(tmp_path)
    executor = ScriptedExecutor(record_factory, fail={"resnet50_v1": Status.CRASHED})
    text = format_summary(run_sweep(config, io.StringIO(), executor=executor))
    assert "4 configurations: 2 done now, 0 skipped (already done), 2 failed" in text
    assert "  crashed: 2\n    2 x crashed on purpose" in text


def test_tracker_failure_is_one_warning(tmp_path: Path, record_factory) -> None:
    class Broken:
        name = "broken"

        def log(self, row: dict) -> None:
            raise ConnectionError("server said no\nmore detail")

        def close(self) -> None:
            pass

    warnings: list[str] = []
    trackers = Trackers([Broken()], warnings.append)
    with ResultStore(tmp_path / "r.db") as store:
        store.save(record_factory())
        (row,) = store.result_rows()
    for _ in range(3):
        trackers.log(row)
    assert trackers.failures == {"broken": 3}
    assert warnings == ["broken could not log resnet50_v1@xla-True@res-224@device-a100: "
                        "ConnectionError: server said no (the sweep goes on; failures are "
                        "counted)"]


def test_tracker_that_cannot_start_is_a_warning(tmp_path: Path, record_factory) -> None:
    config = _config(tmp_path, log_mlflow=f"notascheme://{tmp_path}/nowhere")
    out = io.StringIO()
    summary = run_sweep(config, out, executor=ScriptedExecutor(record_factory), tty=False)
    assert summary.ok == 4
    warnings = [line for line in out.getvalue().splitlines() if "mlflow" in line]
    assert len(warnings) == 1 and warnings[0].startswith("mlflow logging is off:")


def test_run_name_and_metrics(record_factory, tmp_path: Path) -> None:
    record = record_factory(model="resnet50_v1", mode="xla", accelerator="a100")
    eager = record_factory(mode="eager", accelerator="cpu", resolution=64)
    with ResultStore(tmp_path / "r.db") as store:  # a tracker logs the store's result row
        store.save_many([record, eager])
        row, eager_row = store.result_rows()
    assert run_name(row) == "resnet50_v1@xla-True@res-224@device-a100"
    assert run_name(eager_row) == "resnet50_v1@xla-False@res-64@device-cpu"
    metrics = run_metrics(row)
    assert metrics["throughput_sps"] == 100.0 and metrics["gmacs_per_image"] == 4.1
    assert {"throughput_ci_low_sps", "latency_ms_p50", "compile_s", "params"} <= set(metrics)


def test_split_cpus() -> None:
    assert split_cpus([0, 1, 2, 3], 2) == [(0, 1), (2, 3)]
    assert split_cpus([0, 1, 2, 3, 4], 2) == [(0, 1), (2, 3)]  # the odd core stays free
    # hyper-thread siblings stay together: cores (0, 4) (1, 5) (2, 6) (3, 7)
    cores = [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert split_cpus(list(range(8)), 2, cores) == [(0, 1, 4, 5), (2, 3, 6, 7)]
    # more workers than cores: split the hyper-threads instead
    assert split_cpus([0, 1, 2, 3], 4, [(0, 2), (1, 3)]) == [(0,), (1,), (2,), (3,)]
    assert _parse_cpu_list("0-2,8\n") == {0, 1, 2, 8}


def test_local_slots_are_disjoint() -> None:
    assert local_slots(1) == [Placement()]
    slots = local_slots(2)
    assert len(slots) == 2 and slots[0].cpus and slots[1].cpus
    assert not set(slots[0].cpus) & set(slots[1].cpus)
    with pytest.raises(Exception, match="needs at least 1000 CPU cores"):
        local_slots(1000)


def test_overlap_includes_jobs_started_later() -> None:
    from xlabench.sweep.executors import _Job

    spec = Spec("resnet50_v1", "jax", "eager", 32)
    a = _Job(spec, 0.0, 10.0)
    b = _Job(Spec("resnet50_v1", "jax", "xla", 32), 5.0, 20.0)  # started after a
    c = _Job(Spec("resnet50_v1", "torch", "eager", 32), 11.0, 12.0)  # after a ended
    assert _overlapping(a, [a, b, c]) == (b.label,)
    assert set(_overlapping(b, [a, b, c])) == {a.label, c.label}
    assert isinstance(LocalExecutor(1.0, [Placement()]).env_ids()[0], str)


def test_ray_gpu_becomes_the_workers_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    from xlabench.runner import current_env_id
    from xlabench.sweep.executors import _ray_gpu_as_placement

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    plain_id = current_env_id()
    for visible, expected in (("3", Placement(gpu=3)),
                              ("", Placement(env={"CUDA_VISIBLE_DEVICES": ""}))):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        assert current_env_id() != plain_id  # what resume would compare without the fix
        with _ray_gpu_as_placement() as placement:
            assert placement == expected
            assert current_env_id() == plain_id  # the same id whichever GPU Ray picked
        assert os.environ["CUDA_VISIBLE_DEVICES"] == visible


class _TimedExecutor(ScriptedExecutor):
    """A ScriptedExecutor whose processes took the given wall times, in turn."""

    def __init__(self, record_factory, seconds: list[float], **kwargs) -> None:
        super().__init__(record_factory, **kwargs)
        self.seconds = list(seconds)

    def _record(self, spec: Spec):
        return super()._record(spec).replace(duration_s=self.seconds.pop(0))


def test_a_fresh_machine_plans_at_its_own_pace(tmp_path: Path, record_factory) -> None:
    # Tier 1 is over an hour at the line's pace, on a db with no history: worth a pilot.
    config = build_config("study-cpu", overrides={"tiers": "1", "db": str(tmp_path / "s.db")})
    executor = _TimedExecutor(record_factory, [30.0, 60.0, 40.0])
    notes: list[str] = []
    with Sweep(config, executor, dry_run=True) as sweep:
        at_line = sweep.plan
        assert at_line.fresh and needs_pace(at_line)
        assert "no history here: the line at" in format_plan(at_line, config.db)
        sweep.ensure_pace(notes.append)
        paced = sweep.plan
    assert executor.asked == [pace.PILOT.label()] * pace.PILOT_PROCESSES
    factor = 40.0 / pace.REFERENCE_PILOT_S  # the median pilot over the line machine's
    assert paced.pace is not None and paced.pace.factor == pytest.approx(factor)
    assert paced.modelled == at_line.modelled
    for key in at_line.modelled:
        assert paced.estimate_s[key] == pytest.approx(at_line.estimate_s[key] * factor)
    assert not needs_pace(paced)
    assert f"this machine's pace {factor:.2f}x the line's" in format_plan(paced, config.db)
    assert notes[0].startswith("no history on this machine: measuring its pace")

    with ResultStore(config.db) as store:  # one past process here: history, no pilot
        store.save(record_factory(backend="openvino", mode="compiled").replace(duration_s=9.0))
    again = _TimedExecutor(record_factory, [])
    with Sweep(config, again, dry_run=True) as sweep:
        assert not sweep.plan.fresh
        sweep.ensure_pace(notes.append)
        assert sweep.plan.pace is None and again.asked == []


def test_a_short_plan_or_failed_pilots_keep_the_line(tmp_path: Path, record_factory) -> None:
    with Sweep(_config(tmp_path), ScriptedExecutor(record_factory), dry_run=True) as sweep:
        assert sweep.plan.fresh and not needs_pace(sweep.plan)  # a minute of pilots: no
    failing = ScriptedExecutor(record_factory, fail={pace.PILOT.model: Status.CRASHED})
    notes: list[str] = []
    assert pace.measure_pace(failing, notes.append) is None
    assert len(failing.asked) == pace.PILOT_PROCESSES
    assert notes[-1] == "pace not measured: the estimate is the cost line's, at Zen 4's pace"



def test_a_configuration_run_only_on_another_machine_is_estimated_from_there(
        tmp_path: Path, record_factory) -> None:
    """This machine ran ResNet50 and MobileNetV3-Small in half the other's time; the other
    also ran DenseNet121: estimated here at half its time there, not by the cost line."""
    config = _config(tmp_path, models="resnet50,mobilenet_v3_small,densenet_121",
                     resolutions="224", backends="openvino", modes="compiled")
    other_db = tmp_path / "other.db"
    seconds = {"resnet50_v1": 40.0, "mobilenet_v3_small": 20.0, "densenet_121": 90.0}
    with ResultStore(other_db) as other, ResultStore(config.db) as here:
        for model, there_s in seconds.items():
            record = record_factory(model=model, backend="openvino", mode="compiled",
                                    resolution=224)
            other.save(record.replace(duration_s=there_s))
            if model != "densenet_121":
                here.save(record.replace(duration_s=there_s / 2))
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True,
               history_from=[str(other_db), config.db]) as sweep:
        text = format_plan(sweep.plan, config.db, sweep.env_ids)
    plan = sweep.plan
    (dense,) = [s.spec_id() for s in plan.todo if s.model == "densenet_121"]
    assert plan.borrowed == {dense} and not plan.modelled
    assert plan.estimate_s[dense] == pytest.approx(45.0)
    assert "(1 from another machine's history)" in text
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as alone:
        assert dense in alone.plan.modelled and not alone.plan.borrowed


def test_the_estimate_counts_the_processes_results_ran_here_beyond_their_minimum(
        tmp_path: Path, record_factory) -> None:
    """Of four past results here that ran their three processes, one ran two more (flagged
    ones run again): each result to run is estimated at 3.5 processes. A result that failed
    in its first process is no measure of that."""
    config = _config(tmp_path, models="mobilenet_v3_small", backends="jax", processes=3)
    past = record_factory(model="resnet50_v1", backend="jax", mode="eager", resolution=32)
    with ResultStore(config.db) as store:
        for result, processes in enumerate((3, 3, 3, 5, 1)):
            store.save_many([past.replace(process=ProcessInfo(f"r{result}", index),
                                          duration_s=30.0) for index in range(processes)])
    with Sweep(config, ScriptedExecutor(record_factory), dry_run=True) as sweep:
        plan = sweep.plan
        text = format_plan(plan, config.db, sweep.env_ids)
    (key,) = plan.process_s
    assert plan.extra_processes == pytest.approx(0.5)
    assert "at least 3 processes each and 0.5 more on average, as results ran here" in text
    assert plan.processes_left == {key: 3}  # what it runs: the minimum, then as the policy says
    assert plan.estimate_s[key] == pytest.approx(plan.process_s[key] * 3.5)


def test_history_from_a_file_that_is_no_database_is_one_line(tmp_path: Path,
                                                              record_factory) -> None:
    config = _config(tmp_path)
    bad = tmp_path / "notes.txt"
    bad.write_text("not sqlite")
    with pytest.raises(UserError, match=r"notes\.txt"):
        Sweep(config, ScriptedExecutor(record_factory), dry_run=True, history_from=[str(bad)])
    assert not Path(config.db).exists()
