"""``pixels="bf16"`` for GLM-4.1V / 4.6V: the f32 patches of images and video frames rounded
to bfloat16 as torch rounds them (vLLM's cast to a bfloat16 model's dtype); the rest of the
output is the f32 path's."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.kernels import bf16_bits


def _frames(n: int, h: int, w: int) -> np.ndarray:
    return np.random.default_rng(n * h + w).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize("preset", ["glm4_1v_9b_thinking", "glm4_6v"])
@pytest.mark.parametrize("backend", ["pil", "torchvision"])
def test_bf16_patches_are_the_rounded_f32_patches(preset, backend):
    spec = {**mmf.preset(preset), "backend": backend}
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((30, 40), (480, 640), (97, 1500))]
    req = mmf.MmInput(images=images, videos=[mmf.VideoFrames(_frames(6, 120, 160), fps=2.0)])
    # The features alone (a video's prompt needs the tokenizer's timestamp ids).
    f32, bf16 = (mmf.pipeline_from_spec(s).process_items(req) for s in (spec, {**spec, "pixels": "bf16"}))
    for a, b in zip(f32, bf16, strict=True):
        assert b.feature.dtype == "bf16" and np.array_equal(b.feature.array, bf16_bits(a.feature.array))
        assert b.aux == a.aux and b.geometry == a.geometry
