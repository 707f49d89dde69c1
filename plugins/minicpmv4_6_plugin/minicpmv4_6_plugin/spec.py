"""The ``minicpmv4_6`` spec: its fields, their validation, and the shipped presets.

Every field is read through :class:`mm_framework.plugin.SpecFields`. The image fields are
``MiniCPMV4_6ImageProcessorPil``'s options (class defaults = the preset); the token fields
are the ids of the strings ``MiniCPMV4_6Processor`` writes into the prompt (its tokenizer's
``image_token``, ``image_start_token``, ... and the digits and newline of the image id and
slice rows). Where each preset value comes from, and which could not be verified offline:
docs/families/minicpmv4_6.md §1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "minicpmv4_6"
MAX_ID = 2**31 - 1
DOWNSAMPLE_MODES = ("16x", "4x")
MAX_SLICE_NUMS = 64
MAX_SCALE_RESOLUTION = 4096
# One item's frames (the source image and its slices, each about scale_resolution ** 2
# pixels) may not exceed what the core decodes by default.
MAX_STACK_PIXELS = mmf.Limits().max_image_pixels
RESAMPLES = ("pil_bicubic", "pil_lanczos", "pil_bilinear")
# backend -> resample -> the mm_framework resizer ("pil": the *ImageProcessorPil class,
# "torchvision": tvF.resize of uint8 tensors, ATen's uint8 antialiased path).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}
TOKENS = ("image_token_id", "image_start_token_id", "image_end_token_id", "slice_start_token_id",
          "slice_end_token_id", "image_id_start_token_id", "image_id_end_token_id", "newline_token_id")
REQUIRED = (*TOKENS, "digit_token_ids")
DEFAULTS: dict[str, Any] = {
    "backend": "pil",
    "resample": "pil_bicubic",
    "slice_mode": True,
    "max_slice_nums": 9,
    "scale_resolution": 448,
    "patch_size": 14,
    "downsample_mode": "16x",
    "use_image_id": True,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    # transformers' PIL-object entry (convert_to_rgb): alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
    # MiniCPMV4_6VideoProcessor's class attributes; video_token_id None: no video.
    "video_token_id": None,
    "video_max_num_frames": 128,
    "video_stack_frames": 1,
    "video_slice_mode": True,
    "video_max_slice_nums": 9,
    "video_scale_resolution": 448,
    "video_downsample_mode": "16x",
}
# The most frames transformers' sampler keeps from a clip (1 per second up to it); far above
# the published 128, low enough that a typo cannot ask for a million frames.
MAX_VIDEO_FRAMES = 4096
# Sub-frames per second (stack_frames - 1) are pasted side by side on one canvas; past a few
# the canvas is a thin strip the resize squeezes to nothing.
MAX_STACK_FRAMES = 16


@attrs.frozen
class MiniCPMV46Spec:
    """A validated ``minicpmv4_6`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    image_start_token_id: int
    image_end_token_id: int
    slice_start_token_id: int
    slice_end_token_id: int
    image_id_start_token_id: int
    image_id_end_token_id: int
    newline_token_id: int
    # The ids of "0".."9": the image id is written in decimal, one token per digit.
    digit_token_ids: tuple[int, ...]
    backend: str = "pil"
    resample: str = "pil_bicubic"
    slice_mode: bool = True
    max_slice_nums: int = 9
    scale_resolution: int = 448
    patch_size: int = 14
    downsample_mode: str = "16x"
    use_image_id: bool = True
    do_rescale: bool = True
    rescale_factor: float = 1 / 255
    do_normalize: bool = True
    image_mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    alpha: str = "composite"
    exif_transpose: bool = False
    # Video (docs/families/minicpmv4_6.md §6): <|video_pad|>'s id and the video processor's
    # own options; the pixel statistics, patch size and resample are shared with images.
    video_token_id: int | None = None
    video_max_num_frames: int = 128
    video_stack_frames: int = 1
    video_slice_mode: bool = True
    video_max_slice_nums: int = 9
    video_scale_resolution: int = 448
    video_downsample_mode: str = "16x"

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std", "digit_token_ids"):
            d[key] = list(d[key])
        return {"family": FAMILY, **d}


def _digits(f: mmp.SpecFields, params: Mapping[str, Any]) -> tuple[int, ...]:
    value = params.get("digit_token_ids")
    if not isinstance(value, (list, tuple)) or len(value) != 10:
        raise f.error("digit_token_ids", f"must be the 10 token ids of '0'..'9', got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_ID:
            raise f.error("digit_token_ids", f"must hold token ids in 0..{MAX_ID}, got {v!r}")
    return tuple(int(v) for v in value)


def parse_spec(params: Mapping[str, Any]) -> MiniCPMV46Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`MiniCPMV46Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = MiniCPMV46Spec(
        **{name: f.integer(name, **token) for name in TOKENS},
        digit_token_ids=_digits(f, params),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        slice_mode=f.boolean("slice_mode"),
        max_slice_nums=f.integer("max_slice_nums", minimum=1, maximum=MAX_SLICE_NUMS),
        scale_resolution=f.integer("scale_resolution", minimum=1, maximum=MAX_SCALE_RESOLUTION),
        patch_size=f.integer("patch_size", minimum=1, maximum=64),
        downsample_mode=f.choice("downsample_mode", DOWNSAMPLE_MODES),
        use_image_id=f.boolean("use_image_id"),
        do_rescale=f.boolean("do_rescale"),
        rescale_factor=f.number("rescale_factor", positive=True),
        do_normalize=f.boolean("do_normalize"),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
        video_token_id=f.integer("video_token_id", **token, nullable=True),
        video_max_num_frames=f.integer("video_max_num_frames", minimum=1, maximum=MAX_VIDEO_FRAMES),
        video_stack_frames=f.integer("video_stack_frames", minimum=1, maximum=MAX_STACK_FRAMES),
        video_slice_mode=f.boolean("video_slice_mode"),
        video_max_slice_nums=f.integer("video_max_slice_nums", minimum=1, maximum=MAX_SLICE_NUMS),
        video_scale_resolution=f.integer("video_scale_resolution", minimum=1, maximum=MAX_SCALE_RESOLUTION),
        video_downsample_mode=f.choice("video_downsample_mode", DOWNSAMPLE_MODES),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: mmp.SpecFields, s: MiniCPMV46Spec) -> None:
    if not (s.do_rescale or s.do_normalize):
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    markers = [getattr(s, name) for name in TOKENS] + ([] if s.video_token_id is None else [s.video_token_id])
    if len(set(markers)) != len(markers) or set(markers) & set(s.digit_token_ids):
        raise f.error("image_token_id", f"the marker, newline and digit ids must all differ: {markers}, "
                                        f"digits {list(s.digit_token_ids)}")
    _check_stack(f, "", s.patch_size, s.downsample_mode, s.scale_resolution, s.max_slice_nums, s.slice_mode)
    _check_stack(f, "video_", s.patch_size, s.video_downsample_mode, s.video_scale_resolution,
                 s.video_max_slice_nums, s.video_slice_mode)


