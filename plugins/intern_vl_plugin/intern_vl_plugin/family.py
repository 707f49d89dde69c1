"""The ``intern_vl`` family processor: SGLang's ``InternVLImageProcessor`` for one image.

Per item (docs/families/intern_vl.md):

1. choose a ``cols`` x ``rows`` tile grid from the aspect ratio (:mod:`.tiling`);
2. normalize the whole image to CHW float32: ``(v / 255 - mean) / std``;
3. float bicubic resize (torch semantics, :mod:`.bicubic`) to ``(rows * size, cols *
   size)``, cut into tiles in row-major order;
4. with more than one tile (and ``use_thumbnail``), resize the normalized original to
   ``(size, size)`` and append it as the last tile.

The feature is float32 ``[tiles, 3, size, size]``, geometry ``Tiles(tiles)``, no aux.
Each ``image_token_id`` in the prompt becomes ``<img>``, ``num_image_token * tiles``
``<IMG_CONTEXT>`` and ``</img>``; the item's offsets cover the context run only.

Normalization divides by 255 like SGLang's ``tensor.float() / 255.0`` (torch divides,
it does not multiply by a reciprocal); the Rust crate multiplies by ``f32(1/255)``, which
differs by one ulp on 126 of the 256 byte values.

With ``processor: "transformers"`` the item is ``GotOcr2ImageProcessorPil``'s instead
(``InternVLProcessor`` of the ``-hf`` checkpoints): transformers' tile rule, the uint8 image
resized to the canvas (and to one tile for the thumbnail) by Pillow's bicubic, then each
tile rescaled and normalized with transformers' PIL arithmetic (``channel_norm_pil``); with
``backend: "torchvision"`` ``GotOcr2ImageProcessor``'s: the same steps with ATen's uint8 bicubic
(``aten_u8``) and the fused rescale + normalize (``channel_norm_fused``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp
from mm_framework.kernels import channel_norm_fused, channel_norm_pil, for_chunks, resize_rgb, resize_wants_source

from .bicubic import resize_to_tiles
from .spec import BACKENDS, parse_spec
from .tiling import TileGrid, candidate_grids, select_grid, select_grid_transformers

_F32 = np.float32
_NORMS = {"pil": channel_norm_pil, "fused": channel_norm_fused}
# Rows of the source image per normalization window (a few hundred KiB per channel).
_NORMALIZE_WINDOW_ELEMENTS = 1 << 17


class InternVlFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self._candidates = candidate_grids(self.spec.max_num)
        self._mean = np.asarray(self.spec.image_mean, dtype=_F32).reshape(3, 1, 1)
        self._std = np.asarray(self.spec.image_std, dtype=_F32).reshape(3, 1, 1)
        self._hf = self.spec.processor == "transformers"
        self._resample, rounding = BACKENDS[self.spec.backend]
        # transformers decodes a PIL image as its PIL entry does (alpha composited on white,
        # no EXIF turn), and its Pillow resize may start from the decoder's own image.
        self._decode_options = (
            mmp.DecodeOptions(alpha="composite", keep_source=resize_wants_source(self._resample)) if self._hf
            else mmp.DecodeOptions()
        )
        self._norm = _NORMS[rounding](self.spec.image_mean, self.spec.image_std) if self._hf else None

    # -- geometry -----------------------------------------------------------------

    def grid(self, width: int, height: int) -> TileGrid:
        """The tile grid of a ``width`` x ``height`` image."""
        if self._hf:
            return select_grid_transformers(width, height, self._candidates, self.spec.image_size)
        return select_grid(width, height, self._candidates, self.spec.use_thumbnail)

    def tokens(self, tiles: int) -> int:
        """Context tokens of an item with ``tiles`` tiles (the span its offsets cover)."""
        return self.spec.num_image_token * tiles

    def normalize(self, rgb: np.ndarray) -> np.ndarray:
        """HWC uint8 -> CHW float32 ``(v / 255 - mean) / std``, rounded as torch does."""
        height, width = rgb.shape[:2]
        chw = rgb.transpose(2, 0, 1)
        out = np.empty((3, height, width), dtype=_F32)

        def run(a: int, b: int) -> None:
            band = out[:, a:b]
            np.divide(chw[:, a:b], _F32(255), out=band, dtype=_F32)
            np.subtract(band, self._mean, out=band)
            np.divide(band, self._std, out=band)

        for_chunks(run, height, max(1, _NORMALIZE_WINDOW_ELEMENTS // width))
        return out

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The slot's text is known when it is <IMG_CONTEXT> (the preset, as SGLang and
        # transformers' InternVLProcessor); another slot id is a token of the caller's choice.
        s = self.spec
        texts = {"image": "<IMG_CONTEXT>"} if s.image_token_id == s.img_context_token_id else {}
        # transformers' images_kwargs spelling of the tile budget; SGLang hard-codes its own.
        options = {"image": {"max_patches": "max_num"}} if self._hf else {}
        return mmp.Capabilities(
            placeholders={"image": s.image_token_id}, placeholder_texts=texts, item_options=options,
            outputs={"image": mmp.ItemOutputs("f32")},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        size = self.spec.image_size
        grid = self.grid(media.width, media.height)
        feature = np.empty((grid.tiles, 3, size, size), dtype=_F32)
        if self._hf:
            self._tiles_transformers(media, grid, feature)
        else:
            image = self.normalize(media.rgb)
            resize_to_tiles(image, grid.cols, grid.rows, size, feature[: grid.blocks])
            if grid.thumbnail:
                resize_to_tiles(image, 1, 1, size, feature[grid.blocks :])
        return mmp.ProcessedItem(
            feature=mmp.Tensor(feature, "f32"), geometry=mmp.Tiles(grid.tiles), size=self._canvas(grid)
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        counts = [self.tokens(_tiles(g)) for g in geometries]
        by_slot = mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, counts)
        return mmp.TokenLayout(
            mmp.Media(seg.item, self._pattern(counts[seg.item])) if isinstance(seg, mmp.Media) else seg
            for seg in by_slot.segments
        )

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        width, height = header.width, header.height
        grid = self.grid(width, height)
        return mmp.ItemPlan(mmp.Tiles(grid.tiles), self._canvas(grid))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(tiles), 3, size, size]`` f32 and ``num_patches`` ``[n]`` i64.

        ``num_patches`` is SGLang's ``num_patches_list``: the tile count of each image,
        which splits ``pixel_values`` back into images.
        """
        size = self.spec.image_size
        if not items:
            return {
                "pixel_values": np.zeros((0, 3, size, size), dtype=_F32),
                "num_patches": np.zeros(0, dtype=np.int64),
            }
        return {
            "pixel_values": np.concatenate([it.feature.array for it in items], axis=0),
            "num_patches": np.asarray([it.feature.shape[0] for it in items], dtype=np.int64),
        }

    # -- helpers ------------------------------------------------------------------

    def _tiles_transformers(self, media: mmp.DecodedImage, grid: TileGrid, feature: np.ndarray) -> None:
        """``GotOcr2ImageProcessor(Pil).crop_image_to_patches`` then its rescale and normalize."""
        size = self.spec.image_size
        source = mmp.take_source(media)
        canvas = resize_rgb(media.rgb, grid.cols * size, grid.rows * size, self._resample, source=source)
        for b in range(grid.blocks):
            y0, x0 = (b // grid.cols) * size, (b % grid.cols) * size
            self._norm.apply_image(canvas[y0 : y0 + size, x0 : x0 + size], feature[b])
        if grid.thumbnail:
            self._norm.apply_image(resize_rgb(media.rgb, size, size, self._resample, source=source), feature[-1])

    def _canvas(self, grid: TileGrid) -> tuple[int, int]:
        """``(width, height)`` the image is resized to before it is cut into tiles."""
        return grid.cols * self.spec.image_size, grid.rows * self.spec.image_size

    def _pattern(self, n: int) -> mmp.Explicit:
        s = self.spec
        ids = (s.img_start_token_id,) + (s.img_context_token_id,) * n + (s.img_end_token_id,)
        return mmp.Explicit(ids, 1, 1 + n)


def _tiles(geometry: Any) -> int:
    if not isinstance(geometry, mmp.Tiles):
        raise mmp.InternalError(f"intern_vl: expected a Tiles geometry, got {type(geometry).__name__}")
    return geometry.n
