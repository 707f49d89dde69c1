"""``AcceleratedVideoProcessor``: a transformers video processor's call, served by a pipeline.

The frames are chosen as transformers chooses them, by transformers' own code: the call's
``videos`` and ``video_metadata`` batched with ``make_batched_videos`` /
``make_batched_metadata``, and, with ``do_sample_frames``, the indices of the processor's
own ``sample_frames`` with the call's options (``fps``, ``num_frames``, ``min_frames``,
``max_frames``: whatever that method reads), recorded in the metadata as transformers
records them. That is index arithmetic; the pipeline does the rest (resize, rescale,
normalize, patchify) on the chosen frames, with the spec of the video processor's dict
with sampling off (:func:`.resolve.video_processor_spec`), and with no prompt
(``Pipeline.process_items``: the video processor returns no ids, and a family's prompt may
need the tokenizer, as GLM-4V's timestamps do). A call is served only when:

* every video is a uint8 array or CPU tensor of 4 dimensions (or a list of frames that
  transformers stacks into one: ``PIL.Image`` frames, 3-D arrays) with 3 channels, first or
  last as transformers infers them (from the first video, for all, as it does);
* ``return_tensors`` is ``None`` / ``"pt"`` (torch) or ``"np"``;
* ``do_rescale`` and ``do_normalize`` are the processor's own, or both off when the family
  offers uint8 patches (``pixels="u8"``: the tensors are then uint8, as transformers');
* ``size`` / ``min_pixels`` / ``max_pixels`` (where the processor takes them) when its
  ``size`` is the pixel bounds of a family taking ``min_pixels`` / ``max_pixels`` per item;
* ``return_metadata`` either way (``video_metadata`` is then transformers' own objects);
* any other option the processor takes at its own value. A pipeline refusal (a limit, an
  aspect ratio transformers refuses too) and anything transformers' batching or sampling
  raises hand the call back as well, so the result, or the error, is the original's.

Built with ``cast="bfloat16"``, a float32 call returning torch tensors gets its features in
bfloat16 where the family writes ``pixels="bf16"``, as the image adapter does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..carriers import VideoFrames
from ..errors import MmError, UnsupportedError
from ..request import MmInput, Video
from .calls import (
    Declined, Pipelines, StandIn, checked_cast, cpu_array, same, size_is_bounds, tensor_type, torch_outputs, writable,
)
from .resolve import SAMPLING

# The options transformers' preprocess takes out before sampling (the rest reach sample_frames).
_BEFORE_SAMPLING = ("input_data_format", "do_convert_rgb", "do_sample_frames", "device", "video_metadata")
# One small clip, to ask the family once whether it describes its video processor's output
# (4 frames: a temporal patch of 3 or 4 frames refuses fewer).
_PROBE = np.zeros((4, 32, 32, 3), dtype=np.uint8)


class AcceleratedVideoProcessor(StandIn):
    """Stands in for the video processor ``original``; thread-safe: the pipelines are
    immutable and built once."""

    MEDIA = "videos"

    def __init__(self, original: Any, spec: Mapping[str, Any], *, cast: str | None = None) -> None:
        super().__init__(original)
        self._cast = checked_cast(cast)
        self._pipelines = Pipelines(spec)
        pipe = self._pipelines.get("f32")
        try:
            probed = pipe.hf_video_outputs(pipe.process_items(MmInput(videos=[_PROBE])))
        except MmError as e:
            raise UnsupportedError(f"{self._name}: family {spec['family']!r} refuses a {len(_PROBE)}-frame "
                                   f"probe clip ({type(e).__name__}: {e})") from None
        if probed is None:
            raise UnsupportedError(f"{self._name}: family {spec['family']!r} does not say what its video "
                                   f"processor returns (hook mm_hf_video_outputs)")
        options = pipe.capabilities.item_options.get("video", {})
        self._size_is_bounds = size_is_bounds(getattr(original, "size", None), spec, options)
        self._valid = frozenset(original.valid_kwargs.__annotations__)

    # -- deciding -----------------------------------------------------------------

    def _options(self, kwargs: Mapping[str, Any]) -> tuple[str, dict[str, int], str | None, bool]:
        """The call's pixel mode, per-item bounds, tensor type and ``return_metadata``; declines
        any option that is not served."""
        kwargs = dict(kwargs)
        for key in kwargs:
            if key not in self._valid and key != "return_tensors":
                raise Declined(f"option {key!r}")
        return_tensors = tensor_type(kwargs.pop("return_tensors", None))
        pixels = self._pipelines.mode(self._original, kwargs.pop("do_rescale", None), kwargs.pop("do_normalize", None))
        bounds = self._bounds(kwargs.pop("size", None), kwargs.pop("min_pixels", None), kwargs.pop("max_pixels", None))
        metadata = kwargs.pop("return_metadata", None)
        metadata = self._original.return_metadata if metadata is None else metadata
        for key, value in kwargs.items():
            # Sampling options reach only sample_frames; 3-channel frames make do_convert_rgb a no-op.
            if key in SAMPLING or key in _BEFORE_SAMPLING:
                continue
            if not (hasattr(self._original, key) and same(value, getattr(self._original, key))):
                raise Declined(f"option {key!r}")
        if kwargs.get("device") is not None:
            raise Declined("option 'device'")
        return pixels, bounds, return_tensors, bool(metadata)

    def _frames(self, videos: Any, kwargs: Mapping[str, Any]) -> tuple[list[np.ndarray], list[Any]]:
        """The frames transformers processes, ``[T, H, W, 3]`` uint8 each, and its metadata."""
        from transformers.image_utils import ChannelDimension, infer_channel_dimension_format
        from transformers.video_utils import make_batched_metadata, make_batched_videos

        try:
            batch = make_batched_videos(videos)
            metadata = make_batched_metadata(batch, video_metadata=kwargs.get("video_metadata"))
        except Exception as e:  # transformers refuses the input: let it say so
            raise Declined(f"videos transformers does not batch ({type(e).__name__})") from None
        if not batch:
            raise Declined("no videos")
        arrays = [_array(v) for v in batch]
        sample = kwargs.get("do_sample_frames")
        if self._original.do_sample_frames if sample is None else sample:
            sampler = self._sampler(kwargs)
            for i, (video, meta) in enumerate(zip(arrays, metadata)):
                try:
                    indices = sampler(metadata=meta)
                except Exception as e:  # transformers raises it again, for the caller
                    raise Declined(f"sample_frames refused ({type(e).__name__})") from None
                meta.frames_indices = indices
                chosen = np.asarray(indices)
                if chosen.ndim != 1 or not len(chosen) or chosen.min() < 0 or chosen.max() >= len(video):
                    raise Declined("sample_frames chose frames the video does not have")
                arrays[i] = video[chosen]
        layout = kwargs.get("input_data_format")
        try:
            layout = ChannelDimension(layout) if layout is not None else infer_channel_dimension_format(arrays[0])
        except ValueError:
            raise Declined("a video whose channel dimension transformers cannot infer") from None
        frames = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)) if layout == ChannelDimension.FIRST else a
                  for a in arrays]
        for f in frames:
            if f.shape[-1] != 3:
                raise Declined(f"a video of shape {list(f.shape)} ({f.shape[-1]} channels)")
        return frames, metadata

    def _sampler(self, kwargs: Mapping[str, Any]) -> Any:
        """``sample_frames`` with the options transformers' preprocess gives it."""
        full = dict(kwargs)
        for name in self._valid:
            full.setdefault(name, getattr(self._original, name, None))
        for name in _BEFORE_SAMPLING:
            full.pop(name, None)
        return functools.partial(self._original.sample_frames, **full)

    # -- serving ------------------------------------------------------------------

    def _serve(self, videos: Any, kwargs: Mapping[str, Any]) -> Any:
        from transformers import BatchFeature

        pixels, bounds, return_tensors, metadata = self._options(kwargs)
        frames, meta = self._frames(videos, kwargs)
        items = [Video(VideoFrames(f), **bounds) if bounds else VideoFrames(f) for f in frames]
        torch_out = return_tensors != "np"  # a torchvision processor: torch tensors unless asked for numpy
        if pixels == "f32" and self._cast and torch_out and self._pipelines.get("bf16") is not None:
            pixels = "bf16"
        pipe = self._pipelines.get(pixels)
        try:
            out = pipe.hf_video_outputs(pipe.process_items(MmInput(videos=items)))
        except MmError as e:
            raise Declined(f"{type(e).__name__}: {e}") from None
        data = {k: writable(v) for k, v in out.items()}
        result = BatchFeature(data=torch_outputs(data, pixels) if torch_out else data)
        if metadata:
            result["video_metadata"] = meta
        return result


def _array(video: Any) -> np.ndarray:
    """A batched video as a uint8 numpy array (a CPU tensor's own buffer)."""
    video = cpu_array(video, "video")
    if video.dtype != np.uint8 or video.ndim != 4:
        raise Declined(f"a {video.dtype} video of {video.ndim} dimensions")
    return video