def _check_stack(f: mmp.SpecFields, prefix: str, patch: int, mode: str, resolution: int, slices: int,
                 slice_mode: bool) -> None:
    # A frame is about scale_resolution ** 2 pixels, rounded up by at most half a merge unit per side.
    side = resolution + patch * (2 if mode == "4x" else 4)
    frames = 1 + (slices + 1 if slice_mode else 0)
    if frames * side * side > MAX_STACK_PIXELS:
        raise f.error(f"{prefix}scale_resolution", f"={resolution} with {prefix}max_slice_nums={slices}: up to "
                                                   f"{frames} frames of about {side}x{side} pixels exceed the "
                                                   f"{MAX_STACK_PIXELS} the core decodes by default")


# openbmb/MiniCPM-V-4.6 (processor MiniCPMV4_6Processor, tokenizer Qwen3.5's with MiniCPM's added
# tokens; docs/families/minicpmv4_6.md §1 says which ids are verified: the marker ids are stand-ins
# chosen offline, to be replaced by the checkpoint's tokenizer.json ids). The image options are
# MiniCPMV4_6ImageProcessorPil's class defaults, which the published preprocessor_config.json is
# taken to equal (unverified offline).
_MINICPM_V_4_6 = MiniCPMV46Spec(
    image_token_id=248056, image_start_token_id=248070, image_end_token_id=248071,
    slice_start_token_id=248078, slice_end_token_id=248079, image_id_start_token_id=248080,
    image_id_end_token_id=248081, newline_token_id=198, digit_token_ids=tuple(range(15, 25)), video_token_id=248057,
)
PRESETS: dict[str, dict[str, Any]] = {
    "minicpm_v_4_6": _MINICPM_V_4_6.to_dict(),
    "minicpm_v_4_6_4x": attrs.evolve(_MINICPM_V_4_6, downsample_mode="4x", video_downsample_mode="4x").to_dict(),
}
