"""Live video parity against transformers 5.24's ``Gemma4Processor`` with ``Gemma4VideoProcessor``
(torchvision venv; skipped cleanly where torch, torchvision or PyAV is missing).

Short clips are made here with PyAV; the reference reads them with ``load_video(path,
backend="pyav")`` and processes the frames with their metadata, as a user would. Compared
byte for byte: the expanded ids (through :func:`gemma4_reference.video_tokenizer`, Gemma's
structure around a timestamp with the spec's ids), ``pixel_values_videos``,
``video_position_ids``, ``num_frames_per_video``, next to an image ``pixel_values``; the
processor's text for each video against ``mm_expansion_text``; and token counts from
headers against processing.
"""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

from mm_framework.testing import noise_frames, require_torchvision

require_torchvision()
pytest.importorskip("av")

from . import gemma4_clips, gemma4_images, gemma4_reference as ref  # noqa: E402
import mm_framework as mmf  # noqa: E402
from gemma4_plugin import Gemma4Family  # noqa: E402

PRESET = mmf.preset("gemma4")
KEYS = ("pixel_values_videos", "video_position_ids", "num_frames_per_video")
C40, C30, C130, C6 = gemma4_clips.CLIPS
# Every video option on the clips that exercise it: config -> (spec fields, clips).
CONFIGS = {
    "frames_4_budget_140": ({"video_num_frames": 4, "video_max_soft_tokens": 140}, [C30, C6]),
    # 5 frames of 30 at 12 fps, 1 of 6 at 29.97 fps, and 260 of 130 refused.
    "fps_2": ({"video_num_frames": None, "video_fps": 2.0}, [C30, C6, C130]),
    "all_frames_bilinear_clip_norm": ({"video_do_sample_frames": False, "video_resample": "pil_bilinear",
                                       "video_image_mean": [0.48145466, 0.4578275, 0.40821073],
                                       "video_image_std": [0.26862954, 0.26130258, 0.27577711]}, [C6]),
    "frames_3_budget_280_unrescaled": ({"video_num_frames": 3, "video_max_soft_tokens": 280,
                                        "video_do_rescale": False}, [C40]),
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    root = tmp_path_factory.mktemp("gemma4_clips")
    out = {}
    for name in gemma4_clips.CLIPS:
        data = gemma4_clips.make(name)
        (root / name).write_bytes(data)
        out[name] = (data, str(root / name))
    return out


def check(spec, text, images, videos, clips):
    """One request through the reference and our pipeline; every output compared."""
    from PIL import Image
    from transformers.video_utils import load_video

    proc = ref.video_processing(spec)
    loaded = [load_video(clips[v][1], backend="pyav") for v in videos]
    imgs = [gemma4_images.make(n) for n in images]
    ids = proc.tokenizer(text)["input_ids"]
    pipe = mmf.pipeline_from_spec(spec)
    req = mmf.MmInput(images=imgs, videos=[clips[v][0] for v in videos], input_ids=ids)
    try:
        want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in imgs] or None,
                    videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                    return_tensors="np")
    except ValueError as e:  # a clip the sampler refuses (more frames than it has)
        with pytest.raises(mmf.MediaError, match="cannot sample"):
            pipe.process(req)
        return str(e)
    out = pipe.process(req)
    assert out.input_ids.tolist() == want["input_ids"][0].tolist()
    kw = out.model_kwargs()
    for key in KEYS + (("pixel_values", "image_position_ids") if images else ()):
        assert kw[key].tobytes() == np.asarray(want[key]).astype(kw[key].dtype).tobytes(), key
    counted = pipe.count_tokens(req)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    # The chat front door's text: replace_video_token's, for each video.
    vout = proc.video_processor(videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                                return_metadata=True)
    family = Gemma4Family({k: v for k, v in spec.items() if k != "family"})
    videos_out = [it for it in out.items if it.modality == "video"]
    for k, it in enumerate(videos_out):
        assert family.mm_expansion_text("video", it.geometry) == proc.replace_video_token(vout, k)
    return out


@pytest.mark.parametrize("config", list(CONFIGS))
def test_video_options_match_the_reference(config, clips):
    fields, names = CONFIGS[config]
    spec = {**PRESET, "backend": "torchvision", **fields}
    if spec["video_resample"] == "pil_bilinear":
        from torchvision.transforms.v2.functional import _geometry

        if not _geometry._do_native_uint8_resize_on_cpu(_geometry.InterpolationMode.BILINEAR):
            pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU, not ATen's uint8 path")
    for name in names:
        check(spec, f"Describe {ref.VIDEO} now.", [], [name], clips)


def test_default_preset_and_a_mixed_prompt(clips):
    """32 frames of a 40-frame clip at the preset's 70 tokens, between two images; minutes in the
    timestamps come from the 1 fps clip."""
    spec = {**PRESET, "backend": "torchvision"}
    text = f"first {ref.IMAGE} then {ref.VIDEO} and {ref.VIDEO} last {ref.IMAGE}."
    out = check(spec, text, ["rgb_640x480.jpg", "tiny_10x10.png"],
                [C40, C130], clips)
    assert [it.geometry.t for it in out.items if it.modality == "video"] == [32, 32]


def test_decoded_frames_without_a_rate_take_24_fps():
    """Frames given as an array without metadata: sampled as an array, timestamps at 24 fps."""
    spec = {**PRESET, "backend": "torchvision", "video_num_frames": 5}
    proc = ref.video_processing(spec)
    arr = noise_frames(50, 30, 130, seed=3)
    text = f"{ref.VIDEO}"
    want = proc(text=[text], videos=[arr], return_tensors="np")
    out = mmf.pipeline_from_spec(spec).process(mmf.MmInput(videos=[mmf.VideoFrames(arr)],
                                                           input_ids=proc.tokenizer(text)["input_ids"]))
    assert out.input_ids.tolist() == want["input_ids"][0].tolist()
    assert out.items[0].geometry.timestamps == tuple(k * 130 // 5 / 24 for k in range(5))
    for key in KEYS:
        assert out.model_kwargs()[key].tobytes() == np.asarray(want[key]).astype(np.int64 if key != KEYS[0]
                                                                                  else np.float32).tobytes()


def test_a_saved_processor_resolves_to_its_spec(tmp_path):
    """``save_pretrained`` of a processor with non-default video fields, its saved video and
    image processor dicts read back through the resolver."""
    import json

    from gemma4_plugin.hf_config import resolve

    spec = {**PRESET, "video_num_frames": None, "video_fps": 1.5, "video_max_soft_tokens": 280,
            "video_resample": "pil_bilinear", "video_image_mean": [0.5] * 3, "video_image_std": [0.5] * 3}
    ref.video_processing(spec).save_pretrained(str(tmp_path))
    # transformers 5.24 nests the sub-processors' dicts in processor_config.json.
    saved = json.loads((tmp_path / "processor_config.json").read_text())
    got = resolve({"model_type": "gemma4"}, saved["image_processor"], saved["video_processor"])
    assert {k: v for k, v in got.items() if k.startswith("video_")} == {
        k: v for k, v in spec.items() if k.startswith("video_")}
