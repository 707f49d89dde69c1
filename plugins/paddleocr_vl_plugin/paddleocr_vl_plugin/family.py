"""The ``paddleocr_vl`` family processor: one still image in, transformers 5.24's tensors out.

Per item, through :class:`mmp.PatchGrid` (the still-image path it shares with qwen_vl):
decode -> PaddleOCR-VL's ``smart_resize`` (:func:`target_hw`) -> uint8 resize (skipped
when the size is already right: transformers' copy has the same bytes) -> rescale +
normalize + patchify in one pass. Unlike Qwen2-VL, the patches are not grouped
by merge window: ``pixel_values`` is float32 ``[gh * gw, 3 * temporal_patch_size, P, P]``
with the patches in raster order, which is the kernels' merged-block patchify with a merge
of 1. Positions are Qwen2-VL's image-only M-RoPE (``mmp.mrope.image_only``), which equals
the model's ``get_rope_index`` for images.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec

# The tokenizer's image token (PaddleOCRVLProcessor's image_token); the chat template wraps
# it in <|IMAGE_START|> ... <|IMAGE_END|>, which the prompt already holds.
IMAGE_TOKEN = "<|IMAGE_PLACEHOLDER|>"
# Per-item processor options (the processor's deprecated call-time min_pixels/max_pixels,
# the size bounds they set), each the spec field of the same name.
ITEM_OPTIONS = {"min_pixels": "min_pixels", "max_pixels": "max_pixels"}


def target_hw(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """PaddleOCR-VL's ``smart_resize``: Qwen2-VL's, after a side shorter than ``factor`` is
    raised to it with the other scaled by the same ratio (Python's ``round``, half to even)."""
    h, w = height, width
    if h < factor:
        w, h = round(w * factor / h), factor
    if w < factor:
        h, w = round(h * factor / w), factor
    if max(h, w) / min(h, w) > 200:
        # The bound transformers applies, but on the raised sides, which the shared message
        # of kernels.smart_resize would not show.
        raised = f" is {w}x{h} once its short side is raised to {factor}" if (h, w) != (height, width) else ""
        raise mmp.MediaError(f"paddleocr_vl: the {width}x{height} image{raised}; "
                             f"absolute aspect ratio must be smaller than 200, got {max(h, w) / min(h, w)}")
    return kernels.smart_resize(h, w, factor, min_pixels, max_pixels)


class PaddleOcrVlFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self.images = mmp.PatchGrid("paddleocr_vl", self.spec, target_hw)

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE_TOKEN}, item_options={"image": ITEM_OPTIONS},
            outputs={"image": mmp.ItemOutputs("f32", {"image_grid_thw": ("i64", (3,))})},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self.images.decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        return self.mm_features_from_pixels(self.mm_stored_pixels(media))

    @mmp.hookimpl
    def mm_stored_pixels(self, media: mmp.DecodedImage) -> np.ndarray:
        # Taken (and so released after the resize) even when no resize needs it.
        return self.images.resized(media.rgb, mmp.take_source(media))

    @mmp.hookimpl
    def mm_features_from_pixels(self, pixels: np.ndarray) -> mmp.ProcessedItem:
        """The patches of the resized image ``pixels`` (what ``mm_stored_pixels`` gave)."""
        s = self.spec
        rgb, grid = self.images.stored(pixels)
        flat = kernels.patchify_merged_blocks(rgb, s.patch_size, 1, s.temporal_patch_size, self.images.norm)
        feature = flat.reshape(grid.h * grid.w, 3 * s.temporal_patch_size, s.patch_size, s.patch_size)
        return mmp.ProcessedItem(
            feature=mmp.Tensor(feature, "f32"), aux={"image_grid_thw": mmp.Tensor.i64([1, grid.h, grid.w])},
            geometry=grid, size=(rgb.shape[1], rgb.shape[0]),
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        counts = [self.images.tokens(self.images.as_grid(g)) for g in geometries]
        return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, counts)

    @mmp.hookimpl
    def mm_positions(self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Any]) -> mmp.MRope:
        return self.images.positions(input_len, offsets, geometries)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        images = self.images
        return mmp.ItemPlan(images.grid(header.width, header.height), images.target_size(header.width, header.height))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(gh*gw), 3*T, P, P]`` f32 and ``image_grid_thw`` ``[n, 3]`` i64."""
        s = self.spec
        shape = (3 * s.temporal_patch_size, s.patch_size, s.patch_size)
        pixels = mmp.joined([it.feature.array for it in items], np.zeros((0, *shape), dtype=np.float32))
        grids = [it.aux["image_grid_thw"].array for it in items]
        return {"pixel_values": pixels,
                "image_grid_thw": np.stack(grids) if grids else np.zeros((0, 3), dtype=np.int64)}

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``PaddleOCRVLImageProcessor``'s (either backend's) ``pixel_values`` and ``image_grid_thw``:
        the model kwargs (tests/test_paddleocr_vl_hf_accelerate.py)."""
        return self.mm_model_kwargs(items)
