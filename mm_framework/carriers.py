"""Frozen carriers that cross the family seam and the request boundary.

All are validated at construction, so a family that builds a wrong-shaped result fails
where it built it, not three stages later in the driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Union

import attrs
import numpy as np

from .checks import check_int, check_rgb
from .errors import InternalError, InvalidInputError, MediaError

DType = Literal["f32", "i64", "bf16", "u8"]

# bf16 travels as its raw bit pattern: numpy has no bfloat16, and uint16 bits hand over
# to torch (`.view(torch.bfloat16)`) without a copy. u8 is pixel values a PixelNorm
# turns into the model's f32 values later (on the engine's device, say).
_NUMPY_DTYPE: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "i64": np.dtype(np.int64),
    "bf16": np.dtype(np.uint16),
    "u8": np.dtype(np.uint8),
}


def _readonly(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _lut(value: Any) -> np.ndarray:
    lut = np.asarray(value)
    if lut.dtype != np.float32 or lut.shape != (3, 256):
        raise InternalError(f"PixelNorm lut must be float32 [3, 256], got {lut.dtype} {list(lut.shape)}")
    return _readonly(np.ascontiguousarray(lut))


@attrs.frozen(eq=False)
class PixelNorm:
    """How a u8 patch tensor becomes the model's f32 one: value ``v`` in column ``j`` is
    ``lut[(j // run) % 3][v]``, ``lut`` being the exact ``[3, 256]`` table of the reference's
    rescale + normalize (a ``kernels.ChannelNorm``'s) and ``run`` the columns each channel
    spans before the next begins (Qwen-VL: ``temporal_patch_size * patch_size**2``).

    A table lookup, not arithmetic, so the result is the reference's f32 bytes on any
    device: a GPU kernel may fuse ``x * scale - mean`` into one FMA and round differently.
    """

    lut: np.ndarray = attrs.field(converter=_lut)
    run: int = attrs.field()

    @run.validator
    def _check_run(self, _attr: Any, value: int) -> None:
        check_int(value, "PixelNorm run", minimum=1, error=InternalError)

    def check(self, shape: tuple[int, ...]) -> None:
        """``InternalError`` unless a ``[rows, columns]`` tensor of ``shape`` holds whole channel runs."""
        if len(shape) != 2 or shape[1] % (3 * self.run):
            raise InternalError(f"PixelNorm with run {self.run} needs [rows, 3k*{self.run}] patches, got {list(shape)}")

    def apply(self, patches: np.ndarray) -> np.ndarray:
        """The f32 values of the u8 ``patches`` (numpy), a new C-contiguous array."""
        self.check(patches.shape)
        rows, cols = patches.shape
        runs = patches.reshape(rows, cols // self.run, self.run)
        out = np.empty(runs.shape, dtype=np.float32)
        for j in range(runs.shape[1]):
            np.take(self.lut[j % 3], runs[:, j], out=out[:, j])
        return out.reshape(rows, cols)

    def apply_torch(self, patches: Any) -> Any:
        """The f32 values of a u8 torch tensor of patches, on the tensor's own device."""
        from .handoff import normalize_torch

        self.check(tuple(patches.shape))
        return normalize_torch(patches, self.lut, self.run)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PixelNorm):
            return NotImplemented
        return self.run == other.run and self.lut.tobytes() == other.lut.tobytes()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (PixelNorm, (self.lut, self.run))


@attrs.frozen(eq=False)
class Tensor:
    """A dense row-major tensor: ``array`` is a read-only numpy view.

    ``eq`` compares dtype, shape, bytes and ``norm``, so two outputs can be compared exactly.
    A ``u8`` tensor of pixel patches carries the :class:`PixelNorm` that turns it into the
    model's values (:meth:`normalized`); no other tensor has one.
    """

    array: np.ndarray = attrs.field(converter=_readonly)
    dtype: DType = attrs.field()
    norm: PixelNorm | None = attrs.field(default=None)

    @dtype.validator
    def _check(self, _attr: Any, value: str) -> None:
        want = _NUMPY_DTYPE.get(value)
        if want is None:
            raise InternalError(f"tensor dtype must be one of {', '.join(_NUMPY_DTYPE)}, got {value!r}")
        if self.array.dtype != want:
            raise InternalError(f"tensor declared {value} but holds numpy {self.array.dtype}")

    @norm.validator
    def _check_norm(self, _attr: Any, value: PixelNorm | None) -> None:
        if value is None:
            return
        if not isinstance(value, PixelNorm) or self.dtype != "u8":
            raise InternalError(f"only a u8 tensor carries a PixelNorm, got {self.dtype} with {value!r}")
        value.check(self.shape)

    @classmethod
    def u8(cls, array: Any, norm: PixelNorm | None = None) -> Tensor:
        return cls(np.ascontiguousarray(array, dtype=np.uint8), "u8", norm)

    def normalized(self) -> Tensor:
        """The f32 tensor a u8 tensor's :class:`PixelNorm` gives (what the f32 path outputs)."""
        if self.norm is None:
            raise InternalError(f"a {self.dtype} tensor without a PixelNorm has no normalized form")
        return Tensor(self.norm.apply(self.array), "f32")

    @classmethod
    def f32(cls, array: Any) -> Tensor:
        return cls(np.ascontiguousarray(array, dtype=np.float32), "f32")

    @classmethod
    def i64(cls, array: Any) -> Tensor:
        return cls(np.ascontiguousarray(array, dtype=np.int64), "i64")

    @classmethod
    def bf16(cls, bits: Any) -> Tensor:
        return cls(np.ascontiguousarray(bits, dtype=np.uint16), "bf16")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (
            self.dtype == other.dtype
            and self.shape == other.shape
            and np.array_equal(self.array, other.array)
            and self.norm == other.norm
        )

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # Through the constructor, so the unpickled array is read-only again.
        return (Tensor, (self.array, self.dtype, self.norm))

    def to_torch(self) -> Any:
        """This tensor in torch, sharing its memory (bf16 bits as ``torch.bfloat16``)."""
        from .handoff import to_torch

        return to_torch(self.array, self.dtype)

    def __repr__(self) -> str:
        return f"Tensor({self.dtype} {list(self.shape)})"


@attrs.frozen
class Grid:
    """Patch grid of one item: ``t`` frames, ``h`` x ``w`` patches before merging."""

    t: int
    h: int
    w: int


@attrs.frozen
class Tiles:
    """Tile count of one item (InternVL style), thumbnail included."""

    n: int


Geometry = Union[Grid, Tiles, Any]


@attrs.frozen(eq=False)
class DecodedImage:
    """One decoded still image: ``rgb`` is HWC uint8, channels R, G, B, read-only."""

    rgb: np.ndarray = attrs.field(converter=_readonly)

    def __attrs_post_init__(self) -> None:
        check_rgb(self.rgb, "decoded image", error=InternalError)

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])


