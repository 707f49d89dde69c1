"""The ``glm4v`` family processor: one still image in, transformers 5.24's tensors out.

Per item, through :class:`mmp.PatchGrid` (the still-image path it shares with qwen_vl and
paddleocr_vl): decode -> GLM-4V's ``smart_resize`` (:func:`target_hw`) -> uint8 resize
(skipped when the size is already right: transformers' copy has the same bytes) ->
rescale + normalize + patchify in one pass. The patches are Qwen2-VL's: merge window by
merge window, each row ``(c, t, py, px)`` with the image repeated in every temporal slot,
so ``pixel_values`` is float32 ``[gh * gw, 3 * T * P * P]``. The prompt expansion repeats
``<|image|>`` once per merged block (the chat template's ``<|begin_of_image|>`` and
``<|end_of_image|>`` stay around it); positions are ``Glm4vModel.get_rope_index``, which
for still images is Qwen2-VL's image-only M-RoPE (``mmp.mrope.image_only``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec

# The processor's image_token (the tokenizer's <|image|>).
IMAGE_TOKEN = "<|image|>"


def target_hw(height: int, width: int, factor: int, min_pixels: int, max_pixels: int,
              temporal: int) -> tuple[int, int]:
    """GLM-4V's ``smart_resize`` of a still image, which the processor calls with
    ``num_frames = temporal_factor = temporal_patch_size``: a side shorter than ``factor``
    is first raised to it, the other scaled by the same ratio and both truncated; the pixel
    bounds count the image ``temporal`` times. Same float operations as transformers, so
    the same sizes (``kernels.smart_resize`` is Qwen2-VL's, which has neither step)."""
    h, w = height, width
    if h < factor or w < factor:
        scale = max(factor / h, factor / w)
        h, w = int(h * scale), int(w * scale)
    if max(h, w) / min(h, w) > 200:
        raised = f" is {w}x{h} once its short side is raised to {factor}" if (h, w) != (height, width) else ""
        raise mmp.MediaError(f"glm4v: the {width}x{height} image{raised}; "
                             f"absolute aspect ratio must be smaller than 200, got {max(h, w) / min(h, w)}")
    h_bar = round(h / factor) * factor
    w_bar = round(w / factor) * factor
    if temporal * h_bar * w_bar > max_pixels:
        beta = math.sqrt((temporal * h * w) / max_pixels)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif temporal * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (temporal * h * w))
        h_bar = math.ceil(h * beta / factor) * factor
        w_bar = math.ceil(w * beta / factor) * factor
    return h_bar, w_bar


class Glm4vFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        sizing = functools.partial(target_hw, temporal=self.spec.temporal_patch_size)
        self.images = mmp.PatchGrid("glm4v", self.spec, sizing)

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE_TOKEN},
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
        feature = kernels.patchify_merged_blocks(rgb, s.patch_size, s.merge_size, s.temporal_patch_size,
                                                 self.images.norm)
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
        """``pixel_values`` ``[sum(gh*gw), 3*T*P*P]`` f32 and ``image_grid_thw`` ``[n, 3]`` i64."""
        s = self.spec
        width = 3 * s.temporal_patch_size * s.patch_size**2
        pixels = [it.feature.array for it in items] or [np.zeros((0, width), dtype=np.float32)]
        grids = [it.aux["image_grid_thw"].array for it in items]
        return {"pixel_values": np.concatenate(pixels, axis=0),
                "image_grid_thw": np.stack(grids) if grids else np.zeros((0, 3), dtype=np.int64)}

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``Glm4vImageProcessor``'s (and GLM-4.6V's, either backend's) ``pixel_values`` and
        ``image_grid_thw``: the model kwargs (tests/test_glm4v_hf_accelerate.py)."""
        return self.mm_model_kwargs(items)
