"""The ``inkling`` family: one LLM token per bf16 patch or per dMel audio frame, plain 1-D
positions.

Spec (every field optional, defaults shown; unknown fields are errors)::

    {"family": "inkling", "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048,
     "image_token_id": -101, "audio_token_id": 200053, "sampling_rate": 16000,
     "feature_size": 80, "audio_token_duration_s": 0.05, "window_size_multiplier": 2.0,
     "n_fft": null, "num_dmel_bins": 16, "dmel_min_value": -7.0, "dmel_max_value": 2.0}

Audio (:mod:`.audio`, docs/families/inkling.md): per clip, int64 dMel bins ``[frames,
feature_size]``, geometry ``Grid(1, 1, frames)``; the i-th ``audio_token_id`` becomes
``frames`` copies of itself (``InklingProcessor.replace_audio_token``); ``model_kwargs()``
adds ``audio_input_ids`` and ``audio_input_ids_mask`` as the processor returns them.

``rescale_frac`` / ``rescale_cap`` may be ``null`` (no rescale / no cap; a cap needs
``rescale_frac > 1``). ``image_token_id`` is any int64; the default ``-101`` is the Inkling
protocol's negative placeholder, which the model runner swaps for image embeddings.

Per item: decode (alpha dropped, no EXIF orientation: the core defaults, as the seed),
``scaled_dims`` + Pillow LANCZOS when the size changes, then the patchify of
:mod:`.patchify`. Outputs:

- feature: bf16 ``[n, ps, ps, 3]`` with ``n = ceil(h/ps) * (w//ps + 1)`` (h, w after the
  rescale);
- aux: ``patch_grid`` i64 ``[nph, npw]`` and ``image_size`` i64 ``[h, w]`` (post-rescale);
- geometry ``Grid(1, nph, npw)``; layout: the i-th ``image_token_id`` becomes ``n``
  copies of itself; positions: ``Rope1D`` (the default).

``model_kwargs()`` gives what the Inkling runner consumes:

- ``vision_patches``: bf16 bits ``[N, ps, ps, 3]``, every item's patches concatenated in
  item order (the runner views them as ``torch.bfloat16``, then
  ``.view(N, 1, ps, ps, 3).expand(N, 2, ps, ps, 3)`` for its ``vision_patches_bthwc``: the
  temporal copy is a zero-copy broadcast there, so it is not materialized here);
- ``num_patches``: i64 ``[items]``, each item's ``n`` (its slice of ``vision_patches``);
- ``patch_grids``: i64 ``[items, 2]`` of ``(nph, npw)``;
- ``image_sizes``: i64 ``[items, 2]`` of the post-rescale ``(h, w)``.

A rescale past the core's default pixel limit (only reachable with a
large ``rescale_frac`` and no cap) is a ``LimitExceededError``, from
``mm_plan_item`` too (token counts), so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework.plugin import (
    AudioHeader, Capabilities, DecodedAudio, DecodedImage, DecodeOptions, Grid, ImageHeader, ItemOutputs, ItemPlan,
    OutputItem, ProcessedItem, Repeat, Tensor, TokenLayout, hookimpl, layout_by_placeholder, layout_by_placeholders,
    take_source,
)
from mm_framework.kernels import resize_wants_source

from .api import rescale_patchify, rescaled_size
from .audio import INKLING_AUDIO_TOKEN
from .params import parse_spec
from .patchify import patch_grid

# The Inkling vocabulary's image placeholder: InklingProcessor's image_token and its id.
INKLING_IMAGE_TOKEN = (200054, "<|unused_200054|>")


class InklingFamily:
    """Family processor for one validated spec; immutable and shared across threads."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.patch_size, self.rescale_frac, self.rescale_cap, self.image_token_id, self.audio = parse_spec(params)

    def __repr__(self) -> str:
        return (
            f"InklingFamily(patch_size={self.patch_size}, rescale_frac={self.rescale_frac}, "
            f"rescale_cap={self.rescale_cap}, image_token_id={self.image_token_id}, audio={self.audio!r})"
        )

    @hookimpl
    def mm_capabilities(self) -> Capabilities:
        # Any int64 prompt id: the placeholder is a negative protocol id, which SGLang's
        # Inkling tokenizer inserts itself (no text maps to it). With the vocabulary's own
        # image token (transformers' InklingConfig.image_token_id) the template's text is known.
        texts = {"image": INKLING_IMAGE_TOKEN[1]} if self.image_token_id == INKLING_IMAGE_TOKEN[0] else {}
        if self.audio.token_id == INKLING_AUDIO_TOKEN[0]:
            texts["audio"] = INKLING_AUDIO_TOKEN[1]
        outputs = {"image": ItemOutputs("bf16", {"patch_grid": ("i64", (2,)), "image_size": ("i64", (2,))}),
                   "audio": ItemOutputs("i64")}
        return Capabilities(
            modalities=("image", "audio"), placeholders={"image": self.image_token_id, "audio": self.audio.token_id},
            placeholder_texts=texts, outputs=outputs,
        )

    @hookimpl
    def mm_resolved_spec(self) -> dict[str, Any]:
        return {"family": "inkling", "patch_size": self.patch_size, "rescale_frac": self.rescale_frac,
                "rescale_cap": self.rescale_cap, "image_token_id": self.image_token_id, **self.audio.fields()}

    @hookimpl
    def mm_decode_options(self) -> DecodeOptions:
        # The decoder lends its Pillow image when the LANCZOS resize runs through Pillow.
        return DecodeOptions(alpha="drop", exif_transpose=False, keep_source=resize_wants_source("pil_lanczos"))

    @hookimpl
    def mm_process_item(self, media: DecodedImage | DecodedAudio) -> ProcessedItem:
        if isinstance(media, DecodedAudio):
            return self.audio.process(media)
        # Taken (and so released after the resize) even when no resize needs it.
        source = take_source(media)
        h, w, bits = rescale_patchify(media.rgb, self.patch_size, self.rescale_frac, self.rescale_cap, source)
        nph, npw = patch_grid(h, w, self.patch_size)
        return ProcessedItem(
            feature=Tensor.bf16(bits),
            aux={"patch_grid": Tensor.i64([nph, npw]), "image_size": Tensor.i64([h, w])},
            geometry=Grid(1, nph, npw),
            size=(w, h),
        )

    @hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Grid], modalities: Sequence[str]) -> TokenLayout:
        counts = [g.t * g.h * g.w for g in geometries]
        ids = np.asarray(input_ids, dtype=np.int64)
        # An audio placeholder without audio is refused, as the processor refuses it.
        if "audio" not in modalities and not (ids == self.audio.token_id).any():
            return layout_by_placeholder(ids, self.image_token_id, counts)
        placeholders = {"image": self.image_token_id, "audio": self.audio.token_id}
        return layout_by_placeholders(ids, placeholders, modalities,
                                      lambda item: Repeat(placeholders[modalities[item]], counts[item]))

    @hookimpl
    def mm_plan_item(self, header: ImageHeader | AudioHeader) -> ItemPlan:
        if isinstance(header, AudioHeader):
            return ItemPlan(Grid(1, 1, self.audio.num_tokens(header.frames, header.sample_rate)), None)
        width, height = header.width, header.height
        w, h = rescaled_size(width, height, self.rescale_frac, self.rescale_cap)
        nph, npw = patch_grid(h, w, self.patch_size)
        return ItemPlan(Grid(1, nph, npw), (w, h))

    @hookimpl
    def mm_model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        audios = [it for it in items if it.modality == "audio"]
        images = [it for it in items if it.modality == "image"]
        out = self.audio.model_kwargs(audios) if audios else {}
        return {**self._image_kwargs(images), **out}

    def _image_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        if not items:
            return {}
        return {
            # One item hands over its own (read-only) patches: no copy.
            "vision_patches": items[0].feature.array if len(items) == 1 else np.concatenate(
                [it.feature.array for it in items], axis=0
            ),
            "num_patches": np.array([it.feature.shape[0] for it in items], dtype=np.int64),
            "patch_grids": np.stack([it.aux["patch_grid"].array for it in items]),
            "image_sizes": np.stack([it.aux["image_size"].array for it in items]),
        }