def _placeholder_texts(caps: Capabilities, _attr: Any, value: Mapping[str, str]) -> None:
    for modality, text in value.items():
        if modality not in caps.placeholders:
            raise InternalError(f"placeholder_texts names {modality!r}, which has no placeholder id in placeholders")
        if not isinstance(text, str) or not text:
            raise InternalError(f"placeholder_texts[{modality!r}] must be a non-empty str, got {text!r}")


def _text_prompts(caps: Capabilities, _attr: Any, value: frozenset[str]) -> None:
    for modality in sorted(value):
        if modality not in caps.placeholder_texts:
            raise InternalError(f"text_prompts names {modality!r}, which has no text placeholder in placeholder_texts")


def _aux_shapes(value: Mapping[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    out = {}
    for name, (dtype, shape) in value.items():
        if dtype not in _NUMPY_DTYPE:
            raise InternalError(f"ItemOutputs aux {name!r}: dtype must be one of {sorted(_NUMPY_DTYPE)}, got {dtype!r}")
        out[name] = (dtype, tuple(int(n) for n in shape))
    return out


@attrs.frozen
class ItemOutputs:
    """What every processed item of one modality holds: the feature's dtype (its shape
    varies with the item) and each aux tensor's dtype and fixed shape, e.g.
    ``ItemOutputs("f32", {"image_grid_thw": ("i64", (3,))})``. Declared in
    ``Capabilities.outputs``; the driver holds every item to it, and dataset schemas
    (Arrow columns) are made from it."""

    feature: DType = attrs.field(default="f32", validator=attrs.validators.in_(tuple(_NUMPY_DTYPE)))
    aux: Mapping[str, tuple[str, tuple[int, ...]]] = attrs.field(factory=dict, converter=_aux_shapes)

    def check(self, item: Any) -> None:
        """``InternalError`` unless the ``ProcessedItem`` ``item`` is what this declares."""
        got = {name: (t.dtype, t.shape) for name, t in item.aux.items()}
        if item.feature.dtype != self.feature or got != dict(self.aux):
            raise InternalError(
                f"processed item {item.feature.dtype} {got} differs from the family's declared outputs "
                f"({self.feature} {dict(self.aux)})"
            )


def _outputs(caps: Capabilities, _attr: Any, value: Mapping[str, ItemOutputs]) -> None:
    for modality, declared in value.items():
        if modality not in caps.modalities or not isinstance(declared, ItemOutputs):
            raise InternalError(f"outputs[{modality!r}] must be the ItemOutputs of one of modalities {caps.modalities}")


def _item_options(caps: Capabilities, _attr: Any, value: Mapping[str, Mapping[str, str]]) -> None:
    for modality, names in value.items():
        if modality not in caps.modalities:
            raise InternalError(f"item_options names {modality!r}, which is not one of modalities {caps.modalities}")
        for name, key in names.items():
            if not (isinstance(name, str) and name and isinstance(key, str) and key):
                raise InternalError(f"item_options[{modality!r}] must map option names to spec fields, got {name!r}")


def _names(_caps: Capabilities, attr: Any, value: frozenset[str]) -> None:
    if not all(isinstance(name, str) and name for name in value):
        raise InternalError(f"{attr.name} must be non-empty names, got {sorted(map(repr, value))}")


@attrs.frozen
class Capabilities:
    """What a family accepts: its modalities, per-item options and prompt id range.

    ``modalities``: the registered modalities the family processes (``"image"``, and
    ``"video"`` for clips: ``mm_sample_frames``, ``mm_process_item`` with a ``VideoClip``).
    ``placeholders``: the prompt id that stands for one item of each modality
    (``{"image": 151655}``), for default prompts and documentation.
    ``placeholder_texts``: the text of that token as the model's chat template writes it
    (``{"image": "<|image_pad|>"}``), for modalities whose placeholder has a text form;
    a text prompt holding it whose ids hold no placeholder id was tokenized without the
    model's special tokens. ``id_range`` is the inclusive ``(low, high)`` every input id
    must fall in (e.g. a vocabulary that fits int32); ``None`` accepts any int64
    (families whose placeholders are negative protocol ids).
    ``item_options``: per modality, the processor options a request may set for one item
    (or for all, ``MmInput(options=...)``), each naming the spec field it replaces for
    that item (``{"image": {"max_pixels": "max_pixels"}, "video": {"fps": "video_fps"}}``):
    the item is processed by the family built from the spec with those fields replaced,
    so the family's own spec validation bounds every value.
    ``request_options``: the same for the options a request sets for all its items, where
    they replace other fields than an item's own (qwen_vl's qwen-vl-utils mode: an image's
    own bounds are qwen-vl-utils' resize, the request's the processor's); ``None`` is
    ``item_options``.
    ``outputs``: per modality, the :class:`ItemOutputs` every item of it has (feature dtype,
    aux names, dtypes and shapes); datasets need it (their columns are made from it), and
    items of a modality left out are held to nothing.
    ``text_prompts``: the modalities whose expansion exists only as text (``mm_expansion_text``:
    prose the tokenizer merges with the prompt around it, such as SmolVLM's frame count in
    words), which no id layout can write: a request with such an item gives its prompt as text
    and a tokenizer that reports character offsets (:mod:`~mm_framework.text_prompt`; the chat
    front door does), and the text is expanded before it is tokenized.
    ``hf_config_kwargs``: the call kwargs of the cloned transformers image processor that
    are keys of its saved config (Pixtral's ``patch_size``, which ``PixtralProcessor``
    passes as patch size times spatial merge): ``mm_framework.hf`` serves a call passing
    one with the spec ``mm_spec_from_hf_configs`` resolves from the saved config holding
    the call's value, as transformers takes a call kwarg over the attribute.
    """

    modalities: tuple[str, ...] = attrs.field(default=("image",), converter=tuple)
    id_range: tuple[int, int] | None = None
    placeholders: Mapping[str, int] = attrs.field(factory=dict, converter=lambda m: dict(m))
    placeholder_texts: Mapping[str, str] = attrs.field(
        factory=dict, converter=lambda m: dict(m), validator=_placeholder_texts
    )
    item_options: Mapping[str, Mapping[str, str]] = attrs.field(
        factory=dict, converter=lambda m: {k: dict(v) for k, v in m.items()}, validator=_item_options
    )
    request_options: Mapping[str, Mapping[str, str]] | None = attrs.field(
        default=None, converter=lambda m: None if m is None else {k: dict(v) for k, v in m.items()},
        validator=attrs.validators.optional(_item_options),
    )
    outputs: Mapping[str, ItemOutputs] = attrs.field(factory=dict, converter=dict, validator=_outputs)
    text_prompts: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset, validator=_text_prompts)
    hf_config_kwargs: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset, validator=_names)

    @property
    def video(self) -> bool:
        return "video" in self.modalities

    @property
    def options_for_request(self) -> Mapping[str, Mapping[str, str]]:
        """``request_options``, or ``item_options`` when the family declares none."""
        return self.item_options if self.request_options is None else self.request_options


