"""The ``gemma4`` family processor: one still image (or video, :mod:`.video`) in, transformers 5.24's tensors out.

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

from .patches import PatchWriter
from .sizing import target_size
from .spec import FAMILY, parse_spec
from .video import VIDEO_OPTIONS, VIDEO_TOKEN, Gemma4Video, VideoGrid, video_norm

_F32 = np.float32
# The Gemma 4 tokenizer's image token (Gemma4Processor's image_token), the text a chat
# template writes for an image; unverified offline (docs/families/gemma4.md §1).
IMAGE_TOKEN = "<|image|>"
# Its boi and eoi tokens' texts (the video expansion's text holds them); unverified offline too.
BOI_TOKEN, EOI_TOKEN = "<|image>", "<image|>"
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
        self._write = PatchWriter(channel_norm(self.spec), self.spec.patch_size)
        self.video = Gemma4Video(self.spec, PatchWriter(video_norm(self.spec), self.spec.patch_size))
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
        p = self.spec.patch_size
        n = (rgb.shape[0] // p) * (rgb.shape[1] // p)
        # Only the padding rows are zeroed: np.zeros would also clear the n rows written next
        # (a 7.7 MB memset once the allocator reuses freed memory, as a long-lived process does).
        feature = np.empty((self.spec.max_patches, self.spec.patch_dim), dtype=_F32)
        feature[n:] = 0
        self._write(rgb, feature)
        return feature

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Gemma vocabulary's ids are int32; anything else is a caller bug. The prompt marks
        # an image (a video) with the image (video) token itself, which the layout expands.
        s = self.spec
        return mmp.Capabilities(
            modalities=("image", "video"), id_range=(0, 2**31 - 1),
            placeholders={"image": s.image_token_id, "video": s.video_token_id},
            placeholder_texts={"image": IMAGE_TOKEN, "video": VIDEO_TOKEN},
            outputs={"image": mmp.ItemOutputs("f32"), "video": mmp.ItemOutputs("f32")},
            item_options={"image": {name: name for name in ITEM_OPTIONS}, "video": VIDEO_OPTIONS},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int] | None:
        return self.video.sample(header.total_frames, header.fps)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage | mmp.VideoClip) -> mmp.ProcessedItem:
        if isinstance(media, mmp.VideoClip):
            return self.video.process(media)
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
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]
                  ) -> mmp.TokenLayout:
        # Gemma4Processor.replace_image_token: each image token becomes boi, the image token
        # once per soft token, eoi; the span is the soft tokens. replace_video_token: per frame
        # its "mm:ss", boi, soft tokens, eoi (video_prompt); the span is first to last soft token.
        s = self.spec

        def pattern(item: int) -> mmp.Explicit:
            if modalities[item] == "video":
                return self.video.pattern(_video_grid(geometries[item]))
            n = self.soft_tokens(_grid(geometries[item]))
            return mmp.Explicit((s.boi_token_id,) + (s.image_token_id,) * n + (s.eoi_token_id,), 1, 1 + n)

        placeholders = {"image": s.image_token_id, "video": s.video_token_id}
        return mmp.layout_by_placeholders(np.asarray(input_ids), placeholders, modalities, pattern)

    @mmp.hookimpl
    def mm_expansion_text(self, modality: str, geometry: Any) -> str | None:
        # An image's expansion is special tokens only; a video's holds its timestamps' text.
        if modality != "video":
            return None
        return self.video.text(_video_grid(geometry), BOI_TOKEN, EOI_TOKEN)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self.video.plan(header)
        return self.item_plan(header.width, header.height)

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """Images: ``pixel_values`` float32 ``[n, max_patches, patch_size**2 * 3]`` and
        ``image_position_ids`` int64 ``[n, max_patches, 2]``, images in order. Videos (what
        ``Gemma4Model.forward`` takes): ``pixel_values_videos`` float32 ``[frames,
        video_max_patches, patch_size**2 * 3]``, the videos' frames concatenated,
        ``video_position_ids`` int64 ``[frames, video_max_patches, 2]`` and
        ``num_frames_per_video`` int64 ``[videos]``.

        Items processed under different soft-token budgets are padded to the longest (zero
        patches at position ``-1``, what the processor pads with and the vision tower masks);
        one processor call has one budget, so the reference never mixes them. The model's
        other input, ``mm_token_type_ids``, is per token, not per item (docs/families/gemma4.md §4).
        """
        images = [it for it in items if it.modality != "video"]
        out = self._image_kwargs(images) if images or not items else {}
        videos = [it for it in items if it.modality == "video"]
        if videos:
            frames = [(it.feature.array[k], _video_grid(it.geometry)) for it in videos
                      for k in range(it.feature.array.shape[0])]
            pv, pos = self._padded(frames, self.spec.video_max_patches)
            out.update(pixel_values_videos=pv, video_position_ids=pos,
                       num_frames_per_video=np.asarray([it.feature.array.shape[0] for it in videos], dtype=np.int64))
        return out

    def _image_kwargs(self, items: Sequence[mmp.OutputItem], share: bool = False) -> dict[str, np.ndarray]:
        pv, pos = self._padded([(it.feature.array, _grid(it.geometry)) for it in items], self.spec.max_patches,
                               share)
        return {"pixel_values": pv, "image_position_ids": pos}

    def _padded(self, rows_of: Sequence[tuple[np.ndarray, mmp.Grid]], default: int, share: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
        """The items' rows padded to the longest, stacked. ``share``: the caller owns the items'
        features, so one item's feature, already its padded row, is returned as a view of it
        rather than copied (a 1280x960 image's is 7.7 MB)."""
        rows = max((a.shape[0] for a, _ in rows_of), default=default)
        if share and len(rows_of) == 1:
            a, grid = rows_of[0]
            return a[None], patch_positions(grid, rows)[None]
        pv = np.zeros((len(rows_of), rows, self.spec.patch_dim), dtype=_F32)
        pos = np.empty((len(rows_of), rows, 2), dtype=np.int64)
        for k, (a, grid) in enumerate(rows_of):
            pv[k, : a.shape[0]] = a
            pos[k] = patch_positions(grid, rows)
        return pv, pos

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray] | None:
        """The image processor's outputs (either backend): the model kwargs and
        ``num_soft_tokens_per_image``, int64 ``[n]``. One image's (read-only) feature is handed
        over as a view, not copied: the hf adapter, which asks this, keeps no cache, so its call
        owns the feature."""
        if any(it.modality == "video" for it in items):
            return None
        soft = np.asarray([self.soft_tokens(_grid(it.geometry)) for it in items], dtype=np.int64)
        return {**self._image_kwargs(items, share=True), "num_soft_tokens_per_image": soft}


def _grid(geometry: Any) -> mmp.Grid:
    if not isinstance(geometry, mmp.Grid):
        raise mmp.InternalError(f"{FAMILY}: expected a Grid geometry, got {type(geometry).__name__}")
    return geometry


def _video_grid(geometry: Any) -> VideoGrid:
    if not isinstance(geometry, VideoGrid):
        raise mmp.InternalError(f"{FAMILY}: expected a VideoGrid geometry, got {type(geometry).__name__}")
    return geometry
