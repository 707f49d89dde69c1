"""Live video parity with transformers' ``Kimi_K25Processor`` over ``Kimi_K25VideoProcessor``
(torchvision venv; skipped elsewhere). Short PyAV clips are loaded for the reference with
``load_video(path, backend="pyav")`` and handed over with their metadata (transformers 5.24 reads
no path here: docs/chat.md "Video parts"); ours are the clip bytes. Compared: the expanded ids
(with the test tokenizer's ``video_text_token_ids``, and by tokenizing ``mm_expansion_text`` as
the chat front door does), ``pixel_values_videos`` as bytes, ``video_grid_thw`` rows, images beside
a video, token counts from the header, and decoded frames without a rate.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from . import kimi_k25_clips, kimi_k25_images, kimi_k25_reference as ref
import mm_framework as mmf
from kimi_k25_plugin import KimiK25Family
from mm_framework.testing import require_torchvision

require_torchvision()
from PIL import Image  # noqa: E402
from transformers.video_utils import load_video  # noqa: E402

PRESET = mmf.preset("kimi_k2_5")
SPECS = {
    "preset": PRESET,
    "budget_16": {**PRESET, "video_max_patches": 16},
    "all_frames": {**PRESET, "video_sample_frames": False, "video_fps": None},
    "fps_5_tps_2_lanczos": {**PRESET, "video_fps": 5.0, "temporal_patch_size": 2, "video_resample": "pil_lanczos"},
    "side_4": {**PRESET, "video_max_size_per_side": 4},
}
VIDEO = "<|kimi_k25_video_placeholder|>"
PROMPT = f"<|im_user|>user<|im_middle|>x{VIDEO}What is in this image ?<|im_end|><|im_assistant|>assistant<|im_middle|>"


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """name -> (bytes, reference frames, reference metadata)."""
    out = {}
    for name in kimi_k25_clips.CLIPS:
        data = kimi_k25_clips.make(name)
        path = tmp_path_factory.mktemp("clips") / f"{name}.mp4"
        path.write_bytes(data)
        out[name] = (data, *load_video(str(path), backend="pyav"))
    return out


def _with_ids(spec):
    return {**spec, "video_text_token_ids": ref.text_ids(spec)}


def _reference(spec, prompt, videos, metadata, images=None):
    proc = ref.processor(spec)
    kw = {"images": images} if images else {}
    return proc(text=[prompt], videos=videos, video_metadata=metadata, return_tensors="np", **kw), proc.tokenizer


def _expanded_as_text(spec, prompt, out, tok):
    """The chat front door's ids: the prompt with each placeholder replaced by its expansion text."""
    fam = KimiK25Family({k: v for k, v in spec.items() if k != "family"})
    texts = iter(fam.mm_expansion_text(it.modality, it.geometry) for it in out.items)
    text = re.sub(r"<\|media_pad\|>|<\|kimi_k25_video_placeholder\|>", lambda _: next(texts), prompt)
    return tok(text)["input_ids"]


@pytest.mark.parametrize("variant", SPECS)
@pytest.mark.parametrize("name", kimi_k25_clips.CLIPS)
def test_video_matches_the_processor(variant, name, clips):
    spec = _with_ids(SPECS[variant])
    data, frames, meta = clips[name]
    r, tok = _reference(spec, PROMPT, [frames], [meta])
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(videos=[data], input_ids=tok(PROMPT)["input_ids"]))
    kw = out.model_kwargs()
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    assert kw["pixel_values_videos"].dtype == np.float32
    assert kw["pixel_values_videos"].tobytes() == np.asarray(r["pixel_values_videos"]).tobytes()
    assert kw["video_grid_thw"].tolist() == np.asarray(r["video_grid_thw"]).tolist()
    assert _expanded_as_text(spec, PROMPT, out, tok) == r["input_ids"][0].tolist()
    counted = pipe.count_tokens(mmf.MmInput(videos=[data], input_ids=tok(PROMPT)["input_ids"]))
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    s, e = out.offsets[0]
    ids = out.input_ids
    assert ids[s] == ids[e] == spec["video_token_id"]
    # One frame's worth of merged patches per chunk (the tower pools each chunk over time).
    assert int(np.count_nonzero(ids == spec["video_token_id"])) == sum(
        h * w // 4 for _, h, w in kw["video_grid_thw"].tolist())


def test_images_beside_two_videos(clips):
    spec = _with_ids(PRESET)
    prompt = (f"<|im_user|>user<|im_middle|>{VIDEO}<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
              f"and {VIDEO} compare them .<|im_end|>")
    a, b = "mpeg4_100x60_30f_10fps", "h264_64x36_7f_30fps"
    image = kimi_k25_images.make("rgb_640x480.jpg")
    r, tok = _reference(spec, prompt, [clips[a][1], clips[b][1]], [clips[a][2], clips[b][2]],
                        images=[Image.open(io.BytesIO(image))])
    out = mmf.pipeline_from_spec(spec).process(
        mmf.MmInput(images=[image], videos=[clips[a][0], clips[b][0]], input_ids=tok(prompt)["input_ids"]))
    kw = out.model_kwargs()
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    for key in ("pixel_values", "pixel_values_videos"):
        assert kw[key].tobytes() == np.asarray(r[key]).tobytes(), key
    for key in ("image_grid_thw", "video_grid_thw"):
        assert kw[key].tolist() == np.asarray(r[key]).tolist(), key
    assert _expanded_as_text(spec, prompt, out, tok) == r["input_ids"][0].tolist()


def test_decoded_frames_without_a_rate(clips):
    """Frames without metadata: every frame, timestamps at the processor's 24 fps."""
    spec = _with_ids({**PRESET, "video_sample_frames": False, "video_fps": None})
    frames = clips["mpeg4_320x240_9f_6fps"][1]
    r, tok = _reference(spec, PROMPT, [frames], None)
    out = mmf.pipeline_from_spec(spec).process(mmf.MmInput(videos=[frames], input_ids=tok(PROMPT)["input_ids"]))
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    assert out.model_kwargs()["pixel_values_videos"].tobytes() == np.asarray(r["pixel_values_videos"]).tobytes()
    assert out.items[0].geometry.stamps == ("00:00:00.000", "00:00:00.166", "00:00:00.333")


def test_sampling_without_a_rate_is_refused_as_the_processor_does(clips):
    frames = clips["mpeg4_320x240_9f_6fps"][1]
    with pytest.raises(ValueError, match="no original FPS"):
        ref.video_processor(PRESET)(videos=[frames], return_tensors="np")
    with pytest.raises(mmf.MediaError, match="needs the clip's source fps"):
        mmf.pipeline_from_spec(PRESET).process(mmf.MmInput(videos=[frames], input_ids=[163840]))
