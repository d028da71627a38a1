"""Your own model: a Keras 3 `.keras` file (or a legacy `.h5` Keras 3 loads), or a factory
`package.module:function` that returns a `keras.Model`, wherever a registry name is accepted.

Resolving a reference happens before anything runs and imports no framework for a file: the
archive's `config.json` (the `.h5` file's `model_config`) says the input shape and whether it
holds a Lambda layer (Python code, which Keras' `safe_mode` refuses) or a custom layer (which
the file alone cannot build); a factory is imported and called once in a short child process
(`python -m xlabench.zoo.own`), since only its model can say its input. Every way a reference
can be wrong is one UserError line.

Identity: a file is its content (sha256 of its bytes), a factory its import path plus its
module's source; the readable name is the file stem (the function name) and 8 hex digits of
that hash. An edited file is a new configuration; the same file under another path is the same
one (`Spec.canonical_json` keeps the hash, not the path or name).

The worker (`load`) checks the hash again, so a file edited after the sweep was planned fails
as such instead of being measured under the old identity.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlabench.core.backends import FRAMEWORKS
from xlabench.core.child import run_child
from xlabench.core.errors import UserError, one_line
from xlabench.core.spec import RESOLUTION_RANGE, Spec
from xlabench.zoo.registry import OWN, ModelEntry, ResolutionRule

FILE_SUFFIXES = (".keras", ".h5", ".hdf5")
FACTORY_PATTERN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
#: Packages Keras itself imports to find a class named in a saved config (Keras' own
#: deserialisation); a class from any other module must be registered in the loading process,
#: which only a factory can do.
KERAS_PACKAGES = frozenset({"keras", "keras_hub", "keras_cv", "keras_nlp"})
UNSAFE_FLAG = "--unsafe-load"
#: Seconds for the child process that builds a factory's model once to read its input.
INSPECT_TIMEOUT_S = 300.0
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: The Keras backend the factory's model is inspected on: the first installed.
INSPECT_BACKENDS = FRAMEWORKS


@dataclass(frozen=True)
class OwnModel:
    """A resolved own model: where it is, what it is, and what its input takes."""

    name: str  # stem (or function) + "-" + 8 hex digits of sha256
    sha256: str
    file: str  # absolute path of the .keras/.h5 file, or of the factory's module source
    factory: str  # "package.module:function", or "" for a file
    input_size: int | None  # the square spatial size the model fixes; None: any (--resolution)
    channels: int
    unsafe_load: bool = False

    def entry(self) -> ModelEntry:
        """The registry-shaped description the grid and the worker read."""
        size = self.input_size
        rule = (ResolutionRule(minimum=size, fixed=size, why="the model's input shape")
                if size else ResolutionRule(minimum=RESOLUTION_RANGE[0]))
        what = f"factory {self.factory}" if self.factory else f"file {self.file}"
        return ModelEntry(
            # its own family: the report's per-family tables then name each own model
            name=self.name, family=self.name, kind=OWN, source=OWN, builder="", variant=self.file,
            default_resolution=size or 0, rule=rule, params=0, params_count="total",
            params_source="", paper="", notes=what,
        )

    def spec_fields(self) -> dict[str, Any]:
        """What a Spec of this model carries beside its name (see Spec)."""
        return {"model_file": self.file, "model_factory": self.factory,
                "model_sha256": self.sha256, "channels": self.channels,
                "unsafe_load": self.unsafe_load}


def is_reference(text: str) -> bool:
    """Whether `text` names a file or a factory rather than a registry model."""
    text = text.strip()
    return (text.lower().endswith(FILE_SUFFIXES) or "/" in text or os.sep in text
            or bool(FACTORY_PATTERN.fullmatch(text)) or Path(text).is_file())


_RESOLVED: dict[tuple[str, bool], OwnModel] = {}


def _is_factory(text: str) -> bool:
    """`package.module:function`, unless a file of that name exists."""
    return bool(FACTORY_PATTERN.fullmatch(text)) and not Path(text).exists()


def resolve(reference: str, unsafe_load: bool = False) -> OwnModel:
    """The own model `reference` names (cached per process: a factory is built once).

    Raises:
        UserError: a missing or foreign file, a Lambda layer without `unsafe_load`, a custom
            layer in a file, a factory that does not import or build a keras.Model, an input
            that is not one square channels-last image batch.
    """
    key = (reference.strip(), unsafe_load)
    if key not in _RESOLVED:
        text = key[0]
        if _is_factory(text):
            _RESOLVED[key] = _resolve_factory(text, unsafe_load)
        else:
            _RESOLVED[key] = _resolve_file(Path(text), unsafe_load)
    return _RESOLVED[key]


def name_of(reference: str) -> str:
    """The readable name an own model is stored under, without inspecting or building it."""
    text = reference.strip()
    if _is_factory(text):
        module, function = text.split(":")
        source, _ = _module_source(module, text)
        return readable_name(function, factory_sha256(text, source))
    path = Path(text)
    if not path.is_file():
        raise UserError(f"no model file at {path}")
    return readable_name(path.stem, file_sha256(path))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def factory_sha256(factory: str, source: Path) -> str:
    return hashlib.sha256(factory.encode() + b"\n" + source.read_bytes()).hexdigest()


def readable_name(stem: str, sha256: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)[:48] or "model"
    return f"{clean}-{sha256[:8]}"


# ------------------------------------------------------------------------------------ files
def _resolve_file(path: Path, unsafe_load: bool) -> OwnModel:
    if not path.exists():
        raise UserError(f"no model file at {path}")
    if not path.is_file():
        raise UserError(f"{path} is not a file")
    config = _saved_config(path)
    _check_saved_layers(path, config, unsafe_load)
    size, channels = image_input(f"{path.name}", [_saved_input_shape(path, config)],
                                 _uses_channels_first(config))
    sha = file_sha256(path)
    return OwnModel(readable_name(path.stem, sha), sha, str(path.resolve()), "", size,
                    channels, unsafe_load)


def _saved_config(path: Path) -> dict[str, Any]:
    """The model's saved configuration: config.json of a .keras zip, model_config of an .h5."""
    with path.open("rb") as handle:
        head = handle.read(8)
    if head == HDF5_SIGNATURE:
        return _h5_config(path)
    if not zipfile.is_zipfile(path):
        raise UserError(f"{path} is not a Keras model file: xlabench reads Keras 3 .keras "
                        "archives (a zip holding config.json) and legacy Keras .h5 files")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "config.json" not in names:
                raise UserError(f"{path} is a zip archive but not a Keras model (no config.json "
                                "in it)")
            config = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is not a readable Keras archive ({exc})") from None
    if not isinstance(config, dict) or "class_name" not in config:
        raise UserError(f"{path} is a zip archive but its config.json is not a Keras model")
    return config


