"""Live parity of the ``torchvision`` backend with transformers' ``Gemma3ImageProcessor``.

Needs torch and torchvision (the torchvision stage of CI). Pixels: the pipeline's feature
equals the processor's ``pixel_values`` exactly on the live PIL test's images and specs
with ``backend: "torchvision"`` (LANCZOS is torchvision >= 0.27's, ATen's uint8 Lanczos), a
multi-image batch (the processor groups and reorders images by shape), and the empty crops
the processor fails on, which the backend refuses.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import gemma3_images
from .test_gemma3_live_parity import IMAGES, PRESET_IMAGES, SPECS, ours, reference_pixels
import mm_framework as mmf
from mm_framework.testing import require_torchvision
from mm_framework.testing.images import encode

require_torchvision(uint8_bilinear=True)
transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")


def _torchvision(spec):
    return {**spec, "backend": "torchvision"}


TV_SPECS = {name: _torchvision(spec) for name, spec in SPECS.items()}
CASES = [(s, n) for s in TV_SPECS for n in (PRESET_IMAGES if s in ("preset", "pan_and_scan") else IMAGES)]


def _png(rgb: np.ndarray) -> bytes:
    return encode(Image.fromarray(rgb), "PNG")


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixel_values_equal_the_reference(spec_name, name):
    spec = TV_SPECS[spec_name]
    data = gemma3_images.make(name)
    want = reference_pixels(spec, Image.open(io.BytesIO(data)))
    got = ours(spec, data).items[0].feature.array
    assert got.shape == want.shape
    assert np.array_equal(got, want), f"{name}: {np.count_nonzero(got != want)} values differ"


def test_batch_equals_the_reference():
    spec = TV_SPECS["pan_and_scan"]
    names = ["wide_1000x300.jpg", "rgb_640x480.jpg", "wide_1000x300.jpg", "tall_400x2000.jpg"]
    data = [gemma3_images.make(n) for n in names]
    want = reference_pixels(spec, [Image.open(io.BytesIO(d)) for d in data])
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=data, input_ids=[2] + [spec["boi_token_id"]] * len(data) + [3]))
    got = pipe.model_kwargs(out)["pixel_values"]
    assert got.shape == want.shape and np.array_equal(got, want)


def test_the_pil_and_torchvision_backends_differ():
    # Same filter, different fixed point and float order: the backend must change bytes.
    data = gemma3_images.make("rgb_1280x960.jpg")
    pil = ours(SPECS["preset"], data).items[0].feature.array
    tv = ours(TV_SPECS["preset"], data).items[0].feature.array
    assert pil.shape == tv.shape and not np.array_equal(pil, tv)


# Crop sizes down to 1 pixel: 2x1 and 1x7 crop into 1-pixel slices, 5x1, 9x1 and 1x5 also
# into an empty fourth one, 1x1 into two crops of which the second is empty (a start at or
# past the image's end).
TINY = {**TV_SPECS["preset"], "height": 16, "width": 16, "do_pan_and_scan": True, "pan_and_scan_min_crop_size": 1,
        "pan_and_scan_min_ratio_to_activate": 1.0}


def _tiny(w: int, h: int) -> np.ndarray:
    return np.random.default_rng(w * 10 + h).integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize(("w", "h"), [(2, 1), (1, 7)])
def test_tiny_crops_equal_the_reference(w, h):
    want = reference_pixels(TINY, Image.fromarray(_tiny(w, h)))
    assert np.array_equal(ours(TINY, _png(_tiny(w, h))).items[0].feature.array, want)


@pytest.mark.parametrize(("w", "h"), [(5, 1), (9, 1), (1, 5), (1, 1)])
def test_empty_crops_fail_like_the_reference(w, h):
    spec, rgb = TINY, _tiny(w, h)
    with pytest.raises(RuntimeError, match="invalid for input of size 0"):
        reference_pixels(spec, Image.fromarray(rgb))
    with pytest.raises(mmf.MediaError, match=f"item 0: gemma3: pan-and-scan crop .* of the {w}x{h} image is empty"):
        ours(spec, _png(rgb))
