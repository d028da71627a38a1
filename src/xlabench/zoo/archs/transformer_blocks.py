"""Shared pieces for the transformer and MLP model families.

Everything here is plain Keras 3 (``keras.layers`` / ``keras.ops``) so it runs on the
tensorflow, jax and torch backends, and no dtype is hard-coded so a global mixed-precision
policy set before building applies to every layer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import keras

# timm (and the reference JAX code) use epsilon 1e-6 for ViT / DeiT / Mixer LayerNorms.
VIT_LAYER_NORM_EPSILON = 1e-6


def millions(value: float) -> int:
    """Converts a count given in millions (as timm's CSVs do) to an integer count."""
    return round(value * 1_000_000)


# --------------------------------------------------------------------------- resolutions


def fixed_resolution_reason(resolution: int, fixed: int | None) -> str | None:
    """Explains why ``resolution`` is invalid for a variant pinned to ``fixed``.

    Args:
        resolution: Requested square input size in pixels.
        fixed: The only resolution the variant is defined at, or None if not pinned.

    Returns:
        None if the resolution is acceptable, else a one-line reason.
    """
    if fixed is not None and resolution != fixed:
        return f"variant is defined only at {fixed}x{fixed}, got {resolution}"
    return None


def divisibility_reason(resolution: int, multiple: int, why: str) -> str | None:
    """Explains why ``resolution`` is not a positive multiple of ``multiple``.

    Args:
        resolution: Requested square input size in pixels.
        multiple: Required divisor.
        why: Short description of the divisor, e.g. ``"the patch size"``.

    Returns:
        None if the resolution is a positive multiple, else a one-line reason.
    """
    if resolution <= 0 or resolution % multiple:
        return f"resolution {resolution} must be a positive multiple of {multiple} ({why})"
    return None


def swin_stage_sizes(resolution: int, patch_size: int, num_stages: int) -> list[int]:
    """Returns the square feature-map side of each Swin stage.

    Args:
        resolution: Input side in pixels.
        patch_size: Patch-embedding stride.
        num_stages: Number of stages; each stage after the first halves the map.

    Returns:
        Feature-map side per stage, first stage first.
    """
    first = resolution // patch_size
    return [first // 2**i for i in range(num_stages)]


def swin_resolution_reason(
    resolution: int, patch_size: int, window_sizes: Sequence[int]
) -> str | None:
    """Explains why a Swin-style model cannot run at ``resolution``.

    Every stage's feature map must split into whole windows. We do not clip windows to
    smaller maps (timm does when map <= window): with the patch-4 stem the first stage map is
    resolution / 4, which for any resolution that is a multiple of 32 is never smaller than
    the window, so clipping would not admit any extra resolution for these variants anyway.

    Args:
        resolution: Requested square input size in pixels.
        patch_size: Patch-embedding stride.
        window_sizes: Attention window side of each stage.

    Returns:
        None if every stage tiles into windows, else a one-line reason.
    """
    stride = patch_size * 2 ** (len(window_sizes) - 1)
    reason = divisibility_reason(resolution, stride, "total downsampling of the stages")
    if reason:
        return reason
    sizes = swin_stage_sizes(resolution, patch_size, len(window_sizes))
    for stage, (size, window) in enumerate(zip(sizes, window_sizes, strict=True)):
        if size % window:
            smallest = swin_min_resolution(patch_size, window_sizes)
            return (
                f"stage {stage} feature map {size}x{size} is not divisible by its window "
                f"{window} (resolution must be a multiple of {smallest})"
            )
    return None


def swin_min_resolution(patch_size: int, window_sizes: Sequence[int]) -> int:
    """Returns the smallest resolution whose every stage map tiles into windows.

    Args:
        patch_size: Patch-embedding stride.
        window_sizes: Attention window side of each stage.

    Returns:
        Smallest valid square input side in pixels (every valid size is a multiple of it).
    """
    # Stage i's map is resolution / (patch * 2**i), which must be a multiple of window_i.
    return math.lcm(*(patch_size * 2**i * w for i, w in enumerate(window_sizes)))


# ------------------------------------------------------------------------------- layers


def layer_norm(
    x: keras.KerasTensor, name: str, epsilon: float = VIT_LAYER_NORM_EPSILON
) -> keras.KerasTensor:
    """Applies a LayerNormalization over the last axis.

    Args:
        x: Input tensor.
        name: Layer name.
        epsilon: Numerical-stability constant.

    Returns:
        The normalised tensor.
    """
    return keras.layers.LayerNormalization(epsilon=epsilon, name=name)(x)


def mlp(x: keras.KerasTensor, hidden_units: int, out_units: int, name: str) -> keras.KerasTensor:
    """Two-layer perceptron over the last axis: Dense -> exact GELU -> Dense.

    Args:
        x: Input tensor ``(..., features)``.
        hidden_units: Width of the hidden layer.
        out_units: Width of the output layer.
        name: Prefix for the layer names.

    Returns:
        Tensor ``(..., out_units)``.
    """
    # keras' "gelu" is the exact erf form, the same as torch's nn.GELU default used by timm.
    x = keras.layers.Dense(hidden_units, activation="gelu", name=f"{name}_fc1")(x)
    return keras.layers.Dense(out_units, name=f"{name}_fc2")(x)


def token_logits(
    tokens: keras.KerasTensor, index: int, num_classes: int, name: str
) -> keras.KerasTensor:
    """Linear classifier on one token of a ``(batch, tokens, dim)`` sequence.

    Args:
        tokens: Encoder output.
        index: Which token to classify (0 = class token, 1 = distillation token).
        num_classes: Number of output logits.
        name: Name of the Dense layer.

    Returns:
        Logits ``(batch, num_classes)``.
    """
    return keras.layers.Dense(num_classes, name=name)(tokens[:, index])


def mean_pool_logits(
    tokens: keras.KerasTensor, num_classes: int, name: str = "head"
) -> keras.KerasTensor:
    """Linear classifier on the mean over tokens of a ``(batch, tokens, dim)`` sequence.

    Args:
        tokens: Encoder output (already normalised).
        num_classes: Number of output logits.
        name: Name of the Dense layer.

    Returns:
        Logits ``(batch, num_classes)``.
    """
    pooled = keras.layers.GlobalAveragePooling1D(name="avg_pool")(tokens)
    return keras.layers.Dense(num_classes, name=name)(pooled)


def image_input(resolution: int) -> keras.KerasTensor:
    """Returns the channels-last square RGB model input."""
    return keras.Input(shape=(resolution, resolution, 3), name="images")


def trainable_param_count(model: keras.Model) -> int:
    """Counts trainable parameters, the quantity timm and the papers publish.

    Args:
        model: A built Keras model.

    Returns:
        Total number of scalars in the model's trainable weights.
    """
    return sum(math.prod(w.shape) for w in model.trainable_weights)
