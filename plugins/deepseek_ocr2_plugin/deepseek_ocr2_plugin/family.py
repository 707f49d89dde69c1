"""The ``deepseek_ocr2`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/deepseek_ocr2.md §2): with cropping on and the longest edge above
``tile_size``, the decoded RGB image is resized with the backend's filter to a
``cols * tile`` x ``rows * tile`` canvas and cut into row-major local crops; independently,
the image is resized with its longest edge at the global side and centred on a square of
``background_color``. Both views are rescaled and normalized into float32 CHW planes (the
padding is the fill colour's normalized value, written without touching pixels). The
item's feature is the local crops ``[n, 3, tile, tile]`` (``n`` may be 0); its aux holds
the global view ``pixel_values`` ``[3, S, S]`` and ``num_local_patches``. The prompt's
``<image>`` becomes ``global + local * n + 1`` copies of itself; positions are 1-D.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec
from .tiling import LocalCrops, global_size, optimal_canvas

_F32 = np.float32
IMAGE = "<image>"
# The processor options a request may set per item (DeepseekOcr2Processor's images_kwargs).
ITEM_OPTIONS = ("crop_to_patches", "min_patches", "max_patches")


class DeepseekOcr2Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = s = parse_spec(params)
        self._norm = kernels.channel_norm_steps(
            "fused" if s.backend == "torchvision" else "pil", s.image_mean, s.image_std, s.rescale_factor,
            do_rescale=s.do_rescale, do_normalize=s.do_normalize)
        # The padding is uint8 fill before rescale + normalize in both backends: its table entry.
        self._fill = tuple(float(self._norm.lut[c][s.background_color[c]]) for c in range(3))
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=s.alpha, exif_transpose=s.exif_transpose, keep_source=kernels.resize_wants_source(s.resizer))
        # DeepseekOcr2Processor.replace_image_token: queries per side, ceil(side / patch / downsample),
        # from size["height"] whatever the crop mode.
        self.global_tokens = math.ceil(s.size / s.patch_size / s.downsample_ratio) ** 2
        self.local_tokens = math.ceil(s.tile_size / s.patch_size / s.downsample_ratio) ** 2

    # -- geometry -----------------------------------------------------------------

    def plan(self, width: int, height: int) -> tuple[LocalCrops, tuple[int, int]]:
        """The local crop grid of a ``width`` x ``height`` image and its global view's ``(w, h)``
        before padding."""
        s = self.spec
        view = global_size(width, height, s.global_side)
        if not (s.crop_to_patches and max(width, height) > s.tile_size):
            return LocalCrops(0, 0), view
        return LocalCrops(*optimal_canvas(width, height, s.tile_size, s.min_patches, s.max_patches)), view

    def tokens(self, crops: LocalCrops) -> int:
        """The ``<image>`` copies of an item: global, local per crop, and the view separator."""
        return self.global_tokens + self.local_tokens * crops.count + 1

    def resized_views(self, rgb: np.ndarray, source: Any = None) -> tuple[np.ndarray | None, np.ndarray]:
        """The uint8 resizes of HWC ``rgb`` (``source``: its Pillow image, if lent): the local
        crops' canvas (``None`` without crops) and the global view before padding."""
        s = self.spec
        crops, (gw, gh) = self.plan(rgb.shape[1], rgb.shape[0])
        canvas = None
        if crops.count:
            canvas = kernels.resize_rgb(rgb, crops.cols * s.tile_size, crops.rows * s.tile_size, s.resizer,
                                        source=source)
        return canvas, kernels.resize_rgb(rgb, gw, gh, s.resizer, source=source)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # DeepSeek's vocabulary ids are int32; the prompt marks an image with <image>.
        side = self.spec.global_side
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE},
            outputs={"image": mmp.ItemOutputs("f32", {"pixel_values": ("f32", (3, side, side)),
                                                      "num_local_patches": ("i64", (1,))})},
            item_options={"image": {name: name for name in ITEM_OPTIONS}},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        tile = self.spec.tile_size
        crops, _ = self.plan(media.width, media.height)
        canvas, small = self.resized_views(media.rgb, mmp.take_source(media))
        local = np.empty((crops.count, 3, tile, tile), dtype=_F32)
        for i in range(crops.count):
            r, c = divmod(i, crops.cols)
            self._norm.apply_image(canvas[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile], local[i])
        return mmp.ProcessedItem(
            feature=mmp.Tensor(local, "f32"),
            aux={"pixel_values": mmp.Tensor(self._padded(small), "f32"),
                 "num_local_patches": mmp.Tensor.i64([crops.count])},
            geometry=crops, size=self._size(crops))

    def _padded(self, small: np.ndarray) -> np.ndarray:
        """``pad_to_square`` then rescale + normalize: the view centred (the odd pixel after it)
        on the fill, normalized into CHW float32."""
        h, w = small.shape[:2]
        side = max(h, w)
        out = np.empty((3, side, side), dtype=_F32)
        y0, x0 = (side - h) // 2, (side - w) // 2
        for c, v in enumerate(self._fill):
            out[c, :y0].fill(v)
            out[c, y0 + h:].fill(v)
            out[c, y0:y0 + h, :x0].fill(v)
            out[c, y0:y0 + h, x0 + w:].fill(v)
        self._norm.apply_image(small, out[:, y0:y0 + h, x0:x0 + w])
        return out

    def _size(self, crops: LocalCrops) -> tuple[int, int]:
        """The largest image the views are cut from: the crops' canvas, else the global square."""
        s = self.spec
        if crops.count:
            return crops.cols * s.tile_size, crops.rows * s.tile_size
        return s.global_side, s.global_side

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        image = self.spec.image_token_id
        counts = [self.tokens(_crops(g)) for g in geometries]
        return mmp.layout_by_placeholders(input_ids, {"image": image}, ["image"] * len(counts),
                                          lambda i: mmp.Repeat(image, counts[i]))

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        crops, _ = self.plan(header.width, header.height)
        return mmp.ItemPlan(crops, self._size(crops))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The image processor's ``pixel_values`` float32 ``[N, 3, S, S]`` (global views),
        ``num_local_patches`` int64 ``[N]`` and, when any item has crops,
        ``pixel_values_local`` float32 ``[sum n, 3, tile, tile]``, in its key order."""
        side = self.spec.global_side
        views = [it.aux["pixel_values"].array for it in items]
        if len({v.shape for v in views}) > 1:
            raise mmp.UnsupportedError(
                "deepseek_ocr2: the global views of one request differ in size "
                f"({sorted({v.shape[-1] for v in views})}; crop_to_patches set for some items only), so "
                "pixel_values cannot stack; send the option for the whole request")
        out = {
            "pixel_values": np.stack(views) if views else np.zeros((0, 3, side, side), dtype=_F32),
            "num_local_patches": np.array([int(it.aux["num_local_patches"].array[0]) for it in items], dtype=np.int64),
        }
        local = [it.feature.array for it in items if it.feature.array.shape[0]]
        if local:
            out["pixel_values_local"] = np.concatenate(local, axis=0)
        return out

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``DeepseekOcr2ImageProcessor``'s (either backend's) outputs: the model kwargs, in its key
        order (tests/test_deepseek_ocr2_hf_accelerate.py)."""
        return self.mm_model_kwargs(items)


def _crops(geometry: Any) -> LocalCrops:
    if not isinstance(geometry, LocalCrops):
        raise mmp.InternalError(f"deepseek_ocr2: expected a LocalCrops geometry, got {type(geometry).__name__}")
    return geometry
