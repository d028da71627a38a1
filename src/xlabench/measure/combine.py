"""Between-process statistics: one configuration's processes combined, and speedups between two.

The unit of replication is the worker process. Each process reports the median of its own
samples; process medians of the same configuration scatter more than one process's samples do
(thread placement, memory layout, the machine's state), so an interval that should hold on a
re-run has to come from the spread *between* processes. We use the t interval of the mean of
log process medians (k - 1 degrees of freedom) and report exp() of it: the estimate is the
geometric mean of the process medians. Within-process noise is inside each process median, so
the spread of the medians already carries both levels; resampling the samples again (a
two-level bootstrap) counts it twice, and a percentile bootstrap over 3-5 processes is far too
narrow (at k = 3 its interval is about the range of the medians, which holds the median ~75%
of the time). docs/method.md has the reasoning; tests/unit/test_combine.py checks the hold rate
(how often the interval holds the true value) by simulation.

Standard library only at import (the sweep, the store's callers and the analysis all use it);
numpy is imported by the one-process bootstrap only, where it is called.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from xlabench.core.record import Record
from xlabench.core.result import (
    CONFIDENCE,
    ONE_PROCESS_METHOD,
    ONE_SCENARIO_PROCESS_METHOD,
    Result,
    ResultPolicy,
    interference_reason,
)
from xlabench.measure.probe import machine_states, one_state, readings
from xlabench.measure.turns import took_turns

if TYPE_CHECKING:  # measure.sequential builds on this module's t distribution
    from xlabench.measure.sequential import SequentialDesign


# ------------------------------------------------------------------ Student's t distribution
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _reg_incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _reg_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on the CDF; p in (0, 1))."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"need 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


# ------------------------------------------------------------------------- one configuration
@dataclass(frozen=True)
class Interval:
    """An estimate with its interval, confidence and how it was made."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    n: int

    @property
    def rel_halfwidth(self) -> float:
        return max(self.estimate - self.low, self.high - self.estimate) / abs(self.estimate)


def log_mean_se2(values: Sequence[float]) -> tuple[float, float]:
    """(mean, squared standard error of the mean) of log(values): two or more positive values.
    The one place every interval here takes its logs, mean and sample variance from."""
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    return mean, sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs)


def log_t_interval(
    values: Sequence[float], confidence: float = CONFIDENCE, drift: RunDrift | None = None
) -> Interval:
    """Geometric mean of positive `values` with the t interval of their logs (needs >= 2).

    With `drift`, the interval also holds the between-run variation measured in this
    environment: its variance adds to the squared standard error of the mean, and the degrees
    of freedom come from Welch-Satterthwaite (both variances are estimates).
    """
    if len(values) < 2 or min(values) <= 0:
        raise ValueError("need at least two positive values")
    k = len(values)
    mean, se2 = log_mean_se2(values)
    extra = drift.log_var if drift is not None else 0.0
    df = _satterthwaite_df(se2, k - 1, extra, drift.df if drift is not None else 1)
    half = t_quantile(0.5 + confidence / 2.0, df) * math.sqrt(se2 + extra)
    method = f"t interval of log process medians ({k} processes, {k - 1} df)"
    if drift is not None:
        method = (f"t interval of log process medians ({k} processes) with the between-run "
                  f"variation of this environment ({drift.describe()}; {df:.1f} df)")
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), confidence,
                    method, k)


def run_and_held_intervals(
    medians: Sequence[float], drift: RunDrift | None
) -> tuple[Interval, Interval]:
    """(this run's processes alone, the same with the between-run variation held) for two or
    more process medians; the two are the same interval without `drift`."""
    alone = log_t_interval(medians)
    return alone, (log_t_interval(medians, drift=drift) if drift is not None else alone)


def _satterthwaite_df(a: float, df_a: float, b: float, df_b: float) -> float:
    """Degrees of freedom of the sum of two variance estimates a (df_a) and b (df_b)."""
    if b <= 0.0 or a + b <= 0.0:
        return df_a
    if a <= 0.0:
        return df_b
    return (a + b) ** 2 / (a * a / df_a + b * b / df_b)


