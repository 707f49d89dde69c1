"""The ``kimi_k25`` family processor: one still image (or video, :mod:`.video`) in, transformers 5.24's tensors out.

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
from .video import KimiVideo, VideoGrid

IMAGE_TOKEN = "<|media_pad|>"
VIDEO_TOKEN = "<|kimi_k25_video_placeholder|>"
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
        self.video = None if s.video is None else KimiVideo(s.video, s.patch_size, s.merge_size, self.norm)

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
        marks, texts = {"image": self.spec.image_token_id}, {"image": IMAGE_TOKEN}
        outputs = {"image": mmp.ItemOutputs("f32", {"image_grid_thw": ("i64", (3,))})}
        if self.video is not None:
            marks["video"], texts["video"] = self.video.video.video_token_id, VIDEO_TOKEN
            outputs["video"] = mmp.ItemOutputs("f32", {"video_thw": ("i64", (3,))})
        return mmp.Capabilities(
            modalities=tuple(marks), id_range=(0, 2**31 - 1), placeholders=marks, placeholder_texts=texts,
            item_options={"image": ITEM_OPTIONS}, outputs=outputs,
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

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
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]
                  ) -> mmp.TokenLayout:
        if "video" not in modalities:
            counts = [self.tokens(_grid(g)) for g in geometries]
            return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, counts)
        video = self._video()
        marks = {"image": self.spec.image_token_id, "video": video.video.video_token_id}

        def pattern(item: int) -> mmp.Repeat | mmp.Explicit:
            if modalities[item] == "image":
                return mmp.Repeat(self.spec.image_token_id, self.tokens(_grid(geometries[item])))
            return video.pattern(_video_grid(geometries[item]))

        return mmp.layout_by_placeholders(input_ids, marks, modalities, pattern)

    @mmp.hookimpl
    def mm_expansion_text(self, modality: str, geometry: Any) -> str:
        """What ``Kimi_K25Processor`` writes for each placeholder: the image's pads, and the video's
        timestamps, markers, the word ``video`` and pads per chunk (text only its tokenizer splits)."""
        if modality == "video":
            return self._video().text(_video_grid(geometry))
        return IMAGE_TOKEN * self.tokens(_grid(geometry))

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self._video().plan(header)
        grid, p = self.grid(header.width, header.height), self.spec.patch_size
        return mmp.ItemPlan(grid, (grid.w * p, grid.h * p))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(gh*gw), 3, P, P]`` f32 and ``image_grid_thw`` ``[n, 3]`` i64 (when there are
        images, or no item); with videos ``pixel_values_videos`` ``[sum(t*gh*gw), 3, P, P]`` f32 and
        ``video_grid_thw`` ``[chunks, 3]`` i64, one row per chunk (what the model's forward takes)."""
        p = self.spec.patch_size
        images = [it for it in items if it.modality == "image"]
        videos = [it for it in items if it.modality == "video"]
        out: dict[str, np.ndarray] = {}
        if images or not videos:
            pixels = [it.feature.array for it in images] or [np.zeros((0, 3, p, p), dtype=np.float32)]
            grids = [it.aux["image_grid_thw"].array for it in images]
            out["pixel_values"] = np.concatenate(pixels, axis=0)
            out["image_grid_thw"] = np.stack(grids) if grids else np.zeros((0, 3), dtype=np.int64)
        if videos:
            video = self._video()
            rows = [r for it in videos for r in video.chunk_rows(mmp.Grid(*it.aux["video_thw"].array.tolist()))]
            out["pixel_values_videos"] = np.concatenate([it.feature.array for it in videos], axis=0)
            out["video_grid_thw"] = np.asarray(rows, dtype=np.int64)
        return out

    def _video(self) -> KimiVideo:
        if self.video is None:
            raise mmp.UnsupportedError("this kimi_k25 spec has no video fields (video_token_id is not set)")
        return self.video


def _video_grid(geometry: Any) -> VideoGrid:
    if not isinstance(geometry, VideoGrid):
        raise mmp.InternalError(f"kimi_k25: expected a VideoGrid geometry, got {type(geometry).__name__}")
    return geometry


def _grid(geometry: Any) -> mmp.Grid:
    if not isinstance(geometry, mmp.Grid):
        raise mmp.InternalError(f"kimi_k25: expected a Grid geometry, got {type(geometry).__name__}")
    return geometry
