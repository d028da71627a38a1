"""Which of the registry's models each runtime runs: the survey files merged into one table.

Reads the JSON lines `bench/runtime_coverage.py` writes (any number of files, from either Keras
backend; a later file's outcome for a model and runtime replaces an earlier one) and prints,
per runtime, how many of the registry's models run with parity (the worker's fp32 tolerance),
run without it, fail, are flagged unsupported in the registry, or were not surveyed yet; then
one row per model.

    .venv/bin/python bench/coverage_table.py tf.jsonl jax.jsonl
    .venv/bin/python bench/coverage_table.py --counts-only /tmp/cov_*.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter

from xlabench.backends.coverage import RUNTIMES
from xlabench.measure.parity import rtol_for
from xlabench.zoo.catalog import REGISTRY

OK, DISAGREES, FAILS, FLAGGED, MISSING = (
    "runs", "runs, parity fails", "fails", "unsupported", "not surveyed")
#: The survey runs fp32: a run agrees when the worker's fp32 parity check would pass it.
RTOL = rtol_for("fp32", False)


def merged(paths: list[str]) -> dict[str, dict[str, dict]]:
    """model -> runtime -> its latest outcome in the files, with its ``resolution``.

    An outcome at another resolution than the one before it does not hide a failure: a run at
    64 px after a failure at 32 px keeps that failure as ``failed_at`` (resolution -> reason),
    so the table says both.
    """
    found: dict[str, dict[str, dict]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                runtimes = found.setdefault(row["model"], {})
                for runtime in RUNTIMES:
                    if isinstance(row.get(runtime), dict):
                        runtimes[runtime] = _outcome(row[runtime], row.get("resolution"),
                                                     runtimes.get(runtime))
    return found


def _outcome(outcome: dict, resolution: int | None, before: dict | None) -> dict:
    failed_at = dict((before or {}).get("failed_at", {}))
    if before and not before.get("ok") and before.get("resolution") != resolution:
        failed_at[before.get("resolution")] = before.get("reason", "")
    failed_at.pop(resolution, None)  # this resolution's newest outcome is the one that counts
    return {**outcome, "resolution": resolution, "failed_at": failed_at}


def with_registry_flags(found: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """A runtime the registry now flags for a model counts as `unsupported` for it, surveyed
    or not, as the worker stores it (without trying): a survey failure from before the flag
    is said first in the reason."""
    flagged: dict[str, dict[str, dict]] = {m: dict(r) for m, r in found.items()}
    for entry in REGISTRY:
        for runtime in RUNTIMES:
            why = entry.unsupported_reason(runtime)
            before = flagged.get(entry.name, {}).get(runtime)
            if why and not (before or {}).get("ok"):
                surveyed = before and not before["reason"].startswith("flagged:")
                flagged.setdefault(entry.name, {})[runtime] = {
                    "ok": False,
                    "reason": f"flagged: {'(the survey failed too) ' if surveyed else ''}{why}"}
    return flagged


def verdict(outcome: dict | None) -> str:
    if outcome is None:
        return MISSING
    if outcome.get("ok"):
        return OK if (outcome.get("max_rel_diff") or 0.0) <= RTOL else DISAGREES
    return FLAGGED if str(outcome.get("reason", "")).startswith("flagged:") else FAILS


def _short(reason: str, chars: int) -> str:
    """The reason without source locations (`/site-packages/.../nn.py:762:13: `), cut."""
    return re.sub(r"\S+\.py:\d+:\d+: ", "", reason)[:chars]


def _cell(outcome: dict | None) -> str:
    kind = verdict(outcome)
    if kind == MISSING:
        return "-"
    if kind not in (OK, DISAGREES):
        reason = str(outcome.get("reason", "")).removeprefix("flagged: ")
        return f"{kind}: {_short(reason, 90)}"
    diff = outcome["max_rel_diff"]
    text = (f"runs ({diff:.0e})" if kind == OK
            else f"runs, parity fails (max rel diff {diff:.1e} > {RTOL:g})")
    if outcome.get("failed_at"):  # a success at another resolution than a failure
        failures = "; ".join(f"fails at {r} px: {_short(why, 110)}"
                             for r, why in sorted(outcome["failed_at"].items()))
        text = text.replace("runs", f"runs at {outcome['resolution']} px", 1) + f"; {failures}"
    return text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="survey JSON lines (runtime_coverage.py --out)")
    parser.add_argument("--counts-only", action="store_true")
    args = parser.parse_args(argv)
    try:
        found = with_registry_flags(merged(args.files))
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        print(f"coverage_table: cannot read the survey files: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(found) - {e.name for e in REGISTRY})
    if unknown:
        print(f"coverage_table: not in the registry (left out): {', '.join(unknown)}",
              file=sys.stderr)
    kinds = (OK, DISAGREES, FAILS, FLAGGED, MISSING)
    print(f"| runtime | {' | '.join(kinds)} |")
    print(f"| --- |{' --- |' * len(kinds)}")
    for runtime in RUNTIMES:
        counts = Counter(verdict(found.get(e.name, {}).get(runtime)) for e in REGISTRY)
        print(f"| {runtime} | {' | '.join(str(counts[k]) for k in kinds)} |")
    if not args.counts_only:
        print(f"\n| model | params (M) | {' | '.join(RUNTIMES)} |")
        print(f"| --- | --- |{' --- |' * len(RUNTIMES)}")
        for entry in sorted(REGISTRY, key=lambda e: e.params):
            cells = [_cell(found.get(entry.name, {}).get(r)) for r in RUNTIMES]
            print(f"| {entry.name} | {entry.params / 1e6:.0f} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
