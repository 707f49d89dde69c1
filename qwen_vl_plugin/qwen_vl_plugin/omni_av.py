"""A Qwen2.5-Omni video interleaved with its own audio track (``use_audio_in_video``;
docs/families/qwen2_5_omni.md §7).

The video's placeholder becomes ``<|audio_bos|>`` + chunks + ``<|audio_eos|>``: video
token ``k`` of temporal patch ``t`` has time ``t * second_per_grid * position_id_per_seconds``,
audio token ``j`` time ``j``, both are cut where the time crosses a multiple of
``position_id_per_seconds * seconds_per_chunk``, and chunk ``c`` of the video is followed
by chunk ``c`` of the audio. The processor (``replace_video_with_audio_token``) cuts on the
float64 time, the model (``get_rope_index``) on the float32-truncated one; the ids follow
the first, the positions the second, so both equal the reference even where the two cuts
part.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

# Qwen2_5OmniProcessor.seconds_per_chunk and the thinker config's seconds_per_chunk.
SECONDS_PER_CHUNK = 2


def chunk_bounds(runs: Iterable[tuple[float, int]], n: int, per_chunk: int) -> list[tuple[int, int]]:
    """``get_chunked_index`` (the processor's and the model's) on token times given as runs
    of ``(time, count)``, ``n`` tokens in all: a chunk ends before the first token whose
    time reaches the next multiple of ``per_chunk``. A token that jumps several multiples
    ends one chunk per token from there on, so empty chunks occur and the chunk numbers of
    video and audio stay paired as the reference pairs them."""
    out, start, chunk, i = [], 0, 1, 0
    for time, count in runs:
        k = 0
        while k < count and time >= chunk * per_chunk:
            out.append((start, i + k))
            start, chunk, k = i + k, chunk + 1, k + 1
        i += count
    out.append((start, n))
    return out


def audio_bounds(n: int, per_chunk: int) -> list[tuple[int, int]]:
    """:func:`chunk_bounds` of times ``0..n-1`` (one token a step: no jumps)."""
    return [(s, min(s + per_chunk, n)) for s in range(0, n, per_chunk)]


def interleave(video: list[tuple[int, int]], audio: list[tuple[int, int]]) -> Iterator[tuple[str, tuple[int, int]]]:
    """Chunk ``c`` of the video, then chunk ``c`` of the audio, while either has one."""
    for c in range(max(len(video), len(audio))):
        if c < len(video):
            yield "video", video[c]
        if c < len(audio):
            yield "audio", audio[c]


def interleaved_ids(
    t: int, frame_tokens: int, second_per_grid: float, audio_tokens: int, *, pps: int, ids: dict[str, int]
) -> list[int]:
    """The processor's run for one video of ``t`` temporal patches of ``frame_tokens``
    merged tokens each and its track of ``audio_tokens``: times in float64 as numpy computes
    ``arange(t) * second_per_grid * position_id_per_seconds``."""
    times = (np.arange(t, dtype=np.int64) * second_per_grid * pps).tolist()
    per_chunk = int(pps * SECONDS_PER_CHUNK)
    video = chunk_bounds(((x, frame_tokens) for x in times), t * frame_tokens, per_chunk)
    out = [ids["audio_start"]]
    for side, (a, b) in interleave(video, audio_bounds(audio_tokens, per_chunk)):
        out += [ids[side]] * (b - a)
    out.append(ids["audio_end"])
    return out


def interleaved_positions(
    base: int, temporal: np.ndarray, gh: int, gw: int, audio_tokens: int, *, pps: int
) -> tuple[np.ndarray, int]:
    """``get_rope_index``'s positions of the tokens between ``<|audio_bos|>`` and
    ``<|audio_eos|>`` (``[3, n]``) and the end markers' shared position: video token
    ``(t, y, x)`` at ``base + (temporal[t], y, x)``, audio token ``j`` at ``base + j``, in the
    model's chunk order; the markers follow the *last* chunk (its largest position + 1), as
    the model takes ``llm_pos_ids_list[-1].max() + 1``."""
    per_frame = gh * gw
    video = np.empty((3, len(temporal), gh, gw), dtype=np.int64)
    video[0] = base + temporal[:, None, None]
    video[1] = base + np.arange(gh, dtype=np.int64)[None, :, None]
    video[2] = base + np.arange(gw, dtype=np.int64)[None, None, :]
    video = video.reshape(3, -1)
    audio = np.broadcast_to(base + np.arange(audio_tokens, dtype=np.int64), (3, audio_tokens))
    per_chunk = int(pps * SECONDS_PER_CHUNK)
    vb = chunk_bounds(((int(x), per_frame) for x in temporal), video.shape[1], per_chunk)
    rows = {"video": video, "audio": audio}
    parts = [rows[side][:, a:b] for side, (a, b) in interleave(vb, audio_bounds(audio_tokens, per_chunk))]
    # The last part is never empty: it is the last chunk of a side, which ends at that side's end.
    return np.concatenate(parts, axis=1), int(parts[-1].max()) + 1
