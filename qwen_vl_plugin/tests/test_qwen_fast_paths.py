"""The qwen_vl family's fast paths: the decoder lends its Pillow image to the resize only
for the Pillow backend, the resize releases it, and the outputs are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp

from . import golden_images
from mm_framework.kernels import resize_wants_source
from qwen_vl_plugin.family import QwenVlFamily


def _family(backend: str) -> QwenVlFamily:
    spec = {k: v for k, v in mmf.preset("qwen2_vl").items() if k != "family"}
    return QwenVlFamily({**spec, "backend": backend})


def _decoded(backend: str, data: bytes, **limits: int) -> mmp.DecodedImage:
    """``data`` decoded as a pipeline of this backend decodes it for the family."""
    pipe = mmf.pipeline_from_spec({**mmf.preset("qwen2_vl"), "backend": backend}, limits=mmf.Limits(**limits))
    return pipe.decode(mmf.MmInput(images=[data]))[1][0]


@pytest.mark.parametrize("name", ["rgb_640x480.jpg", "exact_448x448.png", "rgba_640x480.png"])
def test_lent_source_is_consumed_and_changes_nothing(name):
    fam = _family("pil")
    data = golden_images.make(name)
    # The decoder lends one exactly when the resize starts from it (Pillow, portable kernels).
    lent = mmp.take_source(_decoded("pil", data))
    assert (lent is not None) == resize_wants_source("pil_bicubic")
    media = _decoded("pil", data)
    item = fam.mm_process_item(media)
    assert mmp.take_source(media) is None  # released by the resize (or dropped when none)
    # The same item from a plain decoded image (no source): byte-identical.
    plain = mmp.DecodedImage(rgb=media.rgb)
    again = fam.mm_process_item(plain)
    assert item.feature == again.feature


def test_torchvision_backend_does_not_keep_a_source():
    media = _decoded("torchvision", golden_images.make("rgb_640x480.jpg"))
    assert type(media) is mmp.DecodedImage


def test_decode_honours_the_pixel_limit():
    with pytest.raises(mmf.LimitExceededError):
        _decoded("pil", golden_images.make("rgb_640x480.jpg"), max_image_pixels=100)


@pytest.mark.parametrize("preset", ["qwen2_vl", "qwen3_vl"])
@pytest.mark.parametrize("backend", ["pil", "torchvision"])
def test_shipped_presets_take_the_arithmetic_path(preset, backend):
    spec = {k: v for k, v in mmf.preset(preset).items() if k != "family"}
    norm = QwenVlFamily({**spec, "backend": backend}).images.norm
    assert norm.steps is not None
    v = np.arange(256, dtype=np.float32)
    for c in range(3):
        x = v.copy()
        for ufunc, k in norm.steps:
            ufunc(x, k[c], out=x)
        assert x.tobytes() == norm.lut[c].tobytes()
