"""`xlabench compare`: sides, ratios with intervals, verdicts, environment differences, formats,
the CI gate, and bad input that leaves every database byte-identical.

Databases are built through the store API: synthetic process records (tests/conftest.py),
combined with `combine.combine` and stored with `save_result`, as a sweep stores them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import make_record
from xlabench.analysis import compare as cmp
from xlabench.core import Status, UserError
from xlabench.core.record import ProcessInfo
from xlabench.core.result import ResultPolicy
from xlabench.measure import combine
from xlabench.measure.combine import RatioInterval
from xlabench.store import ResultStore

POLICY = ResultPolicy(min_processes=2)
ENV = {"accelerator": "cpu", "cpu_model": "test cpu", "cpu_threads": 2, "python": "3.11.2",
       "os": "Linux 6.1", "packages": {"tensorflow": "2.20.0", "jax": "0.10.2", "torch": None},
       "flags": {}}
#: The configurations of the synthetic databases: (backend, mode).
CONFIGS = {"tf_xla": ("tensorflow", "xla"), "tf_graph": ("tensorflow", "graph"),
           "jax_xla": ("jax", "xla"), "torch_eager": ("torch", "eager"),
           "torch_compiled": ("torch", "compiled"), "tf_eager": ("tensorflow", "eager")}
_COUNTER = iter(range(1_000_000))
#: The between-run variation most stored results carry here: 0.5%, well known (df 40).
MACHINE = combine.RunDrift(log_var=0.005**2, df=40.0, configurations=5, results=45)
NO_DRIFT = combine.RunDrift(log_var=0.0, df=0.0, configurations=0, results=0)


def store_result(
    db: Path, config: str, medians: Sequence[float], *, label: str | None = None,
    sweep_id: str | None = None, env: dict | None = None, env_id: str = "e1",
    status: Status = Status.OK, hour: int = 0, complete: bool = True,
    result_id: str | None = None, drift: combine.RunDrift | None = None,
) -> str:
    """One result of `config`: a process per median (rounds 0, 1, ...), combined and stored,
    with a small between-run variation (MACHINE: as if the database held re-runs) unless
    `drift` says otherwise (NO_DRIFT: none known)."""
    backend, mode = CONFIGS[config]
    result_id = result_id or f"r{next(_COUNTER)}"
    records = []
    for index, median in enumerate(medians):
        record = make_record(backend=backend, mode=mode, throughput=median, status=status)
        records.append(record.replace(
            env=dict(env or ENV), env_id=env_id, duration_s=60.0,
            started_at=f"2026-12-01T{hour:02d}:{index:02d}:00+00:00",
            process=ProcessInfo(result_id=result_id, index=index, round=index)))
    with ResultStore(db) as store:
        for record in records:
            store.save(record, sweep_id or result_id, label)
        result = combine.combine(records, result_id, POLICY, env_id,
                                 MACHINE if drift is None else None if drift is NO_DRIFT else drift)
        store.save_result(result, POLICY, complete, sweep_id or result_id, label)
    return result_id


def labelled_db(db: Path) -> Path:
    """before/after in one database: one configuration of each verdict."""
    base = [100.0, 101.0, 99.0]
    cases = {
        "tf_xla": [120.0, 121.0, 119.0],  # faster
        "tf_graph": [80.0, 81.0, 79.0],  # slower
        "jax_xla": [100.5, 101.0, 99.5],  # same
        "torch_eager": [100.0, 130.0, 80.0],  # inconclusive
        "torch_compiled": [100.0],  # insufficient: one process
    }
    for config, new in cases.items():
        store_result(db, config, base, label="before", hour=1)
        store_result(db, config, new, label="after", hour=2)
    return db


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xlabench.cli.main", "compare", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------------------- verdicts
def _ratio(low: float, high: float) -> RatioInterval:
    return RatioInterval((low * high) ** 0.5, low, high, 0.0, 0.0, "test", 0)


@pytest.mark.parametrize(("low", "high", "expected"), [
    (0.80, 0.94, "slower"), (0.80, 0.95, "inconclusive"), (1.06, 1.20, "faster"),
    (1.05, 1.20, "inconclusive"), (0.95, 1.05, "same"), (0.97, 1.02, "same"),
    (0.94, 1.01, "inconclusive"), (0.90, 1.10, "inconclusive"),
])
def test_verdict_rules(low: float, high: float, expected: str) -> None:
    assert cmp.verdict(_ratio(low, high), 0.05) == expected
    assert cmp.verdict(None, 0.05) == "insufficient data"
    assert cmp.DEFAULT_THRESHOLD == 0.05


def test_each_verdict_from_process_medians(tmp_path: Path) -> None:
    db = labelled_db(tmp_path / "r.db")
    report = cmp.compare(cmp.Side(db, label="before"), cmp.Side(db, label="after"))
    verdicts = {p.spec["mode"] + "/" + p.spec["backend"]: p.verdict for p in report.pairs}
    assert verdicts == {"xla/tensorflow": "faster", "graph/tensorflow": "slower",
                        "xla/jax": "same", "eager/torch": "inconclusive",
                        "compiled/torch": "insufficient data"}
    # by effect, largest first (|log 0.8| > |log 1.2|), insufficient data last
    assert [p.verdict for p in report.pairs][:2] == ["slower", "faster"]
    assert report.pairs[-1].verdict == "insufficient data"
    assert "new has 1 process" in report.pairs[-1].reason
    assert report.summary() == {"faster": 1, "slower": 1, "same": 1, "inconclusive": 1,
                                "insufficient data": 1}
    slower = report.pairs[0]
    assert slower.estimate == pytest.approx(0.8, rel=1e-3)
    assert slower.ratio is not None and slower.ratio.method.startswith("welch t")
    assert report.env_differences == ()
    assert [p.spec_id for p in report.slowdowns(0.05)] == [slower.spec_id]
    assert report.slowdowns(0.25) == []


def test_separate_runs_need_a_between_run_variation(tmp_path: Path) -> None:
    """Fresh databases know how processes of one run differ, not how runs do: no verdict
    but inconclusive; one side's between-run variation serves both."""
    base, new, one = tmp_path / "base.db", tmp_path / "new.db", tmp_path / "one.db"
    store_result(base, "tf_graph", [100.0, 101.0, 99.0], drift=NO_DRIFT)
    store_result(new, "tf_graph", [80.0, 81.0, 79.0], drift=NO_DRIFT, hour=3)
    pair = cmp.compare(cmp.Side(base), cmp.Side(new)).pairs[0]
    assert pair.verdict == "inconclusive" and pair.reason == cmp.NO_BETWEEN_RUNS
    assert pair.ratio is not None and pair.ratio.ratio_high < 0.95  # within one run: clear
    wide = combine.RunDrift(log_var=0.04**2, df=20.0, configurations=4, results=30)
    store_result(one, "tf_graph", [100.0, 101.0, 99.0], drift=wide)
    borrowed = cmp.compare(cmp.Side(one), cmp.Side(new)).pairs[0]
    assert borrowed.verdict == "slower" and borrowed.reason == ""
    # both runs vary by σ 4%: the interval is wider than one run's 4% alone would make it
    assert borrowed.ratio is not None
    assert borrowed.ratio.ratio_high / borrowed.ratio.ratio_low > 1.22  # ~exp(4 * 0.04 * √2)