def _h5_config(path: Path) -> dict[str, Any]:
    try:
        import h5py
    except ImportError:
        raise UserError(f"{path} is an HDF5 file; reading it needs h5py (pip install h5py)"
                        ) from None
    try:
        with h5py.File(path, "r") as handle:
            text = handle.attrs.get("model_config")
    except OSError as exc:
        raise UserError(f"{path} is not a readable HDF5 file ({exc})") from None
    if text is None:
        raise UserError(f"{path} holds weights only, no model configuration: save the model "
                        "itself (model.save('model.keras'))")
    return json.loads(text.decode() if isinstance(text, bytes) else text)


def _walk(node: Any, inside_lambda: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every serialised object (a dict with class_name) in a config, with whether it is part
    of a Lambda layer's own configuration (its function, not a layer)."""
    if isinstance(node, dict):
        if "class_name" in node:
            yield node, inside_lambda
            inside_lambda = inside_lambda or node.get("class_name") == "Lambda"
        for value in node.values():
            yield from _walk(value, inside_lambda)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, inside_lambda)


def _check_saved_layers(path: Path, config: dict[str, Any], unsafe_load: bool) -> None:
    for node, in_lambda in _walk(config):
        module, name = node.get("module"), str(node.get("class_name"))
        if node.get("class_name") == "Lambda" and not unsafe_load:
            layer = (node.get("config") or {}).get("name", "lambda")
            raise UserError(f"{path.name} has a Lambda layer ({layer}): loading it runs Python "
                            "code stored in the file, which Keras' safe_mode refuses; if you "
                            f"trust the file, pass {UNSAFE_FLAG}")
        if in_lambda or name.startswith("__"):
            continue
        if module is None and isinstance(node.get("registered_name"), str):
            # Keras writes no module for a class defined in the script that saved the model
            raise UserError(f"{path.name} uses the custom class {name}, defined in the script "
                            "that saved it and not registered, which the file alone cannot "
                            "build: pass a factory module:function that imports it and returns "
                            "the model (e.g. --models my_pkg.models:build)")
        if not isinstance(module, str):
            continue
        if module.split(".")[0] not in KERAS_PACKAGES and module != "builtins":
            raise UserError(f"{path.name} uses the custom class {name} (module {module}), which "
                            "the file alone cannot build: pass a factory module:function that "
                            "imports it and returns the model (e.g. --models my_pkg.models:build)")


