"""Between-run variation: its estimate from re-runs, the interval that holds it, and where the
sweep and the analysis take it from (the store's re-runs of other configurations)."""

from __future__ import annotations

import io
import math
import random
from pathlib import Path

import pytest

from tests.conftest import make_record
from tests.unit.test_combine import _process
from xlabench.analysis import result_rows
from xlabench.analysis.load import load_results
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine, stats
from xlabench.store import ResultStore
from xlabench.sweep.run import stored_drift

SEED = 20261201


def _run(rng: random.Random, true_sps: float, k: int, run_sd: float, process_sd: float,
         ) -> list[float]:
    """k process medians of one run: the run has its own offset (the machine's state that
    hour, shared by its processes), each process its own on top."""
    offset = rng.gauss(0.0, run_sd)
    return [true_sps * math.exp(offset + rng.gauss(0.0, process_sd)) for _ in range(k)]


def _history(rng: random.Random, configurations: int, runs: int, run_sd: float,
             process_sd: float) -> list[list[list[float]]]:
    return [[_run(rng, 50.0 * (c + 1), 3, run_sd, process_sd) for _ in range(runs)]
            for c in range(configurations)]


def test_run_drift_recovers_the_between_run_sd() -> None:
    rng = random.Random(SEED)
    drift = combine.run_drift(_history(rng, 40, 4, run_sd=0.08, process_sd=0.03))
    assert drift is not None and drift.df == 40 * 3
    assert drift.configurations == 40 and drift.results == 160
    assert drift.rel_sd == pytest.approx(0.08, rel=0.2)
    # processes that scatter alone, runs that do not: (almost) nothing between runs
    calm = combine.run_drift(_history(rng, 40, 4, run_sd=0.0, process_sd=0.05))
    assert calm is not None and calm.rel_sd < 0.02


def test_run_drift_needs_re_runs() -> None:
    rng = random.Random(SEED)
    assert combine.run_drift([]) is None
    assert combine.run_drift([[_run(rng, 10.0, 3, 0.1, 0.02)]]) is None  # measured once
    # one configuration run twice: 1 df, below MIN_DRIFT_DF
    assert combine.run_drift(_history(rng, 1, 2, 0.1, 0.02)) is None
    # one-process results carry no spread of their own and are left out
    assert combine.run_drift([[[10.0], [12.0]], [[11.0], [9.0]]]) is None
    assert combine.run_drift(_history(rng, 2, 2, 0.1, 0.02)) is not None


