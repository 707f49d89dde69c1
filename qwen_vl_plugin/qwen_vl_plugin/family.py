"""The ``qwen_vl`` family processor: one still image or video in, transformers 5.24's tensors out.

Per item: decode (the core decoder; for the Pillow backend it also lends its Pillow
image so the resize need not rebuild one from the array) -> ``smart_resize`` -> uint8
resize (skipped when the size is already right) -> patchify. Rescale and normalize are
per-channel functions of the uint8 value, so transformers' arithmetic is a 3x256 float32
table per backend (a :class:`~mm_framework.kernels.ChannelNorm`); patchify computes
it with the f32 ufuncs proven to reproduce that table bit for bit, straight into the
final patch layout. Everything that depends only on the spec (the norm, resampler,
decode options) is fixed when the pipeline is built, so the per-item path allocates
just the resized image and the output tensor. Videos (when the spec has video fields)
go through :class:`~.video_item.QwenVideo`, requests holding them through
:mod:`.mixed_request`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mm_framework import plugin as mmp
from mm_framework.kernels import patchify_merged_blocks, resize_rgb

from . import mixed_request
from .spec import parse_spec
from .video_item import QwenVideo

# The processor options a request may set per item (transformers' call-time kwargs of
# Qwen2VLImageProcessor / the video processors), and the spec field each replaces. The exact
# size is qwen-vl-utils' alone; without its mode the spec refuses it, saying so.
RESIZED = {"resized_height": "resized_height", "resized_width": "resized_width"}
IMAGE_OPTIONS = {"min_pixels": "min_pixels", "max_pixels": "max_pixels", **RESIZED}
# In the qwen-vl-utils mode an image's own bounds are fetch_image's and the request's
# (mm_processor_kwargs) the processor's, as process_vision_info + the processor apply them.
FETCH_OPTIONS = {"min_pixels": "fetch_min_pixels", "max_pixels": "fetch_max_pixels", **RESIZED}
REQUEST_IMAGE_OPTIONS = {"min_pixels": "min_pixels", "max_pixels": "max_pixels"}
VIDEO_OPTIONS = {
    "min_pixels": "video_min_pixels", "max_pixels": "video_max_pixels",
    "do_sample_frames": "video_sample_frames", "fps": "video_fps", "min_frames": "video_min_frames",
    "max_frames": "video_max_frames",
}


class QwenVlFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self.images = mmp.PatchGrid("qwen_vl", self.spec)
        self.video = None if self.spec.video is None else QwenVideo(self.spec)

    # -- geometry -----------------------------------------------------------------

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        """``(width, height)`` the image is resized to; ``MediaError`` when rejected."""
        if self.spec.vision_info is not None:
            height, width = self.spec.vision_info.fetch_size(height, width)
        return self.images.target_size(width, height)

    def grid(self, width: int, height: int) -> mmp.Grid:
        tw, th = self.target_size(width, height)
        return mmp.Grid(1, th // self.spec.patch_size, tw // self.spec.patch_size)

    def tokens(self, grid: mmp.Grid) -> int:
        return self.images.tokens(grid)

    def resized(self, rgb: np.ndarray, source: Image.Image | None = None) -> np.ndarray:
        """The uint8 HWC image the patches are cut from (``rgb`` itself when no resize).

        ``source``: the Pillow image ``rgb`` was decoded to, when the decoder lent it.
        """
        if self.spec.vision_info is not None:
            # fetch_image's Pillow resize (bicubic); the processor's follows, on its output.
            h, w = rgb.shape[:2]
            fh, fw = self.spec.vision_info.fetch_size(h, w)
            if (fh, fw) != (h, w):
                rgb, source = resize_rgb(rgb, fw, fh, "pil_bicubic", source=source), None
        return self.images.resized(rgb, source)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # Qwen vocabularies are int32 token ids; anything else is a caller bug. The texts are
        # the processor's image_token / video_token, the same in every Qwen vocabulary.
        marks, texts = {"image": self.spec.image_token_id}, {"image": "<|image_pad|>"}
        fetch = self.spec.vision_info is not None
        options = {"image": FETCH_OPTIONS if fetch else IMAGE_OPTIONS}
        shared = {"image": REQUEST_IMAGE_OPTIONS} if fetch else None
        outputs = {"image": mmp.ItemOutputs(self.spec.pixels, {"image_grid_thw": ("i64", (3,))})}
        if self.video is not None:
            marks["video"], texts["video"] = self.video.video.token_id, "<|video_pad|>"
            options["video"] = VIDEO_OPTIONS
            if shared is not None:
                shared["video"] = VIDEO_OPTIONS
            aux = {"video_grid_thw": ("i64", (3,))}
            if self.video.video.tokens_per_second is not None:  # Qwen2.5-VL
                aux["second_per_grid_ts"] = ("f32", (1,))
            outputs["video"] = mmp.ItemOutputs(self.spec.pixels, aux)
        return mmp.Capabilities(
            modalities=tuple(marks), id_range=(0, 2**31 - 1), placeholders=marks, placeholder_texts=texts,
            item_options=options, request_options=shared, outputs=outputs,
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self.images.decode_options

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int] | None:
        return self._video().sample(header.total_frames, header.fps)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage | mmp.VideoClip) -> mmp.ProcessedItem:
        if isinstance(media, mmp.VideoClip):
            return self._video().process(media)
        return self.mm_features_from_pixels(self.mm_stored_pixels(media))

    @mmp.hookimpl
    def mm_stored_pixels(self, media: mmp.DecodedImage) -> np.ndarray:
        # Taken (and so released after the resize) even when no resize needs it.
        return self.resized(media.rgb, mmp.take_source(media))

    @mmp.hookimpl
    def mm_features_from_pixels(self, pixels: np.ndarray) -> mmp.ProcessedItem:
        """The patches of the resized image ``pixels`` (what ``mm_stored_pixels`` gave)."""
        s = self.spec
        rgb, grid = self.images.stored(pixels)
        pixel_values = patchify_merged_blocks(rgb, s.patch_size, s.merge_size, s.temporal_patch_size,
                                              self.images.pixels.kernel_norm)
        return mmp.ProcessedItem(
            feature=self.images.pixels.tensor(pixel_values),
            aux={"image_grid_thw": mmp.Tensor.i64([1, grid.h, grid.w])},
            geometry=grid,
            size=(rgb.shape[1], rgb.shape[0]),
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]) -> mmp.TokenLayout:
        grids = [self.images.as_grid(g) for g in geometries]
        if "video" in modalities:
            return mixed_request.layout(input_ids, grids, modalities, self.tokens, self._video())
        return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, [self.tokens(g) for g in grids])

    @mmp.hookimpl
    def mm_positions(
        self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Any], modalities: Sequence[str]
    ) -> mmp.MRope:
        if "video" in modalities:
            grids = [self.images.as_grid(g) for g in geometries]
            return mixed_request.positions(input_len, offsets, grids, modalities, self._video())
        return self.images.positions(input_len, offsets, geometries)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self._video().plan(header.width, header.height, header.total_frames, header.fps)
        return mmp.ItemPlan(self.grid(header.width, header.height), self.target_size(header.width, header.height))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(gh*gw), 3*T*P*P]`` f32 (u8 with ``pixels="u8"``) and
        ``image_grid_thw`` ``[n, 3]`` i64; with videos also ``pixel_values_videos``, ``video_grid_thw`` and (Qwen2.5-VL)
        ``second_per_grid_ts`` (:func:`.mixed_request.model_kwargs`)."""
        s = self.spec
        return mixed_request.model_kwargs(items, 3 * s.temporal_patch_size * s.patch_size * s.patch_size,
                                          self.images.pixels.dtype)

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray] | None:
        """``Qwen2VLImageProcessor``'s (either backend's) ``pixel_values`` and ``image_grid_thw``:
        the model kwargs of the images (tests/test_qwen_hf_accelerate.py)."""
        images = [it for it in items if it.modality == "image"]
        return self.mm_model_kwargs(images) if len(images) == len(items) else None

    @mmp.hookimpl
    def mm_hf_video_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray] | None:
        """``Qwen2VLVideoProcessor``'s and ``Qwen3VLVideoProcessor``'s ``pixel_values_videos`` and
        ``video_grid_thw`` (Qwen2.5-VL's ``second_per_grid_ts`` is its processor's, from the
        metadata): tests/test_qwen_hf_video.py."""
        if not items or any(it.modality != "video" for it in items):
            return None
        kwargs = self.mm_model_kwargs(items)
        return {k: kwargs[k] for k in ("pixel_values_videos", "video_grid_thw")}

    def _video(self) -> QwenVideo:
        # The driver refuses videos for a spec without video fields (Capabilities.video),
        # and a token count for one is the caller's question to get wrong.
        if self.video is None:
            raise mmp.UnsupportedError("this qwen_vl spec has no video fields (video_processor is not set)")
        return self.video

