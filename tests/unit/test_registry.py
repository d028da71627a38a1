"""The registry: every study name resolves, aliases, suggestions, resolution rules."""

from __future__ import annotations

import pytest

from xlabench.core import UserError
from xlabench.zoo import KINDS, REGISTRY

STUDY_KERAS_APPLICATIONS = [
    "resnet50_v1",
    "resnet101_v1",
    "resnet152_v1",
    "resnet50_v2",
    "resnet101_v2",
    "resnet152_v2",
    "inception_v3",
    "inception_resnetv2",
    "convnext_tiny",
    "convnext_small",
    "convnext_base",
    "convnext_large",
    "convnext_xlarge",
    "efficient_b0",
    "efficient_b1",
    "efficient_b2",
    "efficient_b3",
    "efficient_b4",
    "efficient_b5",
    "efficient_b6",
    "efficient_b7",
    "efficient_b0_v2",
    "efficient_b1_v2",
    "efficient_b2_v2",
    "efficient_b3_v2",
    "efficient_l_v2",
    "efficient_m_v2",
    "efficient_s_v2",
    "xception",
    "mobilenet_v1",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "vgg16",
    "vgg19",
    "densenet_121",
    "densenet_169",
    "densenet_201",
    "nasnet_large",
    "nasnet_mobile",
]


@pytest.mark.parametrize("name", STUDY_KERAS_APPLICATIONS)
def test_every_study_name_resolves_to_itself(name: str) -> None:
    assert REGISTRY.get(name).name == name


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("resnet50", "resnet50_v1"),
        ("EfficientNet-B0", "efficient_b0"),
        ("efficientnetv2_s", "efficient_s_v2"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert REGISTRY.get(alias).name == name


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(UserError, match=r"did you mean .*mobilenet_v2"):
        REGISTRY.get("mobilnet_v2")


@pytest.mark.parametrize("entry", list(REGISTRY), ids=lambda e: e.name)
def test_entries_are_complete(entry) -> None:
    assert entry.kind in KINDS
    assert entry.params > 0 and entry.params_source
    assert entry.paper.startswith("https://")
    assert entry.check_resolution(entry.default_resolution) is None
    assert entry.check_resolution(entry.rule.smallest()) is None
    assert entry.check_resolution(entry.rule.smallest() - 1) is not None


def test_resolution_messages() -> None:
    assert "at least 75" in REGISTRY.get("inception_v3").check_resolution(60)
    assert "fixed at 331" in REGISTRY.get("nasnet_large").check_resolution(224)


def test_select_by_family_kind_and_glob() -> None:
    assert {e.name for e in REGISTRY.select(["mobilenet_v3_*"])} == {
        "mobilenet_v3_small",
        "mobilenet_v3_large",
    }
    assert all(e.family == "VGG" for e in REGISTRY.select(families=["vgg"]))
    with pytest.raises(UserError, match="unknown family"):
        REGISTRY.select(families=["NoSuchNet"])
    with pytest.raises(UserError, match="no model matches"):
        REGISTRY.select(["zzz*"])


def test_every_model_has_pinned_macs() -> None:
    missing = [e.name for e in REGISTRY if not e.macs]
    assert not missing, f"run bench/zoo_build.py --backends jax --pin-costs: {missing}"


# RegNet names carry their MACs: regnetx_016 is RegNetX-1.6GF (pycls counts MACs as "flops").
REGNET_NOMINAL_GMACS = {"002": 0.2, "004": 0.4, "006": 0.6, "008": 0.8, "016": 1.6, "032": 3.2,
                        "040": 4.0, "064": 6.4, "080": 8.0, "120": 12.0, "160": 16.0, "320": 32.0}


@pytest.mark.parametrize("block", ["x", "y"])
@pytest.mark.parametrize("size", sorted(REGNET_NOMINAL_GMACS))
def test_regnet_macs_match_the_name(block: str, size: str) -> None:
    entry = REGISTRY.get(f"regnet{block}_{size}")
    assert entry.macs / 1e9 == pytest.approx(REGNET_NOMINAL_GMACS[size], rel=0.03)


@pytest.mark.parametrize(
    ("name", "study_built"), [("006", "008"), ("008", "016"), ("016", "002")]
)
@pytest.mark.parametrize("block", ["x", "y"])
def test_the_studys_regnet_mixup_is_detectable(block: str, name: str, study_built: str) -> None:
    """The study built regnetx_006 with RegNetX008 (and so on). The MACs of the swapped pair
    differ by over 25%, and their parameters by far more than the 0.5% that the zoo's
    parameter test allows, so a model built with its neighbour's constructor fails that test.
    """
    ours = REGISTRY.get(f"regnet{block}_{name}")
    theirs = REGISTRY.get(f"regnet{block}_{study_built}")
    assert max(ours.macs, theirs.macs) / min(ours.macs, theirs.macs) > 1.25
    assert max(ours.params, theirs.params) / min(ours.params, theirs.params) > 1.02
