"""`xlabench ab`: the round loop on scripted processes (fast), bad input (fast), and real tiny
runs (slow): an A/A, a gated slowdown and a second virtual environment.

The real runs use mobilenet_v3_small at 32 px, batch 1, on TF graph, sampling half a second
per process, so each process takes a few seconds on an idle machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import sqlite3
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from xlabench.analysis.compare import Side as CompareSide
from xlabench.analysis.compare import compare
from xlabench.cli import ab_commands
from xlabench.cli.main import main
from xlabench.core import Record, Spec, Status
from xlabench.core.record import Probe
from xlabench.measure.sequential import SequentialDesign
from xlabench.store import ResultStore
from xlabench.sweep import ab

GRID = ["--models", "mobilenet_v3_small", "--resolutions", "32", "--batch-sizes", "1",
        "--backends", "tensorflow", "--modes", "graph"]
#: Half a second of sampling per process: seconds per process, not minutes.
QUICK = ["--sample-budget", "0.5", "--min-sample-time", "0.02", "--timeout", "300"]


# ------------------------------------------------------------------ scripted processes
def _scripted(record_factory: Callable[..., Record], rate_of: Callable[[Spec, str | None,
              Mapping[str, str], int], float]) -> ab.ProcessRunner:
    """A process runner that returns a plausible record at the rate the script gives (the
    worker is tested by the real runs below; this tests the loop's decisions)."""
    count = [0]

    def run(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
            target: float | None, check_parity: bool = True) -> Record:
        count[0] += 1
        rate = rate_of(spec, python, env, count[0])
        base = record_factory(model=spec.model, backend=spec.backend, mode=spec.mode,
                              resolution=spec.resolution, throughput=rate)
        return base.replace(spec=spec, duration_s=0.01,
                            env={**base.env, "flags": dict(env)})

    return run


def _run(tmp_path: Path, runner: ab.ProcessRunner, b: list[str], budget_s: float = 600.0,
         design: SequentialDesign | None = None,
         clock: Callable[[], float] = time.perf_counter,
         resolutions: tuple[int, ...] = (32,)) -> ab.AbRun:
    settings = ab.AbSettings(design or SequentialDesign(max_rounds=20), budget_s, seed=3)
    sides = (ab.parse_side("a", []), ab.parse_side("b", b))
    specs = [Spec("mobilenet_v3_small", "tensorflow", "graph", r, batch_size=1)
             for r in resolutions]
    sweep_id = ab.new_sweep_id()
    run = ab.AbRun(ab.make_configurations(specs, sides, sweep_id, settings), sides, settings,
                   sweep_id)
    with ResultStore(tmp_path / "ab.db") as store:
        return ab.run_ab(run, store, lambda line: None, ab.one_after_other(runner), clock)


def _noisy(factor_b: float, seed: int = 1, sd: float = 0.05) -> Callable[..., float]:
    rng = random.Random(seed)

    def rate(spec: Spec, python: str | None, env: Mapping[str, str], n: int) -> float:
        machine = math.exp(rng.gauss(0.0, sd))
        return 100.0 * machine * (factor_b if env else 1.0)

    return rate


def test_a_slowdown_is_decided_slower_and_gated(tmp_path: Path, record_factory) -> None:
    run = _run(tmp_path, _scripted(record_factory, _noisy(0.5)), ["env:SLOW=1"])
    (c,) = run.configurations
    assert c.verdict() == "slower" and c.stopped_because == "decided: slower"
    assert c.look is not None and c.look.ratio_high < 0.95
    assert ab_commands._gate(run, 5.0) == 1
    # A halving is no slowdown beyond 60% (b/a 0.5 > 0.4): that gate passes.
    assert ab.verdict_at(c, run.settings.design, 0.6) != "slower"
    assert ab_commands._gate(run, 60.0) == 0


def test_the_gate_reads_the_verdict_not_the_ratio(tmp_path: Path, record_factory) -> None:
    run = _run(tmp_path, _scripted(record_factory, _noisy(0.8, sd=0.15)), ["env:SLOW=1"],
               design=SequentialDesign(max_rounds=5, min_rounds=3))
    (c,) = run.configurations
    assert c.look is not None and c.look.ratio < 0.95  # the estimate alone says slower ...
    assert c.verdict() == "inconclusive"  # ... its interval does not
    assert ab_commands._gate(run, 5.0) == 0


def test_an_aa_ends_without_a_false_verdict(tmp_path: Path, record_factory) -> None:
    run = _run(tmp_path, _scripted(record_factory, _noisy(1.0)), [])
    (c,) = run.configurations
    assert c.verdict() in ("same", "inconclusive")
    assert ab_commands._gate(run, 5.0) == 0


def test_both_sides_stored_as_one_interleaved_pair(tmp_path: Path, record_factory) -> None:
    run = _run(tmp_path, _scripted(record_factory, _noisy(1.0)), [],
               design=SequentialDesign(max_rounds=4, min_rounds=3))
    rows = sqlite3.connect(tmp_path / "ab.db").execute(
        "SELECT label, sweep_id, json_extract(record_json, '$.process.round') FROM results"
    ).fetchall()
    assert {r[1] for r in rows} == {run.sweep_id}
    rounds = {label: sorted(r[2] for r in rows if r[0] == label) for label in "ab"}
    assert rounds["a"] == rounds["b"] == list(range(run.rounds_run))
    combined = sqlite3.connect(tmp_path / "ab.db").execute(
        "SELECT label, complete FROM combined_results").fetchall()
    assert sorted(combined) == [("a", 1), ("b", 1)]
    report = compare(CompareSide(tmp_path / "ab.db", "a"), CompareSide(tmp_path / "ab.db", "b"))
    (pair,) = report.pairs
    assert pair.ratio is not None and "round-matched" in pair.ratio.method
    assert pair.ratio.n_pairs == run.rounds_run
    # compare reads the very interval and verdict ab decided with
    (c,) = run.configurations
    assert c.look is not None
    assert (pair.ratio.ratio_low, pair.ratio.ratio_high) == pytest.approx(
        (c.look.ratio_low, c.look.ratio_high))
    assert pair.verdict == c.verdict()


def test_a_killed_ab_keeps_the_configurations_it_had_decided(tmp_path: Path,
                                                            record_factory) -> None:
    """A decided configuration is stored complete at once: killed while another still runs,
    the decided one stays whole and the undecided one incomplete."""
    spread = {32: random.Random(1), 64: random.Random(2)}

    def rate(spec: Spec, python: str | None, env: Mapping[str, str], n: int) -> float:
        # 32 px: side b at half the rate (decided in a few rounds); 64 px: an A/A too noisy
        # to decide within the test's rounds
        sd, factor_b = (0.05, 0.5) if spec.resolution == 32 else (0.3, 1.0)
        return 100.0 * math.exp(spread[spec.resolution].gauss(0.0, sd)) * (
            factor_b if env else 1.0)

    runner = _scripted(record_factory, rate)
    calls = {32: 0, 64: 0}

    def killed_later(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
                     target: float | None, check_parity: bool = True) -> Record:
        calls[spec.resolution] += 1
        if calls[64] > calls[32] + 2:  # a round without 32 px: it is decided; now the kill
            raise KeyboardInterrupt
        return runner(spec, python, env, timeout_s, target)

    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, killed_later, ["env:SLOW=1"], resolutions=(32, 64))
    resolution_of = {Spec("mobilenet_v3_small", "tensorflow", "graph", r, batch_size=1
                          ).spec_id(): r for r in (32, 64)}
    combined = sqlite3.connect(tmp_path / "ab.db").execute(
        "SELECT spec_id, label, complete FROM combined_results").fetchall()
    assert sorted((resolution_of[spec_id], label, complete)
                  for spec_id, label, complete in combined) == [
        (32, "a", 1), (32, "b", 1), (64, "a", 0), (64, "b", 0)]


