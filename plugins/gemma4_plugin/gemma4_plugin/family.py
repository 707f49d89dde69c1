"""The ``gemma4`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/gemma4.md §2): the decoded RGB image is resized, aspect ratio kept,
to the largest size of whole ``pooling_kernel_size * patch_size`` blocks within
``max_soft_tokens * pooling_kernel_size**2`` patches (:func:`.sizing.target_size`; no resize
when the image already has that size) with the backend's filter (Pillow's, or torchvision's
uint8 antialiased one), then cut into ``patch_size`` squares in row-major order, each
flattened pixel-major with the channels innermost, rescaled (and normalized) through the
backend's :class:`~mm_framework.kernels.ChannelNorm`. The feature is float32
``[max_patches, patch_size**2 * 3]``, zero rows after the image's patches: exactly the
processor's padded ``pixel_values`` row. Geometry ``Grid(1, rows, cols)`` of patches; the
2-D patch positions (``image_position_ids``) and the soft-token count follow from it.
Text positions are 1-D (the default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import target_size
from .spec import FAMILY, parse_spec

_F32 = np.float32
# The Gemma 4 tokenizer's image token (Gemma4Processor's image_token), the text a chat
# template writes for an image; unverified offline (docs/families/gemma4.md §1).
IMAGE_TOKEN = "<|image|>"
# Gemma4Processor's images kwargs a request may set per item: the soft-token budget.
ITEM_OPTIONS = ("max_soft_tokens",)


def channel_norm(spec) -> kernels.ChannelNorm:
    """The backend's rescale (+ normalize) table: transformers' PIL arithmetic, or torchvision's
    fused one (:func:`mm_framework.kernels.channel_norm_steps`)."""
    return kernels.channel_norm_steps("fused" if spec.backend == "torchvision" else "pil", spec.image_mean,
                                      spec.image_std, spec.rescale_factor, do_rescale=spec.do_rescale,
                                      do_normalize=spec.do_normalize)


def patch_positions(grid: mmp.Grid, rows: int) -> np.ndarray:
    """int64 ``[rows, 2]``: ``(x, y)`` of each patch in row-major order, then ``-1`` rows
    (the processor's ``image_position_ids`` of one image padded to ``rows``)."""
    out = np.full((rows, 2), -1, dtype=np.int64)
    n = grid.h * grid.w
    out[:n, 0] = np.tile(np.arange(grid.w), grid.h)
    out[:n, 1] = np.repeat(np.arange(grid.h), grid.w)
    return out


class Gemma4Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self._norm = channel_norm(self.spec)
        # Compared as bits: a -0.0 entry must not pass for 0.0.
        rows = [row.tobytes() for row in self._norm.lut]
        self._same_channels = rows[0] == rows[1] == rows[2]
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=self.spec.alpha, exif_transpose=self.spec.exif_transpose,
            keep_source=kernels.resize_wants_source(self.spec.resizer),
        )

    # -- geometry -----------------------------------------------------------------

    def target(self, width: int, height: int) -> tuple[int, int]:
        """The ``(width, height)`` a ``width`` x ``height`` image is processed at."""
        s = self.spec
        th, tw = target_size(height, width, s.patch_size, s.max_patches, s.pooling_kernel_size)
        return tw, th

    def item_plan(self, width: int, height: int) -> mmp.ItemPlan:
        tw, th = self.target(width, height)
        p = self.spec.patch_size
        return mmp.ItemPlan(mmp.Grid(1, th // p, tw // p), (tw, th))

    def soft_tokens(self, grid: mmp.Grid) -> int:
        """The soft tokens of an image of ``grid`` patches (its pooled patches)."""
        return grid.h * grid.w // self.spec.pooling_kernel_size**2

    def resized(self, rgb: np.ndarray, source: Any = None) -> np.ndarray:
        """``rgb`` at its target size (``rgb`` itself when it has it: the processor skips the
        resize then). ``source``: its Pillow image, if lent."""
        tw, th = self.target(rgb.shape[1], rgb.shape[0])
        if rgb.shape[:2] == (th, tw):
            return rgb
        return kernels.resize_rgb(rgb, tw, th, self.spec.resizer, source=source)

    def patches(self, rgb: np.ndarray) -> np.ndarray:
        """The float32 ``[max_patches, patch_size**2 * 3]`` feature of the resized image ``rgb``."""
        s, p = self.spec, self.spec.patch_size
        rows, cols = rgb.shape[0] // p, rgb.shape[1] // p
        n = rows * cols
        # The uint8 bytes are regrouped first (a quarter of the float traffic), then each
        # channel is mapped straight into its strided slot of the padded feature.
        blocks = np.ascontiguousarray(rgb.reshape(rows, p, cols, p, 3).transpose(0, 2, 1, 3, 4)).reshape(n, p * p, 3)
        feature = np.zeros((s.max_patches, s.patch_dim), dtype=_F32)
        if self._same_channels:
            # One table for all three channels (the published config): one contiguous pass.
            self._norm.apply(0, blocks.reshape(n, -1), feature[:n])
            return feature
        slots = feature[:n].reshape(n, p * p, 3)
        for c in range(3):
            self._norm.apply(c, blocks[:, :, c], slots[:, :, c])
        return feature

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Gemma vocabulary's ids are int32; anything else is a caller bug. The prompt marks
        # an image with the image token itself, which the layout wraps in boi/eoi and repeats.
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE_TOKEN}, outputs={"image": mmp.ItemOutputs("f32")},
            item_options={"image": {name: name for name in ITEM_OPTIONS}},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        return self.mm_features_from_pixels(self.mm_stored_pixels(media))

    @mmp.hookimpl
    def mm_stored_pixels(self, media: mmp.DecodedImage) -> np.ndarray:
        # Taken (and so released after the resize) even when no resize needs it.
        return self.resized(media.rgb, mmp.take_source(media))

    @mmp.hookimpl
    def mm_features_from_pixels(self, pixels: np.ndarray) -> mmp.ProcessedItem:
        """The padded patches of the resized image ``pixels`` (what ``mm_stored_pixels`` gave)."""
        s = self.spec
        kernels.check_rgb(pixels, "gemma4 stored pixels")
        h, w = pixels.shape[:2]
        side, p = s.pooling_kernel_size * s.patch_size, s.patch_size
        # A target size need not be its own target (a thin strip grows again), so the stored
        # array is held to what every target is: whole blocks, within the patch budget.
        if h % side or w % side or (h // p) * (w // p) > s.max_patches:
            raise mmp.MediaError(
                f"{FAMILY}: stored pixels of {w}x{h} are not a size this spec resizes to (sides in multiples of "
                f"{side}, at most {s.max_patches} patches)"
            )
        grid = mmp.Grid(1, h // p, w // p)
        return mmp.ProcessedItem(feature=mmp.Tensor(self.patches(pixels), "f32"), geometry=grid, size=(w, h))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        # Gemma4Processor.replace_image_token: each image token becomes boi, the image token
        # once per soft token, eoi; the span is the soft tokens.
        counts = [self.soft_tokens(_grid(g)) for g in geometries]
        by_slot = mmp.layout_by_placeholder(np.asarray(input_ids), self.spec.image_token_id, counts)
        return mmp.TokenLayout(
            mmp.Media(seg.item, self._pattern(counts[seg.item])) if isinstance(seg, mmp.Media) else seg
            for seg in by_slot.segments)

    def _pattern(self, n: int) -> mmp.Explicit:
        s = self.spec
        return mmp.Explicit((s.boi_token_id,) + (s.image_token_id,) * n + (s.eoi_token_id,), 1, 1 + n)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        return self.item_plan(header.width, header.height)

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` float32 ``[n, max_patches, patch_size**2 * 3]`` and
        ``image_position_ids`` int64 ``[n, max_patches, 2]``, images in order.

        Items processed under different ``max_soft_tokens`` options are padded to the longest
        (zero patches at position ``-1``, what the processor pads with and the vision tower
        masks); one processor call has one budget, so the reference never mixes them.
        The model's other image input, ``mm_token_type_ids``, is per token, not per item
        (docs/families/gemma4.md §4).
        """
        s = self.spec
        rows = max((it.feature.array.shape[0] for it in items), default=s.max_patches)
        pv = np.zeros((len(items), rows, s.patch_dim), dtype=_F32)
        pos = np.empty((len(items), rows, 2), dtype=np.int64)
        for k, it in enumerate(items):
            a = it.feature.array
            pv[k, : a.shape[0]] = a
            pos[k] = patch_positions(_grid(it.geometry), rows)
        return {"pixel_values": pv, "image_position_ids": pos}

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The image processor's outputs (either backend): the model kwargs and
        ``num_soft_tokens_per_image``, int64 ``[n]``."""
        soft = np.asarray([self.soft_tokens(_grid(it.geometry)) for it in items], dtype=np.int64)
        return {**self.mm_model_kwargs(items), "num_soft_tokens_per_image": soft}


def _grid(geometry: Any) -> mmp.Grid:
    if not isinstance(geometry, mmp.Grid):
        raise mmp.InternalError(f"{FAMILY}: expected a Grid geometry, got {type(geometry).__name__}")
    return geometry