def _unwrap(value: Any) -> Any:
    """Keras 3 writes some tuples as {"class_name": "__tuple__", "config": {"value": [...]}}."""
    if isinstance(value, dict) and value.get("class_name") == "__tuple__":
        return value.get("config", {}).get("value")
    return value


def _saved_input_shape(path: Path, config: dict[str, Any]) -> list[Any]:
    inner = config.get("config") or {}
    layers = inner.get("layers") if isinstance(inner, dict) else None
    if not isinstance(layers, list):
        raise UserError(f"{path.name} holds a {config.get('class_name')} without a layer list; "
                        "xlabench reads Functional and Sequential models (a subclassed model: "
                        "pass a factory module:function)")
    inputs = [layer for layer in layers if layer.get("class_name") == "InputLayer"]
    if config.get("class_name") != "Sequential" and len(inputs) > 1:
        raise UserError(f"{path.name} has {len(inputs)} inputs; xlabench measures models with "
                        "one image input (N, H, W, C)")
    candidates = [*(layer.get("config", {}) for layer in inputs[:1]),
                  *(layer.get("config", {}) for layer in layers[:1]),
                  inner, config.get("build_config") or {}]
    for where in candidates:
        for key in ("batch_shape", "batch_input_shape", "build_input_shape", "input_shape"):
            shape = _unwrap(where.get(key)) if isinstance(where, dict) else None
            if isinstance(shape, list) and shape and not isinstance(shape[0], list):
                return shape
            if isinstance(shape, list) and len(shape) > 1:
                raise UserError(f"{path.name} has {len(shape)} inputs; xlabench measures "
                                "models with one image input (N, H, W, C)")
    raise UserError(f"{path.name} does not say its input shape: build the model on an Input "
                    "(keras.Input(shape=(H, W, C))) before saving it")


def _uses_channels_first(config: Any) -> bool:
    return any(isinstance(node.get("config"), dict)
               and node["config"].get("data_format") == "channels_first"
               for node, _ in _walk(config))


def image_input(what: str, shapes: list[list[Any]], channels_first: bool
                ) -> tuple[int | None, int]:
    """(square spatial size or None, channels) of a model's one image input, or a UserError
    saying what is supported."""
    if len(shapes) != 1:
        raise UserError(f"{what} has {len(shapes)} inputs; xlabench measures models with one "
                        "image input (N, H, W, C)")
    shape = list(shapes[0])
    if len(shape) != 4:
        raise UserError(f"{what} takes input of rank {len(shape)} {tuple(shape)}; xlabench "
                        "measures models whose input is one image batch (N, H, W, C)")
    if channels_first:
        raise UserError(f"{what} uses channels_first layers; xlabench feeds channels-last image "
                        "batches (N, H, W, C)")
    height, width, channels = shape[1:]
    if not isinstance(channels, int) or channels < 1:
        raise UserError(f"{what} does not fix its channel count (input {tuple(shape)}); "
                        "xlabench feeds (N, H, W, C) with C known")
    sizes = {s for s in (height, width) if s is not None}
    if len(sizes) > 1:
        raise UserError(f"{what} takes {height}x{width} images; xlabench measures square "
                        "inputs (H = W, or H and W None with --resolution)")
    return (sizes.pop() if sizes else None), channels


# -------------------------------------------------------------------------------- factories
def _resolve_factory(factory: str, unsafe_load: bool) -> OwnModel:
    module, function = factory.split(":")
    source, root = _module_source(module, factory)
    sha = factory_sha256(factory, source)
    facts = _inspect_factory(factory, root)
    size, channels = image_input(f"{factory} (its model)", facts["input_shapes"],
                                 facts["channels_first"])
    return OwnModel(readable_name(function, sha), sha, str(source), factory, size, channels,
                    unsafe_load)


def _module_source(module: str, factory: str) -> tuple[Path, str]:
    """(the module's source file, the sys.path entry it is found under), without running it
    (a package's __init__ runs: finding a submodule imports its parent)."""
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as `python -m` would: the current directory
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise UserError(f"cannot import {module} (factory {factory}): {exc}") from None
    if found is None or not found.origin or not Path(found.origin).is_file():
        raise UserError(f"cannot import {module} (factory {factory}): no such module here or "
                        "in the installed environment")
    source = Path(found.origin).resolve()
    return source, import_root(module, source)


