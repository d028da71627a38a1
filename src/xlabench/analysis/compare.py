"""Did a change make it faster? Two sides' stored results, configuration by configuration.

A side is one database, optionally narrowed to one run label (`--label` of `run`/`sweep`) or
one environment id. Its figure for a configuration (spec id) is the latest *complete* combined
result stored for it that matches: the stored `Result` is the one owner of a result's figure
and interval, so nothing here recombines processes. Rows from before results had processes
(and processes whose result was never combined) are skipped and counted.

Per configuration on both sides: the ratio new / baseline with its interval
(`measure.combine.result_ratio`: paired by round when both ran interleaved in one sweep,
otherwise Welch on log process medians with each run's between-run variation) and a verdict
against a threshold t (DEFAULT_THRESHOLD):

    slower        ratio_high < 1 - t               (a slowdown beyond t is established)
    faster        ratio_low  > 1 + t
    same          1 - t <= ratio_low and ratio_high <= 1 + t
    inconclusive  otherwise (the interval is too wide to tell), and always for two separate
                  runs of which neither carries a between-run variation: their interval knows
                  only how processes of one run differ, and separate runs here differed by up
                  to 57% (docs/spread.md), so it cannot hold a repetition; keep the
                  baseline in a database with re-runs (each result then carries the machine's),
                  or compare results measured interleaved in one sweep (paired)
    insufficient data   either side failed or has fewer than two processes

A LoadGen scenario result pairs only with the same scenario and settings (they are part of
the spec id). Its stored figure is a rate, higher is faster (`core.scenario`), so ratio and
verdict read the same way for every result: a single-stream ratio of 1.25 is the baseline's
p90 over the new one's (the new p90 is 20% lower: faster). Each side's figure is also given
in the scenario's own unit (`figure`, `unit`).

Databases are opened read-only and never created, migrated or written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from xlabench.core import UserError
from xlabench.core.result import Result
from xlabench.core.scenario import FIGURES, Scenario
from xlabench.measure.combine import (
    RatioInterval,
    between_runs_known,
    interleaved,
    result_ratio,
)
from xlabench.measure.sequential import (
    CONTINUE,
    FASTER,
    SAME,
    SLOWER,
    SequentialDesign,
    decide,
)
from xlabench.store.reader import ProcessRow, StoreReader
from xlabench.store.scenario_rows import figure_interval
from xlabench.store.view import latest_complete

#: A ratio counts as a change only beyond ±5%: below that, re-runs of the same software on a
#: quiet machine differ by about as much (docs/spread.md), so "same" means "within 5%".
DEFAULT_THRESHOLD = 0.05
INCONCLUSIVE, INSUFFICIENT = "inconclusive", "insufficient data"
VERDICTS = (FASTER, SLOWER, SAME, INCONCLUSIVE, INSUFFICIENT)
#: What of a process's stored environment is compared between the sides (beside every package
#: version and every result-changing flag).
ENV_KEYS = ("accelerator", "cpu_model", "cpu_threads", "python", "os")
SPEC_KEYS = ("model", "backend", "mode", "resolution", "batch_size", "precision", "runner",
             "scenario", "latency_bound_ms")
#: The timed loop's figure: what a result without a scenario is measured in.
TIMED_LOOP_UNIT = "samples/s"


def check_threshold(value: float, what: str = "threshold") -> float:
    """A percentage strictly between 0 and 100, as a fraction."""
    if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value < 100):
        raise UserError(f"{what} must be a percentage above 0 and below 100, got {value!r}")
    return value / 100.0


# ---------------------------------------------------------------------------------- sides
@dataclass(frozen=True)
class Side:
    """What one side of a comparison reads: a database, optionally one label or environment."""

    db: Path
    label: str | None = None
    env: str | None = None

    def describe(self) -> str:
        narrowed = [f"label {self.label}"] * bool(self.label) + [f"env {self.env}"] * bool(self.env)
        return str(self.db) + (f" ({', '.join(narrowed)})" if narrowed else "")

    def to_dict(self) -> dict[str, Any]:
        return {"db": str(self.db), "label": self.label, "env": self.env}


@dataclass(frozen=True)
class Chosen:
    """One side's result of one configuration, with what the comparison needs beside it."""

    result: Result
    sweep_id: str | None
    spec: Mapping[str, Any]  # SPEC_KEYS, from the result's process rows
    span: tuple[datetime, datetime] | None  # first process start, last process end
    env_ids: tuple[str, ...] = ()  # of its processes


