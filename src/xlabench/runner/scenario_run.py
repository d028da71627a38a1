"""A LoadGen scenario inside the worker: the backend's compiled model as LoadGen's system under
test (`measure.scenarios` drives LoadGen; this module hands it the model).

The worker builds the model and the backend's runner as for the timed loop, times the first call
(compile), checks parity on its output and warms up; then LoadGen issues the queries and every
query batch runs the compiled step on the preloaded input batch, synced. A query batch always
runs a full `spec.batch_size` batch, however many samples LoadGen put in it: the compiled models
have a static shape, and padding a short batch to it is what a static-shape deployment does.
What else used the worker's CPUs is measured over the LoadGen runs.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from xlabench.backends.base import Runner, make_runners
from xlabench.core import Memory, Parity, Record, Spec, Status, Warmup
from xlabench.core.backends import info as backend_info
from xlabench.core.scenario import Scenario, ScenarioOutcome, parse_scenario
from xlabench.measure import interference, probe, scenarios, stats, timing
from xlabench.measure.scenarios import RunBatch, ScenarioResult, ServerSearch

#: Fault injection (the worker's XLABENCH_INJECT_FAULT): "slow-sut:MS" sleeps MS milliseconds
#: in every query batch, after the real step: a slower system under test on the production path.
SLOW_SUT_FAULT = "slow-sut:"


def require_loadgen(spec: Spec) -> None:
    """Before building anything: a scenario without LoadGen is one line (its install hint)."""
    if spec.scenario:
        scenarios.load_loadgen()


def measure(spec: Spec, backend: Any, model: Any, x: Any,
            check_output: Callable[[Any], Parity | None], scratch: str | None,
            fault: str = "") -> Record:
    """Run `spec.scenario` on the backend's compiled model; a record with `scenario` set.

    `check_output(first output)` is the worker's: finite outputs, parity against the reference.
    A run LoadGen calls invalid, or a server search where no rate kept its p99 within the bound,
    is a failed record that still holds the outcome (LoadGen's summary) for inspection.
    """
    runners = make_runners(backend, model, spec.mode, x, spec.scenario_settings.concurrency)
    first_s, out = timing.time_call(runners[0].step, backend.sync)
    parity = check_output(out)
    del out
    for other in runners[1:]:  # their first calls, before LoadGen times anything
        backend.sync(other.step())
    warm = timing.warm_up(runners[0].step, backend.sync, spec.measure)
    probe_before = probe.run_probe()  # the machine's speed, outside LoadGen's runs
    before = interference.snapshot()
    with _logs_dir(scratch) as outdir:
        outcome, error = run_loadgen(spec, _run_batch(backend, runners, _delay_s(fault)), outdir)
    used = interference.between(before, interference.snapshot())
    probe_after = probe.run_probe()
    for runner in runners:
        runner.finish()
    steady_s = stats.median(list(warm.step_s[-3:]))
    warmup = Warmup(first_call_s=first_s, compile_s=max(0.0, first_s - steady_s),
                    steps=warm.steps, seconds=warm.seconds,
                    compile_stages_s=runners[0].info.pop("compile_stages_s", {}))
    return Record(
        spec=spec, status=Status.FAILED if error else Status.OK, error=error or None,
        warmup=warmup, parity=parity, memory=Memory(peak_device_mb=backend.peak_device_memory_mb()),
        backend_info={**runners[0].info, "warmup_steady": warm.steady}, sync=backend.SYNC,
        interference=used, scenario=outcome, probe_before=probe_before, probe_after=probe_after,
    )


def run_loadgen(spec: Spec, run_batch: RunBatch, outdir: Path) -> tuple[ScenarioOutcome, str]:
    """LoadGen's run (server: search) of `spec.scenario` on `run_batch`: the outcome, and why
    it failed in one line ("" when it did not)."""
    settings, scenario = spec.scenario_settings, parse_scenario(spec.scenario)
    # The preloaded batch holds `batch_size` samples: LoadGen's sample indices point into it.
    samples = spec.batch_size
    if scenario is Scenario.SERVER:
        search = scenarios.find_peak_server_rate(run_batch, samples, settings,
                                                 settings.latency_bound_ms, outdir)
        peak = search.peak
        figure, error = (peak.rate_per_s, "") if peak else (0.0, _no_rate_passed(search))
        summary = search.to_dict()
    else:
        result = scenarios.run_scenario(run_batch, samples, settings, scenario, outdir)
        figure = _figure(result, scenario)
        error = "" if result.valid else _invalid(result)
        summary = result.to_dict()
    outcome = ScenarioOutcome(
        scenario=scenario.value, figure=figure, max_batch=settings.max_batch,
        concurrency=settings.concurrency, batch_wait_ms=settings.batch_wait_ms,
        sut=backend_info(spec.backend).scenario_sut,
        shortfall=scenarios.mlperf_shortfall(settings, scenario), loadgen=summary,
    )
    return outcome, error


def _figure(result: ScenarioResult, scenario: Scenario) -> float:
    """Single-stream: LoadGen's early-stopping p90 (MLPerf's reported figure), or the plain
    p90 where LoadGen gave none; offline: the samples/s LoadGen validated."""
    if scenario is Scenario.SINGLE_STREAM:
        early = result.early_stopping_p90_ms
        return early if early is not None and early == early else result.p90_ms
    return result.samples_per_s


def _invalid(result: ScenarioResult) -> str:
    reason = result.invalid_reason or "; ".join(result.loadgen_errors) or "no reason given"
    return f"LoadGen called the {result.scenario} run INVALID: {reason}"


def _no_rate_passed(search: ServerSearch) -> str:
    bound = f"{search.latency_bound_ms:g} ms"
    if not search.trials:
        return f"no server rate was tried within p99 {bound}"
    lowest = min(search.trials, key=lambda trial: trial.rate_per_s)
    why = (f"p99 {lowest.result.p99_ms:.3g} ms" if lowest.result.valid else
           f"p99 {lowest.result.p99_ms:.3g} ms, INVALID: {lowest.result.invalid_reason}")
    return (f"no rate kept p99 within {bound}; lowest tried {lowest.rate_per_s:.3g}/s had "
            f"{why}")


def _run_batch(backend: Any, runners: list[Runner], delay_s: float) -> RunBatch:
    """LoadGen's system under test: each query batch takes a free runner (one per concurrent
    thread) and runs its compiled step on the whole preloaded batch, synced."""
    free: queue.SimpleQueue[Runner] = queue.SimpleQueue()
    for runner in runners:
        free.put(runner)

    def run_batch(_indices: list[int]) -> None:
        runner = free.get()
        try:
            backend.sync(runner.step())
            if delay_s:
                time.sleep(delay_s)
        finally:
            free.put(runner)

    return run_batch


def _delay_s(fault: str) -> float:
    """The injected per-batch delay (`SLOW_SUT_FAULT`), 0 without one."""
    if not fault.startswith(SLOW_SUT_FAULT):
        return 0.0
    return float(fault.removeprefix(SLOW_SUT_FAULT)) / 1000


@contextlib.contextmanager
def _logs_dir(scratch: str | None) -> Iterator[Path]:
    """LoadGen's logs in the worker's scratch directory (deleted with it), or in a temporary
    one outside a worker."""
    if scratch:
        path = Path(scratch) / "loadgen"
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="xlabench-loadgen-") as temporary:
        yield Path(temporary)
