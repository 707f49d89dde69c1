"""The ``gemma4`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "gemma4", **fields}``; the factory receives the fields without
``"family"``. Every field is read through :class:`mm_framework.plugin.SpecFields` and then
checked against the others. Facts behind the fields and defaults: docs/families/gemma4.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework import kernels
from mm_framework import plugin as mmp

from .video_prompt import TIMESTAMP_PIECES

FAMILY = "gemma4"
# Ids are int32 in the Gemma vocabulary.
MAX_ID = 2**31 - 1
# The soft-token budgets Gemma4ImageProcessor accepts (it raises on any other).
SOFT_TOKEN_BUDGETS = (70, 140, 280, 560, 1120)
# Released checkpoints use 16-pixel patches pooled 3x3; the bounds keep a typo from making
# a feature of gigabytes (1120 * 8**2 patches of 64x64x3 float32 is already 3.5 GiB).
MAX_PATCH_SIZE = 64
MAX_POOLING = 4
# The Pillow filters transformers' ``resample`` 1, 2 and 3 name (LANCZOS, BILINEAR, BICUBIC).
RESAMPLES = ("pil_bilinear", "pil_bicubic", "pil_lanczos")
# backend -> resample -> the mm_framework resizer of that filter. "pil" clones
# Gemma4ImageProcessorPil, "torchvision" Gemma4ImageProcessor (tvF.resize of uint8 tensors
# with antialias, ATen's uint8 path).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}

REQUIRED = ("image_token_id", "boi_token_id", "eoi_token_id")
# Gemma4ImageProcessorPil's (and Gemma4ImageProcessor's) class attributes: pixels in [0, 1],
# the identity normalization switched off.
DEFAULTS: dict[str, Any] = {
    "patch_size": 16,
    "max_soft_tokens": 280,
    "pooling_kernel_size": 3,
    "backend": "pil",
    "resample": "pil_bicubic",
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": False,
    "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0],
    # transformers' PIL-object entry: alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
    # Gemma4Config's video_token_id and Gemma4VideoProcessor's class attributes (torchvision
    # only): 32 frames, 70 soft tokens a frame, bicubic, and a normalization that is the
    # identity but switched on (so the fused arithmetic applies).
    "video_token_id": 258884,
    "video_max_soft_tokens": 70,
    "video_do_sample_frames": True,
    "video_num_frames": 32,
    "video_fps": None,
    "video_resample": "pil_bicubic",
    "video_do_rescale": True,
    "video_rescale_factor": 1 / 255,
    "video_do_normalize": True,
    "video_image_mean": [0.0, 0.0, 0.0],
    "video_image_std": [1.0, 1.0, 1.0],
}
# The ids of the timestamp text's pieces (digits, ":", " " as "▁") in the Gemma vocabulary, recalled
# from Gemma 3's tokenizer (which Gemma 4's is taken to extend); unverified offline
# (docs/families/gemma4.md §6). The chat front door writes the processor's text instead.
GEMMA_TIMESTAMP_IDS = dict(zip(TIMESTAMP_PIECES, (236771, 236770, 236778, 236800, 236812, 236810, 236825, 236832,
                                                  236828, 236819, 236787, 236743)))
DEFAULTS["timestamp_token_ids"] = GEMMA_TIMESTAMP_IDS


@attrs.frozen
class Gemma4Spec:
    """A validated ``gemma4`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    boi_token_id: int
    eoi_token_id: int
    patch_size: int = 16
    max_soft_tokens: int = 280
    pooling_kernel_size: int = 3
    backend: str = "pil"
    resample: str = "pil_bicubic"
    do_rescale: bool = True
    rescale_factor: float = 1 / 255
    do_normalize: bool = False
    image_mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    image_std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    alpha: str = "composite"
    exif_transpose: bool = False
    video_token_id: int = 258884
    video_max_soft_tokens: int = 70
    video_do_sample_frames: bool = True
    video_num_frames: int | None = 32
    video_fps: float | None = None
    video_resample: str = "pil_bicubic"
    video_do_rescale: bool = True
    video_rescale_factor: float = 1 / 255
    video_do_normalize: bool = True
    video_image_mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    video_image_std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    timestamp_token_ids: tuple[tuple[str, int], ...] = tuple(GEMMA_TIMESTAMP_IDS.items())

    @property
    def max_patches(self) -> int:
        """The patch rows of every image's feature (the processor pads to it)."""
        return self.max_soft_tokens * self.pooling_kernel_size**2

    @property
    def patch_dim(self) -> int:
        """Values per patch row: ``patch_size**2 * 3``, pixel-major, channel-minor."""
        return self.patch_size**2 * 3

    @property
    def video_max_patches(self) -> int:
        """The patch rows of every video frame's feature."""
        return self.video_max_soft_tokens * self.pooling_kernel_size**2

    @property
    def video_resizer(self) -> str:
        """Gemma4VideoProcessor is torchvision only: its filter on the torchvision backend."""
        return kernels.TORCHVISION_RESAMPLERS[self.video_resample]

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std", "video_image_mean", "video_image_std"):
            d[key] = list(d[key])
        d["timestamp_token_ids"] = dict(self.timestamp_token_ids)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> Gemma4Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`Gemma4Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = Gemma4Spec(
        image_token_id=f.integer("image_token_id", **token),
        boi_token_id=f.integer("boi_token_id", **token),
        eoi_token_id=f.integer("eoi_token_id", **token),
        patch_size=f.integer("patch_size", minimum=1, maximum=MAX_PATCH_SIZE),
        max_soft_tokens=f.integer("max_soft_tokens", minimum=1),
        pooling_kernel_size=f.integer("pooling_kernel_size", minimum=1, maximum=MAX_POOLING),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        do_rescale=f.boolean("do_rescale"),
        rescale_factor=f.number("rescale_factor", positive=True),
        do_normalize=f.boolean("do_normalize"),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
        video_token_id=f.integer("video_token_id", **token),
        video_max_soft_tokens=f.integer("video_max_soft_tokens", minimum=1),
        video_do_sample_frames=f.boolean("video_do_sample_frames"),
        video_num_frames=f.integer("video_num_frames", minimum=1, nullable=True),
        video_fps=f.number("video_fps", positive=True, nullable=True),
        video_resample=f.choice("video_resample", RESAMPLES),
        video_do_rescale=f.boolean("video_do_rescale"),
        video_rescale_factor=f.number("video_rescale_factor", positive=True),
        video_do_normalize=f.boolean("video_do_normalize"),
        video_image_mean=f.floats("video_image_mean"),
        video_image_std=f.floats("video_image_std", nonzero=True),
        timestamp_token_ids=_timestamp_ids(f, params.get("timestamp_token_ids", GEMMA_TIMESTAMP_IDS)),
    )
    if spec.max_soft_tokens not in SOFT_TOKEN_BUDGETS:
        raise f.error("max_soft_tokens", f"must be one of {list(SOFT_TOKEN_BUDGETS)} (the budgets "
                                         f"Gemma4ImageProcessor accepts), got {spec.max_soft_tokens}")
    if spec.video_max_soft_tokens not in SOFT_TOKEN_BUDGETS:
        raise f.error("video_max_soft_tokens", f"must be one of {list(SOFT_TOKEN_BUDGETS)} (the budgets "
                                               f"Gemma4VideoProcessor accepts), got {spec.video_max_soft_tokens}")
    if spec.video_num_frames is not None and spec.video_fps is not None:
        raise f.error("video_fps", "and video_num_frames are mutually exclusive (transformers refuses both); "
                                   "set video_num_frames to null to sample by fps")
    if not (spec.video_do_rescale or spec.video_do_normalize):
        raise f.error("video_do_normalize", "and video_do_rescale cannot both be false (the output would be uint8)")
    if not (spec.do_rescale or spec.do_normalize):
        # transformers then returns the uint8 pixels themselves; no float feature to match.
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    markers = {"image_token_id": spec.image_token_id, "boi_token_id": spec.boi_token_id,
               "eoi_token_id": spec.eoi_token_id}
    if len(set(markers.values())) != 3:
        raise f.error("eoi_token_id", f"image_token_id, boi_token_id and eoi_token_id must differ, got {markers}")
    if spec.video_token_id in markers.values():
        raise f.error("video_token_id", f"must differ from the image markers {markers}, got {spec.video_token_id}")
    clash = set(dict(spec.timestamp_token_ids).values()) & {spec.video_token_id, *markers.values()}
    if clash:
        raise f.error("timestamp_token_ids", f"must not hold the image or video marker ids, got {sorted(clash)}")
    return spec