def test_rounds_across_machine_states_are_set_aside(tmp_path: Path, record_factory) -> None:
    """The machine flips between a fast state (probe 210 GFLOP/s) and a slow one (probe 170,
    every figure 0.65x; else 1% noise) from one process to the next, as the Zen 4 VM did: a
    round whose two processes straddle a flip measures the machine. Those rounds are set
    aside, the others decide, and `compare` on the database reads the same rounds."""
    rng = random.Random(7)
    rate_of = _noisy(1.0, seed=2, sd=0.01)
    runner = _scripted(record_factory, rate_of)

    def flipping(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
                 target: float | None, check_parity: bool = True) -> Record:
        record = runner(spec, python, env, timeout_s, target)
        slow = rng.random() < 0.4
        probe = Probe(gflops=170.0 if slow else 210.0, seconds=0.03, n=640, calls=12)
        assert record.throughput is not None
        throughput = dataclasses.replace(
            record.throughput, median_sps=record.throughput.median_sps * (0.65 if slow else 1))
        return record.replace(throughput=throughput, probe_before=probe, probe_after=probe)

    run = _run(tmp_path, flipping, [], design=SequentialDesign(max_rounds=40))
    (c,) = run.configurations
    assert c.rounds_set_aside > 0, (c.log_ratios, c.look, c.stopped_because)
    # the kept rounds are both fast or both slow: their ratios are 1 +- 3%
    assert c.verdict() == "same", (c.log_ratios, c.look, c.stopped_because)
    assert ab.configuration_dict(run, c)["rounds_set_aside"] == c.rounds_set_aside
    assert "set aside" in ab_commands.format_ab(run)
    report = compare(CompareSide(tmp_path / "ab.db", "a"), CompareSide(tmp_path / "ab.db", "b"))
    (pair,) = report.pairs
    assert pair.ratio is not None and pair.ratio.n_pairs == len(c.log_ratios)
    assert f"{c.rounds_set_aside} round" in pair.ratio.method and pair.verdict == "same"


