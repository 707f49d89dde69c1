"""The ``glm4v`` family processor: one still image or video in, transformers 5.24's tensors out.

Videos go through :class:`~.video.Glm4vVideo` (docs/families/glm4v.md §7); what follows is
the still-image path.

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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import target_hw
from .spec import parse_spec
from .video import Glm4vVideo, VideoGrid

# The processor's image_token and video_token (the tokenizer's <|image|>, <|video|>).
IMAGE_TOKEN = "<|image|>"
VIDEO_TOKEN = "<|video|>"
# A video's pixel bounds per item (transformers' call-time size of the video processor).
VIDEO_OPTIONS = {"min_pixels": "video_min_pixels", "max_pixels": "video_max_pixels"}


class Glm4vFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        sizing = functools.partial(target_hw, temporal=self.spec.temporal_patch_size)
        self.images = mmp.PatchGrid("glm4v", self.spec, sizing)
        self.video = None if self.spec.video_token_id is None else Glm4vVideo(self.spec)

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        marks, texts = {"image": self.spec.image_token_id}, {"image": IMAGE_TOKEN}
        outputs = {"image": mmp.ItemOutputs(self.spec.pixels, {"image_grid_thw": ("i64", (3,))})}
        options = {}
        if self.video is not None:
            marks["video"], texts["video"] = self.spec.video_token_id, VIDEO_TOKEN
            outputs["video"] = mmp.ItemOutputs(self.spec.pixels, {"video_grid_thw": ("i64", (3,))})
            options["video"] = VIDEO_OPTIONS
        return mmp.Capabilities(modalities=tuple(marks), id_range=(0, 2**31 - 1), placeholders=marks,
                                placeholder_texts=texts, item_options=options, outputs=outputs)

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int]:
        return self._video().sample(header)

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self.images.decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage | mmp.VideoClip) -> mmp.ProcessedItem:
        if isinstance(media, mmp.VideoClip):
            return self._video().process(media)
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
                                                 self.images.pixels.kernel_norm)
        return mmp.ProcessedItem(
            feature=self.images.pixels.tensor(feature), aux={"image_grid_thw": mmp.Tensor.i64([1, grid.h, grid.w])},
            geometry=grid, size=(rgb.shape[1], rgb.shape[0]),
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]) -> mmp.TokenLayout:
        if "video" not in modalities:
            counts = [self.images.tokens(self.images.as_grid(g)) for g in geometries]
            return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, counts)
        video = self._video()

        def pattern(item: int) -> mmp.Repeat | mmp.Explicit:
            if modalities[item] == "video":
                return video.pattern(_video_grid(geometries[item]))
            return mmp.Repeat(self.spec.image_token_id, self.images.tokens(self.images.as_grid(geometries[item])))

        return mmp.layout_by_placeholders(input_ids, self.mm_capabilities().placeholders, modalities, pattern)

    @mmp.hookimpl
    def mm_positions(self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Any],
                     modalities: Sequence[str]) -> mmp.MRope:
        """``get_rope_index``: a video grid is split into one ``[1, h, w]`` grid per temporal
        patch, each placed like a still image at its own run of ``<|image|>``; the frame
        markers and timestamp text between runs are text."""
        if "video" not in modalities:
            return self.images.positions(input_len, offsets, geometries)
        video, runs = self._video(), []
        for (start, end), g, modality in zip(offsets, geometries, modalities):
            if modality == "image":
                runs.append((start, end, self.images.as_grid(g)))
                continue
            grid = _video_grid(g)
            frame, n = mmp.Grid(1, grid.h, grid.w), video.frame_tokens(grid)
            runs += [(start + at, start + at + n - 1, frame) for at in video.pad_runs(grid)]
        return mmp.mrope.image_only(input_len, sorted(runs, key=lambda r: r[0]), self.spec.merge_size)

    @mmp.hookimpl
    def mm_expansion_text(self, modality: str, geometry: Any) -> str | None:
        """The processor's text for an item: a video's frames hold their timestamps as text,
        which the chat front door tokenizes as the processor does (images then give theirs
        too, since every item of a request must)."""
        if self.video is None:
            return None
        if modality == "video":
            return self.video.text(_video_grid(geometry))
        return IMAGE_TOKEN * self.images.tokens(self.images.as_grid(geometry))

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self._video().plan(header)
        images = self.images
        return mmp.ItemPlan(images.grid(header.width, header.height), images.target_size(header.width, header.height))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(gh*gw), 3*T*P*P]`` f32 (u8 with ``pixels="u8"``) and
        ``image_grid_thw`` ``[n, 3]`` i64 when there are images (or no items);
        ``pixel_values_videos`` and ``video_grid_thw`` when there are videos. Each modality in
        prompt order."""
        images = [it for it in items if it.modality == "image"]
        videos = [it for it in items if it.modality == "video"]
        out = {}
        if images or not videos:
            out.update(self._stacked(images, "pixel_values", "image_grid_thw"))
        if videos:
            out.update(self._stacked(videos, "pixel_values_videos", "video_grid_thw"))
        return out

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray] | None:
        """``Glm4vImageProcessor``'s (and GLM-4.6V's, either backend's) ``pixel_values`` and
        ``image_grid_thw``: the model kwargs of an image-only call (tests/test_glm4v_hf_accelerate.py)."""
        return self.mm_model_kwargs(items) if all(it.modality == "image" for it in items) else None

    @mmp.hookimpl
    def mm_hf_video_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray] | None:
        """``Glm4vVideoProcessor``'s (and ``Glm46VVideoProcessor``'s) ``pixel_values_videos`` and
        ``video_grid_thw`` for the frames it sampled: the model kwargs of a video-only call
        (tests/test_glm4v_hf_video.py)."""
        if not items or any(it.modality != "video" for it in items):
            return None
        return self.mm_model_kwargs(items)

    def _stacked(self, items: Sequence[mmp.OutputItem], pixels: str, grids: str) -> dict[str, np.ndarray]:
        s = self.spec
        width = 3 * s.temporal_patch_size * s.patch_size**2
        patches = mmp.joined([it.feature.array for it in items], np.zeros((0, width), dtype=self.images.pixels.dtype))
        thw = [it.aux[grids].array for it in items]
        return {pixels: patches, grids: np.stack(thw) if thw else np.zeros((0, 3), np.int64)}

    def _video(self) -> Glm4vVideo:
        # The driver refuses videos for a spec without video (Capabilities.modalities); a
        # token count for one is the caller's question to get wrong.
        if self.video is None:
            raise mmp.UnsupportedError("this glm4v spec has no video (video_token_id is not set)")
        return self.video


def _video_grid(geometry: Any) -> VideoGrid:
    if not isinstance(geometry, VideoGrid):
        raise mmp.InternalError(f"glm4v: expected a VideoGrid geometry for a video, got {type(geometry).__name__}")
    return geometry
