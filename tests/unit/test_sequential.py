"""The sequential A/B verdict: its error rates by simulation (and why a plain t interval at every
look fails them), the boundary's closed form, rounds needed, and Kalibera-Jones's optimum."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from xlabench.core import UserError
from xlabench.measure import sequential
from xlabench.measure.combine import t_quantile
from xlabench.measure.sequential import SequentialDesign, samples_per_process, sequential_look

SEED = 20261205
DESIGN = SequentialDesign()  # threshold 5%, α 5%, 40 rounds, from round 3
TRIALS = 2000

Look = Callable[[Sequence[float]], str]


def _cs_look(log_ratios: Sequence[float]) -> str:
    return sequential_look(log_ratios, DESIGN).verdict


def _naive_look(log_ratios: Sequence[float]) -> str:
    """A plain 95% t interval at every look: right for one look, wrong for forty."""
    n = len(log_ratios)
    if n < DESIGN.min_rounds:
        return sequential.CONTINUE
    mean = sum(log_ratios) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in log_ratios) / (n - 1))
    half = t_quantile(1.0 - DESIGN.alpha / 2.0, n - 1) * sd / math.sqrt(n)
    return sequential.decide(math.exp(mean - half), math.exp(mean + half), DESIGN.threshold)


def _verdicts(look: Look, ratio: float, sd: float, seed: int,
              trials: int = TRIALS) -> Counter[str]:
    """The first verdict of each of `trials` comparisons (i.i.d. Gaussian log-ratios of mean
    log(ratio) and this SD), looking after every round up to the budget."""
    rng = random.Random(seed)
    verdicts: Counter[str] = Counter()
    for _ in range(trials):
        log_ratios: list[float] = []
        verdict = sequential.CONTINUE
        while verdict == sequential.CONTINUE and len(log_ratios) < DESIGN.max_rounds:
            log_ratios.append(rng.gauss(math.log(ratio), sd))
            verdict = look(log_ratios)
        verdicts[verdict] += 1
    return verdicts


def _rate(verdicts: Counter[str], *which: str) -> float:
    return sum(verdicts[v] for v in which) / verdicts.total()


# ------------------------------------------------------------------------ error rates
def test_aa_false_alarms_stay_within_alpha_where_a_t_interval_at_every_look_does_not() -> None:
    # A/A at the machine's larger spread: 40 looks, no true change.
    cs = _verdicts(_cs_look, 1.0, 0.2, SEED)
    naive = _verdicts(_naive_look, 1.0, 0.2, SEED)
    cs_rate = _rate(cs, sequential.FASTER, sequential.SLOWER)
    naive_rate = _rate(naive, sequential.FASTER, sequential.SLOWER)
    assert cs_rate <= DESIGN.alpha / 2  # well below α: the bound is not near (observed ~0.2%)
    assert naive_rate > DESIGN.alpha  # observed ~6.5%: why the confidence sequence is needed
    assert naive_rate > 5 * cs_rate


def test_false_faster_at_the_edge_of_same_stays_within_alpha() -> None:
    # True ratio exactly 1 + t, the worst case for a false "faster" (and "same" is right there).
    edge = 1.0 + DESIGN.threshold
    cs = _rate(_verdicts(_cs_look, edge, 0.1, SEED + 1, 1000), sequential.FASTER,
               sequential.SLOWER)
    naive = _rate(_verdicts(_naive_look, edge, 0.1, SEED + 1, 1000), sequential.FASTER)
    assert cs <= DESIGN.alpha  # observed ~1%; binomial SD at 5% is 0.7%
    assert naive > 2 * DESIGN.alpha  # observed ~13%


@pytest.mark.parametrize(("ratio", "expected"), [
    (1.0 + 2 * DESIGN.threshold, sequential.FASTER),
    (1.0 / (1.0 + 2 * DESIGN.threshold), sequential.SLOWER),
])
def test_a_change_of_twice_the_threshold_is_called_in_its_direction(
    ratio: float, expected: str
) -> None:
    verdicts = _verdicts(_cs_look, ratio, 0.05, SEED + 2)
    assert verdicts[expected] >= 0.95 * TRIALS  # observed ~99%


def test_aa_at_a_small_spread_reaches_same() -> None:
    verdicts = _verdicts(_cs_look, 1.0, 0.05, SEED + 3)
    assert verdicts[sequential.SAME] >= 0.95 * TRIALS  # observed ~99.7%


def test_the_interval_holds_the_true_ratio_at_every_one_of_a_thousand_looks() -> None:
    # The guarantee is not about 40 looks: P(a miss at any round) <= α however long one looks.
    # Vectorized over the boundary T*_n (sequential_look's interval is mean ± T*_n s / √n).
    rounds, trials = 1000, 4000
    x = np.random.default_rng(SEED).normal(0.0, 1.0, (trials, rounds))
    n = np.arange(1, rounds + 1)
    mean = np.cumsum(x, axis=1) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt((np.cumsum(x * x, axis=1) - n * mean**2) / (n - 1))
        t_stat = np.abs(mean) / (sd / np.sqrt(n))
    boundary = np.array([sequential.critical_t(k, DESIGN.alpha, DESIGN.mixture_g) for k in n])
    misses = (t_stat[:, 1:] >= boundary[1:]).any(axis=1).mean()
    assert misses <= DESIGN.alpha  # observed 3.9%, approaching α as the looks go on


# ------------------------------------------------------------------------- one look
def _with_spread(n: int, mean: float, sd: float) -> list[float]:
    """n values with exactly this mean and sample SD."""
    raw = [math.sin(1.0 + 2.3 * i) for i in range(n)]
    raw_mean = sum(raw) / n
    raw_sd = math.sqrt(sum((x - raw_mean) ** 2 for x in raw) / (n - 1))
    return [mean + sd * (x - raw_mean) / raw_sd for x in raw]


def test_the_boundary_is_where_the_t_mixture_bayes_factor_reaches_one_over_alpha() -> None:
    g = DESIGN.mixture_g
    for n in (6, 10, 20, 40, 200):
        t = sequential.critical_t(n, DESIGN.alpha, g)
        a, nu = 1.0 + n * g, n - 1
        bayes_factor = a ** -0.5 * ((nu + t * t) / (nu + t * t / a)) ** (n / 2)
        assert bayes_factor == pytest.approx(1.0 / DESIGN.alpha, rel=1e-9)
    # Too few rounds for the mixture to ever reach 1/α: every ratio is kept.
    assert sequential.critical_t(3, DESIGN.alpha, g) == math.inf


def test_the_interval_narrows_with_rounds_and_is_wider_than_one_t_interval() -> None:
    rng = random.Random(SEED)
    log_ratios = [rng.gauss(0.02, 0.1) for _ in range(DESIGN.max_rounds)]
    widths = []
    for n in (10, 20, 30, 40):
        look = sequential_look(log_ratios[:n], DESIGN)
        assert look.ratio_low < look.ratio < look.ratio_high
        widths.append(math.log(look.ratio_high / look.ratio_low))
        mean = sum(log_ratios[:n]) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in log_ratios[:n]) / (n - 1))
        t_width = 2 * t_quantile(0.975, n - 1) * sd / math.sqrt(n)
        assert 1.2 * t_width < widths[-1] < 2.5 * t_width  # the price of looking at will
    assert widths == sorted(widths, reverse=True)


def test_no_verdict_before_min_rounds_and_no_interval_from_one_round() -> None:
    one = sequential_look([0.5], DESIGN)
    assert (one.ratio, one.ratio_low, one.ratio_high) == (pytest.approx(math.exp(0.5)), 0.0,
                                                          math.inf)
    assert one.verdict == sequential.CONTINUE and one.rounds_needed is None
    # Zero spread: no verdict before min_rounds, nor while the boundary is unbounded (even
    # zero spread is no proof after three rounds), then a point.
    eager = SequentialDesign(min_rounds=2)
    assert sequential_look([0.5] * 3, eager).verdict == sequential.CONTINUE
    first = next(n for n in range(2, 40) if math.isfinite(
        sequential.critical_t(n, eager.alpha, eager.mixture_g)))
    at_first = sequential_look([0.5] * first, eager)
    assert at_first.verdict == sequential.FASTER and at_first.ratio_low == at_first.ratio_high
    assert sequential_look([0.5] * 2, eager).rounds_needed == first
    patient = SequentialDesign(min_rounds=first + 1)
    assert sequential_look([0.5] * first, patient).verdict == sequential.CONTINUE
    assert sequential_look([0.5] * first, patient).rounds_needed == first + 1
    with pytest.raises(ValueError):
        sequential_look([], DESIGN)
    with pytest.raises(ValueError):
        sequential_look([0.1, math.nan], DESIGN)


def test_rounds_needed_shrinks_as_the_spread_falls_and_is_where_it_decides() -> None:
    mean = math.log(1.15)
    needed = [sequential_look(_with_spread(8, mean, sd), DESIGN).rounds_needed
              for sd in (0.4, 0.2, 0.1, 0.05)]
    assert all(n is not None for n in needed)
    assert needed == sorted(needed, reverse=True) and len(set(needed)) == 4
    for sd in (0.4, 0.2, 0.1):
        n = sequential_look(_with_spread(8, mean, sd), DESIGN).rounds_needed
        assert n is not None and n > 8
        assert sequential_look(_with_spread(n, mean, sd), DESIGN).verdict == sequential.FASTER
        assert sequential_look(_with_spread(n - 1, mean, sd), DESIGN).verdict == "continue"
    decided = sequential_look(_with_spread(8, mean, 0.05), DESIGN)
    assert decided.verdict == sequential.FASTER and decided.rounds_needed == 8
    # A mean right on the edge of "same" never decides.
    assert sequential_look(_with_spread(8, math.log(1.05), 0.1), DESIGN).rounds_needed is None


def test_the_verdict_rule_at_its_edges() -> None:
    """Slower/faster only beyond the threshold, same only inside it, edges included."""
    t = DESIGN.threshold
    assert sequential.decide(0.80, 1 - t - 1e-9, t) == sequential.SLOWER
    assert sequential.decide(0.80, 1 - t, t) == sequential.CONTINUE
    assert sequential.decide(1 + t + 1e-9, 1.2, t) == sequential.FASTER
    assert sequential.decide(1 + t, 1.2, t) == sequential.CONTINUE
    assert sequential.decide(1 - t, 1 + t, t) == sequential.SAME
    assert sequential.decide(0.97, 1.02, t) == sequential.SAME
    assert sequential.decide(0.94, 1.02, t) == sequential.CONTINUE


@pytest.mark.parametrize("bad", [
    {"threshold": 0.0}, {"threshold": 1.0}, {"alpha": 0.0}, {"alpha": 1.5},
    {"min_rounds": 1}, {"max_rounds": 2}, {"tuned_rounds": 1},
])
def test_a_bad_design_is_a_user_error(bad: dict[str, Any]) -> None:
    with pytest.raises(UserError):
        SequentialDesign(**bad)


# ---------------------------------------------------------------- where to spend the time
@pytest.mark.parametrize(("within", "between", "process_s", "sample_s", "expected"), [
    (0.02, 0.01, 1.0, 0.02, 10),  # √(50 · 2)
    (0.03, 0.01, 3.0, 0.01, 30),  # √(300 · 3)
    (0.01, 0.04, 2.0, 0.005, 10),  # √(400 / 4)
    (0.01, 0.01, 0.5, 0.01, 7),  # √50 = 7.07
    (0.01, 1.0, 0.1, 0.01, 5),  # √0.1, clamped up to low
    (1.0, 0.001, 10.0, 0.01, 200),  # √1e6, clamped down to high
    (0.01, 0.0, 1.0, 0.01, 200),  # processes do not differ: one long process is best
    (0.0, 0.01, 1.0, 0.01, 5),  # samples do not differ: as many processes as possible
])
def test_samples_per_process_is_kalibera_and_jones_optimum(
    within: float, between: float, process_s: float, sample_s: float, expected: int
) -> None:
    assert samples_per_process(within, between, process_s, sample_s) == expected


def test_samples_per_process_bounds_and_bad_input() -> None:
    assert samples_per_process(0.03, 0.01, 3.0, 0.01, low=40, high=100) == 40
    assert samples_per_process(0.03, 0.01, 3.0, 0.01, low=2, high=20) == 20
    for bad in ((-1.0, 0.01, 1.0, 0.01), (0.01, math.nan, 1.0, 0.01), (0.01, 0.01, -1.0, 0.01)):
        with pytest.raises(ValueError):
            samples_per_process(*bad)
    with pytest.raises(ValueError):
        samples_per_process(0.01, 0.01, 1.0, 0.01, low=10, high=5)


def test_between_process_var_removes_the_within_noise_the_medians_carry() -> None:
    assert sequential.between_process_var(0.02, 0.5, 50) == pytest.approx(0.01)
    assert sequential.between_process_var(0.005, 0.5, 50) == 0.0