def import_root(module: str, source: Path) -> str:
    """The sys.path entry under which `source` is the module `module` (a package's
    __init__.py lies one folder deeper)."""
    depth = module.count(".") + (1 if source.name == "__init__.py" else 0)
    return str(source.parents[depth])


def _inspect_factory(factory: str, root: str) -> dict[str, Any]:
    """The factory's model's input, from a child process on the first installed backend it
    builds on: a model that only one backend can build is not bad input (its other backends
    fail as records); an import error or a non-model is, on any backend."""
    installed = [b for b in INSPECT_BACKENDS if importlib.util.find_spec(b) is not None]
    if not installed:
        raise UserError(f"no Keras backend installed to build {factory} with")
    failures = []
    for backend in installed:
        facts = _inspect_on(factory, root, backend)
        if "error" not in facts:
            return facts
        if facts.get("kind") != "build":
            raise UserError(facts["error"])
        failures.append(f"{backend}: {facts['error']}")
    raise UserError(f"{factory} builds on no backend ({'; '.join(failures)})")


def _inspect_on(factory: str, root: str, backend: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "xlabench.zoo.own", factory, root]
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3",
           "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    try:
        done = run_child(command, INSPECT_TIMEOUT_S, env=env)
    except OSError as exc:
        return {"error": f"cannot start a process to build {factory}: {exc}", "kind": "build"}
    if done.timed_out:
        return {"error": f"building took over {INSPECT_TIMEOUT_S:g} s", "kind": "build"}
    lines = done.stdout.strip().splitlines()
    try:
        return dict(json.loads(lines[-1]))
    except (IndexError, json.JSONDecodeError, TypeError, ValueError):
        return {"error": f"building {factory} failed: {done.last_line()[:300]}",
                "kind": "build"}


def build_factory_model(factory: str, root: str) -> Any:
    """Import `package.module:function` (from `root` first) and call it; the keras.Model it
    returns, or a UserError saying what it did instead."""
    import keras

    module_name, function_name = factory.split(":")
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 (any error of user code is one line)
        raise UserError(f"cannot import {module_name} (factory {factory}): "
                        f"{type(exc).__name__}: {exc}") from None
    build = getattr(module, function_name, None)
    if not callable(build):
        raise UserError(f"{module_name} has no function {function_name} (factory {factory})")
    model = build()
    if not isinstance(model, keras.Model):
        raise UserError(f"factory {factory} returned {type(model).__name__}, not a keras.Model")
    return model


def _inspect_main(factory: str, root: str) -> dict[str, Any]:
    try:
        model = build_factory_model(factory, root)
    except UserError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 (one line for the user)
        return {"error": f"factory {factory} failed to build its model: {one_line(exc)}",
                "kind": "build"}
    try:
        shapes = [list(tensor.shape) for tensor in model.inputs]
    except (AttributeError, ValueError):
        return {"error": f"factory {factory} returned a model without inputs: build it on "
                "keras.Input(shape=(H, W, C))"}
    channels_first = any(getattr(layer, "data_format", None) == "channels_first"
                         for layer in model._flatten_layers(include_self=False))
    return {"input_shapes": shapes, "channels_first": channels_first,
            "params": int(model.count_params())}


# ---------------------------------------------------------------------------- the worker
def entry_for(spec: Spec) -> ModelEntry:
    """The description of a spec's own model, from the spec alone (no inspection)."""
    return OwnModel(spec.model, spec.model_sha256, spec.model_file, spec.model_factory, None,
                    spec.channels, spec.unsafe_load).entry()


def load(spec: Spec) -> Any:
    """The spec's own model, built in this (worker) process; Keras and its backend are set.

    Raises:
        UserError: the file or module changed since the spec was made, or does not build.
    """
    if spec.model_factory:
        source = Path(spec.model_file)
        if not source.is_file() or factory_sha256(spec.model_factory, source) != spec.model_sha256:
            raise UserError(f"the source of {spec.model_factory} ({source}) changed or is gone "
                            "since this configuration was planned; run it again")
        root = import_root(spec.model_factory.split(":")[0], source)
        return build_factory_model(spec.model_factory, root)
    path = Path(spec.model_file)
    if not path.is_file() or file_sha256(path) != spec.model_sha256:
        raise UserError(f"{path} changed or is gone since this configuration was planned "
                        "(its content is its identity); run it again")
    import keras

    return keras.saving.load_model(path, compile=False, safe_mode=not spec.unsafe_load)


if __name__ == "__main__":  # the factory inspection child process (see _inspect_factory)
    print(json.dumps(_inspect_main(sys.argv[1], sys.argv[2])))
