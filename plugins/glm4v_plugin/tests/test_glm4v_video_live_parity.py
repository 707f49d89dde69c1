"""Live video parity with transformers' Glm4vProcessor / Glm46VProcessor and their video
processors (torchvision venv only; skipped where torch, torchvision or PyAV is missing).

Short clips made here with PyAV go through ``load_video(backend="pyav")`` and the processor
on one side and ``Pipeline.process`` on the other: sampled frames, ``pixel_values_videos``
bytes, ``video_grid_thw``, the expanded ids (timestamps through the tests' tokenizer and the
spec's ``video_timestamp_ids``), the item offsets, ``mm_token_type_ids`` and the positions of
``Glm4vModel.get_rope_index``; the chat front door's text equals ``replace_video_token``'s.
Counts from headers equal processing. The samplers are swept over clip lengths and rates.
"""

from __future__ import annotations

import copy
import io
import os
import tempfile

import numpy as np
import pytest

from mm_framework.testing import require_torchvision

require_torchvision()
pytest.importorskip("av")
transformers = pytest.importorskip("transformers")

from PIL import Image  # noqa: E402
from transformers.video_utils import VideoMetadata, load_video  # noqa: E402

import mm_framework as mmf  # noqa: E402
from . import glm4v_clips as clips  # noqa: E402
from . import glm4v_images as images  # noqa: E402
from . import glm4v_reference as ref  # noqa: E402
from . import glm4v_video_cases as cases  # noqa: E402
from glm4v_plugin.family import Glm4vFamily  # noqa: E402
from glm4v_plugin.video import sample_glm4v, sample_glm46v  # noqa: E402

transformers.logging.set_verbosity_error()
VIDEO_START, VIDEO_END = ref.MARKERS["<|begin_of_video|>"], ref.MARKERS["<|end_of_video|>"]


REFUSED = {("glm46v", "64x48_1f_10fps"), ("glm46v_tps3", "64x48_1f_10fps"), ("glm46v_tps3", "34x18_7f_10fps")}


@pytest.fixture(scope="module")
def encoded():
    return {name: clips.encode(name) for name in clips.CLIPS}