def test_the_latest_complete_result_of_a_side_is_its_figure(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store_result(db, "tf_xla", [100.0, 101.0, 99.0], label="before", hour=1)
    store_result(db, "tf_xla", [50.0, 51.0, 49.0], label="after", hour=2)
    store_result(db, "tf_xla", [100.0, 101.0, 99.0], label="after", hour=3)  # latest: same
    store_result(db, "tf_xla", [10.0, 11.0], label="after", hour=4, complete=False)  # killed
    (pair,) = cmp.compare(cmp.Side(db, label="before"), cmp.Side(db, label="after")).pairs
    assert pair.verdict == "same" and pair.new.median_sps == pytest.approx(100.0, rel=1e-3)


def test_a_failed_side_is_insufficient_data(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store_result(db, "tf_xla", [100.0, 101.0], label="before")
    store_result(db, "tf_xla", [100.0], label="after", status=Status.TIMEOUT, hour=1)
    (pair,) = cmp.compare(cmp.Side(db, label="before"), cmp.Side(db, label="after")).pairs
    assert pair.verdict == "insufficient data" and pair.estimate is None
    assert pair.reason.startswith("new timeout")


def test_legacy_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    store_result(a, "tf_xla", [100.0, 101.0])
    store_result(b, "tf_xla", [100.0, 101.0])
    with ResultStore(b) as store:  # a row from before results had processes: no result id
        store.save(make_record(backend="tensorflow", mode="graph"), "old")
    report = cmp.compare(cmp.Side(a), cmp.Side(b))
    assert len(report.pairs) == 1
    assert report.to_dict()["not_compared"]["legacy_new"] == 1


# ----------------------------------------------------------------------------- pairing
def _two_envs(db: Path, *, new_hour: int, base: Sequence[float], new: Sequence[float]) -> None:
    """The same configuration in two environments of one sweep (a Ray sweep over two nodes)."""
    store_result(db, "tf_xla", base, sweep_id="s1", env_id="aa11", hour=1)
    newer = {**ENV, "cpu_threads": 1, "packages": {**ENV["packages"], "tensorflow": "2.21.0"},
             "flags": {"XLA_FLAGS": "--xla_cpu_use_thunk_runtime=false"}}
    store_result(db, "tf_xla", new, sweep_id="s1", env_id="bb22", env=newer, hour=new_hour)
    store_result(db, "tf_graph", base, sweep_id="s1", env_id="bb33", hour=1)  # 'b' ambiguous


def test_results_interleaved_in_one_sweep_are_paired_by_round(tmp_path: Path) -> None:
    """The machine drifts round by round, hitting both environments' processes of a round:
    the paired ratio cancels it; the unpaired one cannot tell."""
    drift = [1.0, 0.8, 0.6, 0.9, 0.7]
    base = [100.0 * d for d in drift]
    new = [90.0 * d * (1.0 + 0.002 * (-1) ** i) for i, d in enumerate(drift)]
    db = tmp_path / "r.db"
    _two_envs(db, new_hour=1, base=base, new=new)
    (pair,) = cmp.compare(cmp.Side(db, env="aa11"), cmp.Side(db, env="bb22")).pairs
    assert pair.ratio is not None and pair.ratio.method.startswith("confidence sequence")
    assert "round-matched" in pair.ratio.method
    assert pair.ratio.n_pairs == 5
    assert pair.ratio.ratio_low <= 0.9 <= pair.ratio.ratio_high
    assert pair.verdict == "slower"

    # the same grid swept again hours later has the same sweep id: not paired
    later = tmp_path / "later.db"
    _two_envs(later, new_hour=9, base=base, new=new)
    (pair,) = cmp.compare(cmp.Side(later, env="aa11"), cmp.Side(later, env="bb22")).pairs
    assert pair.ratio is not None and pair.ratio.method.startswith("welch t")
    assert pair.verdict == "inconclusive"


def test_environment_differences_are_listed(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _two_envs(db, new_hour=1, base=[100.0, 101.0], new=[100.0, 101.0])
    report = cmp.compare(cmp.Side(db, env="aa11"), cmp.Side(db, env="bb22"))
    assert [d.text for d in report.env_differences] == [
        "cpu_threads 2 -> 1", "tensorflow 2.20.0 -> 2.21.0",
        "XLA_FLAGS (unset) -> --xla_cpu_use_thunk_runtime=false",
    ]
    # an environment id may be given by a unique prefix, not by an ambiguous one
    assert len(cmp.compare(cmp.Side(db, env="aa"), cmp.Side(db, env="bb22")).pairs) == 1
    with pytest.raises(UserError, match="ambiguous"):
        cmp.compare(cmp.Side(db, env="aa11"), cmp.Side(db, env="b"))


def test_environment_differences_of_several_environments_per_side() -> None:
    one, two = dict(ENV), {**ENV, "python": "3.12.1"}
    (diff,) = cmp.environment_differences([one, two], [two])
    assert diff.text == "python 3.11.2, 3.12.1 -> 3.12.1"
    assert cmp.environment_differences([one], []) == []


# -------------------------------------------------------------------------------- the CLI
def test_compare_imports_no_pandas() -> None:
    """compare reads SQLite and the stored Results only; pandas (the report's) stays unloaded,
    so `xlabench compare` in a CI gate does not pay for importing it."""
    code = ("import sys, xlabench.analysis.compare, xlabench.cli.compare_commands; "
            "sys.exit('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr or "pandas was imported"


def test_json_table_and_csv(tmp_path: Path) -> None:
    db = labelled_db(tmp_path / "r.db")
    sides = (str(db), "--baseline-label", "before", "--label", "after")
    done = _cli(*sides, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["threshold"] == 0.05
    assert set(data) >= {"threshold", "pairs", "environment_differences", "summary"}
    assert data["summary"] == {"faster": 1, "slower": 1, "same": 1, "inconclusive": 1,
                               "insufficient data": 1}
    pair = data["pairs"][0]
    assert set(pair) >= {"spec_id", "model", "backend", "mode", "resolution", "batch_size",
                         "precision", "runner", "baseline", "new", "ratio", "ratio_low",
                         "ratio_high", "method", "verdict"}
    assert set(pair["baseline"]) >= {"sps", "ci_low", "ci_high", "k"}
    assert (pair["verdict"], pair["runner"], pair["baseline"]["k"]) == ("slower", "python", 3)
    assert pair["ratio_low"] < pair["ratio"] < pair["ratio_high"] < 0.95

    table = _cli(*sides, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "baseline sps [CI]" in table.stdout and "ratio [CI]" in table.stdout
    assert lines[-1] == ("1 faster, 1 slower, 1 same, 1 inconclusive, 1 insufficient data "
                         "(threshold 5%)")
    assert "environment differences: none" in table.stdout

    rows = list(csv.DictReader(io.StringIO(_cli(*sides, "--format", "csv", cwd=tmp_path).stdout)))
    assert len(rows) == 5 and rows[0]["verdict"] == "slower"
    assert float(rows[0]["new_sps"]) == pytest.approx(80.0, rel=1e-3)

    # a wider threshold: the 20% changes stay, nothing else moves into them
    wide = json.loads(_cli(*sides, "--format", "json", "--threshold", "25", cwd=tmp_path).stdout)
    assert wide["threshold"] == 0.25 and wide["summary"]["same"] == 3


def test_two_databases(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    store_result(a, "tf_xla", [100.0, 101.0, 99.0])
    store_result(a, "tf_graph", [100.0, 101.0, 99.0])  # only in the baseline
    store_result(b, "tf_xla", [120.0, 121.0, 119.0])
    done = _cli(str(a), str(b), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [p["verdict"] for p in data["pairs"]] == ["faster"]
    assert data["not_compared"]["only_baseline"] == 1


def test_fail_on_slowdown_exit_codes(tmp_path: Path) -> None:
    db = labelled_db(tmp_path / "r.db")
    sides = (str(db), "--baseline-label", "before", "--label", "after")
    failing = _cli(*sides, "--fail-on-slowdown", "5", "--format", "json", cwd=tmp_path)
    assert failing.returncode == 1
    json.loads(failing.stdout)  # stdout stays the report
    assert "slower by more than 5%" in failing.stderr and "tensorflow/graph" in failing.stderr
    passing = _cli(*sides, "--fail-on-slowdown", "25", cwd=tmp_path)
    assert passing.returncode == 0, passing.stderr
    # the other way round, the 20% slowdown is a speedup and the speedup a slowdown
    swapped = _cli(str(db), "--baseline-label", "after", "--label", "before",
                   "--fail-on-slowdown", "10", cwd=tmp_path)
    assert swapped.returncode == 1 and "tensorflow/xla" in swapped.stderr



def test_fail_on_slowdown_reads_the_verdict(tmp_path: Path) -> None:
    """Two fresh databases: the raw interval lies below 0.9, but the verdict is inconclusive
    (no between-run variation on either side), so the gate passes; with one side's
    between-run variation the verdict is slower and the gate fails."""
    base, new, known = tmp_path / "base.db", tmp_path / "new.db", tmp_path / "known.db"
    store_result(base, "tf_graph", [100.0, 101.0, 99.0], drift=NO_DRIFT)
    store_result(new, "tf_graph", [80.0, 81.0, 79.0], drift=NO_DRIFT, hour=3)
    report = cmp.compare(cmp.Side(base), cmp.Side(new))
    (pair,) = report.pairs
    assert pair.ratio is not None and pair.ratio.ratio_high < 0.9
    assert pair.verdict == "inconclusive" and report.slowdowns(0.10) == []
    fresh = _cli(str(base), str(new), "--fail-on-slowdown", "10", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    wide = combine.RunDrift(log_var=0.04**2, df=20.0, configurations=4, results=30)
    store_result(known, "tf_graph", [100.0, 101.0, 99.0], drift=wide)
    assert cmp.compare(cmp.Side(known), cmp.Side(new)).pairs[0].verdict == "slower"
    held = _cli(str(known), str(new), "--fail-on-slowdown", "10", cwd=tmp_path)
    assert held.returncode == 1 and "tensorflow/graph" in held.stderr

def _bad_inputs(folder: Path) -> list[tuple[list[str], str]]:
    db = str(folder / "r.db")
    other = str(folder / "other.db")
    return [
        ([db, "--baseline-label", "before", "--label", "aftr"],
         "unknown label 'aftr' in " + db + "; labels there: after, before"),
        ([db, "--baseline-env", "e1", "--env", "nope"], "unknown environment 'nope'"),
        ([db, other], "no configuration in common"),
        ([db, str(folder / "corrupt.db")], "corrupt.db is not an xlabench database (database disk"),
        ([db, str(folder / "notes.db")], "not an xlabench database"),
        ([db, str(folder / "foreign.db")], "not an xlabench database"),
        ([db, str(folder / "missing.db")], "no database at"),
        ([db, db, "--threshold", "0"], "threshold must be a percentage above 0 and below 100"),
        ([db, db, "--threshold", "100"], "threshold must be a percentage"),
        ([db, db, "--threshold", "-3"], "threshold must be a percentage"),
        ([db, db, "--threshold", "five"], "threshold must be a percentage"),
        ([db, other, "--fail-on-slowdown", "0"], "--fail-on-slowdown must be a percentage"),
        ([db], "one database: choose the sides"),
        ([db, db], "both sides are the same"),
        ([db, db, db], "one or two databases"),
    ]


def test_bad_input_is_one_line_exit_2_and_touches_nothing(tmp_path: Path) -> None:
    labelled_db(tmp_path / "r.db")
    store_result(tmp_path / "other.db", "tf_eager", [100.0, 101.0])
    (tmp_path / "notes.db").write_text("my notes, not a database\n")
    conn = sqlite3.connect(tmp_path / "foreign.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    good = (tmp_path / "r.db").read_bytes()
    (tmp_path / "corrupt.db").write_bytes(good[:100] + b"\x00garbage" * 600)
    before = _digest(tmp_path)
    for args, fragment in _bad_inputs(tmp_path):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("xlabench: error:"), (args, done.stderr)
        assert fragment in lines[0], (args, lines[0])
        assert "Traceback" not in done.stderr + done.stdout
        assert _digest(tmp_path) == before, args  # byte-identical, no file added or removed


def test_a_good_comparison_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    db = labelled_db(tmp_path / "r.db")
    before = _digest(tmp_path)
    assert _cli(str(db), "--baseline-label", "before", "--label", "after",
                cwd=tmp_path).returncode == 0
    assert _digest(tmp_path) == before


def test_an_unlabelled_database_says_so(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store_result(db, "tf_xla", [100.0, 101.0])
    with pytest.raises(UserError, match="has no labelled runs"):
        cmp.compare(cmp.Side(db, label="a"), cmp.Side(db, label="b"))


# ---------------------------------------------------------------------- labels are stored
def test_run_and_sweep_store_their_label(tmp_path: Path, record_factory) -> None:
    from tests.sweep.conftest import ScriptedExecutor
    from xlabench.core import Spec
    from xlabench.sweep import build_config, run_result, run_sweep

    config = build_config(overrides={"models": "mobilenet_v3_small", "resolutions": "32",
                                     "backends": "jax", "modes": "eager", "processes": 2,
                                     "db": str(tmp_path / "r.db")},
                          file_values={"label": "nightly-2026.12.01+abc"})
    assert config.label == "nightly-2026.12.01+abc"
    run_sweep(config, io.StringIO(), executor=ScriptedExecutor(record_factory))
    with ResultStore(config.db) as store:
        run_result(Spec("mobilenet_v3_small", "jax", "eager", 32), store, POLICY,
                   io.StringIO(), 60.0, ScriptedExecutor(record_factory), label="by-hand")
        rows = store.rows()
    assert {r["label"] for r in rows} == {"nightly-2026.12.01+abc", "by-hand"}
    conn = sqlite3.connect(config.db)
    labels = sorted(r[0] for r in conn.execute("SELECT label FROM combined_results"))
    conn.close()
    assert labels == ["by-hand", "nightly-2026.12.01+abc"]
    for bad in ("", "a b", "x" * 65, "ü"):
        with pytest.raises(UserError, match="label must be 1-64 characters"):
            build_config(overrides={"models": "mobilenet_v3_small", "label": bad})


# ------------------------------------------------------------------ one real end-to-end run
@pytest.mark.slow
def test_two_real_runs_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tiny real `run`s of one configuration, labelled before and after, then compared.
    The model's costs and the machine's peak are stored first: no worker counts or measures
    them (what the timing of this test would otherwise be spent on)."""
    from tests.sweep.conftest import seed_costs
    from xlabench.measure.peak import MatmulPeak
    from xlabench.runner import current_env_id

    env = {"JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the environment id the runs will have
    db = tmp_path / "r.db"
    seed_costs(db)
    peak = MatmulPeak("fp32", 100.0, 256, (256,), 10, 0.01, 1, "seeded", "test")
    with ResultStore(db) as store:
        store.put_peaks(current_env_id(), [peak.to_dict()])
    quick = ["mobilenet_v3_small", "--backend", "tensorflow", "--mode", "graph",
             "--resolution", "32", "--batch-size", "1", "--db", str(db), "--processes", "2",
             "--max-processes", "2", "--rerun-flagged", "0", "--budget", "1",
             "--min-sample-time", "0.02", "--timeout", "120"]
    for label in ("before", "after"):
        done = subprocess.run([sys.executable, "-m", "xlabench.cli.main", "run", *quick,
                               "--label", label], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env=dict(os.environ))
        assert done.returncode == 0, done.stderr[-2000:]
    done = _cli(str(db), "--baseline-label", "before", "--label", "after", "--format", "json",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (pair,) = json.loads(done.stdout)["pairs"]
    assert pair["verdict"] in cmp.VERDICTS
    assert (pair["model"], pair["backend"], pair["mode"]) == ("mobilenet_v3_small", "tensorflow",
                                                               "graph")
    # two processes each; on a busy machine a flagged one is left out when a clean one exists
    assert pair["baseline"]["k"] in (1, 2) and pair["new"]["k"] in (1, 2)
    assert (pair["verdict"] == "insufficient data") == (min(pair["baseline"]["k"],
                                                            pair["new"]["k"]) < 2)
