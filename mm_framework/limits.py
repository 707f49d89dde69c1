"""Per-pipeline limits, all enforced before any pixel is decoded."""

from __future__ import annotations

import attrs

from .checks import check_int
from .errors import SpecError

MiB = 1 << 20

# Pillow raises DecompressionBombError above twice its MAX_IMAGE_PIXELS (89,478,485);
# anything the reference (HF + Pillow) accepts we accept too, and no more.
DEFAULT_MAX_IMAGE_PIXELS = 2 * 89_478_485


def _positive(_inst: object, attr: attrs.Attribute, value: int) -> None:
    check_int(value, f"Limits.{attr.name}", minimum=1, error=SpecError)


@attrs.frozen
class Limits:
    max_items: int = attrs.field(default=64, validator=_positive)
    max_request_bytes: int = attrs.field(default=256 * MiB, validator=_positive)
    max_source_bytes: int = attrs.field(default=64 * MiB, validator=_positive)
    max_image_pixels: int = attrs.field(default=DEFAULT_MAX_IMAGE_PIXELS, validator=_positive)
    # What a family may make of one image (its resized size or tiling canvas, from
    # mm_plan_item): a spec like min_pixels=10**12 is refused here, before it allocates.
    max_processed_pixels: int = attrs.field(default=DEFAULT_MAX_IMAGE_PIXELS, validator=_positive)
    # Frames kept per clip, and their pixels all together: checked from the stream header
    # before any frame is decoded. 1 GiPx of RGB is 3 GiB, the most one clip may take.
    max_video_frames: int = attrs.field(default=1024, validator=_positive)
    max_video_pixels: int = attrs.field(default=1 << 30, validator=_positive)
    # Seconds of one audio item, checked from its header before any sample is decoded.
    max_audio_seconds: int = attrs.field(default=1800, validator=_positive)
    # A chat request (mm_framework.chat): its messages, and the UTF-8 bytes of all its text
    # (string contents and text parts), checked before the template renders anything.
    max_messages: int = attrs.field(default=1024, validator=_positive)
    max_text_bytes: int = attrs.field(default=4 * MiB, validator=_positive)
