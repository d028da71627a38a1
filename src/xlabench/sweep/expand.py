"""A sweep's grid: its configuration expanded into Specs, and what was left out and why.

Every configuration of the grid is built as a `Spec`; one that `Spec` refuses (a mode its
backend lacks, a native runner without a native runtime, a scenario it cannot run) is left out
and counted under `Spec`'s own reason, as are the refusals that depend on the model (a
resolution it refuses, a saved file's dtype) or on the backend's precisions.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xlabench.core import BACKEND_MODES, Spec, UserError
from xlabench.core.backends import BACKENDS
from xlabench.sweep.config import GridPart, SweepConfig, scenario_settings_from
from xlabench.sweep.presets import DEFAULT_RESOLUTION
from xlabench.zoo import REGISTRY, ModelEntry, own

#: Precisions each backend can run (core/backends.py says why the runtimes take fp32 only).
#: Keras 3 applies dtype policies on every backend, so all three are allowed on the frameworks;
#: a combination that fails on some device is stored as a failure.
BACKEND_PRECISIONS: dict[str, tuple[str, ...]] = {b.name: b.precisions for b in BACKENDS}
#: Backend order inside each model group: the table's (JAX first, so the others reuse the
#: model's costs that a JAX worker counts in-process).
BACKEND_ORDER: tuple[str, ...] = tuple(b.name for b in BACKENDS)


@dataclass(frozen=True)
class Grid:
    """The expanded grid: specs to run (deduplicated, in run order) and what was left out."""

    specs: tuple[Spec, ...]
    #: reason -> how many configurations were left out for it (refused resolutions, ...)
    skipped: Mapping[str, int]
    #: spec id -> the preset tier it belongs to (a tiered preset's specs only)
    tiers: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: The spec ids the sweep id is made of when they are not `specs`' own: every tier's,
    #: when `--tier` runs some of a tiered preset.
    identity_ids: tuple[str, ...] = ()

    def sweep_id(self, label: str | None = None) -> str:
        """Same grid (and label), same id: a resumed sweep keeps writing under the id it
        started with; the same grid under another label is another sweep. Each tier of a
        preset has its whole grid's id, so its tiers run one by one continue one sweep."""
        ids = self.identity_ids or tuple(s.spec_id() for s in self.specs)
        joined = ",".join(sorted(ids))
        if label:
            joined += f"|label={label}"
        return hashlib.sha256(joined.encode()).hexdigest()[:12]


def expand(config: SweepConfig) -> Grid:
    """Every Spec of the configuration, deduplicated, in run order.

    Order: repeat, then model, resolution, batch size, precision, backend (JAX first), mode.
    Repeats are outermost so the runs of one configuration are spread over the sweep instead of
    back to back (slow drifts of the machine then show up as noise, not as a bias).

    Resolutions a model refuses are left out and counted in `Grid.skipped` (not stored): they
    are known before anything runs, and rows for them would be re-added on every resume.

    A model may also be the user's own (a .keras file or a module:function factory, zoo.own):
    it runs beside the registry's, whatever the family and kind filters say.

    `config.tiers` keeps the specs of those tiers (and what they left out); the others are
    expanded too, for the sweep id (`Grid.identity_ids`).

    Raises:
        UserError: an unknown model or family, a bad own model, or an empty grid.
    """
    specs: dict[str, Spec] = {}
    tiers: dict[str, int] = {}
    skipped: Counter[str] = Counter()
    for part in config.parts:
        selected = config.tiers is None or part.tier in config.tiers
        part_skipped: Counter[str] = Counter()
        models = part_models(part, config.unsafe_load)
        for repeat in range(part.repeats):
            for entry, fields in models:
                for spec in _entry_specs(entry, part, repeat, part_skipped, fields):
                    key = spec.spec_id()
                    if key not in tiers and _in_tier(part, entry.name):
                        tiers[key] = part.tier
                    specs.setdefault(key, spec)
        if selected:
            skipped.update(part_skipped)
    identity: tuple[str, ...] = ()
    if config.tiers is not None:
        identity = tuple(specs)
        specs = {key: spec for key, spec in specs.items() if tiers.get(key) in config.tiers}
        if identity and not specs:
            named = ", ".join(map(str, config.tiers))
            raise UserError(f"the grid is empty: no model given is in tier {named} of the preset")
    if not specs:
        raise UserError(f"the grid is empty: {_why_empty(skipped)}")
    return Grid(specs=tuple(specs.values()), skipped=dict(skipped),
                tiers={key: tiers[key] for key in specs if key in tiers}, identity_ids=identity)


def _in_tier(part: GridPart, model: str) -> bool:
    """Whether `model`'s specs from `part` belong to the part's tier: its preset put the model
    there (a model filter gives every part the same models)."""
    return part.tier is not None and (not part.tier_models or model in part.tier_models)


