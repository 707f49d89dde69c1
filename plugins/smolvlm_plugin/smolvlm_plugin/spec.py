"""The ``smolvlm`` spec: its fields, their validation, and the shipped presets.

One family serves both processors transformers 5.24 ships for this architecture:
``variant`` ``"smolvlm"`` (``SmolVLMProcessor``) and ``"idefics3"`` (``Idefics3Processor``).
Their image processors are the same code (``SmolVLMImageProcessor*`` is generated from
``Idefics3ImageProcessor*``) and so are their image prompt strings; the variant names the
reference class and what the processor reads from its tokenizer. Every field is read through
:class:`mm_framework.plugin.SpecFields`; where the preset values come from:
docs/families/smolvlm.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "smolvlm"
VARIANTS = ("smolvlm", "idefics3")
MAX_ID = 2**31 - 1
# transformers' MAX_IMAGE_SIZE: the resize caps the longest edge at 4096 (4k).
MAX_IMAGE_SIZE = 4096
MAX_SEQ_LEN = 1 << 16
# The largest image the core decodes by default: one item's frames (its tiles and the global
# image) may not hold more pixels than that, or a typo allocates gigabytes per image.
MAX_STACK_PIXELS = mmf.Limits().max_image_pixels
# The Pillow filters transformers' ``resample`` 1, 2 and 3 name (LANCZOS, BILINEAR, BICUBIC).
RESAMPLES = ("pil_lanczos", "pil_bilinear", "pil_bicubic")
# backend -> resample -> the mm_framework resizer. "pil" clones the *ImageProcessorPil
# classes; "torchvision" the torchvision ones (tvF.resize of uint8 tensors, ATen's uint8
# antialiased path; LANCZOS there is torchvision >= 0.27's on CPU, docs/families/smolvlm.md §2).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}

REQUIRED = (
    "variant",
    "image_token_id",
    "fake_image_token_id",
    "global_image_token_id",
    "row_col_token_ids",
    "newline_token_id",
    "double_newline_ids",
    "image_seq_len",
    "size_longest_edge",
    "max_image_size",
    "rescale_factor",
    "image_mean",
    "image_std",
)
DEFAULTS: dict[str, Any] = {
    "backend": "pil",
    "resample": "pil_lanczos",
    "do_resize": True,
    "do_image_splitting": True,
    "do_rescale": True,
    "do_normalize": True,
    # transformers' PIL-object entry (convert_to_rgb): alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
    # Video (SmolVLMVideoProcessor, variant "smolvlm" only; docs/families/smolvlm.md §7): off
    # without video_token_id (the others are then inert: the HF-config resolver records a
    # checkpoint's sampling settings, and a deployment adds the <video> id). They default to
    # SmolVLM2's published video_sampling (fps 1, max_frames 64) and the processor's
    # do_sample_frames (False); the frames' longest edge defaults to size_longest_edge (the
    # processor lets `size` override video_size).
    "video_token_id": None,
    "video_do_sample_frames": False,
    "video_num_frames": 64,
    "video_fps": 1.0,
    "video_size_longest_edge": None,
}
# The most frames a video item may sample (video_num_frames).
MAX_VIDEO_FRAMES = 1 << 16


@attrs.frozen
class SmolVLMSpec:
    """A validated ``smolvlm`` spec. Build it with :func:`parse_spec`."""

    variant: str
    image_token_id: int
    fake_image_token_id: int
    global_image_token_id: int
    # row_col_token_ids[r][c] is <row_{r+1}_col_{c+1}>; the grid of a split image may not exceed it.
    row_col_token_ids: tuple[tuple[int, ...], ...]
    newline_token_id: int
    # "\n\n" (a grid's last row end and the global image's lead) as the tokenizer encodes it.
    double_newline_ids: tuple[int, ...]
    image_seq_len: int
    size_longest_edge: int
    max_image_size: int
    rescale_factor: float
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    backend: str = "pil"
    resample: str = "pil_lanczos"
    do_resize: bool = True
    do_image_splitting: bool = True
    do_rescale: bool = True
    do_normalize: bool = True
    alpha: str = "composite"
    exif_transpose: bool = False
    video_token_id: int | None = None
    video_do_sample_frames: bool = False
    video_num_frames: int = 64
    video_fps: float = 1.0
    video_size_longest_edge: int | None = None

    @property
    def video(self) -> bool:
        """Whether the spec takes video items."""
        return self.video_token_id is not None

    @property
    def video_longest_edge(self) -> int:
        """The longest edge frames are first resized to (then to the tile square)."""
        return self.size_longest_edge if self.video_size_longest_edge is None else self.video_size_longest_edge

    @property
    def video_resizer(self) -> str:
        """Frames resize on torchvision whatever ``backend``: transformers has no PIL video path."""
        return BACKENDS["torchvision"][self.resample]

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    @property
    def grid_max(self) -> tuple[int, int]:
        """The most rows and columns the row/column marker table holds."""
        return len(self.row_col_token_ids), len(self.row_col_token_ids[0])

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std", "double_newline_ids"):
            d[key] = list(d[key])
        d["row_col_token_ids"] = [list(r) for r in self.row_col_token_ids]
        return {"family": FAMILY, **d}


def _id(f: mmp.SpecFields, name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_ID:
        raise f.error(name, f"must hold token ids in 0..{MAX_ID}, got {v!r}")
    return int(v)


def _ids(f: mmp.SpecFields, params: Mapping[str, Any], name: str) -> tuple[int, ...]:
    value = params.get(name)
    if not isinstance(value, (list, tuple)) or not value:
        raise f.error(name, f"must be a non-empty list of token ids, got {value!r}")
    return tuple(_id(f, name, v) for v in value)


def _table(f: mmp.SpecFields, params: Mapping[str, Any], name: str) -> tuple[tuple[int, ...], ...]:
    value = params.get(name)
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(r, (list, tuple)) for r in value):
        raise f.error(name, f"must be a non-empty list of rows of token ids, got {value!r}")
    widths = {len(r) for r in value}
    if len(widths) != 1 or 0 in widths:
        raise f.error(name, f"rows must be non-empty and of one length, got lengths {sorted(widths)}")
    return tuple(tuple(_id(f, name, v) for v in r) for r in value)


def parse_spec(params: Mapping[str, Any]) -> SmolVLMSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`SmolVLMSpec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = SmolVLMSpec(
        variant=f.choice("variant", VARIANTS),
        image_token_id=f.integer("image_token_id", **token),
        fake_image_token_id=f.integer("fake_image_token_id", **token),
        global_image_token_id=f.integer("global_image_token_id", **token),
        row_col_token_ids=_table(f, params, "row_col_token_ids"),
        newline_token_id=f.integer("newline_token_id", **token),
        double_newline_ids=_ids(f, params, "double_newline_ids"),
        image_seq_len=f.integer("image_seq_len", minimum=1, maximum=MAX_SEQ_LEN),
        size_longest_edge=f.integer("size_longest_edge", minimum=1, maximum=MAX_IMAGE_SIZE),
        max_image_size=f.integer("max_image_size", minimum=1, maximum=MAX_IMAGE_SIZE),
        rescale_factor=f.number("rescale_factor", positive=True),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        do_resize=f.boolean("do_resize"),
        do_image_splitting=f.boolean("do_image_splitting"),
        do_rescale=f.boolean("do_rescale"),
        do_normalize=f.boolean("do_normalize"),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
        video_token_id=f.integer("video_token_id", nullable=True, **token),
        video_do_sample_frames=f.boolean("video_do_sample_frames"),
        video_num_frames=f.integer("video_num_frames", minimum=1, maximum=MAX_VIDEO_FRAMES),
        video_fps=f.number("video_fps", positive=True),
        video_size_longest_edge=f.integer("video_size_longest_edge", nullable=True, minimum=1,
                                          maximum=MAX_IMAGE_SIZE),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: mmp.SpecFields, s: SmolVLMSpec) -> None:
    if not (s.do_rescale or s.do_normalize):
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    if s.video and s.variant != "smolvlm":
        raise f.error("video_token_id", "needs variant 'smolvlm': Idefics3Processor has no video processor "
                                        "(transformers 5.24 ships SmolVLMVideoProcessor only)")
    markers = {"image_token_id": s.image_token_id, "fake_image_token_id": s.fake_image_token_id,
               "global_image_token_id": s.global_image_token_id, "newline_token_id": s.newline_token_id}
    if s.video:
        markers["video_token_id"] = s.video_token_id
    grid = [i for r in s.row_col_token_ids for i in r]
    if len(set(markers.values())) != len(markers) or len(set(grid)) != len(grid) or set(grid) & set(markers.values()):
        raise f.error("row_col_token_ids", f"the marker ids must all differ: {markers}, row/col {list(grid)}")
    if s.image_seq_len > s.max_image_size * s.max_image_size:
        raise f.error("image_seq_len", f"must not exceed max_image_size ** 2 = {s.max_image_size ** 2} "
                                       f"(a token pools at least one pixel), got {s.image_seq_len}")
    rows, cols = s.grid_max
    if s.do_resize and s.do_image_splitting:
        # With the resize, a split image's longest edge is at most min(size, 4096) rounded up to
        # max_image_size; each row/column needs its marker token.
        side = math.ceil(min(s.size_longest_edge, MAX_IMAGE_SIZE) / s.max_image_size)
        if side > min(rows, cols):
            raise f.error("size_longest_edge", f"={s.size_longest_edge} splits an image into up to {side} rows or "
                                               f"columns of max_image_size={s.max_image_size}, but row_col_token_ids "
                                               f"holds {rows}x{cols} markers")
        rows, cols = min(rows, side), min(cols, side)
    frames = rows * cols + 1 if s.do_image_splitting else 1
    if frames * s.max_image_size**2 > MAX_STACK_PIXELS:
        raise f.error("max_image_size", f"={s.max_image_size}: up to {frames} frames of max_image_size ** 2 make "
                                        f"{frames * s.max_image_size ** 2} pixels per item, above the "
                                        f"{MAX_STACK_PIXELS} the core decodes by default")


def row_col_table(first: int, side: int = 6) -> list[list[int]]:
    """The marker table of a tokenizer whose ``<row_r_col_c>`` ids run row-major from ``first``."""
    return [[first + r * side + c for c in range(side)] for r in range(side)]


# HuggingFaceTB/SmolVLM-256M-Instruct, published with transformers' Idefics3 classes
# (processor_class Idefics3Processor): preprocessor_config.json (LANCZOS, size 2048, tiles 512,
# mean = std = 0.5), processor_config.json (image_seq_len 64) and the SmolLM2-based tokenizer's
# added tokens (<global-img> 49152, <row_1_col_1>..<row_6_col_6> 49153..49188,
# <fake_token_around_image> 49189, <image> 49190; "\n" 198, "\n\n" 216). docs/families/smolvlm.md §1.
_SMOLVLM_256M = SmolVLMSpec(
    variant="idefics3", image_token_id=49190, fake_image_token_id=49189, global_image_token_id=49152,
    row_col_token_ids=tuple(tuple(r) for r in row_col_table(49153)), newline_token_id=198,
    double_newline_ids=(216,), image_seq_len=64, size_longest_edge=2048, max_image_size=512,
    rescale_factor=0.00392156862745098, image_mean=(0.5, 0.5, 0.5), image_std=(0.5, 0.5, 0.5),
)
# HuggingFaceM4/Idefics3-8B-Llama3: size 4 * 364, tiles 364, image_seq_len 169, the Llama 3
# tokenizer with <fake_token_around_image> 128256, <image> 128257, <end_of_utterance> 128258,
# <global-img> 128259 and the row/column markers 128260.. ("\n" 198, "\n\n" 271).
_IDEFICS3_8B = SmolVLMSpec(
    variant="idefics3", image_token_id=128257, fake_image_token_id=128256, global_image_token_id=128259,
    row_col_token_ids=tuple(tuple(r) for r in row_col_table(128260)), newline_token_id=198,
    double_newline_ids=(271,), image_seq_len=169, size_longest_edge=1456, max_image_size=364,
    rescale_factor=0.00392156862745098, image_mean=(0.5, 0.5, 0.5), image_std=(0.5, 0.5, 0.5),
)
PRESETS: dict[str, dict[str, Any]] = {
    "smolvlm_256m_instruct": _SMOLVLM_256M.to_dict(),
    # HuggingFaceTB/SmolVLM2-500M-Video-Instruct: SmolVLMProcessor with the same image values
    # and tokenizer ids.
    "smolvlm2_500m_video_instruct": attrs.evolve(_SMOLVLM_256M, variant="smolvlm").to_dict(),
    "idefics3_8b_llama3": _IDEFICS3_8B.to_dict(),
}
