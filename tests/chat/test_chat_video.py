"""Videos through the chat front door on the torchvision backend: ``Processor.apply_chat_template``
of chats with ``video_url`` and ``{"type": "video", ...}`` parts (clips written here) equals
transformers' processor ``apply_chat_template(tokenize=True, return_dict=True,
return_tensors="np")`` with its torchvision image and video processors, byte for byte on the ids,
``pixel_values``, ``image_grid_thw``, ``pixel_values_videos`` and ``video_grid_thw``, for Qwen2-VL
and Qwen3-VL model directories.

The reference loads each clip with ``load_video(path, backend="pyav")`` (tests/chat/qwen_tv.py:
transformers' own path loader needs torchcodec). transformers reads no option inside a message
part; a chat whose video parts carry options is compared with the processor given the same
options for the request (``processor_kwargs``), or, for what the Qwen3 video processor reads only
from its config (frame bounds, ``size``), with the processor built with them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torchvision", reason="the torchvision video processors need torchvision")
pytest.importorskip("av", reason="writing and decoding the clips needs PyAV")
pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework.testing.images import sample_image  # noqa: E402
from .qwen_tv import hf_processor, make_dir, reference, with_loaded_videos, write_clip  # noqa: E402

KEYS = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw")


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("chat-video")
    write_clip(root / "short.mp4", frames=20, fps=10, width=64, height=48, seed=1)
    write_clip(root / "odd.mp4", frames=31, fps=25, width=98, height=62, seed=2)
    (root / "page.png").write_bytes(sample_image(120, 90, "PNG", seed=3))
    return root


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    return {m: make_dir(m, tmp_path_factory.mktemp(m) / "model") for m in ("qwen2_vl", "qwen3_vl")}


def chats(media, **opts):
    short, odd, page = media / "short.mp4", media / "odd.mp4", str(media / "page.png")
    return {
        "video_url": [{"role": "user", "content": [
            {"type": "video_url", "video_url": {"url": f"file://{short}"}, **opts},
            {"type": "text", "text": "What happens?"}]}],
        "video_path_and_image": [{"role": "user", "content": [
            {"type": "image", "path": page}, {"type": "video", "path": str(odd), **opts},
            {"type": "text", "text": "Same scene?"}]}],
        "two_videos_two_turns": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": [{"type": "video", "video": str(short), **opts},
                                         {"type": "text", "text": "First?"}]},
            {"role": "assistant", "content": "A gradient."},
            {"role": "user", "content": [{"type": "text", "text": "And"}, {"type": "image", "image": page},
                                         {"type": "video", "url": f"file://{odd}", **opts}]},
        ],
    }


def assert_equal(out, ref, label):
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist(), label
    ours = out.model_kwargs()
    for key in KEYS:
        if key not in ref:
            assert key not in ours or key == "pixel_values", (label, key)
            continue
        a, b = np.asarray(ours[key]), ref[key]
        assert a.shape == b.shape, (label, key, a.shape, b.shape)
        common = np.float32 if b.dtype.kind == "f" else np.int64
        assert a.astype(common).tobytes() == b.astype(common).tobytes(), (label, key)


# (model, per-part options, the same options for transformers' call, its video config changes)
OPTIONS = [
    ("qwen2_vl", {}, {}, {}),
    # (a call's min/max_pixels would reach the images too: the video processor's own config)
    ("qwen2_vl", {"max_pixels": 64 * 28 * 28}, {}, {"max_pixels": 64 * 28 * 28}),
    ("qwen2_vl", {"min_pixels": 160 * 28 * 28}, {}, {"min_pixels": 160 * 28 * 28}),
    ("qwen2_vl", {"fps": 4, "min_frames": 4, "max_frames": 768}, {"fps": 4}, {}),
    # Its configs name no frame bounds: transformers samples between its class defaults (4, 768).
    ("qwen2_vl", {"fps": 2}, {"fps": 2}, {}),
    ("qwen3_vl", {}, {}, {}),
    ("qwen3_vl", {"fps": 4}, {"fps": 4}, {}),
    ("qwen3_vl", {"fps": 1, "min_frames": 6}, {"fps": 1}, {"min_frames": 6}),
    ("qwen3_vl", {"max_frames": 8}, {}, {"max_frames": 8}),
    ("qwen3_vl", {"max_pixels": 8 * 32 * 32 * 16}, {},
     {"size": {"shortest_edge": 4096, "longest_edge": 8 * 32 * 32 * 16}}),
]


@pytest.mark.parametrize(("model", "opts", "call", "config"), OPTIONS,
                         ids=[f"{m}-{'-'.join(o) or 'plain'}" for m, o, _, _ in OPTIONS])
def test_video_chats_equal_transformers(model, opts, call, config, dirs, media):
    root = dirs[model]
    proc = mmf.Processor.from_model_dir(root, spec_overrides={"backend": "torchvision"})
    hf = hf_processor(model, root, **config)
    for label, messages in chats(media, **opts).items():
        # video_url parts are rewritten to video parts, which transformers' processor does for
        # image_url only (docs/chat.md, "Message formats"): rendered from the loaded messages.
        loaded, _ = with_loaded_videos(messages)
        assert proc.render(messages) == hf.apply_chat_template(loaded, tokenize=False, add_generation_prompt=True)
        ref = reference(hf, messages, **call)
        out = proc.apply_chat_template(messages)
        assert_equal(out, ref, (model, opts, label))
        counted = proc.count_tokens(messages)
        assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets, label


def test_request_level_fps_samples_as_transformers(dirs, media):
    """``mm_processor_kwargs={"fps": ...}`` is transformers' ``apply_chat_template(fps=...)``,
    which turns on ``do_sample_frames`` when the caller leaves it out (``_sampling``)."""
    root = dirs["qwen3_vl"]
    proc = mmf.Processor.from_model_dir(root, spec_overrides={"backend": "torchvision"})
    hf = hf_processor("qwen3_vl", root)
    messages = chats(media)["two_videos_two_turns"]
    out = proc.apply_chat_template(messages, mm_processor_kwargs={"fps": 3})
    assert_equal(out, reference(hf, messages, fps=3), "fps=3 for every video")
    assert out.model_kwargs()["video_grid_thw"].tolist() != proc.apply_chat_template(
        messages).model_kwargs()["video_grid_thw"].tolist()  # the option changed the sampling