def test_parity_is_checked_until_a_side_passed_it(tmp_path: Path, record_factory) -> None:
    runner = _scripted(record_factory, _noisy(1.0))
    asked: list[tuple[str, bool]] = []

    def recording(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
                  target: float | None, check_parity: bool = True) -> Record:
        asked.append(("b" if env else "a", check_parity))
        record = runner(spec, python, env, timeout_s, target)
        return record if check_parity else record.replace(parity=None)

    _run(tmp_path, recording, ["env:X=1"], design=SequentialDesign(max_rounds=4, min_rounds=3))
    for side in "ab":
        checks = [check for s, check in asked if s == side]
        assert checks == [True, False, False, False]


def test_the_budget_ends_it_inconclusive(tmp_path: Path, record_factory) -> None:
    def slow(spec: Spec, python: str | None, env: Mapping[str, str], n: int) -> float:
        return 100.0 * (1.3 if n % 4 == 0 else 0.8)  # wide spread: no verdict soon

    runner = _scripted(record_factory, slow)
    now_s = [0.0]

    def timed(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
              target: float | None, check_parity: bool = True) -> Record:
        now_s[0] += 10.0  # each process takes 10 s on this clock
        return runner(spec, python, env, timeout_s, target).replace(duration_s=10.0)

    run = _run(tmp_path, timed, [], budget_s=45.0, clock=lambda: now_s[0])
    (c,) = run.configurations
    assert c.verdict() == "inconclusive"
    assert c.stopped_because.startswith("budget")
    assert run.rounds_run < run.settings.design.max_rounds


def test_a_failed_process_stops_its_configuration(tmp_path: Path, record_factory) -> None:
    def failing(spec: Spec, python: str | None, env: Mapping[str, str], timeout_s: float,
                target: float | None, check_parity: bool = True) -> Record:
        return record_factory(status=Status.CRASHED).replace(spec=spec)

    run = _run(tmp_path, failing, [])
    (c,) = run.configurations
    assert c.verdict() == "inconclusive" and c.stopped_because.startswith("a process failed")
    assert run.rounds_run == 1


