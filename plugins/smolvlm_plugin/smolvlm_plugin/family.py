"""The ``smolvlm`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/smolvlm.md §2): the decoded RGB image is resized with the
backend's filter to its longest-edge size, then, with splitting, to multiples of the tile
size and cut into a ``rows`` x ``cols`` grid of tiles followed by the whole image resized to
one tile (the global image); without splitting the global image alone. Each tile is
rescaled and normalized into float32 CHW planes. The feature is float32
``[frames, 3, tile, tile]`` with geometry :class:`~.sizing.SplitGrid`, planned from the
decoded size alone; positions are 1-D. The expansion of every grid is built once per
grid shape and cached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import SplitGrid, longest_edge_size, vision_encoder_size
from .spec import parse_spec
from .video import VIDEO, VIDEO_OPTIONS, SmolVLMVideo, VideoFrames, expansion_text, padded

_F32 = np.float32
IMAGE = "<image>"
# The processors' default marker texts (tokenizer attributes the published tokenizers lack).
FAKE, GLOBAL = "<fake_token_around_image>", "<global-img>"
# The processor options a request may set per item (the image processor's call kwargs).
ITEM_OPTIONS = ("do_image_splitting",)


class SmolVLMFamily:
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
        # Per instance, so the cache dies with the pipeline; a few grid shapes recur.
        self.expansion = functools.lru_cache(maxsize=64)(self._expansion)
        self.video = SmolVLMVideo(s) if s.video else None

    # -- geometry -----------------------------------------------------------------

    def sizes(self, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int], SplitGrid]:
        """``(h, w)`` after the longest-edge resize, ``(h, w)`` the grid is cut from (the
        tile square without splitting), and the grid of a ``width`` x ``height`` image."""
        s, tile = self.spec, self.spec.max_image_size
        first = longest_edge_size(height, width, s.size_longest_edge) if s.do_resize else (height, width)
        if not s.do_image_splitting:
            return first, (tile, tile), SplitGrid(0, 0)
        h, w = vision_encoder_size(*first, tile)
        if h <= tile and w <= tile:
            return first, (h, w), SplitGrid(0, 0)
        grid = SplitGrid(h // tile, w // tile)
        rows, cols = s.grid_max
        if grid.rows > rows or grid.cols > cols:
            raise mmp.MediaError(
                f"smolvlm: the {width}x{height} image splits into {grid.rows}x{grid.cols} tiles, beyond the "
                f"{rows}x{cols} <row_r_col_c> markers of row_col_token_ids")
        return first, (h, w), grid

    def item_plan(self, width: int, height: int) -> mmp.ItemPlan:
        tile = self.spec.max_image_size
        return mmp.ItemPlan(self.sizes(width, height)[2], (tile, tile))

    def _resized(self, rgb: np.ndarray, hw: tuple[int, int], source: Any = None) -> np.ndarray:
        if rgb.shape[:2] == hw:
            return rgb
        return kernels.resize_rgb(rgb, hw[1], hw[0], self.spec.resizer, source=source)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The vocabularies' ids are int32. The prompt marks an image with <image> (the
        # processors' image_token), which the layout expands, and a video with <video>.
        s, image = self.spec, {name: name for name in ITEM_OPTIONS}
        if self.video is None:
            return mmp.Capabilities(
                id_range=(0, 2**31 - 1), placeholders={"image": s.image_token_id},
                placeholder_texts={"image": IMAGE}, outputs={"image": mmp.ItemOutputs("f32")},
                item_options={"image": image},
            )
        return mmp.Capabilities(
            modalities=("image", "video"), id_range=(0, 2**31 - 1),
            placeholders={"image": s.image_token_id, "video": s.video_token_id},
            placeholder_texts={"image": IMAGE, "video": VIDEO},
            outputs={"image": mmp.ItemOutputs("f32"), "video": mmp.ItemOutputs("f32")},
            item_options={"image": image, "video": VIDEO_OPTIONS},
            # SmolVLMProcessor writes prose around a video's frames (its frame count in words, its
            # duration, each frame's "Frame from MM:SS:") that the tokenizer merges with the prompt.
            text_prompts={"video"},
        )

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int] | None:
        return self._video().sample(header)

    def _video(self) -> SmolVLMVideo:
        if self.video is None:
            raise mmp.InternalError("smolvlm: a video item for a spec without video_token_id")
        return self.video

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    def resized_images(self, rgb: np.ndarray, source: Any = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """The uint8 stages of HWC ``rgb`` (``source``: its Pillow image, if lent): the
        longest-edge resize, the image the grid is cut from (``None`` without a grid) and the
        global image."""
        tile = self.spec.max_image_size
        first, cut, grid = self.sizes(rgb.shape[1], rgb.shape[0])
        image = self._resized(rgb, first, source)
        if not grid.rows:
            return image, None, self._resized(image, (tile, tile))
        # The global image is resized from the grid-sized image, as split_images does.
        image_cut = self._resized(image, cut)
        return image, image_cut, self._resized(image_cut, (tile, tile))

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage | mmp.VideoClip) -> mmp.ProcessedItem:
        if isinstance(media, mmp.VideoClip):
            return self._video().process(media)
        tile = self.spec.max_image_size
        grid = self.sizes(media.width, media.height)[2]
        _, image, whole = self.resized_images(media.rgb, mmp.take_source(media))
        feature = np.empty((grid.frames, 3, tile, tile), dtype=_F32)
        for r in range(grid.rows):
            for c in range(grid.cols):
                tile_rgb = image[r * tile:(r + 1) * tile, c * tile:(c + 1) * tile]
                self._norm.apply_image(tile_rgb, feature[r * grid.cols + c])
        self._norm.apply_image(whole, feature[-1])
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=grid, size=(tile, tile))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]
                  ) -> mmp.TokenLayout:
        if "video" in modalities:
            raise mmp.InternalError("smolvlm: mm_layout got a video, whose prompt the core expands as text "
                                    "(Capabilities.text_prompts, mm_expansion_text)")
        grids = [_grid(g) for g in geometries]
        return mmp.layout_by_placeholders(
            input_ids, {"image": self.spec.image_token_id}, ["image"] * len(grids),
            lambda i: self.expansion(grids[i].rows, grids[i].cols))

    def _expansion(self, rows: int, cols: int) -> mmp.Explicit:
        """The ids of an image with a ``rows`` x ``cols`` grid (``expansion``, cached) (``get_image_prompt_string``):
        per tile ``<fake> <row_r_col_c> <image>*S``, ``"\\n"`` after each row, then ``"\\n\\n"``
        (the last row's newline and the global image's lead, one token in the published
        tokenizers) and ``<fake> <global-img> <image>*S <fake>``. The reported span runs from
        the first ``<image>`` to the last, markers included."""
        s = self.spec
        seq = [s.image_token_id] * s.image_seq_len
        ids: list[int] = []
        for r in range(rows):
            for c in range(cols):
                ids += [s.fake_image_token_id, s.row_col_token_ids[r][c], *seq]
            if r < rows - 1:
                ids.append(s.newline_token_id)
        if rows:
            ids += s.double_newline_ids
        ids += [s.fake_image_token_id, s.global_image_token_id, *seq, s.fake_image_token_id]
        return mmp.Explicit(ids, 2, len(ids) - 1)

    @mmp.hookimpl
    def mm_expansion_text(self, modality: str, geometry: Any, geometries: Sequence[Any]) -> str | None:
        """``replace_video_token``'s text for a video, which counts the frames of the request's
        longest video (an image's expansion is special tokens and newlines between them, exact
        in ids)."""
        if modality != "video":
            return None
        if not isinstance(geometry, VideoFrames):
            raise mmp.InternalError(f"smolvlm: expected a VideoFrames geometry, got {type(geometry).__name__}")
        frame = FAKE + GLOBAL + IMAGE * self.spec.image_seq_len + FAKE
        return expansion_text(geometry, frame, max(g.frames for g in geometries if isinstance(g, VideoFrames)))

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader | mmp.ClipHeader) -> mmp.ItemPlan:
        if isinstance(header, mmp.ClipHeader):
            return self._video().plan(header)
        return self.item_plan(header.width, header.height)

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The processor's ``pixel_values`` float32 ``[1, frames, 3, tile, tile]`` (every frame
        of every image, in order) and ``pixel_attention_mask`` int64 ``[1, frames, tile, tile]``:
        all ones, as every frame is exactly one tile and a single prompt pads nothing. Videos:
        the video processor's batch, one row per video (:func:`.video.padded`)."""
        tile = self.spec.max_image_size
        videos = [it.feature.array for it in items if it.modality == "video"]
        if videos:
            if len(videos) < len(items):
                raise mmp.UnsupportedError(
                    "smolvlm: a request mixing images and videos: SmolVLMProcessor returns both as pixel_values "
                    "and keeps only the videos'")
            return padded(videos, tile)
        pv = (np.concatenate([it.feature.array for it in items], axis=0) if items
              else np.zeros((0, 3, tile, tile), dtype=_F32))
        return {"pixel_values": pv[None], "pixel_attention_mask": np.ones((1, len(pv), tile, tile), dtype=np.int64)}


def _grid(geometry: Any) -> SplitGrid:
    if not isinstance(geometry, SplitGrid):
        raise mmp.InternalError(f"smolvlm: expected a SplitGrid geometry, got {type(geometry).__name__}")
    return geometry