def reference(config, tok, data, items):
    model, _ = cases.CONFIGS[config]
    spec = cases.spec(config, tok)
    proc = ref.video_processor_full(spec, tok, model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clip.mp4")
        with open(path, "wb") as f:
            f.write(data)
        frames, meta = load_video(path, backend="pyav")
    names = ("tiny_10x10.png", "odd_333x501.png")[: items.count("image")]
    pics = [Image.open(io.BytesIO(images.make(n))) for n in names]
    text = cases.prompt(items)
    out = proc(text=[text], images=pics or None, videos=[frames], video_metadata=[copy.deepcopy(meta)],
               return_tensors="pt")
    return spec, text, out


def ours(spec, tok, text, data, items):
    pipe = mmf.pipeline_from_spec(spec)
    names = ("tiny_10x10.png", "odd_333x501.png")[: items.count("image")]
    inp = mmf.MmInput(images=[images.make(n) for n in names], videos=[data], input_ids=ref.token_ids(tok, text))
    return pipe, inp, pipe.process(inp)


def check(config, data, items):
    model, _ = cases.CONFIGS[config]
    tok = ref.video_tokenizer(mmf.preset(cases.PRESETS[model])["image_token_id"])
    try:
        spec, text, want = reference(config, tok, data, items)
    except (ValueError, IndexError) as e:  # the reference refuses the clip: so must we
        with pytest.raises(mmf.MediaError, match="video"):
            ours(cases.spec(config, tok), tok, cases.prompt(items), data, items)
        return str(e)
    pipe, inp, out = ours(spec, tok, text, data, items)
    ids = want["input_ids"][0].numpy()
    assert np.asarray(out.input_ids).tolist() == ids.tolist()
    kw = pipe.model_kwargs(out)
    assert kw["video_grid_thw"].tolist() == want["video_grid_thw"].tolist()
    assert kw["pixel_values_videos"].tobytes() == want["pixel_values_videos"].numpy().tobytes()
    if "image" in items:
        assert kw["pixel_values"].tobytes() == want["pixel_values"].numpy().tobytes()
    # mm_token_type_ids: <|image|> inside <|begin_of_video|>..<|end_of_video|> is video (2).
    types = want["mm_token_type_ids"][0].numpy()
    for (s, e), it in zip(out.offsets, out.items):
        span = types[s : e + 1]
        pads = ids[s : e + 1] == spec["image_token_id"]
        assert set(span[pads].tolist()) == {2 if it.modality == "video" else 1}
        assert ids[s - 1] == (spec["image_start_token_id"])
    assert (types > 0).sum() == sum(int((ids[s : e + 1] == spec["image_token_id"]).sum()) for s, e in out.offsets)
    pos, delta = ref.rope_fn(spec["merge_size"])(
        input_ids=want["input_ids"], mm_token_type_ids=want["mm_token_type_ids"],
        image_grid_thw=want.get("image_grid_thw"), video_grid_thw=want["video_grid_thw"])
    np.testing.assert_array_equal(out.positions.positions, pos[:, 0].numpy())
    assert out.positions.delta == int(delta.reshape(-1)[0])
    counted = pipe.count_tokens(inp)
    assert np.asarray(counted.input_ids).tolist() == ids.tolist() and counted.offsets == out.offsets
    # The chat front door's text: replace_video_token's, placeholder for placeholder.
    fam = Glm4vFamily({k: v for k, v in spec.items() if k != "family"})
    video = [it for it in out.items if it.modality == "video"][0]
    expanded = ref.token_ids(tok, fam.mm_expansion_text("video", video.geometry))
    start = ids.tolist().index(VIDEO_START) + 1
    assert ids[start : start + len(expanded)].tolist() == expanded and ids[start + len(expanded)] == VIDEO_END


@pytest.mark.parametrize("config", list(cases.CONFIGS))
@pytest.mark.parametrize("name", list(clips.CLIPS))
def test_clip_matches_the_processor(config, name, encoded):
    refused = check(config, encoded[name], ["video"])
    # Refused on both sides: GLM-4.6V's sampler on a 1-frame clip, a temporal patch of 3 over 2 frames.
    assert refused is None or (config, name) in REFUSED, refused


@pytest.mark.parametrize("config", ["glm4v", "glm46v"])
def test_mixed_prompt_matches_the_processor(config, encoded):
    check(config, encoded["50x36_45f_29.97fps"], ["image", "video", "image"])


def test_samplers_sweep():
    """Both samplers against the classes' sample_frames over many lengths and rates."""
    v4 = transformers.Glm4vVideoProcessor()
    v46 = transformers.Glm46VVideoProcessor()
    rng = np.random.default_rng(3)
    for _ in range(400):
        total = int(rng.integers(2, 4000))
        fps = float(rng.choice([1, 5, 10, 12, 23.976, 24, 25, 29.97, 30, 60, 7.5]))
        meta = VideoMetadata(total_num_frames=total, fps=fps, duration=total / fps)
        want = v4.sample_frames(meta).tolist()
        assert sample_glm4v(total, fps, target_fps=2, max_duration=300, duration=total / fps) == want, (total, fps)
        want = v46.sample_frames(copy.deepcopy(meta)).tolist()
        assert sample_glm46v(total, fps, temporal_patch_size=2, duration=total / fps) == want, (total, fps)
        # Frames the caller decoded: no duration in their metadata.
        meta = VideoMetadata(total_num_frames=total, fps=fps)
        want = v4.sample_frames(meta).tolist()
        assert sample_glm4v(total, fps, target_fps=2, max_duration=300) == want, (total, fps)
        assert sample_glm46v(total, fps, temporal_patch_size=2) == v46.sample_frames(meta).tolist(), (total, fps)


@pytest.mark.parametrize("config", ["glm4v", "glm46v_tps3"])
def test_decoded_frames_match_the_processor(config):
    """Frames given as arrays with their fps (no duration: transformers rounds one from the
    frame count), next to an image: ids, both pixel tensors, grids and positions."""
    model, _ = cases.CONFIGS[config]
    tok = ref.video_tokenizer(mmf.preset(cases.PRESETS[model])["image_token_id"])
    spec = cases.spec(config, tok)
    proc = ref.video_processor_full(spec, tok, model)
    pipe = mmf.pipeline_from_spec(spec)
    text = cases.prompt(["video", "image"])
    ids = ref.token_ids(tok, text)
    rng = np.random.default_rng(5)
    for t, h, w, fps in ((9, 120, 90, 25.0), (16, 64, 64, 30000 / 1001), (7, 30, 200, 2.0), (3, 40, 40, None)):
        arr = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
        image = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
        meta = None if fps is None else [{"total_num_frames": t, "fps": fps, "frames_indices": list(range(t))}]
        request = mmf.MmInput(images=[image], videos=[mmf.VideoFrames(arr, fps=fps)], input_ids=ids)
        try:
            want = proc(text=[text], images=[Image.fromarray(image)], videos=[arr], video_metadata=meta,
                        return_tensors="pt")
        except ValueError:  # no fps to sample at
            with pytest.raises(mmf.MediaError):
                pipe.process(request)
            continue
        out = pipe.process(request)
        kw = pipe.model_kwargs(out)
        assert np.asarray(out.input_ids).tolist() == want["input_ids"][0].tolist(), (config, t, h, w)
        for name in ("pixel_values_videos", "video_grid_thw", "pixel_values", "image_grid_thw"):
            assert kw[name].tobytes() == want[name].numpy().tobytes(), (config, name, t, h, w)
        pos, delta = ref.rope_fn(spec["merge_size"])(
            input_ids=want["input_ids"], mm_token_type_ids=want["mm_token_type_ids"],
            image_grid_thw=want["image_grid_thw"], video_grid_thw=want["video_grid_thw"])
        np.testing.assert_array_equal(out.positions.positions, pos[:, 0].numpy())


@pytest.mark.parametrize("config", ["glm4v", "glm46v"])
def test_the_chat_front_door_tokenizes_the_processors_text(config, encoded, tmp_path):
    """``mm_framework.Processor`` with the tests' tokenizer and a GLM-style template: its ids
    (the prompt retokenized with ``mm_expansion_text``) and positions equal the processor's."""
    from mm_framework.chat.processor import Processor
    from mm_framework.chat.template import ChatTemplate
    from mm_framework.chat.tokenizer import ChatTokenizer

    model, _ = cases.CONFIGS[config]
    tok = ref.video_tokenizer(mmf.preset(cases.PRESETS[model])["image_token_id"])
    spec, text, want = reference(config, tok, encoded["50x36_45f_29.97fps"], ["image", "video", "image"])
    template = ("[gMASK]<sop>{% for m in messages %}<|user|>\n{% for p in m.content %}"
                "{% if p.type == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
                "{% elif p.type == 'video' %}<|begin_of_video|><|video|><|end_of_video|>"
                "{% else %}{{ p.text }}{% endif %}{% endfor %}{% endfor %}<|assistant|>{{ '\\n' }}")
    front = Processor(mmf.pipeline_from_spec(spec), ChatTokenizer(tok.backend_tokenizer, {}, ()),
                      ChatTemplate(template, "test"))
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(encoded["50x36_45f_29.97fps"])
    parts = [{"type": "image", "image": images.make("tiny_10x10.png")}, {"type": "video", "path": str(clip)},
             {"type": "image", "image": images.make("odd_333x501.png")},
             {"type": "text", "text": "Describe this video."}]
    out = front.apply_chat_template([{"role": "user", "content": parts}])
    assert np.asarray(out.input_ids).tolist() == want["input_ids"][0].tolist()
    pos, _ = ref.rope_fn(spec["merge_size"])(
        input_ids=want["input_ids"], mm_token_type_ids=want["mm_token_type_ids"],
        image_grid_thw=want["image_grid_thw"], video_grid_thw=want["video_grid_thw"])
    np.testing.assert_array_equal(out.positions.positions, pos[:, 0].numpy())
    # A table that disagrees with the tokenizer is caught: the spans do not occur in the text's ids.
    wrong = {**spec, "video_timestamp_ids": {t: [9] for t in spec["video_timestamp_ids"]}}
    front = Processor(mmf.pipeline_from_spec(wrong), front.tokenizer, front.template)
    with pytest.raises(mmf.LayoutError, match="the spec's token ids disagree with the tokenizer"):
        front.apply_chat_template([{"role": "user", "content": parts}])