# --------------------------------------------------------------------------- between runs
#: Below this many pooled degrees of freedom the between-run variance is not estimated.
MIN_DRIFT_DF = 2

#: How many re-runs' worth of evidence the machine's pooled between-run variance is about any
#: one configuration: its prior weight (degrees of freedom) beside that configuration's own
#: re-runs. Configurations on one machine drift very differently (on the 2-core VM of
#: docs/spread.md one ran 38% apart between sessions while the pool said 7%), so the pool is a
#: weak prior, however many results it holds: a configuration's variance is taken as drawn
#: around the pool with this many degrees of freedom (a scaled inverse chi-square), its own
#: re-runs add theirs, and the interval's t quantile uses the sum.
MACHINE_PRIOR_DF = 4


@dataclass(frozen=True)
class RunDrift:
    """How much results of the same configuration, measured by separate runs (at other times,
    after the machine may have changed state), differ beyond what their processes' spread
    explains: a variance of log throughput. Processes of one run share the machine's state of
    that hour, so their spread cannot show it; only re-runs can, and they are in the store.
    `run_drift` pools it over a machine's configurations; `config_drift` moderates that pool
    with one configuration's own earlier re-runs (`own_results` of the `results`)."""

    log_var: float
    df: float  # of the estimate: pooled (results - 1) summed, or prior + own when moderated
    configurations: int
    results: int
    own_results: int = 0

    @property
    def rel_sd(self) -> float:
        return math.sqrt(self.log_var)

    def describe(self) -> str:
        others = self.results - self.own_results
        if not self.own_results:
            return (f"σ {100 * self.rel_sd:.1f}% from {others} results of "
                    f"{self.configurations} configurations")
        pool = (f" and {others} results of {self.configurations} other configurations"
                if others else "")
        return (f"σ {100 * self.rel_sd:.1f}% from {self.own_results} earlier results of this "
                f"configuration{pool}")

    def to_dict(self) -> dict[str, Any]:
        return {"rel_sd": self.rel_sd, "df": self.df, "configurations": self.configurations,
                "results": self.results, "own_results": self.own_results}


@dataclass(frozen=True)
class _Moment:
    """One configuration's method-of-moments between-run variance (untruncated), its degrees
    of freedom (results - 1) and the mean squared standard error of its results' means (how
    noisy its processes make the estimate)."""

    log_var: float
    df: int
    se2: float


def _between_run_moment(runs: Sequence[Sequence[float]]) -> _Moment | None:
    """The moment of one configuration's results (each two or more process medians), or None
    when fewer than two such results."""
    runs = [r for r in runs if len(r) >= 2 and min(r) > 0]
    if len(runs) < 2:
        return None
    means, se2 = zip(*map(log_mean_se2, runs), strict=True)
    grand = sum(means) / len(means)
    between = sum((m - grand) ** 2 for m in means) / (len(means) - 1)
    mean_se2 = sum(se2) / len(se2)
    return _Moment(between - mean_se2, len(runs) - 1, mean_se2)


#: A configuration whose processes make its results' means this many times noisier (mean
#: squared standard error) than the median configuration's is left out of the pool.
NOISY_SE2_RATIO = 10.0


