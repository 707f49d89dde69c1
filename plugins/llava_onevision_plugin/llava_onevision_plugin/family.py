"""The ``llava_onevision`` family processor: one still image in, transformers 5.24's tensors out.

Per item: decode (the core decoder, which also lends its Pillow image to the resizes)
-> anyres plan (pinpoint, fitted size, crop grid, token count; pixel-free) -> the fitted
image on its padded canvas and the base image (the backend's exact resizes: Pillow's for
``LlavaOnevisionImageProcessorPil``, ATen's uint8 bicubic for the torchvision
``LlavaOnevisionImageProcessor``) -> the ``[base] + crops`` stack, normalized as that
backend does. Everything that depends only on the spec (the normalization
program, decode options) is fixed when the pipeline is built. The prompt expands each
``<image>`` to a run of the same token (a ``Repeat`` layout); positions are 1-D.

Each image takes the anyres path, as transformers does for images passed as a flat list
(``batch_num_images`` all ones); the multi-image pad-to-square path is not cloned
(docs/families/llava_onevision.md, section 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp
from mm_framework.kernels import ChannelNorm, channel_norm_fused, channel_norm_pil, resize_wants_source

from . import anyres, pixels
from .spec import LlavaOnevisionSpec, parse_spec

# backend -> its rescale+normalize table: the PIL backend's f64 rescale then f32 normalize,
# or the torchvision backend's rescale fused into the f32 normalize.
_NORMS = {"pil": channel_norm_pil, "torchvision": channel_norm_fused}


class LlavaOnevisionFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        s = self.spec
        self._norm = _short_norm(_NORMS[s.backend](s.image_mean, s.image_std, s.rescale_factor), s)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=s.alpha, exif_transpose=s.exif_transpose,
            keep_source=resize_wants_source(s.resizer),
        )

    def plan(self, width: int, height: int) -> anyres.AnyresPlan:
        return anyres.plan(self.spec, width, height)

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # Qwen2 vocabularies are int32 token ids; anything else is a caller bug. <image> is
        # LlavaOnevisionProcessor's image_token (an added token of the checkpoint's tokenizer).
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": "<image>"},
            outputs={"image": mmp.ItemOutputs("f32", {"image_sizes": ("i64", (2,))})},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        s = self.spec
        rgb = media.rgb
        source = mmp.take_source(media)
        item = self.mm_plan_item(mmp.ImageHeader(rgb.shape[1], rgb.shape[0]))
        plan = item.geometry
        padded = pixels.canvas(pixels.fitted_image(rgb, plan, s.resizer, source), plan)
        base = pixels.base_image(rgb, s.image_size, s.resizer, source)
        del source  # freed before the patch stack is allocated: a lower peak per item
        stack = pixels.patch_stack(base, padded, plan, s.image_size, self._norm)
        return mmp.ProcessedItem(
            feature=mmp.Tensor(stack, "f32"),
            aux={"image_sizes": mmp.Tensor.i64([plan.height, plan.width])},
            geometry=plan,
            size=item.size,
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        return mmp.layout_by_placeholder(input_ids, self.spec.image_token_id, [_plan(g).tokens for g in geometries])

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        """The anyres plan, processed at the pinpoint canvas the crops are cut from (the
        base image is always ``image_size`` square, so the canvas is what varies)."""
        width, height = header.width, header.height
        plan = self.plan(width, height)
        return mmp.ItemPlan(plan, plan.canvas)

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """transformers' three image tensors for one prompt of ``n`` images:

        ``pixel_values`` f32 ``[n, max_patches, 3, S, S]`` (each item's patches, then zero
        patches, as ``_pad_for_batching``), ``image_sizes`` i64 ``[n, 2]`` (height, width)
        and ``batch_num_images`` i64 ``[n]`` (all ones: every image took the anyres path).
        """
        size = self.spec.image_size
        most = max((it.feature.shape[0] for it in items), default=0)
        pixel_values = np.zeros((len(items), most, 3, size, size), dtype=np.float32)
        for i, it in enumerate(items):
            pixel_values[i, : it.feature.shape[0]] = it.feature.array
        sizes = [it.aux["image_sizes"].array for it in items]
        return {
            "pixel_values": pixel_values,
            "image_sizes": np.stack(sizes) if sizes else np.zeros((0, 2), dtype=np.int64),
            "batch_num_images": np.ones(len(items), dtype=np.int64),
        }

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``LlavaOnevisionImageProcessor``'s (either backend's) three outputs: the model kwargs,
        for images one per sample (``mm_framework.hf`` hands back a call nesting more, whose
        ``batch_num_images`` differ; tests/test_llava_onevision_hf_accelerate.py)."""
        return self.mm_model_kwargs(items)


def _short_norm(norm: ChannelNorm, spec: LlavaOnevisionSpec) -> ChannelNorm:
    """``norm``, or the same table as two f32 passes ``x / (std / r) - mean / std`` when
    :meth:`ChannelNorm.search` proves those give every entry (they do for the preset's
    mean = std = 0.5): one pass over the patch stack fewer than transformers' three."""
    m = np.asarray(spec.image_mean, dtype=np.float64)
    sd = np.asarray(spec.image_std, dtype=np.float64)
    short = ChannelNorm.search(norm.lut, [[(np.divide, sd / spec.rescale_factor), (np.subtract, m / sd)]])
    return short if short.steps is not None else norm


def _plan(geometry: Any) -> anyres.AnyresPlan:
    if not isinstance(geometry, anyres.AnyresPlan):
        raise mmp.InternalError(f"llava_onevision: expected an AnyresPlan geometry, got {type(geometry).__name__}")
    return geometry