def _dimension(what: str) -> Any:
    return lambda _self, _attr, value: check_int(value, what, minimum=1, error=MediaError)


@attrs.frozen
class ImageHeader:
    """What an image declares before any pixel is decoded: its decoded size (after the
    family's EXIF transpose). What ``mm_plan_item`` sees for an image item."""

    width: int = attrs.field(validator=_dimension("image width"))
    height: int = attrs.field(validator=_dimension("image height"))


def _fps(_self: Any, _attr: Any, value: Any) -> None:
    if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
        raise MediaError(f"video fps must be a positive number, got {value!r}")


@attrs.frozen
class ClipHeader:
    """What a clip declares before any frame is decoded. What ``mm_sample_frames`` and
    ``mm_plan_item`` see for a video item.

    For an encoded clip, the fields of transformers' ``VideoMetadata`` as its ``pyav``
    loader fills them: ``total_frames`` is the container's count (``stream.frames``),
    ``fps`` is ``float(stream.average_rate)``, ``duration`` is ``total_frames / fps``. For
    frames the caller decoded, their count and the ``fps`` they came with (``None`` when
    unknown), no codec.
    """

    total_frames: int = attrs.field(validator=_dimension("video frames"))
    fps: float | None = attrs.field(validator=_fps)
    width: int = attrs.field(validator=_dimension("image width"))
    height: int = attrs.field(validator=_dimension("image height"))
    duration: float | None = None
    codec: str | None = None
    pixel_format: str | None = None  # None until the decoder has seen a frame (rare)
    # The clip's audio track, read only when the family asks for it (DecodeOptions.video_audio);
    # None also for a clip without one.
    audio: AudioHeader | None = None


