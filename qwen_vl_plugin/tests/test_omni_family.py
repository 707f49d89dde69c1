"""qwen2_5_omni unit checks: spec and HF config rules, typed rejections, counts, model inputs
and position pins (docs/families/qwen2_5_omni.md)."""

from __future__ import annotations

import copy
import io
import json

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from .omni_cases import MODEL
from mm_framework.plugin import whisper
from qwen_vl_plugin.omni_family import OmniVideoGrid
from qwen_vl_plugin.omni_request import omni_positions
from qwen_vl_plugin.omni_spec import parse_omni_spec

audio_tokens = whisper.encoder_tokens

S = mmf.preset("qwen2_5_omni")
IMG, VID, AUD = 151655, 151656, 151646
VBOS, VEOS, ABOS, AEOS = 151652, 151653, 151647, 151648


def fields(**change):
    out = {k: v for k, v in S.items() if k != "family"}
    out.update(change)
    return {k: v for k, v in out.items() if v is not None}


def configs():
    return tuple(json.loads((MODEL / name).read_text()) for name in ("config.json", "preprocessor_config.json"))


def tone(seconds: float, rate: int = 16000) -> mmf.Audio:
    n = round(seconds * rate)
    return mmf.Audio((0.3 * np.sin(np.arange(n) * 0.05)).astype(np.float32), sample_rate=rate)


def png(w: int = 64, h: int = 48) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((h, w, 3), 128, np.uint8)).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(S)


# -- spec -----------------------------------------------------------------------------


def test_preset_round_trips(pipe):
    assert pipe.spec == S
    assert parse_omni_spec(fields()).to_dict() == S


@pytest.mark.parametrize(("change", "match"), [
    ({"video_processor": "qwen3"}, "video_processor"),
    ({"tokens_per_second": 2}, "video_processor"),
    ({"video_processor": None, "video_token_id": None, "video_min_pixels": None, "video_max_pixels": None,
      "video_sample_frames": None}, "video_processor"),
    ({"audio_token_id": IMG}, "audio_token_id"),
    ({"vision_end_token_id": VBOS}, "vision_end_token_id"),
    ({"n_fft": 2 * 300 * 16000}, "n_fft"),
    ({"hop_length": 300 * 16000 + 1}, "hop_length"),
    ({"position_id_per_seconds": 0}, "position_id_per_seconds"),
    ({"chunk_length": 0}, "chunk_length"),
    ({"sampling_rate": True}, "sampling_rate"),
    ({"seconds_per_chunk": 2}, "seconds_per_chunk"),
])
def test_bad_spec_is_a_spec_error_naming_the_field(change, match):
    with pytest.raises(mmp.SpecError, match=match):
        parse_omni_spec(fields(**change))


def test_missing_omni_field():
    params = fields()
    del params["audio_start_token_id"]
    with pytest.raises(mmp.SpecError, match="audio_start_token_id"):
        parse_omni_spec(params)
    with pytest.raises(mmp.SpecError, match="mapping"):
        parse_omni_spec([1, 2])


def test_second_per_grid_is_tps_over_the_call_fps():
    assert parse_omni_spec(fields()).second_per_grid == 1.0
    sampled = fields(video_sample_frames=True, video_fps=3.0, video_min_frames=4, video_max_frames=768)
    assert parse_omni_spec(sampled).second_per_grid == 2 / 3.0


# -- HF configs -----------------------------------------------------------------------


def test_model_directory_resolves_to_the_preset():
    config, pp = configs()
    assert mmf.spec_from_hf_configs(config, pp) == S


@pytest.mark.parametrize(("key", "value", "match"), [
    ("do_pan_and_scan", True, "do_pan_and_scan"),
    ("n_samples", 480000, "n_samples"),
    ("nb_max_frames", 3000, "nb_max_frames"),
    ("dither", 0.5, "dither"),
    ("feature_extractor_type", "Gemma3nAudioFeatureExtractor", "feature_extractor_type"),
    ("processor_class", "Qwen2AudioProcessor", "processor_class"),
    ("padding_side", "left", "padding_side"),
    ("resample", 2, "resample"),
])
def test_preprocessor_key_refused(key, value, match):
    config, pp = configs()
    pp[key] = value
    with pytest.raises(mmp.SpecError, match=match):
        mmf.spec_from_hf_configs(config, pp)


def test_config_towers_must_agree():
    config, pp = configs()
    bad = copy.deepcopy(config)
    bad["thinker_config"]["audio_config"]["num_mel_bins"] = 80
    with pytest.raises(mmp.SpecError, match="num_mel_bins"):
        mmf.spec_from_hf_configs(bad, pp)
    bad = copy.deepcopy(config)
    bad["thinker_config"]["vision_config"]["patch_size"] = 16
    with pytest.raises(mmp.SpecError, match="patch_size"):
        mmf.spec_from_hf_configs(bad, pp)
    with pytest.raises(mmp.SpecError, match="video_preprocessor_config"):
        mmf.spec_from_hf_configs(config, pp, {"fps": 2})
    bad = copy.deepcopy(config)
    bad["thinker_config"]["seconds_per_chunk"] = 4
    with pytest.raises(mmp.SpecError, match="seconds_per_chunk=4: only the processor's 2"):
        mmf.spec_from_hf_configs(bad, pp)


