"""Frozen carriers that cross the family seam and the request boundary.

All are validated at construction, so a family that builds a wrong-shaped result fails
where it built it, not three stages later in the driver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, Union

import attrs
import numpy as np

from .checks import check_rgb
from .errors import InternalError, InvalidInputError

DType = Literal["f32", "i64", "bf16"]

# bf16 travels as its raw bit pattern: numpy has no bfloat16, and uint16 bits hand over
# to torch (`.view(torch.bfloat16)`) without a copy.
_NUMPY_DTYPE: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "i64": np.dtype(np.int64),
    "bf16": np.dtype(np.uint16),
}


def _readonly(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


@attrs.frozen(eq=False)
class Tensor:
    """A dense row-major tensor: ``array`` is a read-only numpy view.

    ``eq`` compares dtype, shape and bytes, so two outputs can be compared exactly.
    """

    array: np.ndarray = attrs.field(converter=_readonly)
    dtype: DType = attrs.field()

    @dtype.validator
    def _check(self, _attr: Any, value: str) -> None:
        want = _NUMPY_DTYPE.get(value)
        if want is None:
            raise InternalError(f"tensor dtype must be one of f32, i64, bf16, got {value!r}")
        if self.array.dtype != want:
            raise InternalError(f"tensor declared {value} but holds numpy {self.array.dtype}")

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
        )

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # Through the constructor, so the unpickled array is read-only again.
        return (Tensor, (self.array, self.dtype))

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


@attrs.frozen
class Capabilities:
    """What a family accepts beyond still images: the prompt id range.

    ``id_range`` is the inclusive ``(low, high)`` every input id must fall in (e.g. a
    vocabulary that fits int32); ``None`` accepts any int64 (families whose placeholders
    are negative protocol ids).
    """

    id_range: tuple[int, int] | None = None


# The formats the reference server decodes ("JPEG" also opens camera MPO files).
# Everything else Pillow could parse (TIFF, PSD, ICO, ...) is refused: more decoders are
# more attack surface, and no serving client needs them.
DEFAULT_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")


@attrs.frozen
class DecodeOptions:
    """How raw bytes become RGB: chosen by the family (alpha, EXIF), bounded by limits."""

    alpha: Literal["composite", "drop"] = attrs.field(
        default="drop", validator=attrs.validators.in_(("composite", "drop"))
    )
    exif_transpose: bool = False
    max_pixels: int | None = None
    formats: tuple[str, ...] = attrs.field(default=DEFAULT_FORMATS, converter=tuple)


@attrs.frozen(eq=False)
class ProcessedItem:
    """What a family makes of one decoded item."""

    feature: Tensor = attrs.field(validator=attrs.validators.instance_of(Tensor))
    aux: Mapping[str, Tensor] = attrs.field(factory=dict, converter=lambda m: dict(m))
    geometry: Geometry = None

    @aux.validator
    def _check_aux(self, _attr: Any, value: Mapping[str, Tensor]) -> None:
        for name, t in value.items():
            if not isinstance(name, str) or not isinstance(t, Tensor):
                raise InternalError(f"aux entries must map str to Tensor, got {name!r}")


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

ImageSource = Union[bytes, bytearray, memoryview, str]


def _image_sources(value: Any) -> tuple[Any, ...]:
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        raise InvalidInputError("images must be a sequence of sources, not a single source")
    items = tuple(value)
    for i, src in enumerate(items):
        if isinstance(src, (bytearray, memoryview)):
            continue
        if not isinstance(src, (bytes, str)):
            raise InvalidInputError(
                f"unsupported source type {type(src).__name__}; expected bytes or str", item=i
            )
    return items


def _input_ids(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidInputError(f"input_ids must be a 1-D sequence of integers, got {arr.dtype} {arr.shape}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidInputError("input_ids contain values beyond int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


@attrs.frozen(eq=False)
class MmInput:
    """One request: media sources plus the prompt as ids (preferred) or text."""

    images: tuple[ImageSource, ...] = attrs.field(converter=_image_sources)
    input_ids: np.ndarray | None = attrs.field(default=None, converter=_input_ids)
    text: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )


@attrs.frozen
class OutputItem:
    """One media item of the output, in input order."""

    feature: Tensor
    aux: Mapping[str, Tensor] = attrs.field(converter=dict)
    hash: int

    def __repr__(self) -> str:
        aux = "".join(f" {k}={_brief(t)}" for k, t in self.aux.items())
        return f"OutputItem({_brief(self.feature)}{aux} hash={self.hash:#018x})"


def _brief(t: Tensor) -> str:
    return str(t.array.tolist()) if t.array.size <= 8 else f"{t.dtype}{list(t.shape)}"


@attrs.frozen(eq=False, repr=False)
class Output:
    """The accepted result of one request: a plain value that pickles and compares.

    ``spec`` is the resolved spec (JSON) of the pipeline that made it, so
    :meth:`model_kwargs` finds the family again, also after unpickling.
    """

    input_ids: np.ndarray = attrs.field(converter=_readonly)
    items: tuple[OutputItem, ...] = attrs.field(converter=tuple)
    offsets: tuple[tuple[int, int], ...] = attrs.field(converter=lambda v: tuple((int(a), int(b)) for a, b in v))
    positions: Positions
    spec: str | None = None

    def model_kwargs(self) -> dict[str, np.ndarray]:
        """The model runner's keyword tensors for this request, as the family defines them."""
        if self.spec is None:
            raise InvalidInputError("this output was not produced by a pipeline")
        from .family import hooks_for

        return hooks_for(self.spec).model_kwargs(self.items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Output):
            return NotImplemented
        return (
            np.array_equal(self.input_ids, other.input_ids)
            and (self.items, self.offsets, self.positions, self.spec)
            == (other.items, other.offsets, other.positions, other.spec)
        )

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Output, (self.input_ids, self.items, self.offsets, self.positions, self.spec))

    def __repr__(self) -> str:
        family = None if self.spec is None else json.loads(self.spec).get("family")
        items = ", ".join(
            f"{i}: {_brief(it.feature)} at {s}..{e}" for i, (it, (s, e)) in enumerate(zip(self.items, self.offsets))
        )
        return f"Output(family={family!r}, tokens={len(self.input_ids)}, items=[{items}], positions={self.positions!r})"