# The highest rate audio is distributed at (DXD/"32-bit 384 kHz" masters) and the most
# channels any common container carries (7.1 is 8): a header past either is refused before
# anything is decoded, since decoded memory grows with both.
MAX_AUDIO_RATE = 384_000
MAX_AUDIO_CHANNELS = 8


@attrs.frozen
class AudioHeader:
    """What an audio item declares before any sample is decoded: its source rate, its
    channel count and its length in frames (samples per channel). What ``mm_plan_item``
    sees for an audio item."""

    sample_rate: int = attrs.field(
        validator=lambda _s, _a, v: check_int(v, "audio sample rate", minimum=1, maximum=MAX_AUDIO_RATE,
                                              error=MediaError))
    channels: int = attrs.field(
        validator=lambda _s, _a, v: check_int(v, "audio channels", minimum=1, maximum=MAX_AUDIO_CHANNELS,
                                              error=MediaError))
    frames: int = attrs.field(validator=_dimension("audio frames"))

    @property
    def duration(self) -> float:
        """Seconds."""
        return self.frames / self.sample_rate


@attrs.frozen(eq=False)
class DecodedAudio:
    """One decoded audio item: ``samples`` float32 mono at the source ``sample_rate``,
    read-only, downmixed from the source's ``channels``. Families resample to their rate
    with ``mm_framework.kernels.resample``. ``total_frames``: the whole clip's length when
    only its first ``len(samples)`` frames were decoded (the family's ``mm_audio_frames``),
    else ``None``."""

    samples: np.ndarray = attrs.field(converter=_readonly)
    sample_rate: int
    channels: int = 1
    total_frames: int | None = None

    @property
    def header(self) -> AudioHeader:
        """The header the item was probed with (the whole clip's length)."""
        frames = len(self.samples) if self.total_frames is None else self.total_frames
        return AudioHeader(self.sample_rate, self.channels, frames)

    def __attrs_post_init__(self) -> None:
        if self.samples.dtype != np.float32 or self.samples.ndim != 1 or not len(self.samples):
            raise InternalError(f"decoded audio must be float32 [N > 0], got {self.samples.dtype} {self.samples.shape}")
        if self.total_frames is not None and self.total_frames < len(self.samples):
            raise InternalError(f"decoded audio of {len(self.samples)} frames claims a clip of {self.total_frames}")


