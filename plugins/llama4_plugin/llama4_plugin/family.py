"""The ``llama4`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/llama4.md §2): the decoded RGB image's canvas of ``rows`` x ``cols``
tiles comes from its size alone (:mod:`.tiling`); the image is resized without distortion
into it with torchvision's antialiased uint8 filter, padded bottom/right with 0 and cut into
row-major tiles; with more than one tile the whole image resized to one tile (distorted)
follows as the global thumbnail. Each frame goes through one exact table per channel: the
reference rescales and normalizes in bfloat16, so the feature is bf16 bits
``[frames, 3, tile, tile]`` (float32 with ``do_normalize`` off). Positions are 1-D.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec
from .tiling import TileGrid, tile_grid

IMAGE = "<|image|>"
# The processor options a request may set per item (the image processor's call kwargs).
ITEM_OPTIONS = ("max_patches", "resize_to_max_canvas")
_NUMPY = {"bf16": np.uint16, "f32": np.float32}


class Llama4Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        s = self.spec
        if s.do_normalize:
            self._lut = kernels.normalize_lut_bf16(s.image_mean, s.image_std, s.rescale_factor)
            self._norm = None
        else:
            self._lut = None
            self._norm = kernels.channel_norm_steps("fused", s.image_mean, s.image_std, s.rescale_factor,
                                                    do_normalize=False)
        self._decode_options = mmp.DecodeOptions(alpha=s.alpha, exif_transpose=s.exif_transpose)
        # Per instance, so the cache dies with the pipeline; a few grid shapes recur.
        self.expansion = functools.lru_cache(maxsize=64)(self._expansion)

    # -- geometry -----------------------------------------------------------------

    def grid(self, width: int, height: int) -> TileGrid:
        s = self.spec
        return tile_grid(height, width, s.tile_size, s.max_patches, s.resize_to_max_canvas)

    def _resized(self, rgb: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
        if rgb.shape[:2] == hw:
            return rgb
        return kernels.resize_rgb(rgb, hw[1], hw[0], self.spec.resizer)

    def resized_images(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The uint8 stages of HWC ``rgb``: the padded canvas the tiles are cut from and the
        global thumbnail (``None`` for a single tile)."""
        tile = self.spec.tile_size
        grid = self.grid(rgb.shape[1], rgb.shape[0])
        resized = self._resized(rgb, grid.resized)
        canvas = np.zeros((grid.rows * tile, grid.cols * tile, 3), dtype=np.uint8)
        canvas[: resized.shape[0], : resized.shape[1]] = resized
        thumb = self._resized(rgb, (tile, tile)) if grid.tiles > 1 else None
        return canvas, thumb

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Llama 4 vocabulary's ids fit int32. The prompt marks an image with <|image|>
        # (the processor's fake_image_token), which the layout expands.
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE}, outputs={"image": mmp.ItemOutputs(self.spec.feature_dtype)},
            item_options={"image": {name: name for name in ITEM_OPTIONS}},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    def _frame(self, rgb: np.ndarray, out: np.ndarray) -> None:
        if self._lut is not None:
            kernels.apply_bf16_lut(self._lut, rgb, out)
        else:
            self._norm.apply_image(rgb, out)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        tile = self.spec.tile_size
        grid = self.grid(media.width, media.height)
        canvas, thumb = self.resized_images(media.rgb)
        dtype = self.spec.feature_dtype
        feature = np.empty((grid.frames, 3, tile, tile), dtype=_NUMPY[dtype])
        for r in range(grid.rows):
            for c in range(grid.cols):
                self._frame(canvas[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile], feature[r * grid.cols + c])
        if thumb is not None:
            self._frame(thumb, feature[-1])
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, dtype), geometry=grid, size=(tile, tile))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        grids = [_grid(g) for g in geometries]
        return mmp.layout_by_placeholders(
            input_ids, {"image": self.spec.image_token_id}, ["image"] * len(grids),
            lambda i: self.expansion(grids[i].rows, grids[i].cols))

    def _expansion(self, rows: int, cols: int) -> mmp.Explicit:
        """The ids of an image with a ``rows`` x ``cols`` canvas (``_prompt_split_image``):
        ``<|image_start|>``; with more than one tile, per row each tile's ``<|patch|>`` run
        with ``<|tile_x_separator|>`` between tiles and ``<|tile_y_separator|>`` after the
        row; then ``<|image|>``, the thumbnail's (or the single tile's) run and
        ``<|image_end|>``. The span runs from the first ``<|patch|>`` to the last."""
        s = self.spec
        run = [s.patch_token_id] * s.tokens_per_tile
        ids = [s.image_start_token_id]
        if rows * cols > 1:
            for _ in range(rows):
                for c in range(cols):
                    ids += run
                    if c < cols - 1:
                        ids.append(s.tile_x_separator_token_id)
                ids.append(s.tile_y_separator_token_id)
        ids += [s.image_token_id, *run, s.image_end_token_id]
        # The first <|patch|> follows <|image_start|> (a grid) or <|image_start|> <|image|>.
        return mmp.Explicit(ids, 1 if rows * cols > 1 else 2, len(ids) - 1)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        tile = self.spec.tile_size
        return mmp.ItemPlan(self.grid(header.width, header.height), (tile, tile))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The processor's ``pixel_values`` ``[frames, 3, tile, tile]`` (every frame of every
        image, in order; bf16 bits, or float32 without normalize). ``aspect_ratios`` is not a
        model input (``Llama4Processor.unused_input_names`` drops it)."""
        tile = self.spec.tile_size
        pv = (np.concatenate([it.feature.array for it in items], axis=0) if items
              else np.zeros((0, 3, tile, tile), dtype=_NUMPY[self.spec.feature_dtype]))
        return {"pixel_values": pv}


def _grid(geometry: Any) -> TileGrid:
    if not isinstance(geometry, TileGrid):
        raise mmp.InternalError(f"llama4: expected a TileGrid geometry, got {type(geometry).__name__}")
    return geometry