def test_sampling_is_shorter_when_processes_differ_more(record_factory) -> None:
    def records(rates: list[float]) -> list[Record]:
        return [record_factory(throughput=rate).replace(duration_s=20.0) for rate in rates]

    assert ab.sampling_target(records([100.0]))[0] is None  # one process: the spec's own
    alike, _ = ab.sampling_target(records([100.0, 100.0, 100.0]))
    spread, reason = ab.sampling_target(records([70.0, 100.0, 140.0]))
    assert alike is not None and spread is not None
    assert spread > alike and "samples per process" in reason


def test_side_changes_become_the_side_spec() -> None:
    spec = Spec("mobilenet_v3_small", "tensorflow", "graph", 32, batch_size=1)
    side = ab.parse_side("b", ["mode=eager", "env:TF_ENABLE_ONEDNN_OPTS=0"])
    assert ab.side_spec(spec, side).mode == "eager"
    assert side.environment() == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert ab.side_spec(spec, ab.parse_side("a", [])) == spec


def test_a_model_side_takes_a_registry_name_or_an_own_model() -> None:
    spec = Spec("mobilenet_v3_small", "tensorflow", "graph", 32, batch_size=1)
    assert ab.side_spec(spec, ab.parse_side("b", ["model=resnet50"])).model == "resnet50_v1"
    factory = "tests.own.factories:build_any_size"
    own = ab.side_spec(spec, ab.parse_side("b", [f"model={factory}"]))
    assert own.own_model and own.model_factory == factory and own.resolution == 32
    back = ab.side_spec(own, ab.parse_side("a", ["model=mobilenet_v3_small"]))
    assert back == spec


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("extra, message", [
    (["--b", "colour=red"], "unknown KEY 'colour'"),
    (["--b", "mode"], "is not KEY=VALUE"),
    (["--budget", "0"], "budget must be positive"),
    (["--budget", "-5"], "budget must be positive"),
    (["--max-rounds", "2", "--min-rounds", "3"], "max_rounds (2) must be at least min_rounds"),
    (["--max-rounds", "3", "--min-rounds", "2"], "no verdict is possible within 3 rounds"),
    (["--b", "mode=nonsense"], "has no mode 'nonsense'"),
    (["--b", "model=no_such_model"], "no_such_model"),
    (["--b", "python=/nonexistent/bin/python"], "does not run"),
])
def test_bad_input_is_one_line_exit_2_and_no_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        extra: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["ab", *GRID, "--db", "ab.db", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "ab.db").exists()


def test_an_interpreter_without_the_worker_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    monkeypatch.chdir(tmp_path)
    assert main(["ab", *GRID, "--db", "ab.db", "--b", f"python={bare}/bin/python"]) == 2
    err = capsys.readouterr().err
    assert "is not an environment with xlabench's worker" in err
    assert not (tmp_path / "ab.db").exists()


def test_an_interpreter_whose_framework_does_not_import_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A TensorFlow that is there but breaks on import (two wheels of different versions over
    each other) is refused before any round, with the import's error."""
    python = _light_venv(tmp_path / "venv-b", "keras-hub", "0.0.1")
    site = python.parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    broken = site / "site-packages" / "tensorflow"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('undefined symbol: on purpose')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["ab", *GRID, "--db", "ab.db", "--b", f"python={python}"]) == 2
    err = capsys.readouterr().err
    assert "cannot import tensorflow: ImportError: undefined symbol: on purpose" in err
    assert not (tmp_path / "ab.db").exists()


