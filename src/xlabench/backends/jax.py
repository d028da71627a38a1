"""Keras 3 on JAX: eager (op by op) and XLA (jax.jit of model.stateless_call).

Also home of the cost counter: MACs from the jaxpr's conv/dot ops, FLOPs from XLA's cost
analysis. Both are computed on an abstract batch of one, so they never run the model.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from xlabench.backends.base import ConversionError, Runner, keras_input, package_version
from xlabench.core.backends import NATIVE_BY_NAME
from xlabench.core.spec import Spec

SYNC = "jax.block_until_ready(output) of the last step of each sample"


def environment(spec: Spec, environ: dict[str, str], scratch: str) -> dict[str, str | None]:
    return {
        # Without this JAX grabs 75% of the GPU at start, and peak memory means nothing.
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "JAX_COMPILATION_CACHE_DIR": None,  # unset: cold compiles, no persistent cache
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def setup(spec: Spec) -> dict[str, Any]:
    import jax

    # "float32" keeps fp32 matmuls/convs in full precision on GPUs that would use TF32.
    precision = "tensorfloat32" if spec.tf32 else "float32"
    jax.config.update("jax_default_matmul_precision", precision)
    device = jax.devices()[0]
    return {
        "framework": "jax",
        "framework_version": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
        "platform": device.platform,
        "device_kind": device.device_kind,
        "default_matmul_precision": precision,
    }


def make_input(spec: Spec) -> Any:
    return keras_input(spec)


def make_runner(model: Any, mode: str, x: Any) -> Runner:
    if mode == "eager":
        return Runner(lambda: model(x, training=False))
    return _jit_runner(model, x)


def _jit_runner(model: Any, x: Any) -> Runner:
    """jit of stateless_call with the variables as arguments (closing over them would bake
    every weight into the program as a constant: another program, and slow compiles)."""
    import jax

    trainable, non_trainable = variable_values(model)
    forward = stateless_forward(model)
    runner = Runner(lambda: None)
    compiled: list[Any] = []

    def step() -> Any:
        if not compiled:  # first call: trace, lower and compile, each stage timed
            compiled.append(_compile_in_stages(jax.jit(forward), (trainable, non_trainable, x),
                                               runner.info))
        return compiled[0](trainable, non_trainable, x)

    runner.step = step
    return runner


def variable_values(model: Any) -> tuple[list[Any], list[Any]]:
    """The values (not the Keras variables) of the trainable and non-trainable weights."""
    return ([v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables])


def stateless_forward(model: Any) -> Any:
    """forward(trainable, non_trainable, x): the inference pass with the variables as arguments."""

    def forward(tv: Any, ntv: Any, inputs: Any) -> Any:
        outputs, _ = model.stateless_call(tv, ntv, inputs, training=False)
        return outputs

    return forward


def export_stateless(model: Any, x: Any) -> tuple[Any, list[Any]]:
    """jax.export of the jitted stateless forward (what the xla mode compiles), for runtimes
    outside jaxlib (the native runner's PJRT plugin, IREE).

    Returns the Exported and the arguments its module takes, in order: jax.export drops unused
    arguments, so only `module_kept_var_idx` of the flattened (trainable, non_trainable, x) are
    kept. The batch, when kept, is the last of them.
    """
    import jax

    trainable, non_trainable = variable_values(model)
    exported = jax.export.export(jax.jit(stateless_forward(model)))(trainable, non_trainable, x)
    flat = jax.tree_util.tree_leaves((trainable, non_trainable, x))
    return exported, [flat[i] for i in sorted(exported.module_kept_var_idx)]


def pjrt_plugin() -> Path | None:
    """The PJRT CPU plugin of pip's xla-cpu-pjrt, if installed (found without importing jax)."""
    found = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / "xla_cpu_pjrt.so"
    return path if path.is_file() else None


def export_native(spec: Spec, model: Any, x: Any, out_dir: Path,
                  threads: int) -> dict[str, Any]:
    """pjrt: jax.export of the jitted stateless_call the xla mode compiles (variables as
    arguments), for the PJRT CPU plugin (`base.NativeExporter`).

    jax.export drops unused arguments: only module_kept_var_idx are fed. The plugin's XLA is
    older than jaxlib's, so the two sides do not run the same compiler (recorded).
    """
    from jax._src.lib import xla_client

    plugin = pjrt_plugin()
    if plugin is None:
        hint = NATIVE_BY_NAME[str(spec.native_runtime)].install_hint
        raise ConversionError(f"no PJRT CPU plugin: {hint}")
    start = time.perf_counter()
    exported, kept = export_stateless(model, x)
    export_s = time.perf_counter() - start
    (out_dir / "module.mlirbc").write_bytes(exported.mlir_module_serialized)
    options = xla_client.CompileOptions()
    options.executable_build_options.num_replicas = 1  # empty options abort the plugin
    options.executable_build_options.num_partitions = 1
    (out_dir / "compile_options.pb").write_bytes(options.SerializeAsString())
    return {
        "plugin": str(plugin), "module": "module.mlirbc", "compile_options": "compile_options.pb",
        "args": [np.asarray(a) for a in kept],
        "stages_s": {"export": export_s},
        "info": {"artifact": "jax.export StableHLO bytecode", "kept_args": len(kept),
                 "all_args": len(exported.in_avals), "plugin": str(plugin),
                 "plugin_package": package_version("xla-cpu-pjrt", ""),
                 "jaxlib": package_version("jaxlib", ""),
                 "same_compiler": False,
                 "compiler_note": "the PJRT plugin's XLA differs from jaxlib's: native vs "
                                  "Python differences are not Python overhead alone"},
    }


def _compile_in_stages(jitted: Any, args: tuple[Any, ...], info: dict[str, Any]) -> Any:
    start = time.perf_counter()
    traced = jitted.trace(*args)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    executable = lowered.compile()
    info["compile_stages_s"] = {
        "trace": traced_at - start,
        "lower": lowered_at - traced_at,
        "compile": time.perf_counter() - lowered_at,
    }
    return executable


def sync(output: Any) -> None:
    import jax

    jax.block_until_ready(output)


def to_numpy(output: Any) -> Any:
    import jax
    import numpy as np

    return jax.tree_util.tree_map(lambda a: np.asarray(a.astype("float32")), output)


def peak_device_memory_mb() -> float | None:
    import jax

    device = jax.devices()[0]
    if device.platform == "cpu":
        return None
    stats = device.memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**20


def count_costs(model: Any, resolution: int, channels: int = 3) -> dict[str, Any]:
    """MACs (conv + dot) and XLA FLOPs per image, from an abstract batch of one.

    The study's "flop (giga)" column is GMACs; XLA's cost analysis counts 2 FLOPs per MAC plus
    every elementwise op, so the two are stored side by side.
    """
    import jax
    import jax.numpy as jnp

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    x = jax.ShapeDtypeStruct((1, resolution, resolution, channels), jnp.float32)

    def forward(tv: Any, ntv: Any, inputs: Any) -> Any:
        return model.stateless_call(tv, ntv, inputs, training=False)[0]

    closed = jax.make_jaxpr(forward)(trainable, non_trainable, x)
    macs = count_macs(closed.jaxpr)
    analysis = jax.jit(forward).trace(trainable, non_trainable, x).lower().cost_analysis()
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else {}
    flops = (analysis or {}).get("flops")
    return {
        "macs_per_image": float(macs),
        "flops_per_image": None if flops is None else float(flops),
        "method": "macs: conv_general_dilated + dot_general in the jaxpr (batch 1); "
        "flops: XLA HLO cost analysis of the lowered program (batch 1, CPU)",
    }


def count_macs(jaxpr: Any) -> int:
    """Multiply-accumulates of every convolution and dot product in `jaxpr`, nested ones too."""
    total = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            total += _dot_macs(eqn)
        elif name == "conv_general_dilated":
            total += _conv_macs(eqn)
        total += _nested_macs(eqn)
    return total


def _dot_macs(eqn: Any) -> int:
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    lhs_shape = eqn.invars[0].aval.shape
    contracted = math.prod(lhs_shape[d] for d in lhs_contract)
    return math.prod(eqn.outvars[0].aval.shape) * contracted


def _conv_macs(eqn: Any) -> int:
    kernel_shape = eqn.invars[1].aval.shape
    out_feature_dim = eqn.params["dimension_numbers"].rhs_spec[0]
    # The kernel's input-feature dim is already C_in / groups, so grouped and depthwise
    # convolutions come out right.
    per_output = math.prod(kernel_shape) // kernel_shape[out_feature_dim]
    return math.prod(eqn.outvars[0].aval.shape) * per_output


def _nested_macs(eqn: Any) -> int:
    """MACs inside sub-programs: pjit, custom_jvp/vjp, remat; scan bodies times their length;
    the most expensive branch of a cond."""
    subs = [_as_jaxpr(v) for v in eqn.params.values()]
    subs = [s for s in subs if s is not None]
    if eqn.primitive.name == "cond":
        branches = [count_macs(_as_jaxpr(b)) for b in eqn.params["branches"]]
        return max(branches, default=0)
    inner = sum(count_macs(s) for s in subs)
    if eqn.primitive.name == "scan":
        inner *= eqn.params["length"]
    return inner


def _as_jaxpr(value: Any) -> Any:
    if hasattr(value, "eqns"):
        return value
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return value.jaxpr
    return None


@contextlib.contextmanager
def build_context(seed: int) -> Iterator[None]:
    """Draw initial weights with NumPy on the host while the model is built.

    Keras-on-JAX initialises each weight with an eager jax.random op, and every new weight shape
    is a fresh XLA compilation: about 0.4 s each, 10-30 s per model on a CPU, in building alone.
    The values only need to be seeded draws from the same distributions (throughput does not
    depend on them), so during the build we draw them with NumPy instead. The model, its
    variables and everything that is timed are untouched: this only changes where the initial
    numbers come from.
    """
    from keras.src.backend.jax import random as jax_random

    rng = np.random.default_rng(seed)
    replacements = {
        "uniform": lambda shape, minval=0.0, maxval=1.0, dtype=None, seed=None: _device(
            rng.uniform(minval, maxval, shape), dtype),
        "normal": lambda shape, mean=0.0, stddev=1.0, dtype=None, seed=None: _device(
            rng.normal(mean, stddev, shape), dtype),
        "truncated_normal": lambda shape, mean=0.0, stddev=1.0, dtype=None, seed=None: _device(
            mean + stddev * _truncated_standard_normal(rng, shape), dtype),
    }
    originals = {name: getattr(jax_random, name) for name in replacements}
    for name, function in replacements.items():
        setattr(jax_random, name, function)
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(jax_random, name, function)


def _device(values: Any, dtype: Any) -> Any:
    import jax.numpy as jnp
    import keras

    dtype = keras.backend.standardize_dtype(dtype or keras.config.floatx())
    return jnp.asarray(values, dtype=dtype)


def _truncated_standard_normal(rng: Any, shape: Any) -> Any:
    """Standard normal draws, redrawn until all lie within two standard deviations (as jax)."""
    values = rng.standard_normal(shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values
