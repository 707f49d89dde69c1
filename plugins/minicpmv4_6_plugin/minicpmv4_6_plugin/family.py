"""The ``minicpmv4_6`` family processor: one still image or video in, transformers 5.24's tensors out.

Per item (docs/families/minicpmv4_6.md §2): the decoded RGB image is resized with the
backend's filter to the source size and, when it is sliced, separately to the refine size,
which is cut into a ``rows`` x ``cols`` grid of equal slices. Every frame (source, then the
slices row-major) is rescaled and normalized into float32 CHW and laid out patch by patch
(``reshape_by_patch``): the item's feature is float32 ``[3, patch, columns]``, its frames
side by side along the last axis, as in the processor's ``pixel_values``. The geometry is a
:class:`~.slicing.SliceGrid`, planned from the decoded size alone; positions are 1-D.
Videos (a spec with ``video_token_id``) go through :class:`~.video.MiniCPMVideo`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .pixels import resized_frames, write_feature
from .slicing import SliceGrid, plan
from .spec import parse_spec
from .video import MiniCPMVideo, VideoPlan

_F32 = np.float32
IMAGE, VIDEO = "<|image_pad|>", "<|video_pad|>"
# The image processor's call kwargs a request may set per item.
ITEM_OPTIONS = ("slice_mode", "max_slice_nums", "downsample_mode")
# The video processor's call kwargs a request may set per video, and the spec field each
# replaces. Not slice_mode: the processor writes slice markers by its instance's slice_mode
# whatever the call's, so a call that turned slicing on would get pixels the prompt lacks.
VIDEO_OPTIONS = {"max_num_frames": "video_max_num_frames", "stack_frames": "video_stack_frames",
                 "max_slice_nums": "video_max_slice_nums", "downsample_mode": "video_downsample_mode"}


class MiniCPMV46Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        s = self.spec
        self._norm = kernels.channel_norm_steps(
            "fused" if s.backend == "torchvision" else "pil", s.image_mean, s.image_std, s.rescale_factor,
            do_rescale=s.do_rescale, do_normalize=s.do_normalize)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=s.alpha, exif_transpose=s.exif_transpose, keep_source=kernels.resize_wants_source(s.resizer))
        # Per instance, so the caches die with the pipeline; a few shapes recur.
        self.plan = functools.lru_cache(maxsize=256)(self._plan)
        self.expansion = functools.lru_cache(maxsize=256)(self._expansion)
        self.video = None if s.video_token_id is None else MiniCPMVideo(s)
        self.video_expansion = None if self.video is None else functools.lru_cache(maxsize=256)(self.video.expansion)
        self._placeholders = {"image": s.image_token_id}
        if s.video_token_id is not None:
            self._placeholders["video"] = s.video_token_id

    def _plan(self, width: int, height: int) -> SliceGrid:
        s = self.spec
        return plan(height, width, slice_mode=s.slice_mode, max_slice_nums=s.max_slice_nums,
                    scale_resolution=s.scale_resolution, patch=s.patch_size, downsample_mode=s.downsample_mode)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Qwen3.5 vocabulary's ids are int32; the prompt marks an image with <|image_pad|>
        # and a video with <|video_pad|> (the tokenizer's image_token, video_token), which the
        # layout expands. The expansions' only text is "\n" and digits between special
        # tokens, so it is done in ids (docs/families/minicpmv4_6.md §3).
        texts = {"image": IMAGE, "video": VIDEO}
        options = {"image": {name: name for name in ITEM_OPTIONS}, "video": VIDEO_OPTIONS}
        return mmp.Capabilities(
            modalities=tuple(self._placeholders), id_range=(0, 2**31 - 1), placeholders=self._placeholders,
            placeholder_texts={m: texts[m] for m in self._placeholders},
            outputs={m: mmp.ItemOutputs("f32") for m in self._placeholders},
            item_options={m: options[m] for m in self._placeholders},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    def resized_images(self, rgb: np.ndarray, source: Any = None) -> list[np.ndarray]:
        """The uint8 frames of HWC ``rgb`` (``source``: its Pillow image, if lent): the source
        image, then the slices row-major (views into the refine image)."""
        return resized_frames(rgb, self.plan(rgb.shape[1], rgb.shape[0]), self.spec.resizer, source)

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int]:
        return self._video().sample(header)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage | mmp.VideoClip) -> mmp.ProcessedItem:
        if isinstance(media, mmp.VideoClip):
            return self._video().process(media)
        g = self.plan(media.width, media.height)
        feature = np.empty((3, g.patch, g.columns), dtype=_F32)
        write_feature(self.resized_images(media.rgb, mmp.take_source(media)), g.patch, self._norm, feature)
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=g, size=(g.source[1], g.source[0]))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]) -> mmp.TokenLayout:
        # Images and videos are numbered apart (_prepend_local_ids counts each placeholder text).
        local = [sum(1 for m in modalities[:i] if m == modality) for i, modality in enumerate(modalities)]

        def pattern(i: int) -> mmp.Explicit:
            if modalities[i] == "video":
                return self.video_expansion(local[i], _video_plan(geometries[i]).tokens())
            g = _grid(geometries[i])
            return self.expansion(local[i], g.source_tokens, g.slice_tokens, g.rows, g.cols)

        return mmp.layout_by_placeholders(input_ids, self._placeholders, modalities, pattern)

    def _expansion(self, index: int, source: int, per_slice: int, rows: int, cols: int) -> mmp.Explicit:
        """The ids of image ``index`` of the prompt (``replace_image_token`` and
        ``_prepend_local_ids``): ``<image_id>index</image_id>`` (with ``use_image_id``; the
        index one token per decimal digit), ``<image> pad*source </image>``, then per slice row
        ``<slice> pad*per_slice </slice>`` per column, rows joined by ``"\\n"``. The reported
        span runs from the first pad token to the last, markers included."""
        s = self.spec
        ids: list[int] = []
        if s.use_image_id:
            digits = [s.digit_token_ids[int(d)] for d in str(index)]
            ids += [s.image_id_start_token_id, *digits, s.image_id_end_token_id]
        start = len(ids) + 1
        ids += [s.image_start_token_id, *[s.image_token_id] * source, s.image_end_token_id]
        end = len(ids) - 1
        for r in range(rows):
            if r:
                ids.append(s.newline_token_id)
            for _ in range(cols):
                ids += [s.slice_start_token_id, *[s.image_token_id] * per_slice, s.slice_end_token_id]
            end = len(ids) - 1
        return mmp.Explicit(ids, start, end)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self._video().plan(header)
        g = self.plan(header.width, header.height)
        return mmp.ItemPlan(g, (g.source[1], g.source[0]))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The processor's ``pixel_values`` float32 ``[1, 3, patch, sum(columns)]`` (every
        frame of every image, in order) and ``target_sizes`` int32 ``[frames, 2]`` (patches
        per side of each frame); with videos also ``pixel_values_videos`` and
        ``target_sizes_videos`` over the videos' frames, the names the model's forward takes."""
        images = [it for it in items if it.modality == "image"]
        videos = [it for it in items if it.modality == "video"]
        # As the processor: a request's videos alone give no image keys (a text-only one gives empty ones).
        out = {} if videos and not images else self._packed(
            images, "pixel_values", "target_sizes", lambda it: _grid(it.geometry).target_sizes())
        if videos:
            out.update(self._packed(videos, "pixel_values_videos", "target_sizes_videos",
                                    lambda it: _video_plan(it.geometry).target_sizes()))
        return out

    def _packed(self, items: Sequence[mmp.OutputItem], pixels: str, sizes: str, rows: Any) -> dict[str, np.ndarray]:
        p = self.spec.patch_size
        pv = (np.concatenate([it.feature.array for it in items], axis=-1) if items
              else np.zeros((3, p, 0), dtype=_F32))
        hw = [r for it in items for r in rows(it)]
        return {pixels: pv[None], sizes: np.array(hw, dtype=np.int32).reshape(-1, 2)}

    def _video(self) -> MiniCPMVideo:
        # The driver refuses videos for a spec without video_token_id (Capabilities.modalities).
        if self.video is None:
            raise mmp.UnsupportedError("this minicpmv4_6 spec has no video_token_id: it takes no videos")
        return self.video


def _grid(geometry: Any) -> SliceGrid:
    if not isinstance(geometry, SliceGrid):
        raise mmp.InternalError(f"minicpmv4_6: expected a SliceGrid geometry, got {type(geometry).__name__}")
    return geometry


def _video_plan(geometry: Any) -> VideoPlan:
    if not isinstance(geometry, VideoPlan):
        raise mmp.InternalError(f"minicpmv4_6: expected a VideoPlan geometry, got {type(geometry).__name__}")
    return geometry