def run_drift(configurations: Iterable[Sequence[Sequence[float]]]) -> RunDrift | None:
    """The pooled between-run variance of log throughput, or None with too little data.

    Each configuration is a list of results (two or more), each the process medians of one
    result (two or more). Per configuration, the method of moments of the one-way random-effects
    model: the variance of the results' mean log medians minus the mean of their squared
    standard errors (what the processes alone would make them scatter); pooled with weights
    results - 1, then at least 0.

    A configuration whose processes scatter so much that its mean se² is over NOISY_SE2_RATIO
    times the median configuration's is left out: its estimate's standard error grows with
    se², so it says almost nothing about a between-run variance on the quiet ones' scale, yet
    at df weight one large negative value of it pulled their pool to 0 (measured: torch
    compiled, processes ±40%, -0.0052 against 0.0004-0.0007 for three quiet configurations).
    Weighing every configuration by its precision instead, df / (σ² + se²)², was tried and
    dropped: its weights follow each configuration's own sampled se², which its estimate
    subtracts, and that biased the pool upwards by half a se² where runs did not drift at all.
    The cut is an order of magnitude, far beyond the sampling noise of comparable
    configurations' se², so among those it leaves nothing out.
    """
    moments = [m for m in map(_between_run_moment, configurations) if m is not None]
    if moments:
        typical = sorted(m.se2 for m in moments)[(len(moments) - 1) // 2]
        moments = [m for m in moments
                   if typical <= 0.0 or m.se2 <= NOISY_SE2_RATIO * typical]
    df = sum(m.df for m in moments)
    if df < MIN_DRIFT_DF:
        return None
    pooled = sum(m.log_var * m.df for m in moments) / df
    # truncated once, after pooling: clipping each configuration's noisy estimate at 0 first
    # would bias the pool upwards when runs do not drift at all
    return RunDrift(max(0.0, pooled), df, len(moments), sum(m.df + 1 for m in moments))


def config_drift(own_runs: Sequence[Sequence[float]], machine: RunDrift | None,
                 prior_df: float = MACHINE_PRIOR_DF) -> RunDrift | None:
    """The between-run variance for one configuration: the machine's pool (`machine`, from the
    *other* configurations' re-runs) as a prior of at most `prior_df` degrees of freedom,
    updated with the configuration's own earlier results (`own_runs`, each its process
    medians): (w * pool + d * own) / (w + d) with w = min(prior_df, pool df) and d = own
    results - 1, on w + d degrees of freedom (the posterior scale of a scaled inverse
    chi-square prior). Without a pool, the own re-runs alone once they reach MIN_DRIFT_DF."""
    own = _between_run_moment(own_runs)
    own_results = 0 if own is None else own.df + 1
    if machine is None and (own is None or own.df < MIN_DRIFT_DF):
        return None
    prior_var, prior_w = (machine.log_var, min(prior_df, machine.df)) if machine else (0.0, 0.0)
    own_var, own_df = (own.log_var, own.df) if own is not None else (0.0, 0)
    log_var = (prior_w * prior_var + own_df * own_var) / (prior_w + own_df)
    return RunDrift(max(0.0, log_var), prior_w + own_df,
                    machine.configurations if machine else 0,
                    (machine.results if machine else 0) + own_results, own_results)


def log_spread(values: Sequence[float]) -> float:
    """Standard deviation of log(values): the between-process coefficient of variation."""
    if len(values) < 2:
        return 0.0
    return math.sqrt(log_mean_se2(values)[1] * len(values))


def clean_processes(records: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """(successful clean processes, successful flagged ones), in the given order."""
    ok = [r for r in records if r.ok and r.rate_per_s is not None]
    clean = [r for r in ok if interference_reason(r.interference) is None]
    flagged = [r for r in ok if interference_reason(r.interference) is not None]
    return clean, flagged


def combine(
    records: Sequence[Record], result_id: str, policy: ResultPolicy, env_id: str = "",
    drift: RunDrift | None = None,
) -> Result:
    """The combined figure of one configuration's processes (all with the same spec).

    Clean processes are combined; flagged ones only when no clean process exists (or always,
    under `policy.keep_flagged`: the sides of a paired comparison). The result
    is flagged when it has fewer clean processes than the policy's minimum because some were
    measured under interference (or when it had to use flagged ones). With `drift` (the
    environment's between-run variation, from earlier results in the store) the interval also
    holds it; `run_ci_*` keep the interval of this run's processes alone, and the policy's
    target is judged on that one (more processes cannot narrow a drift between runs).
    """
    if not records:
        raise ValueError("no processes to combine")
    first = records[0]
    clean, flagged = clean_processes(records)
    used = _used_processes(records, clean, flagged, policy)
    flag_reason = _flag_reason(len(clean), flagged, policy)
    if not used:
        failed = next((r for r in reversed(records) if not r.ok), records[-1])
        return _empty_result(records, result_id, env_id or first.env_id, failed, flag_reason)
    medians = [r.rate_per_s for r in used]
    between = len(used) >= 2
    drift = drift if between else None
    run_interval, interval = (run_and_held_intervals(medians, drift) if between
                              else (_one_process_interval(used[0]),) * 2)
    rel = run_interval.rel_halfwidth
    return Result(
        result_id=result_id, spec_id=first.spec_id, env_id=env_id or first.env_id, status="ok",
        k=len(used), k_total=len(records), k_flagged=len(flagged),
        median_sps=interval.estimate, ci_low_sps=interval.low, ci_high_sps=interval.high,
        ci_confidence=interval.confidence, ci_method=interval.method, between_processes=between,
        target_rel_ci=policy.target_rel_ci, target_met=between and rel <= policy.target_rel_ci,
        flagged=bool(flag_reason), flag_reason=flag_reason, process_medians_sps=tuple(medians),
        process_rounds=tuple(r.process.round for r in used),
        process_indices=tuple(r.process.index for r in used),
        run_ci_low_sps=run_interval.low, run_ci_high_sps=run_interval.high,
        drift_rel_sd=drift.rel_sd if drift is not None else None,
        drift_results=drift.results if drift is not None else 0,
        drift_df=drift.df if drift is not None else None,
        probe_spread_rel=_probe_spread_rel(used),
        process_probe_before_gflops=tuple(readings(r)[0] for r in used),
        process_probe_after_gflops=tuple(readings(r)[1] for r in used),
        process_took_turns=tuple(took_turns(r.backend_info) for r in used),
    )


def _probe_spread_rel(records: Sequence[Record]) -> float | None:
    spread = machine_states(records)
    return None if spread is None else spread.rel


def _used_processes(records: Sequence[Record], clean: list[Record], flagged: list[Record],
                    policy: ResultPolicy) -> list[Record]:
    """The processes a figure is made of: the clean ones (flagged ones only when none is
    clean), or every successful one in order under `policy.keep_flagged` (paired sides)."""
    if policy.keep_flagged:
        successful = {id(r) for r in (*clean, *flagged)}
        return [r for r in records if id(r) in successful]
    return clean or flagged


def _one_process_interval(record: Record) -> Interval:
    tp = record.throughput
    if tp is None:  # a LoadGen scenario: one figure, no interval of its own
        rate = record.rate_per_s
        assert rate is not None
        return Interval(rate, rate, rate, 0.0, ONE_SCENARIO_PROCESS_METHOD, 1)
    low = tp.ci_low_sps if tp.ci_low_sps is not None else tp.median_sps
    high = tp.ci_high_sps if tp.ci_high_sps is not None else tp.median_sps
    confidence = tp.ci_confidence if tp.ci_confidence is not None else 0.0
    return Interval(tp.median_sps, low, high, confidence, ONE_PROCESS_METHOD, 1)


def _flag_reason(clean: int, flagged: Sequence[Record], policy: ResultPolicy) -> str:
    if not flagged or clean >= policy.min_processes:
        return ""
    why = interference_reason(flagged[-1].interference)
    if clean == 0:
        return f"every process was measured under interference ({len(flagged)}; last: {why})"
    return (f"{clean} clean process(es) of {policy.min_processes} wanted; {len(flagged)} "
            f"measured under interference (last: {why})")


def _empty_result(
    records: Sequence[Record], result_id: str, env_id: str, failed: Record, flag_reason: str
) -> Result:
    return Result(
        result_id=result_id, spec_id=records[0].spec_id, env_id=env_id,
        status=failed.status.value, k=0, k_total=len(records), k_flagged=0, median_sps=None,
        ci_low_sps=None, ci_high_sps=None, ci_confidence=None, ci_method="",
        between_processes=False, target_rel_ci=None, target_met=False,
        flagged=bool(flag_reason), flag_reason=flag_reason, process_medians_sps=(),
        process_rounds=(), error=failed.error,
    )


# ---------------------------------------------------------------------------------- speedups
@dataclass(frozen=True)
class RatioInterval:
    """compiled / baseline (and compiled - baseline in samples/s) with intervals."""

    ratio: float
    ratio_low: float
    ratio_high: float
    diff_low_sps: float
    diff_high_sps: float
    method: str
    n_pairs: int
    #: False for a one-process fallback (BOOTSTRAP_METHOD, CI_ENDS_METHOD): it knows how one
    #: process's samples scatter, not how processes or runs differ.
    between_processes: bool = True


def paired_ratio(
    compiled: Mapping[Any, float], baseline: Mapping[Any, float], confidence: float = CONFIDENCE
) -> RatioInterval | None:
    """Speedup from processes that ran next to each other (same round): a paired t interval of
    log(compiled / baseline), so a drift of the machine that hits both sides of a round cancels.
    None with fewer than two pairs."""
    rounds = sorted(set(compiled) & set(baseline))
    if len(rounds) < 2:
        return None
    ratios = [compiled[r] / baseline[r] for r in rounds]
    diffs = [compiled[r] - baseline[r] for r in rounds]
    ratio = log_t_interval(ratios, confidence)
    diff_mean = sum(diffs) / len(diffs)
    diff_sd = math.sqrt(sum((d - diff_mean) ** 2 for d in diffs) / (len(diffs) - 1))
    diff_half = t_quantile(0.5 + confidence / 2, len(diffs) - 1) * diff_sd / math.sqrt(len(diffs))
    return RatioInterval(ratio.estimate, ratio.low, ratio.high, diff_mean - diff_half,
                         diff_mean + diff_half, f"paired t ({len(rounds)} rounds)", len(rounds))


# -------------------------------------------------------------- one result against another
class RunPlace(Protocol):
    """Where a result ran: its sweep id and the times of its first and last process (None
    when unknown). `analysis.compare.Chosen` is one; `RunTimes` builds one."""

    @property
    def sweep_id(self) -> str | None: ...

    @property
    def span(self) -> tuple[Any, Any] | None: ...


@dataclass(frozen=True)
class RunTimes:
    """A `RunPlace` from a row's sweep id and its result's process times."""

    sweep_id: str | None
    span: tuple[Any, Any] | None


def interleaved(a: RunPlace, b: RunPlace) -> bool:
    """Whether two results ran interleaved in one sweep, so that their processes of one round
    ran next to each other and pairing by round cancels the machine's drift: the same sweep
    id AND overlapping process times (first to last process of each).

    The one rule every ratio uses. The sweep id alone is not enough: it is a hash of the grid,
    the same for the same grid swept again later (or into another database), when round r of
    one and of the other did not run next to each other and pairing them would drop the
    drift between the runs. Round tags (``<sweep id>:<round>``) say no more than the sweep id
    does. Times alone are not enough either: two sweeps of other grids may run at once, but
    their rounds are not matched. Unknown times (a result stored without them) are not
    interleaved: the unpaired interval is the one that holds either way."""
    if not a.sweep_id or a.sweep_id != b.sweep_id or a.span is None or b.span is None:
        return False
    try:
        return bool(a.span[0] <= b.span[1] and b.span[0] <= a.span[1])
    except TypeError:
        return False


#: The methods of a one-process side's fallbacks (`result_ratio`).
BOOTSTRAP_METHOD, CI_ENDS_METHOD = "bootstrap", "ci-ends"
MIN_BOOTSTRAP_SAMPLES = 10  # fewer samples give a bootstrap median too coarse to trust
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20230601  # seeded per ratio: a report is reproducible, row by row


def _bootstrap_ratio(
    new: Result, base: Result, new_sps: Sequence[float], base_sps: Sequence[float]
) -> RatioInterval:
    """Percentile bootstrap of the ratio and difference of the two sides' sample medians (each
    side resampled independently: separate processes); the estimate is the stored figures'."""
    import numpy as np  # here: the sweep and the store import this module without numpy's cost

    rng = np.random.default_rng(BOOTSTRAP_SEED)

    def medians(samples: Sequence[float]) -> Any:
        values = np.asarray(samples, dtype=float)
        picks = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
        return np.median(values[picks], axis=1)

    new_medians, base_medians = medians(new_sps), medians(base_sps)
    ratio_low, ratio_high = np.percentile(new_medians / base_medians, [2.5, 97.5])
    diff_low, diff_high = np.percentile(new_medians - base_medians, [2.5, 97.5])
    assert new.median_sps is not None and base.median_sps is not None
    return RatioInterval(new.median_sps / base.median_sps, float(ratio_low),
                         float(ratio_high), float(diff_low), float(diff_high),
                         BOOTSTRAP_METHOD, 0, between_processes=False)


def _ci_ends_ratio(new: Result, base: Result) -> RatioInterval | None:
    """Bounds from the ends of both stored intervals: ratio in [n_low / b_high, n_high / b_low].
    If each holds its figure >= 95% of the time, both do >= 90.25% (independent runs), and then
    the ratio is inside: conservative in width. None unless both have a real interval."""
    ends = [v for v in (new.ci_low_sps, new.ci_high_sps, base.ci_low_sps, base.ci_high_sps)
            if v is not None and math.isfinite(v)]
    if len(ends) < 4 or not (new.ci_confidence and base.ci_confidence):
        return None
    n_low, n_high, b_low, b_high = ends
    if min(b_low, b_high) <= 0:
        return None
    assert new.median_sps is not None and base.median_sps is not None
    return RatioInterval(new.median_sps / base.median_sps, n_low / b_high, n_high / b_low,
                         n_low - b_high, n_high - b_low, CI_ENDS_METHOD, 0,
                         between_processes=False)


def _one_process_ratio(
    new: Result, base: Result, samples: tuple[Sequence[float], Sequence[float]] | None
) -> RatioInterval | None:
    """The fallback where a side has one process: the bootstrap of both sides' raw samples when
    both have MIN_BOOTSTRAP_SAMPLES, else the ends of their stored intervals, else None."""
    if samples is not None and min(map(len, samples)) >= MIN_BOOTSTRAP_SAMPLES:
        return _bootstrap_ratio(new, base, *samples)
    return _ci_ends_ratio(new, base)


def _by_round(result: Result) -> dict[int, float]:
    """A result's process medians by sweep round (the geometric mean of a round's, in the rare
    result that ran two processes in one round)."""
    rounds: dict[int, list[float]] = {}
    for round_, median in zip(result.process_rounds, result.process_medians_sps, strict=False):
        rounds.setdefault(round_, []).append(median)
    return {r: math.exp(sum(math.log(v) for v in vs) / len(vs)) for r, vs in rounds.items()}


def _rounds_in_turns(result: Result) -> set[int]:
    """The sweep rounds in which this result's process took turns with the other side."""
    return {round_ for round_, took in zip(result.process_rounds, result.process_took_turns,
                                           strict=False) if took}


def _probes_by_round(result: Result) -> dict[int, list[float | None]]:
    """A result's probe readings (before and after each process) by sweep round."""
    rounds: dict[int, list[float | None]] = {}
    for round_, before, after in zip(result.process_rounds, result.process_probe_before_gflops,
                                     result.process_probe_after_gflops, strict=False):
        rounds.setdefault(round_, []).extend((before, after))
    return rounds


#: Rounds in one machine state needed before straddling rounds are set aside: the first round
#: at which the sequential interval can be finite (`measure.sequential`, min_rounds 3 + 1).
MIN_ROUNDS_IN_ONE_STATE = 4


@dataclass(frozen=True)
class MatchedRounds:
    """The rounds two results can be paired on: each side's process median by round, for the
    rounds both have whose processes ran in one machine state, and the rounds set aside."""

    new: dict[int, float]
    base: dict[int, float]
    set_aside: tuple[int, ...]  # both sides ran, but the probes span machine states
    #: Rounds that span machine states but were paired all the same: fewer than
    #: MIN_ROUNDS_IN_ONE_STATE rounds ran in one state (a busy machine, not a two-state one).
    paired_across_states: tuple[int, ...] = ()

    def log_ratios(self) -> list[float]:
        return [math.log(self.new[r] / self.base[r]) for r in sorted(self.new)]


def matched_rounds(new: Result, base: Result) -> MatchedRounds:
    """The one rule for pairing two results by round. Pairing assumes the machine did the
    same to both processes of a round; where their probe readings (`measure.probe`) span
    machine states it did not (the host's slow spells last seconds to minutes on a small VM,
    and a round of two processes can straddle one), so that round says more about the machine
    than about the two sides, and it is set aside: stored and shown, never paired. The probe
    is the machine's figure, not either side's, so choosing rounds by it does not choose by
    the outcome. A round whose two processes took turns slice by slice (`measure.turns`) saw
    the same states in the same proportion, whatever its probes read, and always pairs.
    Processes without probe readings (older results) are never set aside. While
    fewer than MIN_ROUNDS_IN_ONE_STATE rounds ran in one state (a machine busy with other work
    reads differently at every probe), every round pairs, as before, and the straddling ones
    are named (`paired_across_states`)."""
    by_new, by_base = _by_round(new), _by_round(base)
    probes_new, probes_base = _probes_by_round(new), _probes_by_round(base)
    both = sorted(set(by_new) & set(by_base))
    in_turns = _rounds_in_turns(new) & _rounds_in_turns(base)
    kept = [r for r in both if r in in_turns
            or one_state([*probes_new.get(r, ()), *probes_base.get(r, ())])]
    across = tuple(r for r in both if r not in kept)
    if len(kept) < MIN_ROUNDS_IN_ONE_STATE:
        # A machine whose probe wanders from round to round (other work on it) leaves too
        # few rounds in one state to decide on: pair them all, as pairing still cancels what
        # both processes of a round shared, and say so.
        return MatchedRounds({r: by_new[r] for r in both}, {r: by_base[r] for r in both}, (),
                             across)
    return MatchedRounds({r: by_new[r] for r in kept}, {r: by_base[r] for r in kept}, across)


def paired_log_ratios(new: Result, base: Result) -> list[float]:
    """log(new / base) of the process medians of every matched round (`matched_rounds`), in
    round order: what a paired comparison of two interleaved results sees."""
    return matched_rounds(new, base).log_ratios()


def _sequential_ratio(new: Result, base: Result, design: SequentialDesign) -> RatioInterval:
    from xlabench.measure.sequential import sequential_look  # it builds on this module's t

    rounds = matched_rounds(new, base)
    log_ratios = rounds.log_ratios()
    look = sequential_look(log_ratios, design)
    base_sps = math.exp(log_mean_se2(base.process_medians_sps)[0])
    return RatioInterval(
        look.ratio, look.ratio_low, look.ratio_high, base_sps * (look.ratio_low - 1),
        base_sps * (look.ratio_high - 1),
        f"{look.method}, round-matched process medians ({len(log_ratios)} rounds of one "
        f"sweep{_aside_text(rounds)})",
        len(log_ratios))


def _aside_text(rounds: MatchedRounds) -> str:
    aside, across = len(rounds.set_aside), len(rounds.paired_across_states)
    if aside:
        return (f"; {aside} round{'s' if aside != 1 else ''} set aside: its processes ran in "
                "different machine states")
    if across:
        return (f"; {across} round{'s' if across != 1 else ''} across machine states paired: "
                f"fewer than {MIN_ROUNDS_IN_ONE_STATE} in one state")
    return ""


def _drift_components(result: Result) -> tuple[float, float]:
    """(variance, degrees of freedom) of a result's stored between-run variation; (0, 1) when it
    has none. A result stored before `drift_df` was kept gets MACHINE_PRIOR_DF (the most a
    machine's pool counts for one configuration), or fewer when fewer results measured it."""
    if not result.drift_rel_sd:
        return 0.0, 1.0
    df = result.drift_df
    if df is None or df <= 0:
        df = float(max(1, min(MACHINE_PRIOR_DF, result.drift_results - 1)))
    return result.drift_rel_sd**2, float(df)


def between_runs_known(new: Result, base: Result) -> bool:
    """Whether a ratio of two separate runs can include how much runs differ: at least one of
    them carries a between-run variation (from re-runs in its database)."""
    return new.drift_rel_sd is not None or base.drift_rel_sd is not None


def _has_figure(result: Result) -> bool:
    return result.status == "ok" and result.median_sps is not None and result.median_sps > 0


def _usable(result: Result) -> bool:
    return (_has_figure(result) and len(result.process_medians_sps) >= 2
            and min(result.process_medians_sps) > 0)


def result_ratio(
    new: Result, base: Result, same_sweep: bool = False, confidence: float = CONFIDENCE,
    samples: tuple[Sequence[float], Sequence[float]] | None = None,
    design: SequentialDesign | None = None,
) -> RatioInterval | None:
    """new / base of two stored results of one configuration, with the interval a repetition
    of both runs should hold, and the method that made it (`method`): the one ratio method of
    every ratio the product prints (compare, speedups, deployment, Python's share, scenarios).
    None unless both are ok with a figure.

    Both sides with two or more process medians:
    paired (`same_sweep`: the two results ran `interleaved` in one sweep, and they share two or
    more process rounds): `paired_ratio` of the round-matched medians; a drift of the machine
    hits both processes of a round alike and cancels, so the stored between-run variation is
    not added. Otherwise the t interval of the difference of the mean log process medians with
    each result's between-run variation (`drift_rel_sd`; a result without one takes the other
    side's; none when neither has one, see `between_runs_known`) added:
    var = se²_new + drift²_new + se²_base + drift²_base, se² the sample variance of a result's
    log process medians / k; degrees of freedom by Welch–Satterthwaite over the components
    (k - 1 for a process component, `drift_df` for a drift one). The estimate is the ratio of
    the stored figures (geometric means of the process medians).

    With `design` (a decision: `compare`'s verdicts, `xlabench ab`), a paired ratio's interval
    is instead `measure.sequential`'s anytime-valid one of the same round-matched log-ratios:
    interleaved rounds are looked at round after round, and a fixed-sample t interval read
    after every round would inflate false alarms (docs/method.md).

    A side of one process (older databases, imported rows, `--processes 1`) knows nothing of
    how processes differ: `_one_process_ratio`, the bootstrap of the raw per-sample
    throughputs (`samples`: new's, base's) or the ends of the stored intervals, with
    `between_processes` False so that a reader that needs more (compare's verdicts) can say so.
    """
    if not (_has_figure(new) and _has_figure(base)):
        return None
    if not (_usable(new) and _usable(base)):
        return _one_process_ratio(new, base, samples)
    if same_sweep:
        rounds = matched_rounds(new, base)
        if len(rounds.new) >= 2:
            if design is not None:
                return _sequential_ratio(new, base, design)
            paired = paired_ratio(rounds.new, rounds.base, confidence)
            if paired is not None:
                return dataclasses.replace(
                    paired, method=f"paired t of round-matched process medians "
                    f"({paired.n_pairs} rounds of one sweep{_aside_text(rounds)})")
    mean_new, se2_new = log_mean_se2(new.process_medians_sps)
    mean_base, se2_base = log_mean_se2(base.process_medians_sps)
    drift2_new, drift_df_new = _drift_components(new)
    drift2_base, drift_df_base = _drift_components(base)
    # Two separate runs each vary between runs: a side measured without re-runs to show how
    # much (a fresh database) takes the other side's, the best estimate there is.
    if new.drift_rel_sd is None and base.drift_rel_sd is not None:
        drift2_new, drift_df_new = drift2_base, drift_df_base
    elif base.drift_rel_sd is None and new.drift_rel_sd is not None:
        drift2_base, drift_df_base = drift2_new, drift_df_new
    components = [(se2_new, len(new.process_medians_sps) - 1.0), (drift2_new, drift_df_new),
                  (se2_base, len(base.process_medians_sps) - 1.0), (drift2_base, drift_df_base)]
    var = sum(v for v, _ in components)
    ratio = math.exp(mean_new - mean_base)
    gb = math.exp(mean_base)
    counts = f"{len(new.process_medians_sps)} vs {len(base.process_medians_sps)} processes"
    if var <= 0.0:
        return RatioInterval(ratio, ratio, ratio, gb * (ratio - 1), gb * (ratio - 1),
                             f"welch t of log process medians ({counts}; no spread)", 0)
    df = var**2 / sum(v * v / d for v, d in components if v > 0.0)
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(var)
    low, high = math.exp(mean_new - mean_base - half), math.exp(mean_new - mean_base + half)
    drift = ""
    if drift2_new or drift2_base:
        drift = (f" with each run's between-run variation (σ {100 * math.sqrt(drift2_new):.1f}% "
                 f"new, {100 * math.sqrt(drift2_base):.1f}% baseline)")
    return RatioInterval(ratio, low, high, gb * (low - 1), gb * (high - 1),
                         f"welch t of log process medians ({counts}){drift}; {df:.1f} df", 0)