# The formats the reference server decodes ("JPEG" also opens camera MPO files).
# Everything else Pillow could parse (TIFF, PSD, ICO, ...) is refused: more decoders are
# more attack surface, and no serving client needs them.
DEFAULT_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")


@attrs.frozen
class DecodeOptions:
    """How raw bytes become RGB: chosen by the family (alpha, EXIF), bounded by limits.

    ``keep_source``: the decoder also lends its Pillow image (``take_source``) to a resize
    that runs through Pillow, which then need not rebuild one from the array; set it to
    ``kernels.resize_wants_source(resampler)``. It changes no byte, so equal options with
    and without it decode alike (and share cache entries).

    ``video_audio``: a video item also brings its audio track (``ClipHeader.audio``,
    ``VideoClip.audio``: source-rate mono, as the audio modality decodes it), for families
    that interleave a clip with its sound (docs/video.md, "Audio tracks").
    """

    alpha: Literal["composite", "drop", "composite_rgba"] = attrs.field(
        default="drop", validator=attrs.validators.in_(("composite", "drop", "composite_rgba"))
    )
    exif_transpose: bool = False
    max_pixels: int | None = None
    formats: tuple[str, ...] = attrs.field(default=DEFAULT_FORMATS, converter=tuple)
    keep_source: bool = attrs.field(default=False, eq=False)
    video_audio: bool = False


