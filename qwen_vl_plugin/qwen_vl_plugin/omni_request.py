"""The prompt, positions and model inputs of a ``qwen2_5_omni`` request (docs/families/qwen2_5_omni.md).

``Qwen2_5OmniProcessor`` replaces the *n*-th ``<|IMAGE|>``, ``<|VIDEO|>`` and ``<|AUDIO|>``
with the *n*-th item of that modality, each counted on its own (§3).
``get_rope_index`` (the thinker's, ``modeling_qwen2_5_omni.py``) walks the expanded prompt
item by item and finds each item by its start marker (§4): it counts images and videos as
the ``<|vision_bos|>`` directly followed by their placeholder and audios as every
``<|audio_bos|>``, takes the token before a placeholder as its start marker and the one after
as its end marker. A prompt that breaks that shape gets positions that belong to no item
(or none at all), so the layout refuses it (:func:`check_markers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp

from . import omni_av
from .mixed_request import model_kwargs as vision_kwargs
from .omni_spec import OmniSpec

MARKERS = {"image": ("vision_start_token_id", "vision_end_token_id"),
           "video": ("vision_start_token_id", "vision_end_token_id"),
           "audio": ("audio_start_token_id", "audio_end_token_id")}


def check_markers(input_ids: np.ndarray, spec: OmniSpec, placeholders: dict[str, int], counts: dict[str, int]) -> None:
    """Every placeholder sits between its modality's start and end markers, and the prompt
    holds no ``<|audio_bos|>`` but the audio items' (:class:`LayoutError` naming the first
    break).

    A prompt of placeholders only (the core's default prompt, as token counts make it) is
    exempt: no tokenizer writes it, the model cannot take it (``get_rope_index`` fails on
    a placeholder at index 0), and its positions are the same walk over its items.
    """
    ids = np.asarray(input_ids, dtype=np.int64)
    if np.isin(ids, list(placeholders.values())).all():
        return
    for modality, pid in placeholders.items():
        start_name, end_name = MARKERS[modality]
        start, end = getattr(spec, start_name), getattr(spec, end_name)
        for k, at in enumerate(np.flatnonzero(ids == pid).tolist()):
            if at == 0 or ids[at - 1] != start or at + 1 == len(ids) or ids[at + 1] != end:
                raise mmp.LayoutError(
                    f"{modality} placeholder {k} (id {pid}, prompt index {at}) must sit between its markers "
                    f"{start_name} {start} and {end_name} {end}: the model's get_rope_index finds items by them"
                )
    starts = int((ids == spec.audio_start_token_id).sum())
    if starts != counts.get("audio", 0):
        raise mmp.LayoutError(
            f"prompt has {starts} audio_start_token_id ({spec.audio_start_token_id}) marker(s) but "
            f"{counts.get('audio', 0)} audio item(s): the model's get_rope_index counts every one as an audio"
        )


def omni_positions(
    input_len: int, items: Sequence[tuple[int, int, str, Any]], *, merge: int, position_id_per_seconds: int
) -> mmp.MRope:
    """``get_rope_index`` of one expanded prompt whose items are ``(start, end, kind, value)``
    in prompt order (``end`` inclusive): ``kind`` ``"image"`` with its ``Grid``, ``"video"``
    with ``(Grid, second_per_grid)``, ``"audio"`` with its token count, ``"av"`` (a video
    with its audio track, ``use_audio_in_video``) with ``(Grid, second_per_grid, audio
    tokens)``, its span the interleaved tokens between ``<|audio_bos|>`` (at ``start - 1``)
    and ``<|audio_eos|>`` (at ``end + 1``).

    Text counts up on all three rows from ``next``. A vision item's token at
    ``(t, y, x)`` of its merged grid gets ``(next + T_t, next + y, next + x)``: images
    ``T_t = t * position_id_per_seconds``, videos
    ``T_t = trunc(f32(f32(t) * f32(second_per_grid)) * position_id_per_seconds)`` (torch's
    int64 ``arange`` times a float32 0-d tensor, then times an int, in float32). An audio
    counts up like text. After each item ``next`` is its block's largest position plus one.

    An ``"av"`` block: ``<|audio_bos|>`` shares the position of the ``<|vision_bos|>`` before
    it, the interleaved tokens start one above (:func:`.omni_av.interleaved_positions`), and
    ``<|audio_eos|>`` and the ``<|vision_eos|>`` after it share one position. In a prompt of
    placeholders only (no markers) the walk is the same with the markers' tokens missing.
    """
    L = int(input_len)
    pos = np.empty((3, L), dtype=np.int64)
    st = nxt = 0
    shared_end = False  # the token after an "av" block shares its <|audio_eos|>'s position
    for start, end, kind, value in items:
        lead = 1 if kind == "av" else 0
        if start - lead < st or end + lead >= L or end < start:
            raise mmp.LayoutError(f"omni positions: item span ({start}, {end}) out of order or bounds")
        if start - lead > st:
            pos[:, st:start - lead] = np.arange(nxt, nxt + start - lead - st, dtype=np.int64)
            nxt += start - lead - st
        elif shared_end:
            nxt += 1
        shared_end = False
        block = pos[:, start : end + 1]
        if kind == "audio":
            block[:] = np.arange(nxt, nxt + end - start + 1, dtype=np.int64)
        elif kind == "av":
            grid, spg, audio_tokens = value
            bos = nxt - 1 if start - 1 > st else nxt
            gh, gw = _check_grid(grid, merge, end - start + 1 - audio_tokens)
            temporal = _video_time(grid.t, spg, position_id_per_seconds)
            block[:], eos = omni_av.interleaved_positions(bos + 1, temporal, gh, gw, audio_tokens,
                                                          pps=position_id_per_seconds)
            pos[:, start - 1], pos[:, end + 1] = bos, eos
            nxt, shared_end = eos, True
            st = end + 2
            continue
        else:
            grid, temporal = _temporal(kind, value, position_id_per_seconds)
            gh, gw = _check_grid(grid, merge, end - start + 1)
            view = block.reshape(3, grid.t, gh, gw)
            view[0] = (nxt + temporal)[:, None, None]
            view[1] = (nxt + np.arange(gh, dtype=np.int64))[None, :, None]
            view[2] = (nxt + np.arange(gw, dtype=np.int64))[None, None, :]
        nxt = int(block.max()) + 1
        st = end + 1
    if st < L:
        pos[:, st:] = np.arange(nxt, nxt + L - st, dtype=np.int64)
    return mmp.MRope(pos, int(pos.max()) + 1 - L if L else 0)


def _check_grid(grid: mmp.Grid, merge: int, tokens: int) -> tuple[int, int]:
    gh, gw = grid.h // merge, grid.w // merge
    if grid.t * gh * gw != tokens:
        raise mmp.LayoutError(f"omni positions: {tokens} vision tokens for the grid {grid}")
    return gh, gw


def _temporal(kind: str, value: Any, pps: int) -> tuple[mmp.Grid, np.ndarray]:
    if kind == "image":
        return value, np.arange(value.t, dtype=np.int64) * pps
    grid, spg = value
    return grid, _video_time(grid.t, spg, pps)


def _video_time(t: int, spg: float, pps: int) -> np.ndarray:
    at = np.arange(t, dtype=np.int64).astype(np.float32)
    return ((at * np.float32(spg)) * np.float32(pps)).astype(np.int64)


def model_kwargs(items: Sequence[mmp.OutputItem], dim: int) -> dict[str, np.ndarray]:
    """What ``Qwen2_5OmniProcessor`` returns with ``return_tensors="np"``, for the
    modalities present: ``pixel_values``, ``image_grid_thw``; ``pixel_values_videos``,
    ``video_grid_thw``, ``video_second_per_grid`` (float64 ``[n]``: the processor's Python
    floats); ``input_features`` f32 ``[n, mels, frames]`` and ``feature_attention_mask``
    int32 ``[n, frames]`` (the extractor's mask dtype) of the audio items and the videos'
    audio tracks, in prompt order (the order the model meets their tokens in). Each
    modality in prompt order. With a video's track, also ``use_audio_in_video`` (a 0-d
    bool), which the model's forward takes and the processor leaves to the caller."""
    vision = [it for it in items if it.modality in ("image", "video")]
    audios = [it for it in items if it.modality == "audio" or "input_features" in it.aux]
    out: dict[str, np.ndarray] = vision_kwargs(vision, dim) if vision or not audios else {}
    videos = [it for it in vision if it.modality == "video"]
    if videos:
        out["video_second_per_grid"] = np.asarray([it.geometry.second_per_grid for it in videos], dtype=np.float64)
    if audios:
        out["input_features"] = np.stack([_features(it).array for it in audios])
        out["feature_attention_mask"] = np.stack(
            [it.aux["feature_attention_mask"].array for it in audios]).astype(np.int32)
    if any(it.modality == "video" for it in audios):
        out["use_audio_in_video"] = np.asarray(True)
    return out


def _features(item: mmp.OutputItem) -> mmp.Tensor:
    return item.feature if item.modality == "audio" else item.aux["input_features"]


def audio_span(geometry: Any) -> mmp.whisper.AudioSpan:
    if not isinstance(geometry, mmp.whisper.AudioSpan):
        raise mmp.InternalError(f"qwen2_5_omni: expected an AudioSpan for an audio, got {type(geometry).__name__}")
    return geometry


def check_av_videos(geometries: Sequence[Any], modalities: Sequence[str]) -> None:
    """A prompt whose videos carry their audio tracks holds no video without one
    (:class:`LayoutError`): the model's ``use_audio_in_video`` applies to every video of
    the prompt, and ``get_rope_index`` under it takes a plain video for an interleaved one."""
    tracks = [g.audio is not None for g, m in zip(geometries, modalities) if m == "video"]
    if any(tracks) and not all(tracks):
        plain = [k for k, has in enumerate(tracks) if not has]
        raise mmp.LayoutError(
            f"video {plain[0]} has no audio track interleaved but {sum(tracks)} other video(s) of the prompt have "
            "(use_audio_in_video): the model applies use_audio_in_video to every video of a prompt, and its "
            "get_rope_index would misplace the plain one; send them in separate requests"
        )
