"""What mm_framework raises where the reference rejects or crashes on a video request.

transformers signals these with whatever Python raised at the spot (IndexError on an
empty index list, TypeError on ``float(None)``, ZeroDivisionError, ...); mm_framework
raises a typed error naming the cause instead (docs/families/qwen_vl_video.md §2-§4).
Each rule is ``(stage, reference text fragment, mm_framework type, message fragment)``;
an error no rule explains stops the generator, so no rejection is recorded unexplained.
"""

from __future__ import annotations

import re

RULES: list[tuple[str, str, str, str]] = [
    # stream.frames == 0: the loader's default index list is empty (indices[-1]).
    ("load_video", "IndexError: index -1 is out of bounds for axis 0 with size 0", "MediaError", "no frame count"),
    # container.streams.video[0] of a file without a video stream.
    ("load_video", "IndexError: tuple index out of range", "MediaError", "no video stream"),
    # float(stream.average_rate) when the header has no rate.
    ("load_video", "TypeError: float() argument must be a string or a real number, not 'NoneType'", "MediaError",
     "no average frame rate"),
    # av.open on bytes no demuxer accepts (or an MP4 whose index is cut off).
    ("load_video", "InvalidDataError: [Errno 1094995529] Invalid data found when processing input: <path>",
     "MediaError", "not a clip PyAV can open"),
    # A packet the decoder cannot take: the data ends mid-stream.
    ("load_video",
     "InvalidDataError: [Errno 1094995529] Invalid data found when processing input: 'avcodec_send_packet()'",
     "MediaError", "decoding failed"),
    # Sampled indices past the frames the stream really had (header count too high) ...
    ("processor", "IndexError: index {short} is out of bounds for axis 0 with size {n}", "MediaError",
     "the stream ended after"),
    # ... or Qwen2's float-step arange rounding its extra value up to the frame count.
    ("processor", "IndexError: index {total} is out of bounds for axis 0 with size {total}", "MediaError",
     "frame sampling overshoots"),
    # Qwen2 fps sampling of a one-frame clip: zero frames, then total / 0.
    ("processor", "ZeroDivisionError: division by zero", "MediaError", "too short to sample"),
    # Qwen3's smart_resize refuses fewer frames than one temporal patch.
    ("processor", "ValueError: t:1 must be larger than temporal_factor:2", "MediaError",
     "t:1 must be larger than temporal_factor:2"),
]


def clean(reference_error: str) -> str:
    """The reference's message without the temporary path it names (keeps goldens stable)."""
    return re.sub(r"'/[^']*'", "<path>", reference_error)


def expected_error(clip: str, reference_error: str, header_frames: int | None) -> dict[str, str]:
    """The mm_framework error for ``reference_error`` (``"<stage>: <Type>: <message>"``);
    ``header_frames`` is the clip's header frame count (None when it has none)."""
    text = clean(reference_error)
    stage, _, rest = text.partition(": ")
    total = str(header_frames)
    for rule_stage, fragment, kind, match in RULES:
        pattern = re.escape(fragment).replace(re.escape("{n}"), r"\d+").replace(re.escape("{total}"), total)
        pattern = pattern.replace(re.escape("{short}"), rf"(?!{total}\b)\d+")
        if stage == rule_stage and re.fullmatch(pattern, rest):
            return {"type": kind, "match": match}
    raise RuntimeError(f"{clip}: no rule explains the reference error {text!r}")