def _timestamp_ids(f: mmp.SpecFields, value: Any) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, Mapping) or set(value) != set(TIMESTAMP_PIECES):
        raise f.error("timestamp_token_ids", f"must map exactly the pieces {list(TIMESTAMP_PIECES)} to token ids, "
                                             f"got {value!r}")
    ids = [value[k] for k in TIMESTAMP_PIECES]
    if not all(type(i) is int and 0 <= i <= MAX_ID for i in ids):
        raise f.error("timestamp_token_ids", f"must hold token ids in [0, {MAX_ID}], got {value!r}")
    return tuple(zip(TIMESTAMP_PIECES, ids))


# google/gemma-4 image-text checkpoints: Gemma4Config's token ids (image 258880, boi 255999,
# eoi 258882; the model card's checkpoint google/gemma-4-e2b-it) and the image processor's
# class defaults (16-pixel patches, 280 soft tokens pooled 3x3, bicubic, rescale 1/255, no
# normalization), which the published preprocessor_config.json is taken to repeat: the hub is
# unreachable here, so those values are unverified (docs/families/gemma4.md).
_GEMMA4 = Gemma4Spec(image_token_id=258880, boi_token_id=255999, eoi_token_id=258882)
PRESETS: dict[str, dict[str, Any]] = {
    "gemma4": _GEMMA4.to_dict(),
    "gemma4_torchvision": attrs.evolve(_GEMMA4, backend="torchvision").to_dict(),
}