def test_use_audio_in_video_field():
    """Off by default and then absent from the resolved spec (specs from before it read the
    same); a bool only."""
    assert "use_audio_in_video" not in parse_omni_spec(fields()).to_dict()
    assert parse_omni_spec({**fields(), "use_audio_in_video": True}).to_dict()["use_audio_in_video"] is True
    with pytest.raises(mmp.SpecError, match="use_audio_in_video.*must be true or false, got 1"):
        parse_omni_spec({**fields(), "use_audio_in_video": 1})


def test_config_ids_and_chunk_are_read():
    config, pp = configs()
    config["thinker_config"]["position_id_per_seconds"] = 50
    pp.update(chunk_length=30, n_samples=480000, nb_max_frames=3000)
    spec = mmf.spec_from_hf_configs(config, pp)
    assert spec["position_id_per_seconds"] == 50 and spec["chunk_length"] == 30


# -- requests and typed rejections ----------------------------------------------------


def test_audio_counts_and_offsets(pipe):
    ids = [11, ABOS, AUD, AEOS, 12]
    out = pipe.process(mmf.MmInput(audios=[tone(3.0)], input_ids=ids))
    assert out.offsets == ((2, 76),)  # 3 s: 300 frames, 75 tokens
    assert pipe.num_media_tokens(seconds=3.0) == 75 == audio_tokens(300)
    kw = out.model_kwargs()
    assert sorted(kw) == ["feature_attention_mask", "input_features"]
    assert kw["input_features"].shape == (1, 128, 30000) and kw["feature_attention_mask"].dtype == np.int32
    assert np.array_equal(out.positions.positions[0], np.arange(len(out.input_ids)))


def test_too_short_clip_is_a_media_error(pipe):
    with pytest.raises(mmf.MediaError, match=r"gives no <\|AUDIO\|> token"):
        pipe.process(mmf.MmInput(audios=[tone(0.01)], input_ids=[ABOS, AUD, AEOS]))


@pytest.mark.parametrize(("ids", "match"), [
    ([11, IMG, VEOS, 12], "image placeholder 0"),             # no <|vision_bos|>
    ([11, VBOS, IMG, 12], "image placeholder 0"),             # no <|vision_eos|>
    ([11, ABOS, IMG, AEOS], "image placeholder 0"),           # the audio markers around an image
    ([11, VBOS, IMG, VEOS, ABOS, 12], "audio_start_token_id"),  # a stray <|audio_bos|>
])
def test_unmarked_placeholders_are_layout_errors(pipe, ids, match):
    with pytest.raises(mmf.LayoutError, match=match):
        pipe.process(mmf.MmInput(images=[png()], input_ids=ids))


def test_items_and_placeholders_must_match(pipe):
    # An audio clip for a prompt that has image placeholders only.
    with pytest.raises(mmf.LayoutError, match="audio placeholder"):
        pipe.process(mmf.MmInput(images=[png()], audios=[tone(1.0)], input_ids=[VBOS, IMG, VEOS]))
    with pytest.raises(mmf.LayoutError, match="audio placeholder"):
        pipe.process(mmf.MmInput(audios=[tone(1.0)], input_ids=[ABOS, AUD, AEOS, ABOS, AUD, AEOS]))


def test_default_prompt_counts(pipe):
    # Requests without ids get bare placeholders (the core's default prompt): counted, not refused.
    out = pipe.count_tokens(mmf.MmInput(images=[png(64, 48)], audios=[tone(1.0)]))
    assert [e - s + 1 for s, e in out.offsets] == [pipe.num_media_tokens(64, 48), 25]


# -- positions pins -------------------------------------------------------------------


def test_position_pins():
    # text 0..1; image grid [1, 4, 6] at 2..7: (2, 2+y, 2+x); next = 2 + 3 = 5; text 5;
    # audio 3 tokens at 9..11 after text 8 (positions 6..7 before it).
    L = 14
    img = mmp.Grid(1, 4, 6)
    out = omni_positions(L, [(2, 7, "image", img), (10, 12, "audio", 3)], merge=2, position_id_per_seconds=25)
    p = out.positions
    assert p[:, :2].tolist() == [[0, 1]] * 3
    assert p[0, 2:8].tolist() == [2] * 6 and p[1, 2:8].tolist() == [2, 2, 2, 3, 3, 3]
    assert p[2, 2:8].tolist() == [2, 3, 4, 2, 3, 4]
    assert p[0, 8:].tolist() == [5, 6, 7, 8, 9, 10]
    assert out.delta == 11 - L


def test_video_time_axis_is_float32():
    # fps 10/3 (spg 0.6): in float32, t = 3 gives 45 where float64 arithmetic gives 44.
    grid = OmniVideoGrid(4, 2, 2, second_per_grid=2 / (10 / 3))
    out = omni_positions(4, [(0, 3, "video", (grid, grid.second_per_grid))], merge=2, position_id_per_seconds=25)
    assert out.positions[0].tolist() == [0, 15, 30, 45]
    assert int(3 * grid.second_per_grid * 25) == 44