def test_the_interval_with_drift_holds_re_runs_the_one_without_does_not() -> None:
    """Runs that differ by more than their processes do (run sd 8%, process sd 2%): the
    pairwise check of bench/interval_hold_rate.py. Without the drift a run's interval holds
    another run's estimate far less than 75% of the time; with the drift measured on *other*
    configurations it holds about 83-90% (both estimates vary)."""
    rng = random.Random(SEED + 1)
    drift = combine.run_drift(_history(rng, 20, 6, run_sd=0.08, process_sd=0.02))
    assert drift is not None
    runs = [_run(rng, 100.0, 3, 0.08, 0.02) for _ in range(600)]
    alone = [combine.log_t_interval(r) for r in runs]
    held = [combine.log_t_interval(r, drift=drift) for r in runs]

    def hold_rate(intervals: list[combine.Interval]) -> float:
        pairs = zip(intervals[::2], intervals[1::2], strict=True)
        return sum(a.low <= b.estimate <= a.high for a, b in pairs) / (len(intervals) // 2)

    assert hold_rate(alone) < 0.6
    assert 0.8 <= hold_rate(held) <= 0.97
    widths = [i.rel_halfwidth for i in held]
    # no wider than it needs to be: about t * sqrt(0.08^2 + 0.02^2 / 3), not the t of 2 df
    assert stats.median(widths) < 0.25
    assert "between-run variation" in held[0].method and "σ" in held[0].method


def test_satterthwaite_degrees_of_freedom() -> None:
    values = [100.0, 104.0, 98.0]
    plain = combine.log_t_interval(values)
    zero = combine.log_t_interval(values, drift=combine.RunDrift(0.0, 30, 5, 35))
    assert (zero.low, zero.high) == pytest.approx((plain.low, plain.high))
    big = combine.log_t_interval(values, drift=combine.RunDrift(0.01, 1000, 50, 1050))
    # the drift dominates and is well known: nearly the normal quantile on sqrt(var + se^2)
    logs = [math.log(v) for v in values]
    mean = sum(logs) / 3
    se2 = sum((x - mean) ** 2 for x in logs) / 2 / 3
    assert math.log(big.high / big.estimate) == pytest.approx(1.97 * math.sqrt(0.01 + se2),
                                                              rel=0.01)


def test_combine_keeps_the_run_interval_and_judges_the_target_on_it() -> None:
    processes = [_process(100.0, 0), _process(101.0, 1), _process(99.5, 2)]
    policy = ResultPolicy(min_processes=3, target_rel_ci=0.05)
    plain = combine.combine(processes, "r1", policy)
    drift = combine.RunDrift(0.06 ** 2, 12, 4, 16)
    held = combine.combine(processes, "r1", policy, drift=drift)
    assert held.median_sps == pytest.approx(plain.median_sps)
    assert (held.run_ci_low_sps, held.run_ci_high_sps) == (plain.ci_low_sps, plain.ci_high_sps)
    assert held.ci_low_sps < plain.ci_low_sps and held.ci_high_sps > plain.ci_high_sps
    assert held.drift_rel_sd == pytest.approx(0.06) and held.drift_results == 16
    assert held.target_met and plain.target_met  # ±1% between processes either way
    assert plain.drift_rel_sd is None and plain.run_ci_low_sps == plain.ci_low_sps
    # one process: no between-process interval, so nothing to add the drift to
    one = combine.combine(processes[:1], "r1", ResultPolicy(min_processes=1), drift=drift)
    assert one.drift_rel_sd is None and not one.between_processes


def _stored_result(store: ResultStore, spec_seed: int, result_id: str, medians: list[float],
                   flagged_last: bool = False, complete: bool = True,
                   as_the_sweep: bool = False) -> str:
    records = []
    for index, sps in enumerate(medians):
        other = 0.5 if flagged_last and index == len(medians) - 1 else 0.0
        record = _process(sps, index, other_frac=other, seed=spec_seed).replace(
            process=ProcessInfo(result_id=result_id, index=index, round=index))
        store.save(record)
        records.append(record)
    policy = ResultPolicy(min_processes=len(medians))
    drift = (stored_drift(store, records[0].env_id, records[0].spec_id, result_id)
             if as_the_sweep else None)
    result = combine.combine(records, result_id, policy, env_id=records[0].env_id, drift=drift)
    store.save_result(result, policy, complete=complete)
    return records[0].spec_id


def test_the_store_gives_re_runs_of_other_configurations(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        a = _stored_result(store, 1, "ra1", [100.0, 101.0, 99.0])
        _stored_result(store, 1, "ra2", [90.0, 91.0, 92.0])
        b = _stored_result(store, 2, "rb1", [50.0, 51.0, 49.0])
        _stored_result(store, 2, "rb2", [55.0, 54.0, 56.0])
        _stored_result(store, 2, "rb3", [55.0, 54.0, 20.0], flagged_last=True)  # not clean
        _stored_result(store, 2, "rb4", [52.0, 53.0, 51.0], complete=False)  # still running
        _stored_result(store, 3, "rc1", [10.0, 11.0, 12.0])  # measured once
        env = make_record().env_id
        assert store.drift_history(env, "")[0] == [[[100.0, 101.0, 99.0], [90.0, 91.0, 92.0]],
                                           [[50.0, 51.0, 49.0], [55.0, 54.0, 56.0]]]
        assert store.drift_history(env, a)[0] == [[[50.0, 51.0, 49.0],
                                                               [55.0, 54.0, 56.0]]]
        assert store.drift_history(env, b)[0][0][0] == [100.0, 101.0, 99.0]
        assert store.drift_history("elsewhere", "")[0] == []


def test_a_sweep_result_takes_the_drift_from_other_configurations(
    tmp_path: Path, record_factory: object
) -> None:
    """Two configurations re-run twice each are in the db; the third configuration's result
    (measured once) gets their between-run variation; theirs get each other's."""
    from tests.sweep.conftest import ScriptedExecutor
    from xlabench.sweep import run_result

    specs = [make_record(model=m).spec for m in ("resnet50_v1", "mobilenet_v3_small", "vgg16")]
    with ResultStore(tmp_path / "r.db") as store:
        policy = ResultPolicy(min_processes=3, max_processes=3)
        throughputs = iter([100, 101, 99, 80, 81, 79, 50, 51, 49, 60, 61, 59, 30, 31, 29])
        for spec in (specs[0], specs[0], specs[1], specs[1], specs[2]):
            executor = ScriptedExecutor(record_factory,
                                        script=lambda spec, n: (float(next(throughputs)), 0.0))
            result, _ = run_result(spec, store, policy, io.StringIO(), 60.0, executor=executor)
        assert result.drift_rel_sd is not None and result.drift_results == 4
        assert result.ci_low_sps < result.run_ci_low_sps
        assert "between-run variation" in result.ci_method
    rows = result_rows.every_result(load_results(tmp_path / "r.db"))
    last = rows.iloc[-1]
    assert last["drift_rel_sd"] == pytest.approx(result.drift_rel_sd)
    assert last["throughput_sps_ci_low"] == pytest.approx(result.ci_low_sps)


def _stored_in(store: ResultStore, result_id: str, env_id: str, packages: dict[str, str],
               medians: list[float]) -> None:
    """One tensorflow/xla result of `medians` in environment `env_id` (same machine)."""
    env = {"accelerator": "a100", "cpu_model": "test cpu", "packages": packages}
    records = [_process(sps, index).replace(
        env=env, env_id=env_id, process=ProcessInfo(result_id=result_id, index=index,
                                                    round=index))
        for index, sps in enumerate(medians)]
    for record in records:
        store.save(record)
    policy = ResultPolicy(min_processes=len(medians))
    store.save_result(combine.combine(records, result_id, policy, env_id=env_id), policy,
                      complete=True)


def test_re_runs_span_environments_that_differ_only_in_other_backends_packages(
    tmp_path: Path,
) -> None:
    base = {"keras": "3.15.1", "numpy": "2.4.6", "tensorflow": "2.21.0", "xlabench": "0.1.0"}
    with ResultStore(tmp_path / "r.db") as store:
        _stored_in(store, "r1", "e1", base, [100.0, 101.0, 99.0])
        # a runtime for another backend installed since: the same software for tensorflow
        _stored_in(store, "r2", "e2", {**base, "openvino": "2026.4.1"}, [90.0, 91.0, 92.0])
        # a new TensorFlow: not a re-run of the same thing
        _stored_in(store, "r3", "e3", {**base, "tensorflow": "2.22.0"}, [70.0, 71.0, 69.0])
        assert store.drift_history("e1", "")[0] == [[[100.0, 101.0, 99.0], [90.0, 91.0, 92.0]]]
        software = store.software_ids()
        assert len(set(software.values())) == 2
    frame = load_results(tmp_path / "r.db")
    assert frame["software_id"].nunique() == 2 and frame["env_id"].nunique() == 3


def test_a_configuration_with_noisy_processes_does_not_zero_the_pool() -> None:
    """Its between-run estimate (means' variance minus their se²) is mostly noise and can be
    far below 0; weighed by df like the others it pulled the quiet configurations' pool to 0
    (measured on torch compiled, processes ±40%). It is left out of the pool."""
    rng = random.Random(SEED + 4)
    quiet = _history(rng, 3, 6, run_sd=0.04, process_sd=0.01)
    # the same process medians in every run, in another order: equal means, large se²
    noisy = [[300.0, 600.0, 1200.0], [1200.0, 300.0, 600.0], [600.0, 1200.0, 300.0]] * 2
    alone = combine.run_drift(quiet)
    both = combine.run_drift([*quiet, noisy])
    assert alone is not None and both is not None and alone.rel_sd > 0.02
    assert (both.rel_sd, both.df, both.configurations) == (alone.rel_sd, 15, 3)
    with_it = sum(m.log_var * m.df for m in map(combine._between_run_moment,
                                                [*quiet, noisy])) / (4 * 5)
    assert with_it < 0  # what the pool was with it: truncated to 0


def test_config_drift_moderates_the_machine_pool_with_the_configurations_own_re_runs() -> None:
    pool = combine.RunDrift(0.05 ** 2, 30, 6, 36)
    # no re-runs of its own: the pool, but only as a prior of MACHINE_PRIOR_DF df
    prior = combine.config_drift([], pool)
    assert prior is not None and prior.log_var == pytest.approx(0.05 ** 2)
    assert prior.df == combine.MACHINE_PRIOR_DF and prior.own_results == 0
    # five of its own re-runs that differ by ~20%: they pull the estimate most of the way
    rng = random.Random(SEED + 2)
    own = [_run(rng, 100.0, 3, 0.20, 0.01) for _ in range(5)]
    moment = combine.run_drift([own])
    assert moment is not None
    moderated = combine.config_drift(own, pool)
    assert moderated is not None and moderated.df == combine.MACHINE_PRIOR_DF + 4
    expected = (4 * 0.05 ** 2 + 4 * moment.log_var) / 8
    assert moderated.log_var == pytest.approx(expected)
    assert moderated.results == 36 + 5 and moderated.own_results == 5
    assert "5 earlier results of this configuration" in moderated.describe()
    # a pool with fewer df than the prior weighs only what it has
    thin = combine.config_drift(own, combine.RunDrift(0.0, 2, 2, 4))
    assert thin is not None and thin.df == 2 + 4
    assert thin.log_var == pytest.approx(4 * moment.log_var / 6)
    # without a pool: the own re-runs alone, once they reach MIN_DRIFT_DF
    assert combine.config_drift(own[:2], None) is None
    alone = combine.config_drift(own[:3], None)
    assert alone is not None and alone.df == 2 and alone.configurations == 0
    assert combine.config_drift([], None) is None


def test_a_configuration_that_drifts_more_than_the_machine_is_held_by_its_own_re_runs() -> None:
    """Configurations drift differently on one machine (measured: 38% apart between sessions
    for one while the pool said 7%). Six re-runs of a configuration whose runs scatter twice as
    much as the machine's pool says (10% against 5%), each interval made as `run` makes it:
    with the pool alone every run's interval holds the others' figures about half the time;
    with its own earlier results the later runs reach the 0.75 of bench/interval_hold_rate.py.
    A calm configuration (3%) stays held and its later intervals get no wider than the pool's."""
    rng = random.Random(SEED + 3)
    pool = combine.run_drift(_history(rng, 6, 6, run_sd=0.05, process_sd=0.02))
    assert pool is not None

    def by_run(run_sd: float, moderated: bool) -> tuple[list[float], list[float]]:
        """Per run index: mean pairwise hold rate and median half-width over 400 sequences."""
        held: list[list[float]] = [[] for _ in range(6)]
        widths: list[list[float]] = [[] for _ in range(6)]
        for _ in range(400):
            runs = [_run(rng, 100.0, 3, run_sd, 0.02) for _ in range(6)]
            intervals = [combine.log_t_interval(medians, drift=(
                combine.config_drift(runs[:index], pool) if moderated else pool))
                for index, medians in enumerate(runs)]
            for index, a in enumerate(intervals):
                others = [b for b in intervals if b is not a]
                held[index].append(sum(a.low <= b.estimate <= a.high for b in others) / 5)
                widths[index].append(a.rel_halfwidth)
        return [sum(h) / len(h) for h in held], [stats.median(w) for w in widths]

    pool_only, _ = by_run(0.10, moderated=False)
    own, _ = by_run(0.10, moderated=True)
    assert max(pool_only) < 0.6
    assert min(own[4:]) >= 0.74 and all(o > p for o, p in zip(own, pool_only, strict=True))
    calm, calm_widths = by_run(0.03, moderated=True)
    _, calm_pool_widths = by_run(0.03, moderated=False)
    assert min(calm) >= 0.9
    assert calm_widths[-1] <= 1.05 * calm_pool_widths[-1]


def test_the_store_gives_a_configurations_own_re_runs_but_the_result_itself(
    tmp_path: Path,
) -> None:
    with ResultStore(tmp_path / "r.db") as store:
        a = _stored_result(store, 1, "ra1", [100.0, 101.0, 99.0])
        _stored_result(store, 1, "ra2", [90.0, 91.0, 92.0])
        _stored_result(store, 1, "ra3", [95.0, 94.0, 20.0], flagged_last=True)  # not clean
        _stored_result(store, 2, "rb1", [50.0, 51.0, 49.0])
        env = make_record().env_id
        assert store.drift_history(env, a, "new")[1] == [[100.0, 101.0, 99.0], [90.0, 91.0, 92.0]]
        # a sweep re-saving the result it is combining does not count it as its own re-run
        assert store.drift_history(env, a, "ra2")[1] == [[100.0, 101.0, 99.0]]
        assert store.drift_history("elsewhere", a, "new")[1] == []
        _stored_result(store, 2, "rb2", [40.0, 41.0, 39.0])
        # what the sweep reads, in one pass: the machine's other configurations and a's own
        assert store.drift_history(env, a, "ra2") == (
            [[[50.0, 51.0, 49.0], [40.0, 41.0, 39.0]]], [[100.0, 101.0, 99.0]])


def test_the_analysis_shows_each_result_as_the_sweep_stored_it(tmp_path: Path) -> None:
    """The report reads each interval as the sweep stored it: a result's own configuration
    counts with the results before it, never with itself or later ones."""
    with ResultStore(tmp_path / "r.db") as store:
        for index, medians in enumerate(([100.0, 101.0, 99.0], [80.0, 81.0, 79.0],
                                         [120.0, 119.0, 121.0], [100.0, 99.0, 101.0])):
            _stored_result(store, 1, f"ra{index}", medians, as_the_sweep=True)
    rows = result_rows.every_result(load_results(tmp_path / "r.db"))
    assert list(rows["drift_rel_sd"].isna()) == [True, True, True, False]
    own = [[100.0, 101.0, 99.0], [80.0, 81.0, 79.0], [120.0, 119.0, 121.0]]
    expected = combine.config_drift(own, None)
    assert expected is not None
    assert rows.iloc[-1]["drift_rel_sd"] == pytest.approx(expected.rel_sd)
    latest = result_rows.latest_per_config(load_results(tmp_path / "r.db"))
    assert latest.iloc[-1]["drift_rel_sd"] == pytest.approx(expected.rel_sd)