def _size(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    w, h = value
    return int(w), int(h)


@attrs.frozen(eq=False)
class ProcessedItem:
    """What a family makes of one decoded item.

    ``size`` is ``(width, height)`` of the image the features were cut from (after the
    family's resize or tiling canvas), for engines and ``mm-framework inspect``.
    """

    feature: Tensor = attrs.field(validator=attrs.validators.instance_of(Tensor))
    aux: Mapping[str, Tensor] = attrs.field(factory=dict, converter=lambda m: dict(m))
    geometry: Geometry = None
    size: tuple[int, int] | None = attrs.field(default=None, converter=_size)

    @aux.validator
    def _check_aux(self, _attr: Any, value: Mapping[str, Tensor]) -> None:
        for name, t in value.items():
            if not isinstance(name, str) or not isinstance(t, Tensor):
                raise InternalError(f"aux entries must map str to Tensor, got {name!r}")


@attrs.frozen
class ItemPlan:
    """What a family makes of an item of a known size, decided without any pixel:
    its geometry and the ``(width, height)`` it is processed at."""

    geometry: Geometry
    size: tuple[int, int] = attrs.field(converter=_size)


@attrs.frozen
class Rope1D:
    """Plain sequential positions ``0..L``; nothing to carry."""


@attrs.frozen(eq=False)
class MRope:
    """Multimodal rotary positions: int64 ``[3, L]`` (rows t, h, w) and the decode delta."""

    positions: np.ndarray = attrs.field(converter=_readonly)
    delta: int = attrs.field(converter=int)

    def __attrs_post_init__(self) -> None:
        p = self.positions
        if p.dtype != np.int64 or p.ndim != 2 or p.shape[0] != 3:
            raise InternalError(f"MRope positions must be int64 [3, L], got {p.dtype} {p.shape}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MRope):
            return NotImplemented
        return self.delta == other.delta and np.array_equal(self.positions, other.positions)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (MRope, (self.positions, self.delta))

    def __repr__(self) -> str:
        return f"MRope({list(self.positions.shape)}, delta={self.delta})"


Positions = Union[Rope1D, MRope]


@attrs.frozen(eq=False)
class VideoFrames:
    """A clip the caller already decoded: ``frames`` is one ``[T, H, W, 3]`` uint8 array or
    a sequence of frames (``[H, W, 3]`` uint8 arrays, PIL images, or encoded image sources),
    with the metadata transformers takes alongside arrays: the source ``fps``, and the
    source frame ``indices`` of the frames with the source's ``total_frames``. ``audio``:
    the clip's decoded audio track (an :class:`Audio`), used by families that ask for it
    (``DecodeOptions.video_audio``) and ignored by the others, as an encoded clip's track."""

    frames: Any = attrs.field(repr=False)
    fps: float | None = None
    indices: tuple[int, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))
    total_frames: int | None = None
    audio: Audio | None = attrs.field(default=None)

    @audio.validator
    def _check_audio(self, _attr: Any, value: Any) -> None:
        if value is not None and not isinstance(value, Audio):
            raise InvalidInputError(f"VideoFrames audio must be an mm_framework.Audio, got {type(value).__name__}")


@attrs.frozen
class Audio:
    """Audio the caller already decoded: ``array`` float32, ``[N]`` mono or ``[N, C]``
    (soundfile's layout, frames first), at ``sample_rate`` Hz; checked, copied and
    downmixed as a decoded file is when the request is taken."""

    array: Any = attrs.field(repr=False)
    sample_rate: int = attrs.field(kw_only=True)


@attrs.frozen
class ItemTimings:
    """Milliseconds one item spent in each stage; ``cached`` when its features came from
    the feature cache (or an identical item earlier in the request), so decode and process
    did not run for it."""

    fetch_ms: float
    hash_ms: float
    decode_ms: float
    process_ms: float
    cached: bool


@attrs.frozen
class Timings:
    """Milliseconds per stage for one request. ``fetch``, ``hash``, ``decode`` and
    ``process`` are sums over the items (work, which may overlap on several threads);
    ``items`` gives them per item; ``total_ms`` is the request's wall time."""

    fetch_ms: float
    hash_ms: float
    decode_ms: float
    process_ms: float
    layout_ms: float
    positions_ms: float
    total_ms: float
    items: tuple[ItemTimings, ...] = attrs.field(converter=tuple)


def _brief(t: Tensor | None) -> str:
    if t is None:
        return "no pixels"
    return str(t.array.tolist()) if t.array.size <= 8 else f"{t.dtype}{list(t.shape)}"


def _geometry(g: Geometry) -> str:
    if g is None:
        return "-"
    fields = attrs.asdict(g) if attrs.has(type(g)) else {}
    return type(g).__name__ + "(" + ", ".join(f"{k}={v}" for k, v in fields.items()) + ")"


@attrs.frozen
class OutputItem:
    """One media item of the output, in input order.

    ``size`` is the decoded ``(width, height)``, ``processed_size`` what the family
    processed (after resizing or tiling), ``geometry`` the family's summary (a ``Grid``
    or ``Tiles``), ``frames`` how many frames of a video were used (``None`` for images
    and in token counts). ``feature`` is ``None`` only in a token count
    (:meth:`~mm_framework.Pipeline.count_tokens`); ``hash`` only from a pipeline built with
    ``hashes=False``.
    """

    feature: Tensor | None
    aux: Mapping[str, Tensor] = attrs.field(converter=dict)
    hash: int | None
    modality: str = "image"
    geometry: Geometry = None
    size: tuple[int, int] | None = attrs.field(default=None, converter=_size)
    processed_size: tuple[int, int] | None = attrs.field(default=None, converter=_size)
    frames: int | None = None

    def __repr__(self) -> str:
        aux = "".join(f" {k}={_brief(t)}" for k, t in self.aux.items())
        sizes = "" if self.size is None else f" {self.size[0]}x{self.size[1]}"
        if self.processed_size is not None:
            sizes += f"->{self.processed_size[0]}x{self.processed_size[1]}"
        if self.frames is not None:
            sizes += f" {self.frames} frames"
        return (
            f"OutputItem({self.modality}{sizes} {_geometry(self.geometry)} {_brief(self.feature)}{aux} "
            f"hash={'none' if self.hash is None else format(self.hash, '#018x')})"
        )
