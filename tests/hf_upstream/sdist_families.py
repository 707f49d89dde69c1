"""Our testers for transformers' ``ImageProcessingTestMixin`` (from the 5.24.0 sdist), one per
image processor ``mm_framework.hf`` serves: the processor's published defaults, the mixin's
image sizes (30 to 400 pixels a side, smaller batches where the outputs are large), and the
output shape each family's documented formula gives (docs/families/<family>.md).

Each tester here is a mixin placed before the sdist's ``ImageProcessingTester`` (which is only
importable once the sdist is), so this module imports neither torch nor transformers' tests.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from . import upstream

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
# The mixin's test_call_* assert `(batch, *expected_output_image_shape)`: one row per image.
_FLAT = "the mixin's shape check wants one `pixel_values` row per image; this processor returns the patches of " \
        "the whole batch in one `(patches, ...)` tensor (transformers' per-model file replaces these tests)"
# The tests the mixin runs that do not apply to these testers (each checked with MM_UPSTREAM_ADAPTER=0).
NOT_APPLICABLE: dict[str, str] = {
    **upstream.NOT_APPLICABLE["*"],
    "test_backends_equivalence": "loads a COCO image from the Hub (no network in CI)",
}
FLAT_NOT_APPLICABLE = dict.fromkeys(("test_call_pil", "test_call_numpy", "test_call_pytorch",
                                     "test_call_numpy_4_channels"), _FLAT)
_BACKENDS = "transformers' PIL and torchvision classes differ by up to 0.33, over the test's atol 0.1, on these " \
            "random images: fails on transformers' own classes (the adapter clones each backend byte-exact)"


def _channels(which: str) -> str:
    return f"{which} a 4-channel HWC array (`ValueError`): fails on transformers' own classes"


def _hw(image: Any) -> tuple[int, int]:
    """(height, width) of a mixin input: a PIL image, an HWC array or a CHW tensor."""
    if hasattr(image, "size") and not hasattr(image, "shape"):
        return image.size[1], image.size[0]
    if hasattr(image, "numpy"):
        return int(image.shape[1]), int(image.shape[2])
    return int(image.shape[0]), int(image.shape[1])


class FamilyTester:
    """Mixed in before ``ImageProcessingTester``: its keyword arguments are the processor's."""

    model_type = ""
    params: dict[str, Any] = {}
    batch = 7
    # Mixin tests that do not apply to this family, and why.
    not_applicable: dict[str, str] = {}

    def __init__(self, parent: Any) -> None:
        super().__init__(parent, batch_size=self.batch, **copy.deepcopy(self.params))

    def _get_image_processing_classes(self) -> dict[str, type]:
        # The mixin reads the model type from the test file's folder; ours are all in tests/hf_upstream.
        return upstream.mapped_classes(self.model_type)


class Qwen2VLTester(FamilyTester):
    """Qwen2-VL (Qwen/Qwen2-VL-7B-Instruct); Qwen2.5-VL, Qwen3-VL and the other model types
    transformers maps to Qwen2VLImageProcessor share the class."""

    model_type = "qwen2_vl"
    params = {"size": {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280}, "patch_size": 14,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD}
    not_applicable = {"test_backends_equivalence_batched": _BACKENDS}


class Glm4vTester(FamilyTester):
    """GLM-4.1V (zai-org/GLM-4.1V-9B-Thinking)."""

    model_type = "glm4v"
    params = {"size": {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 15000}, "patch_size": 14,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD}
    not_applicable = {"test_backends_equivalence_batched": _BACKENDS}


class Glm46vTester(Glm4vTester):
    """GLM-4.6V: its own class, the GLM-4.1V values."""

    model_type = "glm46v"


