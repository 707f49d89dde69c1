"""What the accelerated image and video processors share about a transformers call: standing
in for the processor (serve or decline, counted), the decline signal, the pixel mode, reading
``return_tensors`` and the pixel bounds, comparing an option with the processor's own value,
and handing out writable arrays."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import SpecError
from ..pipeline import Pipeline
from . import stats

BOUNDS = ("shortest_edge", "longest_edge")


class Declined(Exception):
    """This call is not served; the message is the reason ``stats()`` counts."""


class StandIn:
    """Stands in for a transformers processor, ``original`` (every attribute reads through to
    it): a call is served by ``_serve(media, kwargs)`` or, when that declines, by ``original``
    unchanged, counted in ``stats()`` with the reason. ``MEDIA``: the call's first argument
    (``images``, ``videos``), given by position or by name. ``_size_is_bounds``: whether the
    processor's ``size`` is the pixel bounds the spec cloned (:func:`size_is_bounds`), which
    a subclass sets."""

    MEDIA = "images"
    _size_is_bounds = False

    def __init__(self, original: Any) -> None:
        self._original = original
        self._name = type(original).__name__

    @property
    def original(self) -> Any:
        """The transformers processor this one stands in for."""
        return self._original

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._original!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if len(args) > 1 or args and self.MEDIA in kwargs:
                raise Declined(f"positional arguments after {self.MEDIA}")
            media = args[0] if args else kwargs.get(self.MEDIA)
            result = self._serve(media, {k: v for k, v in kwargs.items() if k != self.MEDIA})
        except Declined as e:
            stats.fallback(self._name, str(e))
            return self._original(*args, **kwargs)
        stats.served(self._name)
        return result

    preprocess = __call__

    def _serve(self, media: Any, kwargs: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def _bounds(self, size: Any, min_pixels: Any, max_pixels: Any) -> dict[str, int]:
        """The per-item pixel bounds of a call's ``size`` / ``min_pixels`` / ``max_pixels``."""
        if size is None and min_pixels is None and max_pixels is None:
            return {}
        if not self._size_is_bounds:
            raise Declined("size / min_pixels / max_pixels on a processor whose size is not its pixel bounds")
        return pixel_bounds(self._original.size, size, min_pixels, max_pixels)


# What a caller may say it casts every floating output to right after each call.
CASTS = (None, "bfloat16")


def checked_cast(cast: str | None) -> str | None:
    if cast not in CASTS:
        raise ValueError(f"cast must be None or 'bfloat16', got {cast!r}")
    return cast


def torch_outputs(data: Mapping[str, np.ndarray], pixels: str) -> dict[str, Any]:
    """``data`` as torch tensors; with ``pixels="bf16"`` the uint16 feature bits as bfloat16."""
    from ..handoff import to_torch

    return {k: to_torch(v, "bf16" if pixels == "bf16" and v.dtype == np.uint16 else None) for k, v in data.items()}


def pixel_mode(original: Any, rescale: bool | None, normalize: bool | None) -> str:
    """The pixel mode (``"f32"`` or ``"u8"``) of a call's ``do_rescale`` / ``do_normalize``
    (``None``: the processor's own)."""
    rescale = original.do_rescale if rescale is None else rescale
    normalize = original.do_normalize if normalize is None else normalize
    if (rescale or normalize) and (rescale, normalize) == (original.do_rescale, original.do_normalize):
        # The spec cloned the processor's own switches (Gemma 4 rescales without normalizing).
        return "f32"
    if rescale != normalize:
        raise Declined("do_rescale without do_normalize or the reverse")
    if rescale:
        raise Declined("do_rescale and do_normalize on where the processor has them off")
    return "u8"


