"""qwen2_5_omni ``use_audio_in_video`` without the reference (docs/families/qwen2_5_omni.md §7):
the option's forms, the track from a file and from ``VideoFrames.audio``, counts from
headers, a silent clip, and the refusals. Parity with transformers: test_omni_av_parity.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mm_framework as mmf
from . import omni_av_clips as clips
from .omni_cases import GOLDEN
from mm_framework.testing import load_module

pytest.importorskip("av")
pytest.importorskip("soxr")

gen = load_module(GOLDEN / "generate_omni_goldens.py", "omni_golden_generator")
S = mmf.preset("qwen2_5_omni")
AUDIO_BOS, AUDIO_EOS = S["audio_start_token_id"], S["audio_end_token_id"]
VBOS, VEOS = S["vision_start_token_id"], S["vision_end_token_id"]
VIDEO, AUDIO = S["video_token_id"], S["audio_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(S)


@pytest.fixture(scope="module")
def clip():
    return clips.mp4(0, n_frames=12, fps=4, audio_rate=44100, channels=2)


def runs(ids):
    return [(k, len(list(g))) for k, g in itertools.groupby(ids)]


def prompt(*parts: str) -> list[int]:
    marks = {"video": (VBOS, VIDEO, VEOS), "audio": (AUDIO_BOS, AUDIO, AUDIO_EOS)}
    return [100, 101, *(i for p in parts for i in marks[p]), 102]


def test_interleaved_block(pipe, clip):
    """12 frames at 4 fps: 6 temporal patches at 25 positions each (spg 1.0), 140 tokens a
    patch; 3 s of audio at 25 tokens a second: chunks of 50 positions, video first."""
    out = pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)], input_ids=prompt("video")))
    assert runs(out.input_ids.tolist()) == [
        (100, 1), (101, 1), (VBOS, 1), (AUDIO_BOS, 1), (VIDEO, 280), (AUDIO, 50), (VIDEO, 280), (AUDIO, 25),
        (VIDEO, 280), (AUDIO_EOS, 1), (VEOS, 1), (102, 1)]
    (start, end), = out.offsets
    assert (start, end) == (4, 4 + 840 + 75 - 1)  # the interleaved tokens, without the audio markers
    kw = out.model_kwargs()
    assert kw["input_features"].shape == (1, 128, 30000) and kw["feature_attention_mask"].dtype == np.int32
    assert int(kw["feature_attention_mask"].sum()) == 300  # 3 s at hop 160
    assert kw["use_audio_in_video"].dtype == np.bool_ and bool(kw["use_audio_in_video"])
    pos = out.positions.positions
    # both start markers share one position, both end markers another
    assert (pos[:, 2] == pos[:, 3]).all() and (pos[:, end + 1] == pos[:, end + 2]).all()
    assert pos[0, 4] == pos[0, 3] + 1 and pos[0, 4 + 280] == pos[0, 3] + 1  # first audio token at time 0


def test_counts_from_headers_equal_processing(pipe, clip):
    inp = mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)], audios=[clips.mp4(5, audio_rate=22050)],
                      input_ids=prompt("audio", "video"))
    out, counted = pipe.process(inp), pipe.count_tokens(inp)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    assert counted.positions.positions.tolist() == out.positions.positions.tolist()
    # without ids: the default prompt, one item
    bare = mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)])
    assert pipe.count_tokens(bare).input_ids.tolist() == pipe.process(bare).input_ids.tolist()


def test_option_forms_agree(pipe, clip):
    """Per item, under transformers' newer name, and request-wide: one result; a
    different cache key from the plain video."""
    ids = prompt("video")
    a = pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)], input_ids=ids))
    b = pipe.process(mmf.MmInput(videos=[mmf.Video(clip, load_audio_from_video=True)], input_ids=ids))
    c = pipe.process(mmf.MmInput(videos=[clip], input_ids=ids, options={"use_audio_in_video": True}))
    plain = pipe.process(mmf.MmInput(videos=[clip], input_ids=ids))
    for other in (b, c):
        assert other.input_ids.tolist() == a.input_ids.tolist()
        assert other.positions.positions.tolist() == a.positions.positions.tolist()
    assert runs(plain.input_ids.tolist())[3] == (VIDEO, 840) and "input_features" not in plain.model_kwargs()
    off = pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=False)], input_ids=ids))
    assert off.input_ids.tolist() == plain.input_ids.tolist()


def test_decoded_frames_with_audio(pipe, clip):
    """``VideoFrames(audio=Audio(...))`` is the same item as the file whose frames and
    track they are; a family that does not ask for the track ignores it."""
    out, (decoded,) = pipe.decode(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)]))
    track = decoded.audio
    assert track.sample_rate == 44100 and track.channels == 2 and len(track.samples) == 3 * 44100
    frames = mmf.VideoFrames(np.array(decoded.frames), fps=4.0,
                             audio=mmf.Audio(np.array(track.samples), sample_rate=track.sample_rate))
    ids = prompt("video")
    from_file = pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)], input_ids=ids))
    given = pipe.process(mmf.MmInput(videos=[mmf.Video(frames, use_audio_in_video=True)], input_ids=ids))
    assert given.input_ids.tolist() == from_file.input_ids.tolist()
    for key, value in from_file.model_kwargs().items():
        assert given.model_kwargs()[key].tobytes() == value.tobytes(), key
    assert given.positions.positions.tolist() == from_file.positions.positions.tolist()
    plain = pipe.process(mmf.MmInput(videos=[frames], input_ids=ids))
    assert "input_features" not in plain.model_kwargs() and runs(plain.input_ids.tolist())[3] == (VIDEO, 840)


def test_silent_clip_is_a_plain_video(pipe):
    """The processor gives a video without a track plain video tokens (its
    ``video_to_audio_indices`` entry is None); so does the option here."""
    silent = clips.mp4(2, audio_rate=None)
    ids = prompt("video")
    with_option = pipe.process(mmf.MmInput(videos=[mmf.Video(silent, use_audio_in_video=True)], input_ids=ids))
    plain = pipe.process(mmf.MmInput(videos=[silent], input_ids=ids))
    assert with_option.input_ids.tolist() == plain.input_ids.tolist()
    assert with_option.positions.positions.tolist() == plain.positions.positions.tolist()
    assert sorted(with_option.model_kwargs()) == sorted(plain.model_kwargs())
    assert pipe.count_tokens(mmf.MmInput(videos=[mmf.Video(silent, use_audio_in_video=True)],
                                         input_ids=ids)).input_ids.tolist() == plain.input_ids.tolist()


def corrupt_track(data: bytes) -> bytes:
    import io

    import av

    out = bytearray(data)
    with av.open(io.BytesIO(data)) as box:
        packets = [(p.pos, p.size) for p in box.demux(box.streams.audio[0]) if p.size]
    for pos, size in packets[2:]:
        out[pos:pos + size] = bytes((i * 37 + 11) % 256 for i in range(size))
    return bytes(out)


def test_bad_input(pipe, clip):
    ids = prompt("video")
    with pytest.raises(mmf.SpecError, match="'use_audio_in_video' is not one family 'qwen_vl' takes"):
        mmf.pipeline_from_spec(mmf.preset("qwen2_vl")).process(
            mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)]))
    with pytest.raises(mmf.SpecError, match="item 0: .*use_audio_in_video=1.*must be true or false"):
        pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=1)], input_ids=ids))
    with pytest.raises(mmf.SpecError, match="use_audio_in_video='yes'.*must be true or false"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=ids, options={"use_audio_in_video": "yes"}))
    with pytest.raises(mmf.MediaError, match="item 0: audio: corrupt 132300-frame video clip stream"):
        pipe.process(mmf.MmInput(videos=[mmf.Video(corrupt_track(clip), use_audio_in_video=True)], input_ids=ids))
    short = mmf.pipeline_from_spec(S, limits=mmf.Limits(max_audio_seconds=2))
    for call in (short.process, short.count_tokens):  # refused from the track's header
        with pytest.raises(mmf.LimitExceededError, match=r"item 0: audio of 3\.00 s .*max_audio_seconds = 2"):
            call(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True)], input_ids=ids))
    assert short.process(mmf.MmInput(videos=[clip], input_ids=ids)).input_ids.shape == (845,)  # track unread
    silent = clips.mp4(2, audio_rate=None)
    with pytest.raises(mmf.LayoutError, match="video 1 has no audio track interleaved but 1 other"):
        pipe.process(mmf.MmInput(videos=[mmf.Video(clip, use_audio_in_video=True), silent],
                                 input_ids=prompt("video", "video")))
    with pytest.raises(mmf.InvalidInputError, match="VideoFrames audio must be an mm_framework.Audio"):
        mmf.VideoFrames(np.zeros((2, 28, 28, 3), np.uint8), audio=np.zeros(100, np.float32))
    with pytest.raises(mmf.MediaError, match="decoded audio: expected a float32 array"):
        pipe.process(mmf.MmInput(videos=[mmf.VideoFrames(np.zeros((2, 28, 28, 3), np.uint8),
                                                         audio=mmf.Audio(np.zeros(9, np.int16), sample_rate=8000))]))
