"""A sweep's configuration: presets, a TOML file and flags layered, parsed and validated.

A configuration is built in three layers, each overriding the one before: a preset, a TOML
file, command-line flags. A preset may hold several grid *parts* (the study runs classifiers at
their own resolution and detectors at 320 and 640); every override applies to every part, except
the model filters (models, families, kinds), which narrow each part instead of replacing it.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlabench.core import BACKEND_MODES, PRECISIONS, MeasureSettings, UserError
from xlabench.core.backends import STUDY_BACKEND
from xlabench.core.result import ResultPolicy
from xlabench.core.scenario import ScenarioSettings, parse_scenario, scenario_settings_for
from xlabench.core.spec import RESOLUTION_RANGE, RUNNERS
from xlabench.runner.isolate import DEFAULT_TIMEOUT_S
from xlabench.store import DEFAULT_DB
from xlabench.sweep.presets import DEFAULT_RESOLUTION, PRESETS
from xlabench.zoo import KINDS

DEFAULT_BATCH_SIZE = 4
EXECUTORS = ("local", "ray")
#: A run's label (`--label`, key `label`): what `xlabench compare` selects a side by.
LABEL_PATTERN = re.compile(r"[A-Za-z0-9._:+-]{1,64}")


@dataclass(frozen=True)
class GridPart:
    """One rectangular grid: models x resolutions x batch sizes x backends x modes x precisions.

    Empty `models`, `families`, `kinds` or `modes` mean "all". `resolutions` holds integers or
    "default" (each model's own default resolution).
    """

    models: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    resolutions: tuple[int | str, ...] = (DEFAULT_RESOLUTION,)
    batch_sizes: tuple[int, ...] = (DEFAULT_BATCH_SIZE,)
    backends: tuple[str, ...] = tuple(BACKEND_MODES)
    modes: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ("fp32",)
    repeats: int = 1
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    runner: str = "python"  # "native": only the compiled modes that have a native runtime
    #: LoadGen scenarios each configuration runs instead of the timed loop (none: the loop),
    #: with the settings given (`SCENARIO_KEYS`: key, value pairs).
    scenarios: tuple[str, ...] = ()
    scenario_values: tuple[tuple[str, Any], ...] = ()
    #: The preset's tier this part belongs to (`--tier`); None: the preset has no tiers.
    tier: int | None = None
    #: The preset's own models of that tier. A model filter (`--models`) replaces `models` in
    #: every part, so a spec belongs to the tier whose preset models hold it, not to the first.
    tier_models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_choices("backend", self.backends, BACKEND_MODES)
        if self.scenario_values and not self.scenarios:
            key = self.scenario_values[0][0]
            raise UserError(f"{key} sets a LoadGen scenario: give scenarios too")
        for scenario in self.scenarios:  # a bad setting: one line before anything runs
            scenario_settings_from(scenario, STUDY_BACKEND, 1, dict(self.scenario_values))
        _check_choices("runner", (self.runner,), RUNNERS)
        all_modes = {m for modes in BACKEND_MODES.values() for m in modes}
        _check_choices("mode", self.modes, sorted(all_modes))
        _check_choices("precision", self.precisions, PRECISIONS)
        _check_choices("kind", self.kinds, KINDS)
        for resolution in self.resolutions:
            if resolution != DEFAULT_RESOLUTION and (
                isinstance(resolution, bool) or not isinstance(resolution, int)
            ):
                raise UserError(f"resolution must be an integer or 'default', got {resolution!r}")
        for name in ("resolutions", "batch_sizes", "backends", "precisions"):
            if not getattr(self, name):
                raise UserError(f"the grid is empty: no {name.replace('_', ' ')} given")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise UserError(f"repeats must be an integer >= 1, got {self.repeats!r}")


@dataclass(frozen=True)
class SweepConfig:
    """A whole sweep: its grid parts and how to run them."""

    parts: tuple[GridPart, ...] = field(default_factory=lambda: (GridPart(),))
    db: str = DEFAULT_DB
    timeout_s: float = DEFAULT_TIMEOUT_S
    executor: str = "local"
    workers: int | None = None  # local: 1; ray: as many as the cluster has GPUs (or CPUs)
    ray_address: str | None = None
    log_wandb: bool = False
    log_mlflow: str | None = None  # "" = MLflow's default tracking URI
    preset: str | None = None
    policy: ResultPolicy = field(default_factory=ResultPolicy)
    label: str | None = None  # stored on every process and result (`xlabench compare`)
    unsafe_load: bool = False  # own model files may run the code they hold (Lambda layers)
    #: The tiers to run (`--tier`), or None for every part. Parts of other tiers stay in
    #: `parts`: a tier's sweep id is its whole preset's, so the tiers run one by one resume
    #: one sweep (`expand.expand`).
    tiers: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.label is not None:
            check_label(self.label)
        if not self.parts:
            raise UserError("the grid is empty: no models match the filters")
        if self.executor not in EXECUTORS:
            raise UserError(f"unknown executor {self.executor!r}; choose from local, ray")
        if self.workers is not None and (isinstance(self.workers, bool) or self.workers < 1):
            raise UserError(f"workers must be an integer >= 1, got {self.workers!r}")
        if not self.timeout_s > 0:
            raise UserError(f"timeout must be positive, got {self.timeout_s}")



#: Keys accepted in a TOML file and as flag overrides, grouped by what they configure.
PART_KEYS = ("models", "families", "kinds", "resolutions", "batch_sizes", "backends", "modes",
             "precisions", "repeats", "runner", "scenarios")
#: A LoadGen scenario's settings, as flags and TOML keys (seconds and milliseconds as named).
SCENARIO_KEYS = ("latency_bound_ms", "scenario_min_duration_s", "scenario_max_duration_s",
                 "scenario_min_queries", "batch_wait_ms")
RUN_KEYS = ("db", "timeout", "executor", "workers", "ray_address", "log_wandb", "log_mlflow",
            "label", "unsafe_load")
#: How many processes make a result (ResultPolicy): key -> field.
POLICY_KEYS = {"processes": "min_processes", "max_processes": "max_processes",
               "result_target_ci": "target_rel_ci", "result_budget": "budget_s",
               "rerun_flagged": "rerun_flagged"}
#: Measurement keys: the CLI flag names, plus a [measure] table of MeasureSettings fields.
MEASURE_FLAG_KEYS = {"target_ci": "target_rel_ci", "budget": "budget_s",
                     "min_sample_time": "min_sample_s"}
#: Which of a tiered preset's tiers to run (`--tier 1,2`; default all).
TIERS_KEY = "tiers"
TOML_KEYS = ("preset", *PART_KEYS, *SCENARIO_KEYS, *RUN_KEYS, *POLICY_KEYS, *MEASURE_FLAG_KEYS,
             "measure", TIERS_KEY)


def build_config(
    preset: str | None = None,
    file_values: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> SweepConfig:
    """Combine a preset, values from a TOML file and flag values (later wins) into a config.

    Args:
        preset: a name from PRESETS, or None; a `preset` key in `file_values` is used when this
            is None.
        file_values: the TOML file's table (see `load_toml`).
        overrides: flag values with the same keys; None values mean "not given".

    Raises:
        UserError: unknown preset, key or value.
    """
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    layers = [dict(file_values or {}), given]
    named = [layer.pop("preset", None) for layer in layers]
    preset = preset or named[1] or named[0]
    base = _preset(preset)
    parts = [{**p, "tier_models": p.get("models", ())} if p.get("tier") is not None else dict(p)
             for p in base.get("parts", ({},))]
    run = {k: v for k, v in base.items() if k not in ("parts", "policy")}
    policy = dict(base.get("policy", {}))
    tiers = None
    for layer in layers:
        unknown = sorted(set(layer) - set(TOML_KEYS))
        if unknown:
            raise UserError(f"unknown sweep setting {unknown[0]!r}; known: {', '.join(TOML_KEYS)}")
        parts = [_override_part(part, layer) for part in parts]
        run.update(_run_values(layer))
        policy.update(policy_values(layer))
        if layer.get(TIERS_KEY) is not None:
            tiers = tuple(dict.fromkeys(_integer("tier", v)
                                        for v in _items("tier", layer[TIERS_KEY])))
    if tiers is not None:  # against the preset's own tiers, before a filter drops a part
        check_tiers(tiers, [GridPart(**p) for p in base.get("parts", ())], preset)
    kept = tuple(GridPart(**p) for p in parts if p is not None)
    if not kept:
        raise UserError("the grid is empty: the model filters exclude every part of the preset")
    return SweepConfig(parts=kept, preset=preset, policy=make_policy(policy), tiers=tiers,
                       **run)


def check_tiers(tiers: Iterable[int], parts: Iterable[GridPart], preset: str | None) -> None:
    """Every tier asked for is one of the preset's parts' tiers.

    Raises:
        UserError: the preset has no tiers, or not the one asked for (one line).
    """
    known = sorted({p.tier for p in parts if p.tier is not None})
    if not known:
        what = f"preset {preset!r}" if preset else "a sweep without a preset"
        raise UserError(f"--tier selects a tier of a tiered preset (study-cpu); {what} has none")
    for tier in tiers:
        if tier not in known:
            raise UserError(f"preset {preset!r} has no tier {tier}; "
                            f"it has {', '.join(map(str, known))}")


def policy_values(layer: Mapping[str, Any]) -> dict[str, Any]:
    """ResultPolicy fields from flag/TOML keys (processes, max_processes, ...)."""
    values: dict[str, Any] = {}
    for key, name in POLICY_KEYS.items():
        if key not in layer or layer[key] is None:
            continue
        if key in ("result_target_ci", "result_budget"):
            values[name] = _number(key.replace("_", " "), layer[key])
        else:
            values[name] = _integer(key.replace("_", " "), layer[key])
    return values


def make_policy(values: Mapping[str, Any]) -> ResultPolicy:
    """A ResultPolicy; `processes` alone above the default maximum raises the maximum with it."""
    values = dict(values)
    minimum = values.get("min_processes", ResultPolicy.min_processes)
    if "max_processes" not in values and minimum > ResultPolicy.max_processes:
        values["max_processes"] = minimum
    return ResultPolicy(**values)


def _preset(name: str | None) -> dict[str, Any]:
    if name is None:
        return {}
    if name not in PRESETS:
        raise UserError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


def _override_part(part: dict[str, Any] | None, layer: dict[str, Any]) -> dict[str, Any] | None:
    """Apply one layer to one part; None if the layer's filters leave the part no models."""
    if part is None:
        return None
    part = dict(part)
    for key in PART_KEYS:
        if key not in layer:
            continue
        value = _parse(key, layer[key])
        if key == "kinds" and part.get("kinds") and value:
            _check_choices("kind", value, KINDS)
            value = tuple(k for k in part["kinds"] if k in value)  # narrow, never widen
            if not value:
                return None
        part[key] = value
    given = {key: layer[key] for key in SCENARIO_KEYS if key in layer}
    if given:
        part["scenario_values"] = tuple({**dict(part.get("scenario_values", ())),
                                         **given}.items())
    measure = _measure_values(layer)
    if measure:
        base = part.get("measure", MeasureSettings())
        part["measure"] = _replace_measure(base, measure)
    return part


def _replace_measure(base: MeasureSettings, changes: dict[str, Any]) -> MeasureSettings:
    names = {f.name for f in dataclasses.fields(MeasureSettings)}
    unknown = sorted(set(changes) - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise UserError(f"unknown measure setting {unknown[0]!r}; known: {known}")
    try:
        return dataclasses.replace(base, **changes)
    except TypeError as exc:
        raise UserError(f"bad measure settings: {exc}") from None


def _measure_values(layer: dict[str, Any]) -> dict[str, Any]:
    values = dict(layer.get("measure") or {})
    if "measure" in layer and not isinstance(layer["measure"], Mapping):
        raise UserError("'measure' must be a table of measurement settings")
    for key, name in MEASURE_FLAG_KEYS.items():
        if key in layer:
            values[name] = _number(key, layer[key])
    return values


def _run_values(layer: dict[str, Any]) -> dict[str, Any]:
    run: dict[str, Any] = {}
    if "db" in layer:
        run["db"] = _text("db", layer["db"])
    if "timeout" in layer:
        run["timeout_s"] = _number("timeout", layer["timeout"])
    if "executor" in layer:
        run["executor"] = _text("executor", layer["executor"])
    if "workers" in layer:
        run["workers"] = _integer("workers", layer["workers"])
    if "ray_address" in layer:
        run["ray_address"] = _text("ray_address", layer["ray_address"])
    if "log_wandb" in layer:
        run["log_wandb"] = bool(layer["log_wandb"])
    if "label" in layer:
        run["label"] = check_label(layer["label"])
    if "unsafe_load" in layer:
        if not isinstance(layer["unsafe_load"], bool):
            raise UserError(f"unsafe_load must be true or false, got {layer['unsafe_load']!r}")
        run["unsafe_load"] = layer["unsafe_load"]
    if "log_mlflow" in layer:
        value = layer["log_mlflow"]  # true: MLflow's default URI; a string: that URI
        if isinstance(value, bool):
            run["log_mlflow"] = "" if value else None
        else:
            run["log_mlflow"] = str(value)
    return run


# ------------------------------------------------------------------------------ parsing
def scenario_settings_from(scenario: str, backend: str, batch_size: int,
                           values: Mapping[str, Any]) -> ScenarioSettings:
    """A spec's scenario settings from flag/TOML values (`SCENARIO_KEYS`; the rest default):
    `core.scenario.scenario_settings_for` with seconds turned into milliseconds.

    Raises:
        UserError: an unknown scenario or a bad value, in one line.
    """
    settings: dict[str, Any] = {}
    for key, name in (("scenario_min_duration_s", "min_duration_ms"),
                      ("scenario_max_duration_s", "max_duration_ms")):
        if values.get(key) is not None:
            settings[name] = round(1000 * _number(key.replace("_", " "), values[key]))
    if values.get("scenario_min_queries") is not None:
        settings["min_query_count"] = _integer("scenario min queries",
                                               values["scenario_min_queries"])
    if values.get("latency_bound_ms") is not None:
        settings["latency_bound_ms"] = _number("latency bound (ms)", values["latency_bound_ms"])
    if values.get("batch_wait_ms") is not None:
        settings["batch_wait_ms"] = _non_negative("batch wait (ms)", values["batch_wait_ms"])
    return scenario_settings_for(scenario, backend, batch_size, **settings)


def _parse(key: str, value: Any) -> Any:
    """A TOML or flag value as the GridPart field wants it (tuples, ints)."""
    if key == "scenarios":
        return tuple(parse_scenario(str(v).strip()).value for v in _items(key, value))
    if key == "repeats":
        return _integer("repeats", value)
    if key == "runner":
        return _text("runner", value)
    items = _items(key, value)
    if key == "batch_sizes":
        return tuple(_integer("batch size", v) for v in items)
    if key == "resolutions":
        return tuple(_resolution(v) for v in items)
    return tuple(str(v).strip() for v in items)


def _items(key: str, value: Any) -> list[Any]:
    """Lists stay lists; strings split on commas (flags and TOML may say "a,b")."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for item in value:
            out.extend(_items(key, item) if isinstance(item, str) else [item])
        return out
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    raise UserError(f"{key.replace('_', ' ')} must be a list, got {value!r}")


def _resolution(value: Any) -> int | str:
    if isinstance(value, str) and value.strip().lower() == DEFAULT_RESOLUTION:
        return DEFAULT_RESOLUTION
    low, high = RESOLUTION_RANGE
    hint = f" from {low} to {high} or 'default'"
    resolution = _integer("resolution", value, hint=hint)
    if not low <= resolution <= high:
        raise UserError(f"resolution must be an integer{hint}, got {value!r}")
    return resolution


def _integer(what: str, value: Any, hint: str = "") -> int:
    if isinstance(value, bool):
        raise UserError(f"{what} must be an integer{hint}, got {value!r}")
    try:
        return int(value) if isinstance(value, int) else int(str(value).strip())
    except ValueError:
        raise UserError(f"{what} must be an integer{hint}, got {value!r}") from None


def _number(what: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or number <= 0:
        raise UserError(f"{what} must be a positive number, got {value!r}")
    return number


def _non_negative(what: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not number >= 0:
        raise UserError(f"{what} must be a number >= 0, got {value!r}")
    return number


def _text(what: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise UserError(f"{what} must be a non-empty string, got {value!r}")
    return value


def check_label(value: Any) -> str:
    """A run label as given (`--label`, key `label`): 1-64 letters, digits and . _ : + -.
    It names the run for `xlabench compare`; it is no part of a spec or its id."""
    if not isinstance(value, str) or not LABEL_PATTERN.fullmatch(value):
        raise UserError(f"label must be 1-64 characters of letters, digits and . _ : + -, "
                        f"got {value!r}")
    return value


def _check_choices(what: str, values: Iterable[str], choices: Iterable[str]) -> None:
    allowed = list(choices)
    for value in values:
        if value not in allowed:
            raise UserError(f"unknown {what} {value!r}; choose from {', '.join(allowed)}")


def load_toml(path: str | Path) -> dict[str, Any]:
    """The settings table of a sweep file; keys may use '-' or '_' (batch-sizes = batch_sizes).

    Raises:
        UserError: the file is missing, unreadable or not valid TOML.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"no sweep file at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read sweep file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}") from None
    return {key.replace("-", "_"): value for key, value in data.items()}

