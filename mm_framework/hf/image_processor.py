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
  patches (``pixels="u8"``): each output then has the dtype the processor gives a small
  image with both off (the torchvision backends return uint8, the PIL ones float32 or uint8
  by processor), asked once;
* ``size`` / ``min_pixels`` / ``max_pixels`` when the processor's ``size`` is the pixel
  bounds ``{"shortest_edge", "longest_edge"}`` of a family taking ``min_pixels`` /
  ``max_pixels`` per item, combined as transformers' ``_standardize_kwargs`` combines them;
* the family's per-item options (``Capabilities.item_options``: Gemma 3's
  ``do_pan_and_scan``, ...), which are the processor's call-time kwargs of the same name;
* the family's ``Capabilities.hf_config_kwargs`` (Pixtral's ``patch_size``): the call is
  served by the spec the family resolves from the processor's saved config holding the
  call's value (a value it refuses hands the call back);
* images nested per sample where the family's outputs carry ``batch_num_images``
  (LLaVA-OneVision's): only when the family's count equals the call's nesting, else the
  call goes back (after processing: such calls are not expected from the processors).
* any other option only at the processor's own value (it changes nothing). A value the
  pipeline refuses (a ``SpecError`` for the item) hands the call back too.

Built with ``cast="bfloat16"`` (by a caller that casts every floating output to bfloat16
right after the call, as vLLM does to a bfloat16 model's inputs), a float32 call returning
torch tensors gets its features in bfloat16 straight from the family where it offers
``pixels="bf16"`` (the same values the cast gives, written once at half the bytes); other
outputs keep their dtype (the caller's cast takes them).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image as PILImage

from ..errors import MmError, SpecError, UnsupportedError
from ..pipeline import Pipeline
from ..request import Image, MmInput
from .calls import (
    Declined, StandIn, checked_cast, cpu_array, pixel_mode, same, size_is_bounds, tensor_type, torch_outputs, writable,
)
from .resolve import image_processor_spec

# Options whose value never changes the tensors (batching only).
_INERT = frozenset({"disable_grouping"})
# One small image, to ask the family once whether it describes its image processor's output.
_PROBE = np.zeros((28, 28, 3), dtype=np.uint8)
# Pipelines built for call kwargs of the saved config, at most (a request may send any value).
_MAX_PIPES = 32
# The pixel modes besides f32, as a refusal names them.
_PATCH_NAMES = {"u8": "uint8", "bf16": "bfloat16"}


class AcceleratedImageProcessor(StandIn):
    """Stands in for the image processor ``original``; thread-safe: the pipelines are
    immutable and built once."""

    def __init__(self, original: Any, spec: Mapping[str, Any], *, cast: str | None = None) -> None:
        super().__init__(original)
        self._cast = checked_cast(cast)
        self._spec = dict(spec)
        # Unhashed, as in calls.Pipelines: nothing of a transformers call carries a hash.
        base = Pipeline(self._spec, hashes=False)
        # (pixels, the call's config kwargs as JSON) -> its pipeline, or why there is none.
        self._pipes: dict[tuple[str, str], Pipeline | str] = {("f32", ""): base}
        self._lock = threading.Lock()
        self._backend = self._spec.get("backend", "pil")
        if base.hf_image_outputs(base.process_items(MmInput(images=[_PROBE]))) is None:
            raise UnsupportedError(f"{self._name}: family {self._spec['family']!r} does not say what its image "
                                   f"processor returns (hook mm_hf_image_outputs)")
        options = base.capabilities.item_options.get("image", {})
        # The family's per-item options are the processor's call-time kwargs of the same name.
        self._item_options = frozenset(options)
        self._config_kwargs = base.capabilities.hf_config_kwargs
        # Output name -> the dtype the processor gives it with do_rescale and do_normalize off.
        self._u8_dtypes: dict[str, np.dtype] | None = None
        self._stacks_untyped = _stacks_without_return_tensors(original)
        # The processor's size is the smart_resize bounds only when it holds exactly the family's.
        self._size_is_bounds = size_is_bounds(getattr(original, "size", None), self._spec, options)

    def _serve(self, images: Any, kwargs: Mapping[str, Any]) -> Any:
        return self._run(*self._plan(images, kwargs))

    # -- deciding -----------------------------------------------------------------

    def _plan(self, images: Any, kwargs: Mapping[str, Any]) -> tuple[list[Any], str, str, str | None, Any]:
        kwargs = dict(kwargs)
        return_tensors = tensor_type(kwargs.pop("return_tensors", None))
        if return_tensors is None and not self._stacks_untyped:
            raise Declined("return_tensors None: the processor returns per-image lists then")
        pixels = self._pixels(kwargs.pop("do_rescale", None), kwargs.pop("do_normalize", None))
        options = self._bounds(kwargs.pop("size", None), kwargs.pop("min_pixels", None), kwargs.pop("max_pixels", None))
        convert = kwargs.pop("do_convert_rgb", None)
        # A processor passes its own default (Gemma 3's True) over the image processor's saved null.
        convert = self._original.do_convert_rgb if convert is None else convert
        changes = {}
        for key, value in kwargs.items():
            if key in _INERT or hasattr(self._original, key) and same(value, getattr(self._original, key)):
                continue
            if value is None or key not in self._item_options | self._config_kwargs:
                raise Declined(f"option {key!r}")
            (changes if key in self._config_kwargs else options)[key] = value
        items = [self._item(im, options, convert) for im in _flat(images)]
        if not items:
            raise Declined("no images")
        try:
            config = json.dumps(changes, sort_keys=True) if changes else ""
        except (TypeError, ValueError):
            raise Declined(f"options {sorted(changes)} of types JSON does not hold") from None
        return items, pixels, config, return_tensors, _groups(images)

    def _pixels(self, rescale: bool | None, normalize: bool | None) -> str:
        return pixel_mode(self._original, rescale, normalize)

    def _item(self, image: Any, options: dict[str, int], convert: bool | None) -> Any:
        if isinstance(image, PILImage.Image):
            if image.mode != "RGB" and not convert:
                raise Declined(f"a {image.mode} image with do_convert_rgb off")
            source: Any = image
        else:
            source = _hwc(image)
        return Image(source, **options) if options else source

    def _pipe(self, pixels: str, config: str) -> Pipeline:
        """The pipeline of ``pixels`` (``"f32"``, ``"u8"`` or ``"bf16"``) and the call's config kwargs
        (``config``, JSON), built once; ``Declined`` saying why there is none."""
        key = (pixels, config)
        with self._lock:
            found = self._pipes.get(key)
            if found is None:
                found = self._build(pixels, config)
                if len(self._pipes) >= _MAX_PIPES:
                    self._pipes = {("f32", ""): self._pipes["f32", ""]}
                self._pipes[key] = found
        if isinstance(found, str):
            raise Declined(found)
        return found

    def _build(self, pixels: str, config: str) -> Pipeline | str:
        spec = self._spec
        if config:
            try:
                spec = image_processor_spec(self._original, json.loads(config))
            except UnsupportedError as e:
                return f"options {config}: {e}"
        try:
            pipe = Pipeline(spec if pixels == "f32" else {**spec, "pixels": pixels}, hashes=False)
        except SpecError as e:
            if pixels in _PATCH_NAMES:
                return f"{_PATCH_NAMES[pixels]} patches: family {self._spec['family']!r} has no pixels={pixels!r}"
            return f"options {config}: {e}"
        if pixels == "u8" and self._u8_dtypes is None:
            try:
                out = self._original(images=[_probe_image()], do_rescale=False, do_normalize=False,
                                     return_tensors="np")
            except Exception:  # any refusal of the probe: decline those calls rather than guess
                return "uint8 patches: the processor refuses a small image with do_rescale and do_normalize off"
            self._u8_dtypes = {k: np.asarray(v).dtype for k, v in out.items()}
        return pipe

    # -- serving ------------------------------------------------------------------

    def _run(self, items: list[Any], pixels: str, config: str, return_tensors: str | None, groups: Any) -> Any:
        from transformers import BatchFeature

        torch_out = return_tensors == "pt" or (return_tensors is None and self._backend == "torchvision")
        pipe = None
        if pixels == "f32" and self._cast and torch_out:
            try:
                pipe, pixels = self._pipe("bf16", config), "bf16"
            except Declined:  # the family writes no bf16 patches: f32, for the caller's cast
                pass
        pipe = pipe or self._pipe(pixels, config)
        try:
            # The features alone: the processor around this one writes the prompt.
            kwargs = pipe.hf_image_outputs(pipe.process_items(MmInput(images=items)))
        except MmError as e:
            raise Declined(f"{type(e).__name__}: {e}") from None
        if "batch_num_images" in kwargs and kwargs["batch_num_images"].tolist() != groups:
            # transformers counts the images of each sample from the call's nesting.
            raise Declined(f"images nested {groups} per sample, the family gives batch_num_images "
                           f"{kwargs['batch_num_images'].tolist()}")
        if pixels == "u8":
            # Some PIL backends keep float32 arrays when they neither rescale nor normalize.
            kwargs = {k: v.astype(self._u8_dtypes.get(k, v.dtype), copy=False) if v.dtype == np.uint8 else v
                      for k, v in kwargs.items()}
        data = {k: writable(v) for k, v in kwargs.items()}
        return BatchFeature(data=torch_outputs(data, pixels) if torch_out else data)


def _stacks_without_return_tensors(original: Any) -> bool:
    """Whether ``original`` called without ``return_tensors`` still gives arrays or tensors (the
    Qwen-VL processors stack their outputs themselves) rather than per-image lists (DeepSeek-OCR 2's):
    asked once, of the processor itself, on a small image. A processor that fails on it counts
    as giving lists, so such calls go to it."""
    try:
        out = original(images=[_probe_image()])
    except Exception:  # any refusal of the probe: decline those calls rather than guess
        return False
    return all(hasattr(v, "dtype") and hasattr(v, "shape") for v in out.values())


def _probe_image() -> PILImage.Image:
    return PILImage.new("RGB", (_PROBE.shape[1], _PROBE.shape[0]))


def _groups(images: Any) -> list[int] | None:
    """transformers' images per sample (LLaVA-OneVision's ``batch_num_images``): a nested
    list's non-empty sublists, else one each; ``None`` for a list nesting only some."""
    if not isinstance(images, (list, tuple)):
        return [1]
    nested = [isinstance(im, (list, tuple)) for im in images]
    if not any(nested):
        return [1] * len(images)
    return [len(im) for im in images if im] if nested[0] and all(nested) else None


def _flat(images: Any) -> list[Any]:
    if isinstance(images, (list, tuple)):
        out = []
        for im in images:
            out += list(im) if isinstance(im, (list, tuple)) else [im]
        return out
    return [] if images is None else [images]


def _hwc(image: Any) -> np.ndarray:
    """A uint8 HWC array of an array or CPU tensor image, with transformers' channel inference."""
    image = cpu_array(image, "image")
    if image.dtype != np.uint8 or image.ndim != 3:
        raise Declined(f"a {image.dtype} array image of {image.ndim} dimensions")
    if image.shape[0] in (1, 3):
        if image.shape[0] == 1:
            raise Declined("a one-channel array image")
        return np.ascontiguousarray(image.transpose(1, 2, 0))
    if image.shape[2] != 3:
        raise Declined(f"an array image of shape {list(image.shape)}")
    return image
