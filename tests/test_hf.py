"""``mm_framework.hf`` beyond one family: an image processor is accelerated only when the
installed family clones it and says what it returns (hook ``mm_hf_image_outputs``);
otherwise it is left alone and the reason counted. (Served calls: the qwen_vl plugin's
tests/test_qwen_hf_accelerate.py.)"""

from __future__ import annotations

import pytest

import mm_framework as mmf
from mm_framework import hf

transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def _fresh_stats():
    hf.reset_stats()
    yield
    hf.reset_stats()


@pytest.mark.parametrize("name, family", [("SmolVLMImageProcessorPil", "smolvlm")])
def test_a_family_that_does_not_describe_its_image_processor_is_not_served(name, family):
    if family not in {f["name"] for f in mmf.list_families()}:
        pytest.skip(f"the {family} family is not installed")
    ip = getattr(transformers, name)()
    assert hf.accelerate(ip) is ip
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith(f"{name}: not accelerated") and "mm_hf_image_outputs" in key and count == 1
    with pytest.raises(mmf.UnsupportedError, match=f"family '{family}' does not say what its image processor"):
        hf.accelerate(ip, strict=True)


def test_an_image_processor_no_family_clones_is_not_served():
    ip = transformers.CLIPImageProcessorPil()
    assert hf.accelerate(ip) is ip
    (key, _), = hf.stats()["fallbacks"].items()
    assert key.startswith("CLIPImageProcessorPil: not accelerated") and "no installed family" in key
    with pytest.raises(mmf.UnsupportedError, match="no installed family clones it"):
        hf.accelerate(ip, strict=True)


@pytest.mark.parametrize("names", [{""}, {3}])
def test_hf_config_kwargs_are_names(names):
    from mm_framework import plugin as mmp

    with pytest.raises(mmf.InternalError, match="^hf_config_kwargs must be non-empty names"):
        mmp.Capabilities(hf_config_kwargs=names)
    assert mmp.Capabilities(hf_config_kwargs=["patch_size"]).hf_config_kwargs == frozenset({"patch_size"})