def part_models(part: GridPart, unsafe_load: bool = False
                ) -> list[tuple[ModelEntry, Mapping[str, Any]]]:
    """A part's models: registry entries (by the filters), then own models, each with the
    fields its specs carry beside the model name (none for a registry model)."""
    names = [m for m in part.models if not own.is_reference(m)]
    references = [m for m in part.models if own.is_reference(m)]
    entries = (REGISTRY.select(names, part.families, part.kinds)
               if names or not references else [])
    owned = [own.resolve(ref, unsafe_load) for ref in references]
    return [*((e, {}) for e in entries), *((m.entry(), m.spec_fields()) for m in owned)]


def _entry_specs(
    entry: ModelEntry, part: GridPart, repeat: int, skipped: Counter[str],
    fields: Mapping[str, Any],
) -> list[Spec]:
    """The model's specs of one repeat of `part`; each configuration left out is counted once
    in `skipped`, under the first reason that refuses it: `Spec`'s own, then the model's (its
    resolution, a saved file's dtype), then the backend's precisions."""
    specs = []
    pairs = requested_pairs(part.backends, part.modes)
    for resolution in _resolutions(entry, part.resolutions):
        refused = entry.check_resolution(resolution)
        for batch in part.batch_sizes:
            for precision in part.precisions:
                for backend, mode in pairs:
                    spec = _spec_or_skip(
                        skipped, Spec, entry.name, backend, mode, resolution, batch_size=batch,
                        precision=precision, repeat=repeat, measure=part.measure,
                        runner=part.runner, **fields)
                    if spec is None:
                        continue
                    problem = ((refused and f"resolution refused: {refused}")
                               or own_precision_problem(fields, precision)
                               or _backend_precision_problem(backend, precision))
                    if problem:
                        skipped[problem] += 1
                        continue
                    specs += _scenario_specs(spec, part, skipped)
    return specs


def _spec_or_skip(skipped: Counter[str], build: Callable[..., Spec], *args: Any,
                  **fields: Any) -> Spec | None:
    """The Spec `build(*args, **fields)` makes, or None with `Spec`'s refusal counted as the
    skip reason."""
    try:
        return build(*args, **fields)
    except (UserError, ValueError) as refusal:  # Spec.__post_init__ says why, in one line
        skipped[str(refusal)] += 1
        return None


def _backend_precision_problem(backend: str, precision: str) -> str | None:
    if precision in BACKEND_PRECISIONS[backend]:
        return None
    return f"{backend} has no {precision} precision"


def _scenario_specs(spec: Spec, part: GridPart, skipped: Counter[str]) -> list[Spec]:
    """`spec` once per scenario of the part (none: the timed loop, `spec` itself). What
    `Spec` refuses to run as a scenario (single-stream at a batch other than 1, any scenario
    on the native runner) is left out and counted."""
    if not part.scenarios:
        return [spec]
    specs = []
    for scenario in part.scenarios:
        settings = scenario_settings_from(scenario, spec.backend, spec.batch_size,
                                          dict(part.scenario_values))
        scenario_spec = _spec_or_skip(skipped, dataclasses.replace, spec, scenario=scenario,
                                      scenario_settings=settings)
        if scenario_spec is not None:
            specs.append(scenario_spec)
    return specs


def own_precision_problem(fields: Mapping[str, Any], precision: str) -> str | None:
    """Why a saved model file cannot run at `precision` (it keeps the dtype it was saved
    with; a factory builds under the run's dtype policy), or None."""
    if fields.get("model_file") and not fields.get("model_factory") and precision != "fp32":
        return (f"a saved model file runs in the dtype it was saved with, not {precision} "
                "(a factory builds under the precision's dtype policy)")
    return None


def requested_pairs(backends: Iterable[str], modes: Iterable[str]) -> list[tuple[str, str]]:
    """Every (backend, mode) pair asked for, JAX first (see BACKEND_ORDER), whether or not the
    backend has the mode (`Spec` refuses the pairs that do not exist).

    A mode list applies per backend: `eager,xla,compiled` asks TF, JAX and torch for each of
    the three. No modes means every mode of each backend.
    """
    wanted = list(dict.fromkeys(modes))
    ordered = sorted(dict.fromkeys(backends), key=BACKEND_ORDER.index)
    return [(backend, mode) for backend in ordered
            for mode in (wanted or BACKEND_MODES[backend])]


def _resolutions(entry: ModelEntry, resolutions: Iterable[int | str]) -> list[int]:
    values = [default_resolution(entry) if r == DEFAULT_RESOLUTION else int(r)
              for r in resolutions]
    return list(dict.fromkeys(values))


def default_resolution(entry: ModelEntry) -> int:
    """The model's own input size; an own model whose input size is not fixed has none."""
    if not entry.default_resolution:
        raise UserError(f"{entry.name} does not fix its input size (H and W are None): give "
                        "the resolution to measure it at (--resolution / --resolutions)")
    return entry.default_resolution


def _why_empty(skipped: Counter[str]) -> str:
    if not skipped:
        return "no model matches the filters, or no backend has the requested modes"
    reasons = [r for r, _ in skipped.most_common(3)]
    return "every configuration was left out (" + "; ".join(reasons) + ")"
