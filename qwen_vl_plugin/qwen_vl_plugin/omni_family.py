"""The ``qwen2_5_omni`` family hooks: Qwen2.5-Omni's thinker inputs (docs/families/qwen2_5_omni.md).

Images and videos are the ``qwen_vl`` family's (the Omni processor's image and video
processors are Qwen2-VL's), run by a :class:`~.family.QwenVlFamily` built from the spec's
vision fields; a video's geometry gains the processor's ``video_second_per_grid``. Audio
clips are Whisper features (``mmp.whisper.WhisperAudio``, one 300 s chunk). The prompt and the positions are
:mod:`.omni_request`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from mm_framework import plugin as mmp

from . import omni_av, omni_request
from .family import IMAGE_OPTIONS, VIDEO_OPTIONS, QwenVlFamily
from .omni_spec import parse_omni_spec
from .video_item import VideoGrid

AUDIO_TOKEN_TEXT = "<|AUDIO|>"

TEXTS = {"image": "<|IMAGE|>", "video": "<|VIDEO|>", "audio": AUDIO_TOKEN_TEXT}


# The video option (``use_audio_in_video``; transformers 5.24 calls it ``load_audio_from_video``
# and maps the first to it) and its spec field.
AV_OPTIONS = {"use_audio_in_video": "use_audio_in_video", "load_audio_from_video": "use_audio_in_video"}


@attrs.frozen
class OmniVideoGrid(VideoGrid):
    """A video's grid plus the processor's ``video_second_per_grid`` entry: temporal patch
    size over the call's fps (2.0 unless given), whatever the clip's own rate; ``audio``:
    the span of the audio track it is interleaved with (``use_audio_in_video``), if any."""

    second_per_grid: float = 1.0
    audio: mmp.whisper.AudioSpan | None = None


class Qwen25OmniFamily:
    """One immutable object per pipeline, so thread-safe."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_omni_spec(params)
        vision = self.spec.vision.to_dict()
        vision.pop("family")
        self.vision = QwenVlFamily(vision)
        self.audio = mmp.whisper.WhisperAudio(mmp.whisper.WhisperSettings.of(self.spec), token_text=AUDIO_TOKEN_TEXT,
                                      processor="Qwen2_5OmniProcessor")
        s = self.spec
        self.placeholders = {"image": s.vision.image_token_id, "video": s.vision.video.token_id,
                             "audio": s.audio_token_id}
        self.av_ids = {"audio_start": s.audio_start_token_id, "audio_end": s.audio_end_token_id,
                       "video": s.vision.video.token_id, "audio": s.audio_token_id}

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        frames = self.audio.mel.num_frames
        outputs = {"image": mmp.ItemOutputs("f32", {"image_grid_thw": ("i64", (3,))}),
                   "video": mmp.ItemOutputs("f32", {"video_grid_thw": ("i64", (3,))}),
                   "audio": mmp.ItemOutputs("f32", {"feature_attention_mask": ("i64", (frames,))})}
        if self.spec.use_audio_in_video:
            # A video's outputs then depend on whether the clip has a track: none declared.
            del outputs["video"]
        return mmp.Capabilities(
            modalities=("image", "video", "audio"), id_range=(0, 2**31 - 1), placeholders=self.placeholders,
            placeholder_texts=TEXTS, item_options={"image": IMAGE_OPTIONS, "video": {**VIDEO_OPTIONS, **AV_OPTIONS}},
            outputs=outputs,
        )

    @mmp.hookimpl
    def mm_resolved_spec(self) -> dict[str, Any]:
        return self.spec.to_dict()

    @mmp.hookimpl
    def mm_decode_options(self) -> mmp.DecodeOptions:
        return attrs.evolve(self.vision.mm_decode_options(), video_audio=self.spec.use_audio_in_video)

    @mmp.hookimpl
    def mm_sample_frames(self, header: mmp.ClipHeader) -> list[int] | None:
        return self.vision.mm_sample_frames(header)

    @mmp.hookimpl
    def mm_plan_item(self, header: Any) -> mmp.ItemPlan:
        if isinstance(header, mmp.AudioHeader):
            return self.audio.plan(header)
        plan = self.vision.mm_plan_item(header)
        if not isinstance(header, mmp.ClipHeader):
            return plan
        track = self._track(header.audio, lambda: self.audio.plan(header.audio).geometry)
        return mmp.ItemPlan(self._omni_grid(plan.geometry, track), plan.size)

    @mmp.hookimpl
    def mm_audio_frames(self, header: mmp.AudioHeader) -> int:
        return self.audio.frames_read(header)  # one chunk: the processor cuts longer clips

    @mmp.hookimpl
    def mm_process_item(self, media: Any) -> mmp.ProcessedItem:
        if isinstance(media, mmp.DecodedAudio):
            return self.audio.process(media)
        item = self.vision.mm_process_item(media)
        if not isinstance(media, mmp.VideoClip):
            return item
        track = self._track(media.audio, lambda: self.audio.process(media.audio))
        if track is None:
            return attrs.evolve(item, geometry=self._omni_grid(item.geometry, None))
        aux = {**item.aux, "input_features": track.feature,
               "feature_attention_mask": track.aux["feature_attention_mask"]}
        return attrs.evolve(item, aux=aux, geometry=self._omni_grid(item.geometry, track.geometry))

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[Any], modalities: Sequence[str]) -> mmp.TokenLayout:
        def pattern(item: int) -> mmp.Repeat | mmp.Explicit:
            modality, g = modalities[item], geometries[item]
            if modality == "audio":
                return mmp.Repeat(self.spec.audio_token_id, omni_request.audio_span(g).tokens)
            if modality == "image":
                return mmp.Repeat(self.placeholders["image"], self.vision.tokens(g))
            if g.audio is not None:
                ids = omni_av.interleaved_ids(g.t, self.vision.tokens(g) // g.t, g.second_per_grid, g.audio.tokens,
                                              pps=self.spec.position_id_per_seconds, ids=self.av_ids)
                return mmp.Explicit(ids, content_start=1, content_end=len(ids) - 1)
            return self.vision.video.pattern(g)

        omni_request.check_av_videos(geometries, modalities)
        layout = mmp.layout_by_placeholders(input_ids, self.placeholders, modalities, pattern)
        counts = {m: list(modalities).count(m) for m in self.placeholders}
        omni_request.check_markers(input_ids, self.spec, self.placeholders, counts)
        return layout

    @mmp.hookimpl
    def mm_positions(
        self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Any], modalities: Sequence[str]
    ) -> mmp.MRope:
        items = []
        for (start, end), g, m in sorted(zip(offsets, geometries, modalities), key=lambda it: it[0][0]):
            if m == "video" and g.audio is not None:
                items.append((start, end, "av", (g, g.second_per_grid, g.audio.tokens)))
            else:
                items.append((start, end, m, (g, g.second_per_grid) if m == "video" else g))
        return omni_request.omni_positions(input_len, items, merge=self.spec.vision.merge_size,
                                           position_id_per_seconds=self.spec.position_id_per_seconds)

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        v = self.spec.vision
        return omni_request.model_kwargs(items, 3 * v.temporal_patch_size * v.patch_size * v.patch_size)

    def _omni_grid(self, grid: VideoGrid, track: mmp.whisper.AudioSpan | None) -> OmniVideoGrid:
        return OmniVideoGrid(grid.t, grid.h, grid.w, grid.timestamps, grid.second_per_grid_t,
                             second_per_grid=self.spec.second_per_grid, audio=track)

    def _track(self, track: Any, make: Callable[[], Any]) -> Any:
        """``make()`` for a clip's audio track when this item interleaves it, else ``None``
        (a clip without a track is a plain video, as the processor makes a silent one)."""
        return make() if self.spec.use_audio_in_video and track is not None else None