class Pipelines:
    """A spec's pipelines by pixel mode: ``"f32"`` built at once, ``"u8"`` on first need
    (``None`` when the family has no ``pixels="u8"``). Thread-safe: each is built once and
    immutable. Like every pipeline of the adapters they hash nothing (``hashes=False``):
    transformers' outputs carry no hash, and an engine around them hashes the media itself."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = dict(spec)
        self._pipes: dict[str, Pipeline | None] = {"f32": Pipeline(self.spec, hashes=False)}
        self._lock = threading.Lock()

    def get(self, pixels: str) -> Pipeline | None:
        with self._lock:
            if pixels not in self._pipes:
                try:
                    self._pipes[pixels] = Pipeline({**self.spec, "pixels": pixels}, hashes=False)
                except SpecError:
                    self._pipes[pixels] = None
            return self._pipes[pixels]

    def mode(self, original: Any, rescale: bool | None, normalize: bool | None) -> str:
        """:func:`pixel_mode`, declined where the family has no uint8 patches."""
        pixels = pixel_mode(original, rescale, normalize)
        if pixels == "u8" and self.get("u8") is None:
            raise Declined(f"uint8 patches: family {self.spec['family']!r} has no pixels='u8'")
        return pixels


def tensor_type(value: Any) -> str | None:
    text = None if value is None else str(getattr(value, "value", value))
    if text not in (None, "np", "pt"):
        raise Declined(f"return_tensors {value!r}")
    return text


def same(value: Any, own: Any) -> bool:
    """Whether a call option equals the processor's attribute (lists and tuples alike;
    ``True`` is not ``1``)."""
    if isinstance(value, (list, tuple)) and isinstance(own, (list, tuple)):
        return len(value) == len(own) and all(same(a, b) for a, b in zip(value, own))
    if isinstance(value, bool) or isinstance(own, bool):
        return value is own
    try:
        return bool(value == own)
    except (TypeError, ValueError):  # an array against a scalar, say: not provably the same
        return False


def size_is_bounds(own_size: Any, spec: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    """Whether the processor's ``size`` is exactly the smart_resize bounds the spec cloned:
    ``fields`` maps the family's per-item options ``min_pixels`` / ``max_pixels`` to the spec
    fields they replace (``Capabilities.item_options``)."""
    if own_size is None or not {"min_pixels", "max_pixels"} <= set(fields):
        return False
    bounds = {k: getattr(own_size, k, None) for k in BOUNDS}
    return bounds == {"shortest_edge": spec.get(fields["min_pixels"]), "longest_edge": spec.get(fields["max_pixels"])}


def pixel_bounds(own_size: Any, size: Any, min_pixels: Any, max_pixels: Any) -> dict[str, int]:
    """The per-item ``min_pixels`` / ``max_pixels`` of a call's ``size`` / ``min_pixels`` /
    ``max_pixels`` (at least one given), combined as transformers' ``_standardize_kwargs``
    combines them with the processor's own ``size``."""
    if size is None:
        # transformers fills a bound the call leaves out from the processor's own size
        # here, but not when the call passes a size.
        bounds: dict[str, Any] = {k: getattr(own_size, k) for k in BOUNDS}
    elif isinstance(size, Mapping) and set(size) <= set(BOUNDS):
        bounds = dict(size)
    else:
        raise Declined(f"size {size!r}")
    if min_pixels is not None:
        bounds["shortest_edge"] = min_pixels
    if max_pixels is not None:
        bounds["longest_edge"] = max_pixels
    if any(not isinstance(bounds.get(k), int) or isinstance(bounds.get(k), bool) or bounds[k] <= 0 for k in BOUNDS):
        raise Declined(f"size bounds {bounds!r}")
    return {"min_pixels": bounds["shortest_edge"], "max_pixels": bounds["longest_edge"]}


def cpu_array(value: Any, what: str) -> np.ndarray:
    """``value`` as a numpy array (a CPU tensor's own buffer); declined for another type or
    a tensor on another device. ``what`` names it in the reason (``"image"``, ``"video"``)."""
    if type(value).__module__.startswith("torch"):
        if getattr(value, "device", None) is None or value.device.type != "cpu":
            raise Declined(f"a {what} tensor not on the CPU")
        value = value.numpy()
    if not isinstance(value, np.ndarray):
        raise Declined(f"a {what} of type {type(value).__name__}")
    return value


def writable(array: np.ndarray) -> np.ndarray:
    """``array`` writable, as transformers' outputs are. The adapter's pipelines keep no
    cache, so an item's read-only feature is this call's alone: a writable view of its
    buffer, not a copy (a 1280x960 image's f32 patches are 15 MB)."""
    if array.flags.writeable:
        return array
    view = array.view()
    try:
        view.flags.writeable = True
    except ValueError:  # a buffer numpy does not own (a memory map, say)
        return np.array(array)
    return view
