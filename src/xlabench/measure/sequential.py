"""Deciding A vs B one round at a time (`xlabench ab`): a confidence sequence, and where to spend.

Each round runs one fresh process per side and gives one paired log-ratio
x = log(B_round / A_round) of the two process medians; the drift of the machine cancels within
a round. After every round the caller asks `sequential_look` for the ratio B / A so far, an
interval for it, and a verdict: faster / slower / same (the rule of `analysis/compare.py:
verdict()`, against the same threshold t), or continue.

Looking after every round and stopping at the first verdict makes a plain t interval lie: each
look is another chance for a chance excursion to cross 1 ± t, and over 40 looks an A/A run (no
true change) is called faster or slower several times as often as its nominal 5%
(tests/unit/test_sequential.py shows it). We use instead an *anytime-valid confidence sequence*
for the mean μ of the log-ratios, valid without approximation for i.i.d. Gaussian x of unknown
variance: Lai's (1976) t-mixture, in the form of Howard, Ramdas, McAuliffe & Sekhon (2021),
"Time-uniform, nonparametric, nonasymptotic confidence sequences". For a candidate mean μ0, the
Bayes factor of the one-sample t test (effect δ = (μ - μ0) / σ ~ N(0, g) against δ = 0, scale
prior 1/σ) after n rounds, with T the t statistic of μ0 and ν = n - 1,

    BF_n(μ0) = (1 + n g)^(-1/2) · ((ν + T²) / (ν + T² / (1 + n g)))^(n / 2),

is the likelihood ratio of the scale-invariant part of the data, so under μ = μ0 it is a
nonnegative martingale with BF_1 = 1 whatever σ is, and Ville's inequality gives
P(BF_n(μ) ≥ 1/α for some n) ≤ α. The set {μ0 : BF_n(μ0) < 1/α} is the interval
mean ± T*_n · s / √n (BF grows with T²; T*_n in closed form below). Hence the guarantee:

    when the log-ratios are i.i.d. Gaussian with mean μ (any σ), the probability that the
    interval misses exp(μ) at ANY look, over all rounds however many, is at most α.

Every wrong verdict needs such a miss (faster claims exp(μ) > 1 + t, which its interval's lower
end says; slower and same likewise), so P(any false faster / slower / same, whatever the
stopping rule) ≤ α. It holds for any number of looks, so `max_rounds` does not enter the
guarantee; the mixture is tuned so that the interval is narrowest at `tuned_rounds`
(TUNED_ROUNDS, where decisions at the usual spread fall). The price
of looking at will is a wider interval than a fixed-n t interval at the same n (about 1.6x at
n = 20, α 0.05), and an unbounded one for the first few rounds (BF_n is bounded by
(1 + n g)^(ν/2), so nothing can be excluded until that reaches 1/α: the first three rounds
with the default design).

Why this and not a group-sequential design with α-spending (Jennison & Turnbull; Lan-DeMets
O'Brien-Fleming spending with a union bound over the looks): that is valid only for the planned
number of looks and, with a union bound, conservative; the t-mixture is valid without
approximation for Gaussian data, needs no plug-in σ (it is scale invariant), and stays valid if
the caller looks again after the budget. What it does not cover: log-ratios far from Gaussian
(heavy tails from a disturbed round) or dependent between rounds.

Spending the time where it decides (Kalibera & Jones 2013, "Rigorous benchmarking in
reasonable time"): with a process costing c_p seconds to start and a sample c_s, the variance
of the mean over m processes of n samples, σ²_b / m + σ²_w / (m n), is lowest for a given
budget at n* = √((c_p / c_s) · (σ²_w / σ²_b)) (`samples_per_process`): when processes differ
more than samples do, the budget goes to more processes, not longer ones.

Standard library only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xlabench.core import UserError

# The verdict words of analysis/compare.py (this layer cannot import it; a test checks they and
# the rule agree).
FASTER, SLOWER, SAME, CONTINUE = "faster", "slower", "same", "continue"
#: The most rounds `rounds_needed` looks ahead; beyond it a decision is "not estimable".
ROUNDS_NEEDED_CAP = 100_000


#: Where the interval is narrowest by default: decisions at this machine's spread (paired
#: log-ratio SD 0.05-0.2) come after 4-40 rounds; tuned at 8 the interval is finite from round
#: 4 and within 4% of the narrowest possible at 20 rounds (tuned at 20: finite from round 6).
TUNED_ROUNDS = 8


@dataclass(frozen=True)
class SequentialDesign:
    """What decides: the threshold of a change, the error rate over every look, the budget."""

    threshold: float = 0.05  # the ±band of "same", the beyond of faster/slower
    alpha: float = 0.05  # error rate over every look
    max_rounds: int = 40  # the most looks (the guarantee holds beyond it)
    min_rounds: int = 3  # no verdict before this many paired rounds
    #: Rounds at which the interval is narrowest. Fixed, not derived from the budget: `compare`
    #: reads an `ab` database's rounds with the same interval whatever `--max-rounds` was.
    tuned_rounds: int = TUNED_ROUNDS

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise UserError(f"threshold must be in (0, 1), got {self.threshold}")
        if not 0.0 < self.alpha < 1.0:
            raise UserError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.min_rounds < 2:
            raise UserError(f"min_rounds must be at least 2, got {self.min_rounds}")
        if self.max_rounds < self.min_rounds:
            raise UserError(f"max_rounds ({self.max_rounds}) must be at least min_rounds "
                            f"({self.min_rounds})")
        if self.tuned_rounds < 2:
            raise UserError(f"tuned_rounds must be at least 2, got {self.tuned_rounds}")

    @property
    def mixture_g(self) -> float:
        """The prior variance g of the standardized effect, tuned to `tuned_rounds`."""
        return _tuned_g(self.tuned_rounds, self.alpha)

    def describe(self) -> str:
        return f"confidence sequence (t-mixture, Lai 1976), α {self.alpha:g} over every look"


@dataclass(frozen=True)
class SequentialLook:
    """Where the comparison stands after `rounds` paired rounds."""

    rounds: int  # paired rounds used
    ratio: float  # exp(mean log-ratio), B / A
    ratio_low: float  # 0.0 while the interval is unbounded
    ratio_high: float  # math.inf while the interval is unbounded
    verdict: str  # "faster" | "slower" | "same" | "continue"
    rounds_needed: int | None  # at the spread observed, total rounds a decision would need
    method: str  # one line naming the method


# ------------------------------------------------------------------------ the boundary
def critical_t(n: int, alpha: float, g: float) -> float:
    """T*_n: the interval after n rounds is mean ± T*_n · s / √n (math.inf: unbounded).

    Solves BF_n = 1/α for T²: with a = 1 + n g and c = (√a / α)^(2/n),
    (ν + T²) / (ν + T²/a) = c gives T² = ν (c - 1) / (1 - c / a); BF_n never reaches 1/α
    (every mean is kept) when c ≥ a.
    """
    if n < 2:
        return math.inf
    a = 1.0 + n * g
    log_c = (0.5 * math.log(a) - math.log(alpha)) * 2.0 / n
    if log_c >= math.log(a):
        return math.inf
    c = math.exp(log_c)
    return math.sqrt((n - 1) * (c - 1.0) / (1.0 - c / a))


@functools.lru_cache(maxsize=4096)
def _halfwidth_factor(n: int, alpha: float, g: float) -> float:
    """T*_n / √n: the half-width in units of the observed standard deviation (cached: every
    look of every comparison asks for the same few)."""
    return critical_t(n, alpha, g) / math.sqrt(n)


@functools.lru_cache(maxsize=64)
def _tuned_g(rounds: int, alpha: float) -> float:
    """The g that makes the interval at `rounds` narrowest (golden section on log g)."""
    low, high = math.log(1e-4), math.log(1e4)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0

    def width(log_g: float) -> float:
        return _halfwidth_factor(rounds, alpha, math.exp(log_g))

    for _ in range(100):
        left, right = high - ratio * (high - low), low + ratio * (high - low)
        if width(left) <= width(right):
            high = right
        else:
            low = left
    return math.exp(0.5 * (low + high))


# -------------------------------------------------------------------------- one look
def decide(ratio_low: float, ratio_high: float, threshold: float) -> str:
    """The one rule for a ratio interval against a threshold (`compare`'s verdicts and `ab`'s
    read it): slower, faster, same, or "continue" where the interval is too wide to tell
    (`compare` says inconclusive; `ab` runs another round, or says inconclusive when its
    budget ran out)."""
    if ratio_high < 1.0 - threshold:
        return SLOWER
    if ratio_low > 1.0 + threshold:
        return FASTER
    if 1.0 - threshold <= ratio_low and ratio_high <= 1.0 + threshold:
        return SAME
    return CONTINUE


def sequential_look(log_ratios: Sequence[float], design: SequentialDesign) -> SequentialLook:
    """The ratio B / A after the rounds so far, its anytime-valid interval and the verdict.

    `log_ratios`: one log(B / A) of the two sides' process medians per paired round, in the
    order run (at least one). Before `design.min_rounds` the verdict is always "continue".
    """
    n = len(log_ratios)
    if n == 0 or not all(math.isfinite(x) for x in log_ratios):
        raise ValueError("need at least one finite log-ratio")
    mean = math.fsum(log_ratios) / n
    sd = _sd(log_ratios, mean)
    g = design.mixture_g
    factor = _halfwidth_factor(n, design.alpha, g) if n >= 2 else math.inf
    # An unbounded boundary keeps every ratio even at zero spread (inf * 0 would be nan).
    half = factor * sd if math.isfinite(factor) else math.inf
    low = math.exp(mean - half) if math.isfinite(half) else 0.0
    high = math.exp(mean + half) if math.isfinite(half) else math.inf
    verdict = decide(low, high, design.threshold) if n >= design.min_rounds else CONTINUE
    return SequentialLook(
        rounds=n, ratio=math.exp(mean), ratio_low=low, ratio_high=high, verdict=verdict,
        rounds_needed=_rounds_needed(n, mean, sd, design, g), method=design.describe())


def _sd(values: Sequence[float], mean: float) -> float:
    if len(values) < 2:
        return math.nan
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1))


def _rounds_needed(n: int, mean: float, sd: float, design: SequentialDesign,
                   g: float) -> int | None:
    """Total rounds at which the interval around this mean, at this spread, would decide.

    Whatever side of 1 ± t the mean is on, a verdict comes when the half-width drops below the
    distance from the mean to the nearer of log(1 - t) and log(1 + t). None: fewer than two
    rounds (no spread), a mean on a boundary, or beyond ROUNDS_NEEDED_CAP.
    """
    if n < 2:
        return None
    distance = min(abs(mean - math.log1p(design.threshold)),
                   abs(mean - math.log1p(-design.threshold)))
    first = max(n, design.min_rounds)

    def decides(rounds: int) -> bool:
        factor = _halfwidth_factor(rounds, design.alpha, g)
        return math.isfinite(factor) and factor * sd < distance

    if distance <= 0.0 or not decides(ROUNDS_NEEDED_CAP):
        return None
    if decides(first):
        return first
    # The half-width factor falls with the rounds (from unbounded): double, then bisect.
    below, above = first, min(2 * first, ROUNDS_NEEDED_CAP)
    while not decides(above):
        below, above = above, min(2 * above, ROUNDS_NEEDED_CAP)
    while above - below > 1:
        middle = (below + above) // 2
        if decides(middle):
            above = middle
        else:
            below = middle
    return above


# -------------------------------------------------------------- where to spend the time
def samples_per_process(within_var: float, between_var: float, process_cost_s: float,
                        sample_cost_s: float, low: int = 5, high: int = 200) -> int:
    """Kalibera & Jones's optimum samples per process, n* = √((c_p / c_s) · (σ²_w / σ²_b)),
    rounded and clamped to [low, high].

    `within_var`: variance of one sample within a process; `between_var`: the between-process
    component of the process medians' variance (`between_process_var`); both in the same units
    (the log scale, as the ratios use). `process_cost_s`: seconds to start a process (load,
    compile, warm up); `sample_cost_s`: seconds per sample. No between-process variance (or
    free samples) → high; no within-process variance (or free processes) → low.
    """
    values = (within_var, between_var, process_cost_s, sample_cost_s)
    if not all(math.isfinite(v) and v >= 0.0 for v in values):
        raise ValueError(f"variances and costs must be finite and >= 0, got {values}")
    if not 1 <= low <= high:
        raise ValueError(f"need 1 <= low <= high, got low={low}, high={high}")
    if within_var == 0.0 or process_cost_s == 0.0:
        return low
    if between_var == 0.0 or sample_cost_s == 0.0:
        return high
    optimum = math.sqrt((process_cost_s / sample_cost_s) * (within_var / between_var))
    return min(high, max(low, round(optimum)))


def between_process_var(medians_var: float, within_var: float, samples: int) -> float:
    """The between-process component of the variance of process medians measured with
    `samples` samples each: what the medians' spread has beyond the within-process noise they
    carry (σ²_w / n, as for a mean; Kalibera & Jones's estimator), floored at 0."""
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    return max(0.0, medians_var - within_var / samples)
