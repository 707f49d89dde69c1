"""The request and its result: ``MmInput`` in, ``Output`` out, both plain values.

An ``Output`` pickles and compares (``timings`` aside, which differ run to run); it carries
the resolved spec of the pipeline that made it, so :meth:`Output.model_kwargs` finds the
family again, also in another process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Union

import attrs
import numpy as np
from PIL import Image as PILImage

from .carriers import OutputItem, Positions, Timings, VideoFrames, _readonly
from .errors import InvalidInputError, MmError
from .family import hooks_for
from .handoff import kwargs_to_torch
from .plugins import modalities

# Encoded sources (str forms, bytes, paths) and decoded images (PIL, uint8 arrays).
ImageSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", PILImage.Image, np.ndarray]
# A video is an encoded clip (any form an image source can take) or decoded frames.
VideoSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", VideoFrames, np.ndarray]
_SINGLE = (bytes, bytearray, memoryview, str, os.PathLike, PILImage.Image, np.ndarray, VideoFrames)


def _options(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(f"processor options must be a mapping of option names, got {type(value).__name__}")
    return dict(value)


@attrs.frozen(eq=False, init=False)
class Item:
    """One media item with its processor options: ``Item("image", src, max_pixels=...)``
    (or :func:`Image` / :func:`Video`). ``options`` are the per-item processor options the
    family declares (``Capabilities.item_options``); they override the request's."""

    modality: str
    source: Any = attrs.field(repr=False)
    options: Mapping[str, Any]

    def __init__(self, modality: str, source: Any, /, **options: Any) -> None:
        self.__attrs_init__(modality, source, _options(options))


def Image(source: ImageSource, /, **options: Any) -> Item:  # noqa: N802
    """An image item with processor options, e.g. ``mmf.Image(src, max_pixels=512 * 28 * 28)``."""
    return Item("image", source, **options)


def Video(source: VideoSource, /, **options: Any) -> Item:  # noqa: N802
    """A video item with processor options, e.g. ``mmf.Video(src, fps=2)``."""
    return Item("video", source, **options)


def _items_of(keyword: str, modality: Any, value: Any) -> list[Item]:
    if isinstance(value, (*_SINGLE, Item)):
        raise InvalidInputError(f"{keyword} must be a sequence of sources, not a single source")
    out = []
    for src in value:
        if isinstance(src, Item):
            if src.modality != modality.name:
                raise InvalidInputError(
                    f"{keyword} holds an item of modality {src.modality!r}; pass it with the {src.modality} items"
                )
            out.append(src)
        else:
            out.append(Item(modality.name, src))
    return out


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


@attrs.frozen(eq=False, init=False)
class MmInput:
    """One request: media items plus the prompt as ids (preferred) or text.

    ``MmInput(images=[...], videos=[...], input_ids=...)``: each modality's keyword takes a
    sequence of sources or :class:`Item` values (``mmf.Image(src, max_pixels=...)``), and
    ``items=`` takes :class:`Item` values of any registered modality. ``options`` are
    processor options for every item of a modality that takes them (what vLLM calls
    ``mm_processor_kwargs``); an item's own options win.

    Items are numbered by modality in registration order (images, videos, audios, then
    plugin modalities), each modality's in the order given, keyword first (``err.item``
    and the ``item N:`` of messages use this numbering); the output lists them in prompt
    order.
    """

    items: tuple[Item, ...]
    input_ids: np.ndarray | None
    text: str | None
    options: Mapping[str, Any]

    def __init__(
        self,
        images: Any = (),
        input_ids: Any = None,
        text: str | None = None,
        videos: Any = (),
        *,
        items: Any = (),
        options: Mapping[str, Any] | None = None,
        **more: Any,
    ) -> None:
        known = modalities()
        by_keyword = {m.keyword: m for m in known.values()}
        given = {"images": images, "videos": videos, **more}
        unknown = sorted(set(given) - set(by_keyword))
        if unknown:
            raise InvalidInputError(
                f"MmInput got {unknown[0]}=, which is no registered modality's keyword; "
                f"registered: {', '.join(sorted(by_keyword))}"
            )
        found = [it for kw, value in given.items() for it in _items_of(kw, by_keyword[kw], value)]
        if isinstance(items, (*_SINGLE, Item)):
            raise InvalidInputError("items must be a sequence of Item values, not a single one")
        for it in items:
            if not isinstance(it, Item):
                raise InvalidInputError(f"items must hold Item values (mmf.Image, mmf.Video), got {type(it).__name__}")
            if it.modality not in known:
                raise InvalidInputError(
                    f"item modality {it.modality!r} is not registered; registered: {', '.join(known)}"
                )
            found.append(it)
        rank = {name: k for k, name in enumerate(known)}
        ordered = sorted(found, key=lambda it: rank[it.modality])  # stable: the given order within a modality
        checked = []
        for i, it in enumerate(ordered):
            try:
                source = known[it.modality].check_source(it.source)
            except MmError as e:
                raise e.at_item(i) from None
            checked.append(it if source is it.source else Item(it.modality, source, **it.options))
        if text is not None and not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        ids = None if input_ids is None else input_ids_array(input_ids)
        self.__attrs_init__(tuple(checked), ids, text, _options({} if options is None else options))

    def of(self, modality: str) -> tuple[Any, ...]:
        """The sources of one modality's items, in order."""
        return tuple(it.source for it in self.items if it.modality == modality)

    @property
    def images(self) -> tuple[Any, ...]:
        return self.of("image")

    @property
    def videos(self) -> tuple[Any, ...]:
        return self.of("video")

    @property
    def sources(self) -> tuple[tuple[str, Any], ...]:
        """``(modality, source)`` of every item, in item-number order."""
        return tuple((it.modality, it.source) for it in self.items)


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
