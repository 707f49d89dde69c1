"""The ``kimi_k25`` spec: its fields, their validation, and the shipped preset.

One family, transformers 5.24's ``Kimi_K25Processor`` over ``Kimi_K25ImageProcessor`` (a
torchvision-only processor). Every field is read through :class:`mm_framework.plugin.SpecFields`;
where the preset values come from: docs/families/kimi_k25.md §1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

from .video_spec import VIDEO_FIELDS, KimiVideoSpec, read_video

FAMILY = "kimi_k25"
# The Kimi K2 vocabulary's ids (163840 entries) fit int32.
MAX_ID = 2**31 - 1
# The resampler names of transformers' ``resample`` 1, 2, 3; the processor runs each as
# tvF.resize of a uint8 tensor with antialias (ATen's uint8 kernels). NEAREST is not cloned.
RESAMPLES = tuple(kernels.TORCHVISION_RESAMPLERS)
# The largest padded canvas (each side capped at max_size_per_side * patch_size, rounded up to
# the merge kernel) may not hold more pixels than the core decodes by default, or a typo
# allocates gigabytes per image.
MAX_CANVAS_PIXELS = mmf.Limits().max_image_pixels
IMAGENET_STANDARD = (0.5, 0.5, 0.5)

REQUIRED = ("image_token_id", "patch_size", "merge_size", "max_patches", "max_size_per_side", "image_mean",
            "image_std")
DEFAULTS: dict[str, Any] = {
    "resample": "pil_bicubic",
    "rescale_factor": 1 / 255,
    "do_rescale": True,
    "do_normalize": True,
    # transformers' PIL-object entry (convert_to_rgb): alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
    **VIDEO_FIELDS,
}


@attrs.frozen
class KimiK25Spec:
    """A validated ``kimi_k25`` spec. Build it with :func:`parse_spec`."""

    # <|media_pad|>: the prompt's placeholder, repeated once per merged patch.
    image_token_id: int
    patch_size: int
    merge_size: int
    # The patch budget (before padding) and the per-side cap in patches (size["max_height"]).
    max_patches: int
    max_size_per_side: int
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    resample: str = "pil_bicubic"
    rescale_factor: float = 1 / 255
    do_rescale: bool = True
    do_normalize: bool = True
    alpha: str = "composite"
    exif_transpose: bool = False
    # Kimi_K25VideoProcessor's fields; None: the spec takes no video.
    video: KimiVideoSpec | None = None

    @property
    def factor(self) -> int:
        """Side multiple of the padded canvas: one merge kernel of patches."""
        return self.patch_size * self.merge_size

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` (torchvision's)."""
        return kernels.TORCHVISION_RESAMPLERS[self.resample]

    def channel_norm(self) -> kernels.ChannelNorm:
        """The rescale + normalize table of the torchvision backend's fused arithmetic."""
        with np.errstate(all="ignore"):  # parse_spec refuses a table with non-finite entries
            return kernels.channel_norm_steps("fused", self.image_mean, self.image_std, self.rescale_factor,
                                              do_rescale=self.do_rescale, do_normalize=self.do_normalize)

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self, recurse=False)
        for key in ("image_mean", "image_std"):
            d[key] = list(d[key])
        video = d.pop("video")
        return {"family": FAMILY, **d, **({} if video is None else video.to_dict())}


def parse_spec(params: Mapping[str, Any]) -> KimiK25Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`KimiK25Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    spec = KimiK25Spec(
        image_token_id=f.integer("image_token_id", minimum=0, maximum=MAX_ID),
        patch_size=f.integer("patch_size", minimum=1),
        merge_size=f.integer("merge_size", minimum=1),
        max_patches=f.integer("max_patches", minimum=1),
        max_size_per_side=f.integer("max_size_per_side", minimum=1),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        resample=f.choice("resample", RESAMPLES),
        rescale_factor=f.number("rescale_factor", positive=True),
        do_rescale=f.boolean("do_rescale"),
        do_normalize=f.boolean("do_normalize"),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
    )
    spec = attrs.evolve(spec, video=read_video(f, params, spec.image_token_id, MAX_CANVAS_PIXELS, spec.patch_size,
                                               spec.factor))
    if not (spec.do_rescale or spec.do_normalize):
        # The reference then returns the uint8 pixels themselves: not a feature.
        raise f.error("do_normalize", "and do_rescale cannot both be false (the reference returns uint8 pixels)")
    side = -(-spec.max_size_per_side * spec.patch_size // spec.factor) * spec.factor
    if side * side > MAX_CANVAS_PIXELS:
        raise f.error("max_size_per_side", f"={spec.max_size_per_side}: a {side}x{side} canvas of patch_size "
                                           f"{spec.patch_size} is above the {MAX_CANVAS_PIXELS} pixels the core "
                                           "decodes by default")
    if not np.isfinite(spec.channel_norm().lut).all():
        # The reference would emit inf/nan features.
        raise f.error(["image_mean", "image_std", "rescale_factor"], "give non-finite features in float32")
    return spec


# moonshotai/Kimi-K2.5 (docs/families/kimi_k25.md §1): Kimi_K25ImageProcessor's class defaults
# (BICUBIC, size max 512 patches per side, max_patches 16384, 14-pixel patches merged 2x2,
# IMAGENET_STANDARD mean = std = 0.5, rescale 1/255) and Kimi_K25Config's image_token_id
# (<|media_pad|> 163605 in the Kimi K2 vocabulary); Kimi_K25VideoProcessor's class defaults (2 fps,
# max_patches 4096, 512 per side, chunks of 4 frames) and Kimi_K25Config's video_token_id 163840,
# vision_start/end_token_id 163602/163604; <|media_content|> 163603 (§5: not verified).
PRESETS: dict[str, dict[str, Any]] = {
    "kimi_k2_5": KimiK25Spec(
        image_token_id=163605, patch_size=14, merge_size=2, max_patches=16384, max_size_per_side=512,
        image_mean=IMAGENET_STANDARD, image_std=IMAGENET_STANDARD,
        video=KimiVideoSpec(video_token_id=163840, media_begin_token_id=163602, media_content_token_id=163603,
                            media_end_token_id=163604, sample_frames=True, fps=2.0, max_patches=4096,
                            max_size_per_side=512, temporal_patch_size=4, resample="pil_bicubic", text_ids=None),
    ).to_dict(),
}