@dataclass(frozen=True)
class SideResults:
    side: Side
    results: dict[str, Chosen]  # spec id -> its latest complete matching result
    envs: dict[str, dict[str, Any]]  # env id -> stored environment (of the results' processes)
    legacy_skipped: int  # results without a combined result (old rows), not compared
    incomplete_skipped: int  # configurations with only incomplete results (a killed sweep)


def read_side(side: Side) -> SideResults:
    """The latest complete combined result per spec id matching `side`, read-only.

    Raises:
        UserError: a missing, foreign, newer or corrupt database; a label or environment the
            database does not have.
    """
    with StoreReader(side.db) as store, store.reading():
        return _read_side(store, side)


def _read_side(store: StoreReader, side: Side) -> SideResults:
    filters: dict[str, str] = {}
    if side.label is not None:
        filters["label"] = _known_label(store, side)
    if side.env is not None:
        filters["env_id"] = _known_env(store, side)

    stored = store.stored_results(**filters)
    latest = latest_complete(stored, key=lambda found: found.spec_id,
                             complete=lambda found: found.complete)
    incomplete = {found.spec_id for found in stored} - set(latest)

    combined_ids = store.result_ids()
    legacy = set()
    processes: dict[str, list[ProcessRow]] = {}
    wanted = {found.result_id for found in latest.values()}
    for row in store.process_rows(**filters):
        if row.result_id is None or row.result_id not in combined_ids:
            legacy.add(row.result_id or f"row {row.row_id}")
        elif row.result_id in wanted:
            processes.setdefault(row.result_id, []).append(row)

    chosen: dict[str, Chosen] = {}
    env_ids: set[str] = set()
    for spec_id, found in latest.items():
        rows = processes.get(found.result_id, [])
        env_ids.update(r.env_id for r in rows)
        chosen[spec_id] = Chosen(found.result, found.sweep_id, _spec(rows[0] if rows else None),
                                 _span(rows),
                                 tuple(sorted({r.env_id for r in rows})) or (found.result.env_id,))
    resolved = Side(side.db, side.label, filters.get("env_id"))  # a prefix: the whole id
    return SideResults(resolved, chosen, store.environments(env_ids), len(legacy),
                       len(incomplete))


def _spec(first: ProcessRow | None) -> dict[str, Any]:
    """SPEC_KEYS of a result, from its first process (all None when none is stored)."""
    spec = {key: (getattr(first, key) if first else None) for key in SPEC_KEYS}
    if first is not None:
        spec["runner"] = spec["runner"] or "python"
        spec["scenario"] = spec["scenario"] or ""
    if spec["scenario"] != Scenario.SERVER:  # the bound means something to Server only
        spec["latency_bound_ms"] = None
    return spec


def _known_label(store: StoreReader, side: Side) -> str:
    labels = store.labels()
    if side.label not in labels:
        there = (f"labels there: {', '.join(sorted(labels))}" if labels else
                 "it has no labelled runs (label them with `run --label` or `sweep --label`)")
        raise UserError(f"unknown label {side.label!r} in {side.db}; {there}")
    return str(side.label)