# ------------------------------------------------------------------------- real runs
def _light_venv(root: Path, package: str, version: str) -> Path:
    """A virtual environment that reuses this one's packages through a .pth file, with one
    distribution's metadata at another version ahead of them (its site-packages comes first
    on sys.path, the .pth's directories after)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    ours = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
    # addsitedir, not a plain path line: it reads the .pth files there too, among them the
    # editable install's that makes this checkout's xlabench importable
    (site / "xlabench-test-reuse.pth").write_text(
        "".join(f"import site; site.addsitedir({path!r})\n" for path in ours))
    dist = site / f"{package.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\n"
                                   f"Version: {version}\n")
    return python


@pytest.mark.slow
def test_real_aa_across_two_environments_has_no_false_verdict_and_lists_their_difference(
        tmp_path: Path, run_cli) -> None:
    """An A/A run: side b is another virtual environment with the same packages (one
    distribution's metadata differs), so any verdict but same or inconclusive is false."""
    python = _light_venv(tmp_path / "venv-b", "keras-hub", "0.0.1")
    done = run_cli("ab", *GRID, *QUICK, "--db", "ab.db", "--b", f"python={python}",
                   "--min-rounds", "3", "--max-rounds", "4", "--format", "json")
    assert done.returncode == 0, done.stderr
    (c,) = json.loads(done.stdout)["configurations"]
    assert c["verdict"] in ("same", "inconclusive")
    assert c["b"]["python"] == str(python)
    differences = {d["name"]: d for d in c["environment_differences"]}
    assert differences["keras-hub"]["new"] == "0.0.1"
    assert c["a"]["processes"] == c["b"]["processes"] == c["rounds"] + c["rounds_set_aside"] == 4
    assert "round  4" in done.stderr
    # parity is checked in each side's first process only (same spec, same outputs)
    parity = sqlite3.connect(tmp_path / "ab.db").execute(
        "SELECT label, process_index, parity_passed FROM results ORDER BY id").fetchall()
    assert sorted((label, index) for label, index, passed in parity if passed is not None) \
        == [("a", 0), ("b", 0)]
    assert all(passed in (1, None) for _, _, passed in parity)
    # the pair of each round took turns on the machine, slice by slice (measure.turns)
    turns = [json.loads(text)["backend_info"]["turns"] for (text,) in sqlite3.connect(
        tmp_path / "ab.db").execute("SELECT record_json FROM results")]
    assert len(turns) == 8 and all(t["taken"] >= 3 and t["waited_s"] > 0 for t in turns)
    compared = run_cli("compare", "ab.db", "--baseline-label", "a", "--label", "b",
                       "--format", "json")
    assert compared.returncode == 0, compared.stderr
    (pair,) = json.loads(compared.stdout)["pairs"]
    # compare combines a side's clean processes only (flagged ones where none is clean), so
    # on a busy machine it may pair fewer rounds than ab, or none; what it pairs is by round.
    assert "round-matched" in pair["method"] or pair["verdict"] == "insufficient data"


@pytest.mark.slow
def test_real_crash_of_one_side_keeps_the_other(tmp_path: Path, run_cli) -> None:
    """Taking turns, a side that dies mid-round neither hangs nor loses the other's result."""
    done = run_cli("ab", *GRID, *QUICK, "--db", "ab.db", "--b",
                   "env:XLABENCH_INJECT_FAULT=segfault", "--min-rounds", "3", "--max-rounds", "4",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    (c,) = json.loads(done.stdout)["configurations"]
    assert c["verdict"] == "inconclusive" and "a process failed" in c["stopped_because"]
    rows = sqlite3.connect(tmp_path / "ab.db").execute(
        "SELECT label, status FROM results ORDER BY label").fetchall()
    assert rows == [("a", "ok"), ("b", "crashed")]


@pytest.mark.slow
def test_real_gated_slowdown_is_slower_and_exits_1(run_cli) -> None:
    done = run_cli("ab", *GRID, *QUICK, "--db", "ab.db", "--b", "mode=eager",
                   "--min-rounds", "3", "--max-rounds", "8", "--fail-on-slowdown", "5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "slower" in done.stdout.splitlines()[1]
    assert "slower by more than 5%" in done.stderr

