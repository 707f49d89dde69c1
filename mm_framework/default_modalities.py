"""The built-in modalities, image, video and audio, registered like any plugin's.

Images: encoded bytes are decoded by the family's ``mm_decode`` (the core Pillow decoder
by default); a ``PIL.Image.Image`` or uint8 array is taken as pixels. Videos: encoded
clips are decoded with PyAV (only the frames the family's ``mm_sample_frames`` picks); a
``[T, H, W, 3]`` array, a list of frames or :class:`~.carriers.VideoFrames` are frames the
caller decoded; a family that asks for it (``DecodeOptions.video_audio``) also gets the
clip's audio track, the file's through :mod:`.media.audio_av` or ``VideoFrames.audio``
(both limited as audio items). Audio: encoded files are decoded with soundfile to
source-rate mono float32 (:mod:`.media.audio`, the ``audio`` extra); :class:`~.carriers.Audio`
holds samples the caller decoded. The family resamples to its rate (``mm_framework.kernels.resample``).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from PIL import Image

from .carriers import Audio, AudioHeader, ClipHeader, DecodedAudio, DecodedImage, ImageHeader, ItemPlan, VideoFrames
from .errors import InvalidInputError, LimitExceededError, MmError
from .hookspecs import hookimpl
from .limits import Limits
from .media import audio_av
from .media.audio import TakenAudio, check_seconds, decode_audio, read_header as read_audio_header, take_audio
from .media.clips import DecodedClip, take_clip
from .media.decode import decoded_size
from .media.decoded import DecodedSource, take_decoded
from .media.video import VideoClip, decode_clip, read_header
from .media.video_frames import select_frames
from .modality import ENCODED_FORMS, Fetch, ItemContext, Modality


def _refuse(what: str, source: Any, forms: str) -> InvalidInputError:
    return InvalidInputError(
        f"unsupported {what}source type {type(source).__name__}; expected {forms}"
    )


def _too_large(header: Any, what: str, n: int, name: str, limit: int) -> LimitExceededError:
    return LimitExceededError(
        f"the family would process a {header.width}x{header.height} item at {what} = {n} pixels, "
        f"above Limits.{name} = {limit}"
    )


class ImageModality(Modality):
    name, keyword = "image", "images"
    decoded_forms = "a PIL.Image.Image or a uint8 numpy array"

    def check_source(self, source: Any) -> Any:
        if not isinstance(source, (*ENCODED_FORMS, Image.Image, np.ndarray)):
            raise _refuse("", source, f"bytes, str, a pathlib.Path, {self.decoded_forms}")
        return source

    def take_decoded(self, source: Any, limits: Limits, budget: Any, fetch: Fetch) -> DecodedSource | None:
        if isinstance(source, (Image.Image, np.ndarray)):
            return take_decoded(source, limits.max_image_pixels, budget)
        return None

    def probe(self, source: Any, item: ItemContext) -> ImageHeader:
        if isinstance(source, DecodedSource):
            return ImageHeader(*source.size(item.decode_options))
        return ImageHeader(*decoded_size(source, item.decode_options))

    def decode(self, source: Any, item: ItemContext) -> DecodedImage:
        if isinstance(source, DecodedSource):
            return source.to_rgb(item.decode_options)
        return item.hooks.decode(source, item.decode_options, item.index)

    def header_of(self, media: DecodedImage) -> ImageHeader:
        return ImageHeader(media.width, media.height)

    def check_processed(self, header: ImageHeader, plan: ItemPlan, media: Any, limits: Limits) -> None:
        w, h = plan.size
        if w * h > limits.max_processed_pixels:
            raise _too_large(header, f"{w}x{h}", w * h, "max_processed_pixels", limits.max_processed_pixels)

    def size_of(self, header: ImageHeader) -> tuple[int, int]:
        return header.width, header.height


class VideoModality(Modality):
    name, keyword = "video", "videos"
    decoded_forms = "a uint8 [T, H, W, 3] array, a list of frames or VideoFrames"

    def check_source(self, source: Any) -> Any:
        if isinstance(source, (list, tuple)):  # a bare sequence of frames
            source = VideoFrames(source)
        if not isinstance(source, (*ENCODED_FORMS, VideoFrames, np.ndarray)):
            raise _refuse("video ", source, f"an encoded clip (bytes, str, a pathlib.Path), {self.decoded_forms}")
        return source

    def take_decoded(self, source: Any, limits: Limits, budget: Any, fetch: Fetch) -> DecodedClip | None:
        if isinstance(source, (VideoFrames, np.ndarray)):
            return take_clip(source, limits, budget, fetch)
        return None

    def probe(self, source: Any, item: ItemContext) -> ClipHeader:
        header = source.clip.header if isinstance(source, DecodedClip) else read_header(source)
        if not item.decode_options.video_audio:
            return header
        return attrs.evolve(header, audio=self._track(source, item, lambda t: t.header, audio_av.track_header))

    def decode(self, source: Any, item: ItemContext) -> VideoClip:
        hooks, limits = item.hooks, item.limits
        try:
            if isinstance(source, DecodedClip):
                chosen = hooks.sample_frames(source.clip.header, item.index)
                clip = source.clip if chosen is None else select_frames(source.clip, chosen)
            else:
                clip = decode_clip(
                    source, lambda header: hooks.sample_frames(header, item.index),
                    max_frames=limits.max_video_frames, max_pixels=limits.max_video_pixels,
                )
            if not item.decode_options.video_audio:
                return clip
            return attrs.evolve(clip, audio=self._track(source, item, lambda t: t.audio, audio_av.decode_track))
        except MmError as e:
            raise e.at_item(item.index) from None

    @staticmethod
    def _track(source: Any, item: ItemContext, given: Any, read: Any) -> Any:
        """The clip's audio track (``None`` without one): ``given(source.audio)`` for frames
        given with their ``Audio``, ``read(bytes, limits)`` for a file."""
        if isinstance(source, DecodedClip):
            return None if source.audio is None else given(source.audio)
        return read(source, item.limits)

    def header_of(self, media: VideoClip) -> ClipHeader:
        return media.header

    def check_processed(self, header: ClipHeader, plan: ItemPlan, media: VideoClip | None, limits: Limits) -> None:
        if media is None:  # a count: which frames are kept is known only when decoding
            return
        w, h = plan.size
        n = w * h * media.num_frames
        if n > limits.max_video_pixels:
            raise _too_large(header, f"{media.num_frames} frames of {w}x{h}", n, "max_video_pixels",
                             limits.max_video_pixels)

    def size_of(self, header: ClipHeader) -> tuple[int, int]:
        return header.width, header.height

    def frames_of(self, media: VideoClip) -> int:
        return media.num_frames


class AudioModality(Modality):
    name, keyword = "audio", "audios"
    decoded_forms = "mm_framework.Audio (float32 samples with their sample_rate)"

    def check_source(self, source: Any) -> Any:
        if isinstance(source, np.ndarray):  # samples without their rate cannot be taken
            raise _refuse("audio ", source, f"bytes, str, a pathlib.Path, {self.decoded_forms}")
        return source if isinstance(source, Audio) else super().check_source(source)

    def take_decoded(self, source: Any, limits: Limits, budget: Any, fetch: Fetch) -> TakenAudio | None:
        return take_audio(source, limits, budget) if isinstance(source, Audio) else None

    def probe(self, source: Any, item: ItemContext) -> AudioHeader:
        if isinstance(source, TakenAudio):
            return source.header
        return read_audio_header(source, item.limits)

    def decode(self, source: Any, item: ItemContext) -> DecodedAudio:
        if isinstance(source, TakenAudio):
            return source.audio
        return decode_audio(source, item.limits, lambda header: item.hooks.audio_frames(header, item.index))

    def header_of(self, media: DecodedAudio) -> AudioHeader:
        return media.header

    def check_processed(self, header: AudioHeader, plan: ItemPlan, media: Any, limits: Limits) -> None:
        # Files are refused from their header while it is read; a length asked about
        # (num_media_tokens(seconds=...)) reaches the limit only here.
        check_seconds(header, limits)


@hookimpl
def mm_register_modalities(register: Any) -> None:
    register(ImageModality())
    register(VideoModality())
    register(AudioModality())
