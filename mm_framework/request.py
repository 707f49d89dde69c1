"""The request and its result: ``MmInput`` in, ``Output`` out, both plain values.

An ``Output`` pickles and compares (``timings`` aside, which differ run to run); it carries
the resolved spec of the pipeline that made it, so :meth:`Output.model_kwargs` finds the
family again, also in another process.
"""

from __future__ import annotations

import json
import os
from typing import Any, Union

import attrs
import numpy as np
from PIL import Image

from .carriers import OutputItem, Positions, Timings, VideoFrames, _readonly
from .errors import InvalidInputError
from .family import hooks_for
from .handoff import kwargs_to_torch

# Encoded sources (str forms, bytes, paths) and decoded images (PIL, uint8 arrays).
ImageSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", Image.Image, np.ndarray]
_SOURCE_TYPES = (bytes, bytearray, memoryview, str, os.PathLike, Image.Image, np.ndarray)


def _image_sources(value: Any) -> tuple[Any, ...]:
    if isinstance(value, (bytes, bytearray, memoryview, str, os.PathLike, Image.Image, np.ndarray)):
        raise InvalidInputError("images must be a sequence of sources, not a single source")
    items = tuple(value)
    for i, src in enumerate(items):
        if not isinstance(src, _SOURCE_TYPES):
            raise InvalidInputError(
                f"unsupported source type {type(src).__name__}; expected bytes, str, a pathlib.Path, "
                f"a PIL.Image.Image or a uint8 numpy array",
                item=i,
            )
    return items


def input_ids_array(value: Any, what: str = "input_ids") -> np.ndarray:
    """``value`` as 1-D int64 ids; anything else is an ``InvalidInputError`` saying what it got."""
    try:
        arr = np.asarray(value)
    except Exception as e:  # ragged lists and the like
        raise InvalidInputError(f"{what} must be a 1-D sequence of integers, got {type(value).__name__}: {e}") from None
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        shown = type(value).__name__ if arr.dtype == object else f"{arr.dtype} {arr.shape}"
        raise InvalidInputError(f"{what} must be a 1-D sequence of integers, got {shown}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidInputError(f"{what} contain values beyond int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def input_ids_from_arg(text: str) -> list[int]:
    """Prompt ids as a command's ``--input-ids`` writes them: integers separated by commas or spaces."""
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise InvalidInputError(f"--input-ids must be integers separated by commas or spaces, got {text!r}") from None


# A video is an encoded clip (any form an image source can take) or decoded frames.
VideoSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", VideoFrames, np.ndarray]


def _video_sources(value: Any) -> tuple[Any, ...]:
    if isinstance(value, (bytes, bytearray, memoryview, str, os.PathLike, VideoFrames, np.ndarray)):
        raise InvalidInputError("videos must be a sequence of sources, not a single source")
    items = []
    for i, src in enumerate(value):
        if isinstance(src, (list, tuple)):  # a bare sequence of frames
            src = VideoFrames(src)
        if not isinstance(src, (bytes, bytearray, memoryview, str, os.PathLike, VideoFrames, np.ndarray)):
            raise InvalidInputError(
                f"unsupported video source type {type(src).__name__}; expected an encoded clip (bytes, str, "
                f"a pathlib.Path), a uint8 [T, H, W, 3] array, a list of frames or VideoFrames"
            )
        items.append(src)
    return tuple(items)


@attrs.frozen(eq=False)
class MmInput:
    """One request: media sources plus the prompt as ids (preferred) or text.

    Items are numbered images first, then videos (``err.item`` and the ``item N:`` of
    messages use this numbering); the output lists them in prompt order.
    """

    images: tuple[ImageSource, ...] = attrs.field(converter=_image_sources, factory=tuple)
    input_ids: np.ndarray | None = attrs.field(
        default=None, converter=lambda v: None if v is None else input_ids_array(v)
    )
    text: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )
    videos: tuple[VideoSource, ...] = attrs.field(converter=_video_sources, factory=tuple)

    @property
    def sources(self) -> tuple[tuple[str, Any], ...]:
        """``(modality, source)`` of every item, in item-number order."""
        return tuple(("image", s) for s in self.images) + tuple(("video", s) for s in self.videos)


@attrs.frozen(eq=False, repr=False)
class Output:
    """The accepted result of one request: a plain value that pickles and compares."""

    input_ids: np.ndarray = attrs.field(converter=_readonly)
    items: tuple[OutputItem, ...] = attrs.field(converter=tuple)
    offsets: tuple[tuple[int, int], ...] = attrs.field(converter=lambda v: tuple((int(a), int(b)) for a, b in v))
    positions: Positions
    spec: str | None = None
    timings: Timings | None = None

    def model_kwargs(self, *, as_torch: bool = False) -> dict[str, Any]:
        """The model runner's keyword tensors for this request, as the family defines them.

        ``as_torch=True`` hands each array to torch without a copy (bf16 bits become
        ``torch.bfloat16``); see :func:`mm_framework.to_torch`.
        """
        if self.spec is None:
            raise InvalidInputError("this output was not produced by a pipeline")
        if any(it.feature is None for it in self.items):
            raise InvalidInputError("a token count has no pixels: use Pipeline.process for model inputs")
        kwargs = hooks_for(self.spec).model_kwargs(self.items)
        return kwargs_to_torch(kwargs, self.items) if as_torch else kwargs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Output):
            return NotImplemented
        return np.array_equal(self.input_ids, other.input_ids) and (
            self.items, self.offsets, self.positions, self.spec
        ) == (other.items, other.offsets, other.positions, other.spec)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Output, (self.input_ids, self.items, self.offsets, self.positions, self.spec, self.timings))

    def __repr__(self) -> str:
        family = None if self.spec is None else json.loads(self.spec).get("family")
        lines = [f"Output(family={family!r}, tokens={len(self.input_ids)}, positions={self.positions!r},"]
        for i, (it, (s, e)) in enumerate(zip(self.items, self.offsets)):
            lines.append(f"  item {i}: tokens {s}..{e} {it!r}")
        return "\n".join(lines) + ")"
