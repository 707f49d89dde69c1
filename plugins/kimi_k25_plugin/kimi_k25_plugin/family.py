"""The ``kimi_k25`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/kimi_k25.md §2): :func:`.sizing.navit_resize` picks the resized
size and the padded canvas from the image's size alone; the decoded RGB image is resized
with torchvision's antialiased uint8 filter (skipped at the same size, as tvF.resize does),
padded bottom/right with 0 to the canvas, rescaled + normalized in float32 (the torchvision
backend's fused arithmetic: the padding becomes ``-mean / std``) and cut into raster-order
patches: ``pixel_values`` ``[gh * gw, 3, P, P]`` and ``image_grid_thw`` ``[1, gh, gw]``. The
prompt's ``<|media_pad|>`` becomes ``gh * gw / merge_size**2`` copies of itself; the chat
template's ``<|media_begin|>image<|media_content|>`` and ``<|media_end|>`` around it are
prompt text. Positions are 1-D (the DeepSeek-V3 text model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import navit_resize
from .spec import parse_spec

IMAGE_TOKEN = "<|media_pad|>"
# The processor options a request may set per item (image processor call kwargs), each the
# spec field of the same name.
ITEM_OPTIONS = {"max_patches": "max_patches"}


class KimiK25Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        s = self.spec
        self.norm = s.channel_norm()
        self._decode_options = mmp.DecodeOptions(alpha=s.alpha, exif_transpose=s.exif_transpose)

    def sizes(self, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """``((resized_h, resized_w), (padded_h, padded_w))`` of a ``width`` x ``height`` image."""
        s = self.spec
        return navit_resize(height, width, s.patch_size, s.merge_size, s.max_patches, s.max_size_per_side)

    def grid(self, width: int, height: int) -> mmp.Grid:
        _, (ph, pw) = self.sizes(width, height)
        return mmp.Grid(1, ph // self.spec.patch_size, pw // self.spec.patch_size)

    def tokens(self, grid: mmp.Grid) -> int:
        return grid.h * grid.w // self.spec.merge_size**2

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE_TOKEN}, item_options={"image": ITEM_OPTIONS},
            outputs={"image": mmp.ItemOutputs("f32", {"image_grid_thw": ("i64", (3,))})},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        return self.mm_features_from_pixels(self.mm_stored_pixels(media))

    @mmp.hookimpl
    def mm_stored_pixels(self, media: mmp.DecodedImage) -> np.ndarray:
        """The padded uint8 HWC canvas the patches are cut from."""
        rgb = media.rgb
        (rh, rw), (ph, pw) = self.sizes(rgb.shape[1], rgb.shape[0])
        if (rh, rw) != rgb.shape[:2]:
            rgb = kernels.resize_rgb(rgb, rw, rh, self.spec.resizer)
        if (rh, rw) == (ph, pw):
            return rgb
        canvas = np.zeros((ph, pw, 3), dtype=np.uint8)
        canvas[:rh, :rw] = rgb
        return canvas

    @mmp.hookimpl
    def mm_features_from_pixels(self, pixels: np.ndarray) -> mmp.ProcessedItem:
        """The patches of the padded canvas ``pixels`` (what ``mm_stored_pixels`` gave)."""
        s = self.spec
        rgb = kernels.check_rgb(pixels, "stored pixels", error=mmp.InvalidInputError)
        h, w = rgb.shape[:2]
        if h % s.factor or w % s.factor:
            raise mmp.InvalidInputError(f"kimi_k25: stored pixels {w}x{h} are not multiples of the merge kernel "
                                        f"{s.factor}")
        grid = mmp.Grid(1, h // s.patch_size, w // s.patch_size)
        # A merge of 1 keeps the patches in raster order, the reference's patchify.
        flat = kernels.patchify_merged_blocks(rgb, s.patch_size, 1, 1, self.norm)
        feature = flat.reshape(grid.h * grid.w, 3, s.patch_size, s.patch_size)
        return mmp.ProcessedItem(
            feature=mmp.Tensor(feature, "f32"), aux={"image_grid_thw": mmp.Tensor.i64([1, grid.h, grid.w])},
            geometry=grid, size=(w, h),
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        counts = [self.tokens(_grid(g)) for g in geometries]
        return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, counts)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        grid, p = self.grid(header.width, header.height), self.spec.patch_size
        return mmp.ItemPlan(grid, (grid.w * p, grid.h * p))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(gh*gw), 3, P, P]`` f32 and ``image_grid_thw`` ``[n, 3]`` i64."""
        p = self.spec.patch_size
        pixels = [it.feature.array for it in items] or [np.zeros((0, 3, p, p), dtype=np.float32)]
        grids = [it.aux["image_grid_thw"].array for it in items]
        return {"pixel_values": np.concatenate(pixels, axis=0),
                "image_grid_thw": np.stack(grids) if grids else np.zeros((0, 3), dtype=np.int64)}


def _grid(geometry: Any) -> mmp.Grid:
    if not isinstance(geometry, mmp.Grid):
        raise mmp.InternalError(f"kimi_k25: expected a Grid geometry, got {type(geometry).__name__}")
    return geometry