def _known_env(store: StoreReader, side: Side) -> str:
    """The environment id given, or the one stored id it is a prefix of."""
    envs = store.env_ids()
    wanted = str(side.env)
    if wanted in envs:
        return wanted
    matches = sorted(e for e in envs if wanted and e.startswith(wanted))
    if len(matches) == 1:
        return matches[0]
    there = f"environments there: {', '.join(sorted(envs))}" if envs else "it has no results"
    if len(matches) > 1:
        raise UserError(f"environment {wanted!r} is ambiguous in {side.db}: "
                        f"{', '.join(matches)}")
    raise UserError(f"unknown environment {wanted!r} in {side.db}; {there}")


def _span(rows: Sequence[ProcessRow]) -> tuple[datetime, datetime] | None:
    """When a result's processes ran: first start to last end (None when unknown)."""
    starts, ends = [], []
    for row in rows:
        try:
            start = datetime.fromisoformat(str(row.created_at))
        except ValueError:
            continue
        starts.append(start)
        ends.append(start + timedelta(seconds=float(row.duration_s or 0.0)))
    if not starts:
        return None
    try:
        return min(starts), max(ends)
    except TypeError:  # naive and aware timestamps mixed: no order between them
        return None


# ---------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Pair:
    """One configuration on both sides."""

    spec_id: str
    spec: Mapping[str, Any]
    baseline: Result
    new: Result
    ratio: RatioInterval | None
    estimate: float | None  # new / baseline of the stored figures (also without an interval)
    verdict: str
    reason: str  # why the data is insufficient ("" otherwise)

    def judged_at(self, threshold: float) -> tuple[str, str]:
        """(verdict, reason) of this pair at another threshold than the report's."""
        return judge(self.ratio, self.new, self.baseline, threshold)

    @property
    def effect(self) -> float:
        return abs(math.log(self.estimate)) if self.estimate else 0.0

    @property
    def scenario(self) -> str:
        return str(self.spec.get("scenario") or "")

    @property
    def unit(self) -> str:
        return FIGURES[Scenario(self.scenario)].unit if self.scenario else TIMED_LOOP_UNIT

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec_id": self.spec_id, **{key: self.spec.get(key) for key in SPEC_KEYS},
            "unit": self.unit,
            "baseline": _side_figures(self.baseline, self.scenario),
            "new": _side_figures(self.new, self.scenario),
            "ratio": self.estimate,
            "ratio_low": self.ratio.ratio_low if self.ratio else None,
            "ratio_high": self.ratio.ratio_high if self.ratio else None,
            "method": self.ratio.method if self.ratio else "",
            "verdict": self.verdict, "reason": self.reason,
        }


def _side_figures(result: Result, scenario: str = "") -> dict[str, Any]:
    """A side's stored figure: `sps` and its interval as stored (a scenario's: its rate,
    higher is faster), and `figure` with its interval in the pair's unit."""
    figure: tuple[float | None, ...] = (result.median_sps, result.ci_low_sps, result.ci_high_sps)
    if scenario:
        figure = figure_interval(scenario, *figure)
    return {"sps": result.median_sps, "ci_low": result.ci_low_sps,
            "ci_high": result.ci_high_sps, "figure": figure[0], "figure_ci_low": figure[1],
            "figure_ci_high": figure[2], "k": result.k, "status": result.status,
            "flagged": result.flagged}


@dataclass(frozen=True)
class EnvDifference:
    name: str  # a package, a flag or an ENV_KEYS key
    baseline: str
    new: str

    @property
    def text(self) -> str:
        return f"{self.name} {self.baseline} -> {self.new}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "baseline": self.baseline, "new": self.new, "text": self.text}


