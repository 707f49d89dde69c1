"""The ``gemma3`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/gemma3.md §2): the decoded RGB image and, with pan-and-scan, its
crops are each resized to ``height`` x ``width`` with the backend's filter (Pillow's, the
kernels' ``pil_*`` resizers, or torchvision's uint8 one, ``aten_u8*``), then rescaled and
normalized into one float32 CHW plane per channel through the
:class:`~mm_framework.kernels.ChannelNorm` of that backend's arithmetic (with
``pixels="bf16"``, those values rounded to bfloat16 as ``tensor.to(torch.bfloat16)`` rounds
them: :class:`~mm_framework.kernels.Bf16Norm`). The feature is ``[1 + crops, 3, height,
width]`` with geometry ``Tiles(1 + crops)`` and size ``(width, height)``, planned from the
decoded size alone (``mm_plan_item``); positions are 1-D. Everything that depends only on
the spec (the norm, the expansion cores of every crop count, decode options) is built with
the pipeline, so the per-item path allocates just the resized images and the feature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp
from mm_framework import kernels

from .expansion import build_core, build_cores, layout
from .pan_and_scan import Box, crop_boxes
from .spec import parse_spec

# The processor options a request may set per item (Gemma3Processor's images kwargs), each the
# spec field of the same name.
# The Gemma 3 tokenizer's boi, image and eoi tokens (Gemma3Processor reads them from it).
BOI, SOFT, EOI = "<start_of_image>", "<image_soft_token>", "<end_of_image>"
ITEM_OPTIONS = ("do_pan_and_scan", "pan_and_scan_min_crop_size", "pan_and_scan_max_num_crops",
                "pan_and_scan_min_ratio_to_activate")


def channel_norm(spec) -> kernels.ChannelNorm:
    """The backend's rescale + normalize table: transformers' PIL arithmetic, or torchvision's
    fused one (:func:`mm_framework.kernels.channel_norm_steps`)."""
    return kernels.channel_norm_steps("fused" if spec.backend == "torchvision" else "pil", spec.image_mean,
                                      spec.image_std, spec.rescale_factor, do_rescale=spec.do_rescale,
                                      do_normalize=spec.do_normalize)


class Gemma3Family:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        norm = channel_norm(self.spec)
        # What writes the feature: the f32 norm, or its values rounded to bf16 (uint16 bits).
        self._writer = kernels.Bf16Norm(norm) if self.spec.pixels == "bf16" else norm
        self._cores = build_cores(self.spec)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=self.spec.alpha, exif_transpose=self.spec.exif_transpose,
            keep_source=kernels.resize_wants_source(self.spec.resizer),
        )

    # -- geometry -----------------------------------------------------------------

    def crops(self, width: int, height: int) -> list[Box]:
        """The pan-and-scan crop boxes of a ``width`` x ``height`` image (none when off).

        An empty crop (possible only with small crop sizes, docs/families/gemma3.md §2) is
        black on the PIL backend; torchvision's resize cannot reshape an empty tensor, so
        Gemma3ImageProcessor fails on it, and so does the torchvision backend here."""
        s = self.spec
        if not s.do_pan_and_scan:
            return []
        boxes = crop_boxes(
            width, height, s.pan_and_scan_min_crop_size, s.pan_and_scan_max_num_crops,
            s.pan_and_scan_min_ratio_to_activate,
        )
        if s.backend == "torchvision":
            for k, (x0, y0, x1, y1) in enumerate(boxes, start=1):
                if x1 <= x0 or y1 <= y0:
                    raise mmp.MediaError(
                        f"gemma3: pan-and-scan crop {k} of {len(boxes)} of the {width}x{height} image is empty, "
                        "which the torchvision backend cannot resize (transformers' Gemma3ImageProcessor fails on it)"
                    )
        return boxes

    def item_plan(self, boxes: Sequence[Box]) -> mmp.ItemPlan:
        """The plan of an image with crop ``boxes``: ``Tiles(1 + crops)``, each tile the
        spec's ``width`` x ``height`` (the size every image and crop is resized to, so the
        size the model sees)."""
        return mmp.ItemPlan(mmp.Tiles(1 + len(boxes)), (self.spec.width, self.spec.height))

    def resized(self, rgb: np.ndarray, source: Any = None) -> np.ndarray:
        """``rgb`` resized to the spec's size (``rgb`` itself when it has that size already:
        Pillow copies then, so the bytes are the same). ``source``: its Pillow image, if lent."""
        s = self.spec
        if rgb.shape[:2] == (s.height, s.width):
            return rgb
        return kernels.resize_rgb(rgb, s.width, s.height, s.resizer, source=source)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # The Gemma vocabulary's ids are int32; anything else is a caller bug. The prompt
        # marks an image with <start_of_image> (Gemma3Processor's image_token, the tokenizer's
        # boi_token), which the layout expands. Pan-and-scan is Gemma3Processor's per-call
        # images option, so a request may switch it per item.
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.boi_token_id},
            placeholder_texts={"image": BOI}, outputs={"image": mmp.ItemOutputs(self.spec.pixels)},
            item_options={"image": {name: name for name in ITEM_OPTIONS}},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        s = self.spec
        rgb, source = media.rgb, mmp.take_source(media)
        boxes = self.crops(media.width, media.height)
        feature = np.empty((1 + len(boxes), 3, s.height, s.width), dtype=kernels.patch_dtype(self._writer))
        self._writer.apply_image(self.resized(rgb, source), feature[0])
        for k, (x0, y0, x1, y1) in enumerate(boxes, start=1):
            if x1 <= x0 or y1 <= y0:
                # The reference's slice is empty here and Pillow resizes an empty image
                # to black (docs/families/gemma3.md §2): the normalized value of 0.
                feature[k] = self._writer.lut[:, :1, None]
                continue
            crop = source.crop((x0, y0, x1, y1)) if source is not None else None
            self._writer.apply_image(self.resized(rgb[y0:y1, x0:x1], crop), feature[k])
        plan = self.item_plan(boxes)
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, s.pixels), geometry=plan.geometry, size=plan.size)

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        return layout(np.asarray(input_ids), [self._core(_tiles(g) - 1) for g in geometries], self.spec)

    def _core(self, crops: int) -> Any:
        # An item processed with its own pan_and_scan_max_num_crops may have more crops than
        # this spec's table holds.
        return self._cores[crops] if crops < len(self._cores) else build_core(self.spec, crops)

    @mmp.hookimpl
    def mm_expansion_text(self, geometry: Any) -> str:
        """Gemma3Processor's text for an image (``replace_image_token``): its newline wrappers and
        pan-and-scan's prose tokenize together with the prompt around them."""
        full = "\n\n" + BOI + SOFT * self.spec.image_seq_length + EOI + "\n\n"
        crops = _tiles(geometry) - 1
        if not crops:
            return full
        return f"Here is the original image {full} and here are some crops to help you see better " + " ".join(
            [full] * crops)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        width, height = header.width, header.height
        return self.item_plan(self.crops(width, height))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` ``[sum(1 + crops), 3, height, width]`` float32 (bf16 bits with
        ``pixels="bf16"``), images in order.

        The model's other image input, ``token_type_ids``, is ``input_ids == image_token_id``
        of the expanded prompt (docs/families/gemma3.md §4); it is per token, not per item.
        """
        s = self.spec
        empty = np.zeros((0, 3, s.height, s.width), dtype=kernels.patch_dtype(self._writer))
        return {"pixel_values": mmp.joined([it.feature.array for it in items], empty)}

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``Gemma3ImageProcessor``'s (either backend's) outputs: the model kwargs' ``pixel_values``
        and ``num_crops``, int64 ``[n]``, each image's pan-and-scan crops
        (tests/test_gemma3_hf_accelerate.py)."""
        crops = np.asarray([_tiles(it.geometry) - 1 for it in items], dtype=np.int64)
        return {**self.mm_model_kwargs(items), "num_crops": crops}


def _tiles(geometry: Any) -> int:
    if not isinstance(geometry, mmp.Tiles):
        raise mmp.InternalError(f"gemma3: expected a Tiles geometry, got {type(geometry).__name__}")
    return geometry.n
