"""Audio bytes to samples, as ``transformers.audio_utils.load_audio(..., backend="soundfile")``.

That loader decodes with soundfile (libsndfile) to float32, downmixes by averaging the
channels (``waveform.T.mean(axis=0)``) and resamples with soxr (``soxr_hq``, then padded
or trimmed to ``ceil(n * to / from)``). Here the same three steps are split where the
family seam splits them: :func:`decode_audio` gives the source-rate mono samples, and the
family resamples to its own rate with ``mm_framework.kernels.resample`` (the decoder does
not know the family's rate; docs/audio.md).

Formats: those of libsndfile that serving clients send (WAV, FLAC, OGG with Vorbis or
Opus, MP3); the rest libsndfile parses (AIFF, CAF, W64, ...) are refused, as the image
decoder refuses TIFF: more decoders are more attack surface. MP4/M4A and WebM/Matroska,
which libsndfile cannot read, are decoded through PyAV (:mod:`.audio_av`, the ``video``
extra); bare ADTS AAC, whose header holds no length, is refused by name.

soundfile and soxr are the optional ``audio`` extra, imported when an item needs them.
"""

from __future__ import annotations

import io
from typing import Any

import attrs
import numpy as np

from ..carriers import Audio, AudioHeader, DecodedAudio
from ..errors import LimitExceededError, MediaError, UnsupportedError
from ..limits import Limits
from . import audio_av
from .audio_samples import Keep, check_finite, check_seconds, downmix, kept_frames
from .hashing import keyed_digest
from .policy import ByteBudget

HASH_CONTEXT = "mm_framework 2026-12 decoded audio v1"
# libsndfile's major format names we decode (soundfile.info(...).format).
FORMATS = ("WAV", "WAVEX", "FLAC", "OGG", "MP3")
# Frames per read while downmixing: the multi-channel block stays small whatever the length.
_BLOCK = 1 << 16
# Formats read in one call: libsndfile's MPEG decoder gives other float32 values (last-bit
# differences after the first read) when a stream is read in several calls, and the
# reference reads the whole file in one. What is read is still bounded by the family's
# ``mm_audio_frames``.
_ONE_READ = ("MP3",)


def _soundfile() -> Any:
    try:
        import soundfile
    except ImportError:
        raise UnsupportedError("audio needs soundfile: pip install 'mm_framework[audio]'") from None
    return soundfile


def _container(data: bytes) -> str | None:
    """The name of a container libsndfile cannot read, from its magic bytes, or ``None``."""
    head = data[:64]
    if head[4:8] == b"ftyp":
        return "MP4/M4A"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "WebM/Matroska"
    if head[:2] in (b"\xff\xf1", b"\xff\xf9"):
        return "AAC (ADTS)"
    return None


SUPPORTED = "WAV, FLAC, OGG/Vorbis, Opus and MP3 are, and MP4/M4A and WebM/Matroska through PyAV"


def _other(data: bytes) -> str | None:
    """The container PyAV decodes, from its magic bytes, or ``None`` for libsndfile's."""
    other = _container(data)
    if other == "AAC (ADTS)":
        raise UnsupportedError(f"audio: {other} is not supported, its header holds no length ({SUPPORTED})")
    return other


def _open(data: bytes) -> Any:
    sf = _soundfile()
    try:
        f = sf.SoundFile(io.BytesIO(data))
    except (sf.SoundFileError, RuntimeError, ValueError, TypeError) as e:
        # libsndfile's own words, without the BytesIO repr soundfile puts before them.
        raise MediaError(f"audio: not a readable audio file ({getattr(e, 'error_string', None) or e})") from None
    if f.format not in FORMATS:
        f.close()
        raise UnsupportedError(f"audio: {f.format} is not supported ({SUPPORTED})")
    return f


def _header(f: Any) -> AudioHeader:
    return AudioHeader(int(f.samplerate), int(f.channels), int(f.frames))


def read_header(data: bytes, limits: Limits) -> AudioHeader:
    """The header of encoded audio, read without decoding a sample; limits checked."""
    other = _other(data)
    if other is not None:
        return audio_av.read_header(data, limits, other)
    with _open(data) as f:
        header = _header(f)
    check_seconds(header, limits)
    return header


def decode_audio(data: bytes, limits: Limits, keep: Keep = None) -> DecodedAudio:
    """Encoded audio decoded to float32 mono at its own rate, read block by block so a
    multi-channel file never holds more than the mono result and one block. ``keep(header)``
    (the family's ``mm_audio_frames``) may bound how many frames from the start are read."""
    other = _other(data)
    if other is not None:
        return audio_av.decode_audio(data, limits, other, keep)
    with _open(data) as f:
        header = _header(f)
        check_seconds(header, limits)
        wanted = kept_frames(header, keep)
        step = wanted if f.format in _ONE_READ else _BLOCK
        # soundfile's read() reads the header's frame count (or fewer at a truncated end).
        out = np.empty(wanted, np.float32)
        n = 0
        try:
            while n < wanted:
                block = f.read(min(step, wanted - n), dtype="float32", always_2d=True)
                if not len(block):
                    break
                out[n:n + len(block)] = downmix(block)
                n += len(block)
        except (RuntimeError, ValueError) as e:
            raise MediaError(f"audio: corrupt {header.frames}-frame {f.format} stream ({e})") from None
    if n != wanted:  # a count from the header must equal what processing sees
        raise MediaError(f"audio: truncated stream ({n} of the {header.frames} frames its header declares)")
    check_finite(out, "audio: the decoded samples")
    return DecodedAudio(out, header.sample_rate, header.channels, None if wanted == header.frames else header.frames)


@attrs.frozen(eq=False)
class TakenAudio:
    """Audio given as samples: checked, downmixed, copied and hashed when the request was taken."""

    audio: DecodedAudio
    header: AudioHeader
    hash: int


def take_audio(src: Audio, limits: Limits, budget: ByteBudget) -> TakenAudio:
    """``src`` as a :class:`TakenAudio`, after the checks, the seconds limit and the byte budget."""
    arr = src.array
    if not isinstance(arr, np.ndarray) or arr.dtype != np.float32 or arr.ndim not in (1, 2):
        what = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
        raise MediaError(f"decoded audio: expected a float32 array [N] or [N, channels], got {what}")
    header = AudioHeader(src.sample_rate, 1 if arr.ndim == 1 else arr.shape[1], len(arr))
    check_seconds(header, limits)
    if not budget.claim(arr.nbytes):
        raise LimitExceededError(f"decoded audio of {arr.nbytes} bytes exceeds the request media byte budget")
    check_finite(arr, "decoded audio: the samples")
    samples = np.ascontiguousarray(arr) if arr.ndim == 1 else downmix(arr)
    samples = np.array(samples, np.float32, copy=True)
    # Hashed now, over the caller's array as given (channels before the downmix): it is not kept.
    digest = keyed_digest(HASH_CONTEXT, f"{header.sample_rate}\0{arr.shape}\0".encode(),
                          np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data)
    return TakenAudio(DecodedAudio(samples, header.sample_rate, header.channels), header, digest)