@dataclass(frozen=True)
class CompareReport:
    threshold: float
    baseline: SideResults
    new: SideResults
    pairs: tuple[Pair, ...]  # by effect, largest first; insufficient data last
    env_differences: tuple[EnvDifference, ...]
    only_baseline: int = 0
    only_new: int = 0
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> dict[str, int]:
        return {verdict: sum(p.verdict == verdict for p in self.pairs) for verdict in VERDICTS}

    def slowdowns(self, threshold: float) -> list[Pair]:
        """Pairs whose verdict at `threshold` (a fraction) is `slower`: the one verdict rule
        (`judge`), so the CI gate never fails on a pair the report calls inconclusive."""
        return [p for p in self.pairs if p.judged_at(threshold)[0] == SLOWER]

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "baseline": {**self.baseline.side.to_dict(),
                         "environments": sorted(self.baseline.envs)},
            "new": {**self.new.side.to_dict(), "environments": sorted(self.new.envs)},
            "pairs": [p.to_dict() for p in self.pairs],
            "environment_differences": [d.to_dict() for d in self.env_differences],
            "summary": self.summary(),
            "not_compared": {
                "only_baseline": self.only_baseline, "only_new": self.only_new,
                "legacy_baseline": self.baseline.legacy_skipped,
                "legacy_new": self.new.legacy_skipped,
                "incomplete_baseline": self.baseline.incomplete_skipped,
                "incomplete_new": self.new.incomplete_skipped,
            },
        }


