"""The ``minicpmv4_6`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/minicpmv4_6.md §2): the decoded RGB image is resized with the
backend's filter to the source size and, when it is sliced, separately to the refine size,
which is cut into a ``rows`` x ``cols`` grid of equal slices. Every frame (source, then the
slices row-major) is rescaled and normalized into float32 CHW and laid out patch by patch
(``reshape_by_patch``): the item's feature is float32 ``[3, patch, columns]``, its frames
side by side along the last axis, as in the processor's ``pixel_values``. The geometry is a
:class:`~.slicing.SliceGrid`, planned from the decoded size alone; positions are 1-D.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .slicing import SliceGrid, plan
from .spec import parse_spec

_F32 = np.float32
IMAGE = "<|image_pad|>"
# The image processor's call kwargs a request may set per item.
ITEM_OPTIONS = ("slice_mode", "max_slice_nums", "downsample_mode")


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

    def _plan(self, width: int, height: int) -> SliceGrid:
        s = self.spec
        return plan(height, width, slice_mode=s.slice_mode, max_slice_nums=s.max_slice_nums,
                    scale_resolution=s.scale_resolution, patch=s.patch_size, downsample_mode=s.downsample_mode)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Qwen3.5 vocabulary's ids are int32; the prompt marks an image with <|image_pad|>
        # (the tokenizer's image_token), which the layout expands.
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": IMAGE}, outputs={"image": mmp.ItemOutputs("f32")},
            item_options={"image": {name: name for name in ITEM_OPTIONS}},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    def resized_images(self, rgb: np.ndarray, source: Any = None) -> list[np.ndarray]:
        """The uint8 frames of HWC ``rgb`` (``source``: its Pillow image, if lent): the source
        image, then the slices row-major (views into the refine image)."""
        g = self.plan(rgb.shape[1], rgb.shape[0])
        frames = [self._resized(rgb, g.source, source)]
        if g.rows:
            sh, sw = g.slice
            refine = self._resized(rgb, (sh * g.rows, sw * g.cols), source)
            frames += [refine[r * sh:(r + 1) * sh, c * sw:(c + 1) * sw] for r in range(g.rows) for c in range(g.cols)]
        return frames

    def _resized(self, rgb: np.ndarray, hw: tuple[int, int], source: Any) -> np.ndarray:
        if rgb.shape[:2] == hw:
            return rgb
        return kernels.resize_rgb(rgb, hw[1], hw[0], self.spec.resizer, source=source)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        g = self.plan(media.width, media.height)
        p = g.patch
        feature = np.empty((3, p, g.columns), dtype=_F32)
        start = 0
        for frame in self.resized_images(media.rgb, mmp.take_source(media)):
            h, w = frame.shape[:2]
            n = h * w // p
            self._patches(frame, feature[:, :, start:start + n])
            start += n
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=g, size=(g.source[1], g.source[0]))

    def _patches(self, frame: np.ndarray, out: np.ndarray) -> None:
        """HWC uint8 ``frame`` rescaled and normalized straight into ``out`` [3, p, h*w/p] in
        ``reshape_by_patch``'s order: row ``py`` of ``out`` holds row ``py`` of every patch, patches
        row-major, so it reads image rows ``py, py + p, ...`` whole (no CHW intermediate)."""
        h, w = frame.shape[:2]
        p = self.spec.patch_size
        src = frame.reshape(h // p, p, w, 3)
        dst = out.reshape(3, p, h // p, w)

        def run(a: int, b: int) -> None:
            for c in range(3):
                self._norm.apply(c, src[:, a:b, :, c].transpose(1, 0, 2), dst[c, a:b])

        kernels.for_chunks(run, p, kernels.rows_per_worker(p, h * w))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        grids = [_grid(g) for g in geometries]
        return mmp.layout_by_placeholders(
            input_ids, {"image": self.spec.image_token_id}, ["image"] * len(grids),
            lambda i: self.expansion(i, grids[i].source_tokens, grids[i].slice_tokens, grids[i].rows, grids[i].cols))

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
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        g = self.plan(header.width, header.height)
        return mmp.ItemPlan(g, (g.source[1], g.source[0]))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """The processor's ``pixel_values`` float32 ``[1, 3, patch, sum(columns)]`` (every
        frame of every image, in order) and ``target_sizes`` int32 ``[frames, 2]`` (patches
        per side of each frame)."""
        p = self.spec.patch_size
        pv = (np.concatenate([it.feature.array for it in items], axis=-1) if items
              else np.zeros((3, p, 0), dtype=_F32))
        sizes = [hw for it in items for hw in _grid(it.geometry).target_sizes()]
        return {"pixel_values": pv[None], "target_sizes": np.array(sizes, dtype=np.int32).reshape(-1, 2)}


def _grid(geometry: Any) -> SliceGrid:
    if not isinstance(geometry, SliceGrid):
        raise mmp.InternalError(f"minicpmv4_6: expected a SliceGrid geometry, got {type(geometry).__name__}")
    return geometry
