"""The ``pixtral`` family processor: one still image in, transformers 5.24's tensors out.

Per item (docs/families/pixtral.md): decode (the core decoder, which lends its Pillow
image to a Pillow resize) -> size: fit the longest edge, round each side up to a multiple
of ``patch_size * spatial_merge_size`` -> the backend's bicubic resize (``pil_bicubic``
for ``PixtralImageProcessorPil``, ``aten_u8`` for the torchvision ``PixtralImageProcessor``;
an equal size is a copy, as in both) -> rescale+normalize into CHW float32 planes through
the exact ``ChannelNorm`` table of that backend (§3 of the doc), or with ``pixels="u8"`` the
resized image's CHW uint8 planes (the processor with ``do_rescale`` and ``do_normalize`` off).

The feature is the image's own ``[3, H, W]`` (no batch padding), aux ``image_sizes``
``[H, W]``, geometry ``Grid(1, H / patch, W / patch)``, size ``(W, H)``, all planned
from the decoded size alone (``mm_plan_item``). The norm, decode options and the
token-id triple are fixed when the pipeline is built, so the per-item path allocates
only the resized image and the planes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp
from mm_framework.kernels import channel_norm_fused, channel_norm_pil, resize_rgb, resize_wants_source, rgb_planes

from .layout import expand
from .planes import normalize_planes
from .sizing import resized_size
from .spec import BACKENDS, parse_spec

_NORMS = {"pil": channel_norm_pil, "fused": channel_norm_fused}


class PixtralFamily:
    """The per-pipeline family object; immutable after construction, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self._resample, rounding = BACKENDS[self.spec.backend]
        self._norm = _NORMS[rounding](self.spec.image_mean, self.spec.image_std)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self._decode_options = mmp.DecodeOptions(
            alpha=self.spec.alpha, exif_transpose=self.spec.exif_transpose,
            keep_source=resize_wants_source(self._resample),
        )
        self._ids = (self.spec.image_token_id, self.spec.image_break_token_id, self.spec.image_end_token_id)

    # -- geometry -----------------------------------------------------------------

    def resized(self, width: int, height: int) -> tuple[int, int]:
        """``(H, W)`` a ``width`` x ``height`` image becomes; ``MediaError`` when rejected."""
        return resized_size(height, width, self.spec.longest_edge, self.spec.factor)

    def token_grid(self, geometry: Any) -> tuple[int, int]:
        """``(rows, cols)`` of ``[IMG]`` tokens for an item's patch grid."""
        if not isinstance(geometry, mmp.Grid):
            raise mmp.InternalError(f"pixtral: expected a Grid geometry, got {type(geometry).__name__}")
        m = self.spec.spatial_merge_size
        return geometry.h // m, geometry.w // m

    # -- hooks --------------------------------------------------------------------

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        # Mistral vocabularies (Tekken, SentencePiece) have int32 ids; [IMG] is
        # PixtralProcessor's image_token in both.
        return mmp.Capabilities(
            id_range=(0, 2**31 - 1), placeholders={"image": self.spec.image_token_id},
            placeholder_texts={"image": "[IMG]"},
            outputs={"image": mmp.ItemOutputs(self.spec.pixels, {"image_sizes": ("i64", (2,))})},
            # PixtralProcessor calls its image processor with patch_size = patch * merge.
            hf_config_kwargs={"patch_size"},
        )

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return self._decode_options

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        plan = self.mm_plan_item(mmp.ImageHeader(media.width, media.height))
        w, h = plan.size
        # Taken (and so released after the resize) even when the size is unchanged.
        rgb = resize_rgb(media.rgb, w, h, self._resample, source=mmp.take_source(media))
        if self.spec.pixels == "u8":
            feature = mmp.Tensor.u8(rgb_planes(rgb))
        else:
            feature = mmp.Tensor(normalize_planes(rgb, self._norm), "f32")
        return mmp.ProcessedItem(
            feature=feature,
            aux={"image_sizes": mmp.Tensor.i64([h, w])},
            geometry=plan.geometry,
            size=plan.size,
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any]) -> mmp.TokenLayout:
        return expand(input_ids, [self.token_grid(g) for g in geometries], *self._ids)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        """The patch grid of the resized image, and that image's ``(W, H)``."""
        width, height = header.width, header.height
        h, w = self.resized(width, height)
        p = self.spec.patch_size
        return mmp.ItemPlan(mmp.Grid(1, h // p, w // p), (w, h))

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``pixel_values`` f32 (u8 with ``pixels="u8"``) ``[n, 3, Hmax, Wmax]`` and ``image_sizes``
        i64 ``[n, 2]``.

        As both backends' ``_pad_for_batching``: each image zero-padded at the
        bottom and right to the largest height and width of the request. Images of one size
        need no padding: joined, so one image's read-only feature is handed over uncopied.
        """
        sizes = np.asarray([it.aux["image_sizes"].array for it in items], dtype=np.int64).reshape(-1, 2)
        hmax, wmax = (int(v) for v in sizes.max(axis=0)) if len(items) else (0, 0)
        dtype = np.uint8 if self.spec.pixels == "u8" else np.float32
        if (sizes == (hmax, wmax)).all():
            return {"pixel_values": mmp.joined([it.feature.array[None] for it in items],
                                               np.zeros((0, 3, 0, 0), dtype=dtype)), "image_sizes": sizes}
        pixel_values = np.zeros((len(items), 3, hmax, wmax), dtype=dtype)
        for k, (it, (h, w)) in enumerate(zip(items, sizes.tolist())):
            pixel_values[k, :, :h, :w] = it.feature.array
        return {"pixel_values": pixel_values, "image_sizes": sizes}

    @mmp.hookimpl
    def mm_hf_image_outputs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """``PixtralImageProcessor``'s (either backend's) ``pixel_values`` and ``image_sizes``:
        the model kwargs (tests/test_pixtral_hf_accelerate.py)."""
        return self.mm_model_kwargs(items)