def verdict(ratio: RatioInterval | None, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The verdict for a ratio interval (see the module docstring); None: insufficient data."""
    if ratio is None:
        return INSUFFICIENT
    # One rule for an interval against the threshold: `xlabench ab` decides with it too.
    decided = decide(ratio.ratio_low, ratio.ratio_high, threshold)
    return INCONCLUSIVE if decided == CONTINUE else decided


def _insufficient_reason(baseline: Result, new: Result) -> str:
    reasons = []
    for name, result in (("baseline", baseline), ("new", new)):
        if result.status != "ok":
            reasons.append(f"{name} {result.status}"
                           + (f": {result.error}" if result.error else ""))
        elif len(result.process_medians_sps) < 2:
            reasons.append(f"{name} has {result.k} process{'es' * (result.k != 1)} (2 needed)")
    return "; ".join(reasons)


#: Why two separate runs without a between-run variation get no faster/slower/same verdict.
NO_BETWEEN_RUNS = ("neither run carries a between-run variation (no re-runs in either "
                   "database): the interval holds within one run only")


def make_pair(spec_id: str, baseline: Chosen, new: Chosen, threshold: float) -> Pair:
    # A verdict is a decision, and interleaved rounds are looked at round after round (`ab`,
    # a sweep continued round by round): their interval is the anytime-valid one `ab` uses.
    ratio = result_ratio(new.result, baseline.result, interleaved(new, baseline),
                         design=SequentialDesign(threshold=threshold))
    if ratio is not None and not ratio.between_processes:
        ratio = None  # a one-process side: its fallback interval cannot hold a repetition
    base_sps, new_sps = baseline.result.median_sps, new.result.median_sps
    estimate = (ratio.ratio if ratio is not None else
                new_sps / base_sps if new_sps and base_sps else None)
    spec = new.spec if new.spec.get("model") is not None else baseline.spec
    judged, reason = judge(ratio, new.result, baseline.result, threshold)
    return Pair(spec_id, spec, baseline.result, new.result, ratio, estimate, judged, reason)


def judge(
    ratio: RatioInterval | None, new: Result, baseline: Result, threshold: float
) -> tuple[str, str]:
    """(verdict, reason) of a pair: `verdict` of its interval, except that two separate runs
    of which neither carries a between-run variation are inconclusive (see the module
    docstring); the reason says why a pair has no verdict ("" otherwise). The report's
    verdicts and the CI gate (`CompareReport.slowdowns`) both read this one rule."""
    if ratio is None:
        return INSUFFICIENT, _insufficient_reason(baseline, new)
    if not ratio.n_pairs and not between_runs_known(new, baseline):
        return INCONCLUSIVE, NO_BETWEEN_RUNS
    return verdict(ratio, threshold), ""


def compare(baseline: Side, new: Side, threshold: float = DEFAULT_THRESHOLD) -> CompareReport:
    """Every configuration both sides have, with its ratio and verdict (see the module
    docstring), and what differs between the sides' environments.

    Raises:
        UserError: a bad side (see `read_side`), the same side twice, a threshold outside
            (0, 1), or no configuration in common.
    """
    if not 0 < threshold < 1:
        raise UserError(f"threshold must be above 0% and below 100%, got {100 * threshold:g}%")
    base_side, new_side = read_side(baseline), read_side(new)
    if _key(base_side.side) == _key(new_side.side):
        raise UserError("both sides are the same: give two databases, or --baseline-label and "
                        "--label, or --baseline-env and --env")
    common = sorted(set(base_side.results) & set(new_side.results))
    if not common:
        raise UserError(_nothing_in_common(base_side, new_side))
    pairs = [make_pair(s, base_side.results[s], new_side.results[s], threshold) for s in common]
    pairs.sort(key=lambda p: (p.verdict == INSUFFICIENT, -p.effect, _spec_order(p)))
    base_envs = _envs_of(base_side, common)
    new_envs = _envs_of(new_side, common)
    return CompareReport(
        threshold, base_side, new_side, tuple(pairs),
        tuple(environment_differences(base_envs, new_envs)),
        only_baseline=len(set(base_side.results) - set(common)),
        only_new=len(set(new_side.results) - set(common)),
    )


def _key(side: Side) -> tuple[Any, ...]:
    return side.db.resolve(), side.label, side.env


def _spec_order(pair: Pair) -> tuple[str, ...]:
    return (*(str(pair.spec.get(key)) for key in SPEC_KEYS), pair.spec_id)


def _envs_of(side: SideResults, spec_ids: Iterable[str]) -> list[dict[str, Any]]:
    wanted = {env_id for s in spec_ids for env_id in side.results[s].env_ids}
    return [env for env_id, env in sorted(side.envs.items()) if env_id in wanted]


def _nothing_in_common(base: SideResults, new: SideResults) -> str:
    def counts(side: SideResults) -> str:
        text = f"{len(side.results)} configuration{'s' * (len(side.results) != 1)}"
        if side.legacy_skipped:
            text += (f" ({side.legacy_skipped} result(s) without a combined result, from "
                     "before results had processes, skipped)")
        return text

    return (f"no configuration in common: the baseline ({base.side.describe()}) has complete "
            f"results of {counts(base)}, the new side ({new.side.describe()}) of {counts(new)}")


# -------------------------------------------------------------------------- environments
def _values(envs: Sequence[Mapping[str, Any]], get: Any) -> str:
    seen = sorted({get(env) for env in envs}, key=str)
    return ", ".join(seen)


def environment_differences(
    baseline: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> list[EnvDifference]:
    """What differs between two sides' stored environments (each side: the environments of
    its compared results' processes): ENV_KEYS, every package version and every
    result-changing flag, e.g. ``tensorflow 2.20.0 -> 2.21.0``. A side with several
    environments shows their values joined with commas."""
    if not baseline or not new:
        return []
    found = []

    def plain(key: str) -> Any:
        return lambda env: "-" if env.get(key) is None else str(env.get(key))

    def nested(table: str, key: str, missing: str) -> Any:
        def get(env: Mapping[str, Any]) -> str:
            value = (env.get(table) or {}).get(key)
            return missing if value is None else str(value)
        return get

    keys: list[tuple[str, Any]] = [(key, plain(key)) for key in ENV_KEYS]
    both = [*baseline, *new]
    packages = sorted({name for env in both for name in (env.get("packages") or {})})
    flags = sorted({name for env in both for name in (env.get("flags") or {})})
    keys += [(name, nested("packages", name, "(not installed)")) for name in packages]
    keys += [(name, nested("flags", name, "(unset)")) for name in flags]
    for name, get in keys:
        before, after = _values(baseline, get), _values(new, get)
        if before != after:
            found.append(EnvDifference(name, before, after))
    return found