class PaddleOCRVLTester(FamilyTester):
    """PaddleOCR-VL (PaddlePaddle/PaddleOCR-VL): every image grows to at least 384x384 pixels."""

    model_type = "paddleocr_vl"
    params = {"size": {"shortest_edge": 384 * 384, "longest_edge": 1536 * 1536}, "patch_size": 14,
              "temporal_patch_size": 1, "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD}
    batch = 3


class Gemma3Tester(FamilyTester):
    """Gemma 3 at the class's 224x224 (google/gemma-3-4b-it saves 896x896, the same steps on
    16 times the pixels), pan-and-scan off as saved."""

    model_type = "gemma3"
    params = {"size": {"height": 224, "width": 224}, "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
              "do_pan_and_scan": False}

    def expected_output_image_shape(self, images: list[Any]) -> tuple[int, ...]:
        return self.num_channels, self.size["height"], self.size["width"]


class Gemma4Tester(FamilyTester):
    """Gemma 4 (google/gemma-4 image processor): every image is patchified and padded to
    ``max_soft_tokens * k**2`` rows of ``p * p * 3``."""

    model_type = "gemma4"
    params = {"patch_size": 16, "max_soft_tokens": 280, "pooling_kernel_size": 3}
    batch = 4
    not_applicable = {"test_call_numpy_4_channels": _channels("the PIL class infers no channel axis for")}

    def expected_output_image_shape(self, images: list[Any]) -> tuple[int, ...]:
        return self.max_soft_tokens * self.pooling_kernel_size ** 2, self.patch_size ** 2 * self.num_channels


class DeepseekOcr2Tester(FamilyTester):
    """DeepSeek-OCR 2 (deepseek-ai/DeepSeek-OCR-2): images no larger than ``tile_size`` get no
    local crops, only the global view padded to ``size``."""

    model_type = "deepseek_ocr2"
    params = {"size": {"height": 1024, "width": 1024}, "tile_size": 768, "crop_to_patches": True,
              "min_patches": 2, "max_patches": 6, "image_mean": [0.5] * 3, "image_std": [0.5] * 3}
    batch = 3
    not_applicable = {"test_call_numpy_4_channels": _channels(
        "the PIL class infers no channel axis for, and the torchvision class pads with a 3-value background_color,")}

    def expected_output_image_shape(self, images: list[Any]) -> tuple[int, ...]:
        assert all(max(_hw(im)) <= self.tile_size for im in images), "sized for the global view alone"
        return self.num_channels, self.size["height"], self.size["width"]


class PixtralTester(FamilyTester):
    """Pixtral (mistral-community/pixtral-12b): scaled down to ``longest_edge`` only when
    larger, each side stretched up to whole patches, the batch padded to its largest sides."""

    model_type = "pixtral"
    params = {"size": {"longest_edge": 1024}, "patch_size": {"height": 16, "width": 16}, "do_pad": True,
              "image_mean": CLIP_MEAN, "image_std": CLIP_STD}
    not_applicable = {"test_call_numpy_4_channels": _channels("the torchvision class infers no channel axis for")}

    def expected_output_image_shape(self, images: list[Any]) -> tuple[int, ...]:
        longest, f = self.size["longest_edge"], self.patch_size["height"]
        sides = []
        for h, w in map(_hw, images):
            ratio = max(h / longest, w / longest)
            if ratio > 1:
                h, w = math.floor(h / ratio), math.floor(w / ratio)
            sides.append((((h - 1) // f + 1) * f, ((w - 1) // f + 1) * f))
        return self.num_channels, max(h for h, _ in sides), max(w for _, w in sides)


class LlavaOnevisionTester(FamilyTester):
    """LLaVA-OneVision (llava-hf/llava-onevision-qwen2-7b-ov-hf): the base view and the crops of
    the best pinpoint, the batch padded to its largest crop count."""

    model_type = "llava_onevision"
    params = {"size": {"height": 384, "width": 384}, "do_pad": True, "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
              "image_grid_pinpoints": [[h, w] for h in range(384, 2305, 384) for w in range(384, 2305, 384)]}
    batch = 3

    def expected_output_image_shape(self, images: list[Any]) -> tuple[int, ...]:
        side = self.size["height"]
        counts = []
        for h, w in map(_hw, images):
            best, best_effective, best_wasted = None, 0, math.inf
            for H, W in self.image_grid_pinpoints:  # noqa: N806 (the doc's names)
                scale = min(W / w, H / h)
                effective = min(int(w * scale) * int(h * scale), w * h)
                wasted = W * H - effective
                if effective > best_effective or effective == best_effective and wasted < best_wasted:
                    best, best_effective, best_wasted = (H, W), effective, wasted
            counts.append(1 + (best[0] // side) * (best[1] // side))
        return max(counts), self.num_channels, side, side


def not_applicable(tester: type) -> dict[str, str]:
    """The mixin tests skipped for ``tester``, with why: a tester without a shape formula is a flat one."""
    flat = not any("expected_output_image_shape" in vars(c) for c in tester.__mro__)
    return {**NOT_APPLICABLE, **(FLAT_NOT_APPLICABLE if flat else {}), **tester.not_applicable}


TESTERS: dict[str, tuple[type, dict[str, str]]] = {
    t.model_type: (t, not_applicable(t))
    for t in (Qwen2VLTester, Glm4vTester, Glm46vTester, PaddleOCRVLTester, Gemma3Tester, Gemma4Tester,
              DeepseekOcr2Tester, PixtralTester, LlavaOnevisionTester)
}
