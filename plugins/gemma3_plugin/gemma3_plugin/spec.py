"""The ``gemma3`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "gemma3", **fields}``; the factory receives the fields without
``"family"``. Every field is read through :class:`mm_framework.plugin.SpecFields` (unknown and
missing fields, types and ranges, each error naming the field) and then checked against
the others. Facts behind the fields and defaults: docs/families/gemma3.md.

The tokenizer-only fields (newline tokens, pan-and-scan's prose) default to the Gemma 3
tokenizer, which every Gemma 3 size shares; a model with another tokenizer states them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "gemma3"
# Ids are int32 in the Gemma vocabulary (262,144 entries plus the soft token).
MAX_ID = 2**31 - 1
# Each image's feature is 3 * height * width float32 per crop: 4096 a side is 192 MiB per
# image already, far beyond any released checkpoint (896), and a typo must not allocate more.
MAX_SIDE = 4096
# Released configs use 4 crops; the bound keeps a typo from multiplying every feature.
MAX_CROPS = 64
MAX_SEQ_LENGTH = 1 << 16
# The largest image the core decodes by default (Pillow's decompression-bomb bound): the
# pan-and-scan stack of one item (the image and its crops, each height x width) may not
# hold more pixels than that, or a typo allocates gigabytes per image.
MAX_STACK_PIXELS = mmf.Limits().max_image_pixels
# The Pillow filters transformers' ``resample`` 1, 2 and 3 name (LANCZOS, BILINEAR, BICUBIC).
RESAMPLES = ("pil_bilinear", "pil_bicubic", "pil_lanczos")
# backend -> resample -> the mm_framework resizer of that filter. "pil" clones
# Gemma3ImageProcessorPil, "torchvision" Gemma3ImageProcessor (tvF.resize of uint8 tensors,
# ATen's uint8 antialiased path).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}

REQUIRED = (
    "image_token_id",
    "boi_token_id",
    "eoi_token_id",
    "image_seq_length",
    "height",
    "width",
    "rescale_factor",
    "image_mean",
    "image_std",
)
DEFAULTS: dict[str, Any] = {
    "backend": "pil",
    "resample": "pil_bilinear",
    "do_rescale": True,
    "do_normalize": True,
    # Gemma3Processor's own images defaults, which override preprocessor_config.json.
    "do_pan_and_scan": False,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
    # The Gemma 3 tokenizer: "\n" * k is newline_token_id + k - 1 for k <= 31, and the
    # pan-and-scan prose "Here is the original image ", " and here are some crops to help
    # you see better " and " ".
    "newline_token_id": 107,
    "newline_run_max": 31,
    "pan_and_scan_intro_ids": [8291, 563, 506, 3303, 2471, 236743],
    "pan_and_scan_crops_ids": [532, 1590, 659, 1070, 20859, 531, 1601, 611, 1460, 2480, 236743],
    "pan_and_scan_separator_ids": [236743],
    # transformers' PIL-object entry: alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
    # pixel_values float32, or their bfloat16 rounding (what a bfloat16 model is given).
    "pixels": "f32",
}
PIXELS = ("f32", "bf16")
ID_LISTS = ("pan_and_scan_intro_ids", "pan_and_scan_crops_ids", "pan_and_scan_separator_ids")


@attrs.frozen
class Gemma3Spec:
    """A validated ``gemma3`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    boi_token_id: int
    eoi_token_id: int
    image_seq_length: int
    height: int
    width: int
    rescale_factor: float
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    backend: str = "pil"
    resample: str = "pil_bilinear"
    do_rescale: bool = True
    do_normalize: bool = True
    do_pan_and_scan: bool = False
    pan_and_scan_min_crop_size: int = 256
    pan_and_scan_max_num_crops: int = 4
    pan_and_scan_min_ratio_to_activate: float = 1.2
    newline_token_id: int = 107
    newline_run_max: int = 31
    pan_and_scan_intro_ids: tuple[int, ...] = tuple(DEFAULTS["pan_and_scan_intro_ids"])
    pan_and_scan_crops_ids: tuple[int, ...] = tuple(DEFAULTS["pan_and_scan_crops_ids"])
    pan_and_scan_separator_ids: tuple[int, ...] = tuple(DEFAULTS["pan_and_scan_separator_ids"])
    alpha: str = "composite"
    exif_transpose: bool = False
    pixels: str = "f32"

    @property
    def newline_ids(self) -> range:
        """The ids of the newline runs ``"\\n" * 1`` .. ``"\\n" * newline_run_max``."""
        return range(self.newline_token_id, self.newline_token_id + self.newline_run_max)

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std", *ID_LISTS):
            d[key] = list(d[key])
        return {"family": FAMILY, **d}


def _ids(f: mmp.SpecFields, params: Mapping[str, Any], name: str) -> tuple[int, ...]:
    """A non-empty list of int32 token ids (SpecFields reads scalars; each entry is checked here)."""
    value = params.get(name, DEFAULTS[name])
    if not isinstance(value, (list, tuple)) or not value:
        raise f.error(name, f"must be a non-empty list of token ids, got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_ID:
            raise f.error(name, f"must hold token ids in 0..{MAX_ID}, got {v!r}")
    return tuple(int(v) for v in value)


def parse_spec(params: Mapping[str, Any]) -> Gemma3Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`Gemma3Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = Gemma3Spec(
        image_token_id=f.integer("image_token_id", **token),
        boi_token_id=f.integer("boi_token_id", **token),
        eoi_token_id=f.integer("eoi_token_id", **token),
        image_seq_length=f.integer("image_seq_length", minimum=1, maximum=MAX_SEQ_LENGTH),
        height=f.integer("height", minimum=1, maximum=MAX_SIDE),
        width=f.integer("width", minimum=1, maximum=MAX_SIDE),
        rescale_factor=f.number("rescale_factor", positive=True),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        do_rescale=f.boolean("do_rescale"),
        do_normalize=f.boolean("do_normalize"),
        do_pan_and_scan=f.boolean("do_pan_and_scan"),
        pan_and_scan_min_crop_size=f.integer("pan_and_scan_min_crop_size", minimum=1, maximum=MAX_ID),
        pan_and_scan_max_num_crops=f.integer("pan_and_scan_max_num_crops", minimum=1, maximum=MAX_CROPS),
        pan_and_scan_min_ratio_to_activate=f.number("pan_and_scan_min_ratio_to_activate", positive=True),
        newline_token_id=f.integer("newline_token_id", **token),
        # The "\n\n" wrapper is itself a newline run, so runs of 2 must exist.
        newline_run_max=f.integer("newline_run_max", minimum=2, maximum=1024),
        pan_and_scan_intro_ids=_ids(f, params, "pan_and_scan_intro_ids"),
        pan_and_scan_crops_ids=_ids(f, params, "pan_and_scan_crops_ids"),
        pan_and_scan_separator_ids=_ids(f, params, "pan_and_scan_separator_ids"),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
        pixels=f.choice("pixels", PIXELS),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: mmp.SpecFields, s: Gemma3Spec) -> None:
    if s.image_seq_length > s.height * s.width:
        # The soft tokens pool the vision tower's patches of the height x width image.
        raise f.error(
            "image_seq_length",
            f"must not exceed height * width = {s.height * s.width} (a soft token pools at least one pixel), "
            f"got {s.image_seq_length}",
        )
    stack = (1 + s.pan_and_scan_max_num_crops) * s.height * s.width
    if s.do_pan_and_scan and stack > MAX_STACK_PIXELS:
        raise f.error(
            "pan_and_scan_max_num_crops",
            f"={s.pan_and_scan_max_num_crops}: the image and its crops at height x width {s.height}x{s.width} "
            f"make {stack} pixels per item, above the {MAX_STACK_PIXELS} the core decodes by default",
        )
    if not (s.do_rescale or s.do_normalize):
        # transformers then returns the uint8 pixels themselves; no float feature to match.
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    ids = s.newline_ids
    newlines = f"the newline ids {ids.start}..{ids.stop - 1} (from newline_token_id and newline_run_max)"
    if ids.stop - 1 > MAX_ID:
        raise f.error("newline_run_max", f"puts {newlines} past {MAX_ID}")
    markers = {"image_token_id": s.image_token_id, "boi_token_id": s.boi_token_id, "eoi_token_id": s.eoi_token_id}
    if len(set(markers.values())) != 3:
        raise f.error("eoi_token_id", f"image_token_id, boi_token_id and eoi_token_id must differ, got {markers}")
    for name, value in markers.items():
        if value in ids:
            raise f.error(name, f"={value} lies among {newlines}")
    for name in ID_LISTS:
        clash = [i for i in getattr(s, name) if i in markers.values() or i in ids]
        if clash:
            raise f.error(name, f"must not contain {', '.join(markers)} or {newlines}, got {clash}")


# google/gemma-3-4b-it (the 12b and 27b checkpoints carry the same values): its
# preprocessor_config.json and processor_config.json (896x896 bilinear, rescale 1/255,
# mean = std = 0.5, 256 soft tokens) and config.json's token ids (docs/families/gemma3.md).
# The pan-and-scan preset is the same checkpoint with the processor's documented call
# option do_pan_and_scan=True and its default crop parameters.
_GEMMA3_4B_IT = Gemma3Spec(
    image_token_id=262144,
    boi_token_id=255999,
    eoi_token_id=256000,
    image_seq_length=256,
    height=896,
    width=896,
    rescale_factor=0.00392156862745098,
    image_mean=(0.5, 0.5, 0.5),
    image_std=(0.5, 0.5, 0.5),
)
PRESETS: dict[str, dict[str, Any]] = {
    "gemma3_4b_it": _GEMMA3_4B_IT.to_dict(),
    "gemma3_4b_it_pan_and_scan": attrs.evolve(_GEMMA3_4B_IT, do_pan_and_scan=True).to_dict(),
}
