"""``AcceleratedImageProcessor``: a transformers image processor's call, served by a pipeline.

A call is served only when every argument is one the pipeline mirrors exactly; any other
goes to the original processor unchanged, counted in ``stats()`` with its reason, so the
result is always the reference's. Served:

* ``images``: a ``PIL.Image``, a uint8 array or CPU tensor with 3 channels (channels first
  or last, inferred as transformers infers them: first wins), or a list (nested one level)
  of them;
* ``return_tensors``: ``"np"`` or ``"pt"``, and ``None`` with the backend's own default type
  (torch tensors from the torchvision backend, numpy from the PIL one) where the processor
  stacks its outputs without it (asked of the processor once, on a small image);
* ``do_rescale`` and ``do_normalize`` both on, or both off when the family offers uint8
  patches (``pixels="u8"``): the torchvision backend then returns uint8, the PIL one the
  same values as float32, as transformers does;
* ``size`` / ``min_pixels`` / ``max_pixels`` when the processor's ``size`` is the pixel
  bounds ``{"shortest_edge", "longest_edge"}`` of a family taking ``min_pixels`` /
  ``max_pixels`` per item, combined as transformers' ``_standardize_kwargs`` combines them;
* the family's per-item options (``Capabilities.item_options``: Gemma 3's
  ``do_pan_and_scan``, ...), which are the processor's call-time kwargs of the same name;
* any other option only at the processor's own value (it changes nothing). A value the
  pipeline refuses (a ``SpecError`` for the item) hands the call back too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image as PILImage

from ..errors import MmError, UnsupportedError
from ..pipeline import Pipeline
from ..request import Image, MmInput
from . import stats
from .calls import Declined, Pipelines, pixel_bounds, size_is_bounds
from .calls import same as _same
from .calls import tensor_type as _tensor_type
from .calls import writable as _writable

# Options whose value never changes the tensors (batching only).
_INERT = frozenset({"disable_grouping"})
# One small image, to ask the family once whether it describes its image processor's output.
_PROBE = np.zeros((28, 28, 3), dtype=np.uint8)


class AcceleratedImageProcessor:
    """Stands in for ``original`` (every attribute reads through to it); thread-safe: the
    pipelines are immutable and built once."""

    def __init__(self, original: Any, spec: Mapping[str, Any]) -> None:
        self._original = original
        self._name = type(original).__name__
        self._spec = dict(spec)
        self._pipelines = Pipelines(self._spec)
        self._backend = self._spec.get("backend", "pil")
        pipe = self._pipe("f32")
        if pipe.hf_image_outputs(pipe.process(MmInput(images=[_PROBE]))) is None:
            raise UnsupportedError(f"{self._name}: family {self._spec['family']!r} does not say what its image "
                                   f"processor returns (hook mm_hf_image_outputs)")
        options = pipe.capabilities.item_options.get("image", {})
        # The family's per-item options are the processor's call-time kwargs of the same name.
        self._item_options = frozenset(options)
        self._stacks_untyped = _stacks_without_return_tensors(original)
        # The processor's size is the smart_resize bounds only when it holds exactly the family's.
        self._size_is_bounds = size_is_bounds(getattr(original, "size", None), self._spec, options)

    @property
    def original(self) -> Any:
        """The transformers image processor this one stands in for."""
        return self._original

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    def __repr__(self) -> str:
        return f"AcceleratedImageProcessor({self._original!r})"

    def __call__(self, images: Any = None, *args: Any, **kwargs: Any) -> Any:
        try:
            if args:
                raise Declined("positional arguments after images")
            call = self._plan(images, kwargs)
            result = self._run(*call)
        except Declined as e:
            stats.fallback(self._name, str(e))
            return self._original(images, *args, **kwargs)
        stats.served(self._name)
        return result

    preprocess = __call__

    # -- deciding -----------------------------------------------------------------

    def _plan(self, images: Any, kwargs: Mapping[str, Any]) -> tuple[list[Any], str, str | None]:
        kwargs = dict(kwargs)
        return_tensors = _tensor_type(kwargs.pop("return_tensors", None))
        if return_tensors is None and not self._stacks_untyped:
            raise Declined("return_tensors None: the processor returns per-image lists then")
        pixels = self._pixels(kwargs.pop("do_rescale", None), kwargs.pop("do_normalize", None))
        options = self._bounds(kwargs.pop("size", None), kwargs.pop("min_pixels", None), kwargs.pop("max_pixels", None))
        convert = kwargs.pop("do_convert_rgb", None)
        # A processor passes its own default (Gemma 3's True) over the image processor's saved null.
        convert = self._original.do_convert_rgb if convert is None else convert
        for key, value in kwargs.items():
            if key in _INERT or hasattr(self._original, key) and _same(value, getattr(self._original, key)):
                continue
            if key not in self._item_options or value is None:
                raise Declined(f"option {key!r}")
            options[key] = value
        items = [self._item(im, options, convert) for im in _flat(images)]
        if not items:
            raise Declined("no images")
        return items, pixels, return_tensors

    def _pixels(self, rescale: bool | None, normalize: bool | None) -> str:
        return self._pipelines.mode(self._original, rescale, normalize)

    def _bounds(self, size: Any, min_pixels: Any, max_pixels: Any) -> dict[str, int]:
        if size is None and min_pixels is None and max_pixels is None:
            return {}
        if not self._size_is_bounds:
            raise Declined("size / min_pixels / max_pixels on a processor whose size is not its pixel bounds")
        return pixel_bounds(self._original.size, size, min_pixels, max_pixels)

    def _item(self, image: Any, options: dict[str, int], convert: bool | None) -> Any:
        if isinstance(image, PILImage.Image):
            if image.mode != "RGB" and not convert:
                raise Declined(f"a {image.mode} image with do_convert_rgb off")
            source: Any = image
        else:
            source = _hwc(image)
        return Image(source, **options) if options else source

    def _pipe(self, pixels: str) -> Pipeline | None:
        return self._pipelines.get(pixels)

    # -- serving ------------------------------------------------------------------

    def _run(self, items: list[Any], pixels: str, return_tensors: str | None) -> Any:
        from transformers import BatchFeature

        pipe = self._pipe(pixels)
        try:
            kwargs = pipe.hf_image_outputs(pipe.process(MmInput(images=items)))
        except MmError as e:
            raise Declined(f"{type(e).__name__}: {e}") from None
        if pixels == "u8" and self._backend == "pil":
            # The PIL backend keeps its float32 arrays when it neither rescales nor normalizes.
            kwargs = {k: v.astype(np.float32) if v.dtype == np.uint8 else v for k, v in kwargs.items()}
        data = {k: _writable(v) for k, v in kwargs.items()}
        if return_tensors == "pt" or (return_tensors is None and self._backend == "torchvision"):
            from ..handoff import to_torch

            data = {k: to_torch(v) for k, v in data.items()}
        return BatchFeature(data=data)


def _stacks_without_return_tensors(original: Any) -> bool:
    """Whether ``original`` called without ``return_tensors`` still gives arrays or tensors (the
    Qwen-VL processors stack their outputs themselves) rather than per-image lists (DeepSeek-OCR 2's):
    asked once, of the processor itself, on a small image. A processor that fails on it counts
    as giving lists, so such calls go to it."""
    try:
        out = original(images=[PILImage.new("RGB", (_PROBE.shape[1], _PROBE.shape[0]))])
    except Exception:  # any refusal of the probe: decline those calls rather than guess
        return False
    return all(hasattr(v, "dtype") and hasattr(v, "shape") for v in out.values())


def _flat(images: Any) -> list[Any]:
    if isinstance(images, (list, tuple)):
        out = []
        for im in images:
            out += list(im) if isinstance(im, (list, tuple)) else [im]
        return out
    return [] if images is None else [images]


def _hwc(image: Any) -> np.ndarray:
    """A uint8 HWC array of an array or CPU tensor image, with transformers' channel inference."""
    if type(image).__module__.startswith("torch"):
        if getattr(image, "device", None) is None or image.device.type != "cpu":
            raise Declined("a tensor image not on the CPU")
        image = image.numpy()
    if not isinstance(image, np.ndarray):
        raise Declined(f"an image of type {type(image).__name__}")
    if image.dtype != np.uint8 or image.ndim != 3:
        raise Declined(f"a {image.dtype} array image of {image.ndim} dimensions")
    if image.shape[0] in (1, 3):
        if image.shape[0] == 1:
            raise Declined("a one-channel array image")
        return np.ascontiguousarray(image.transpose(1, 2, 0))
    if image.shape[2] != 3:
        raise Declined(f"an array image of shape {list(image.shape)}")
    return image
