"""The other forms of the front door: videos from messages (with per-item options), the async
and many-requests forms, and tools, each equal to the pipeline fed the same request by hand."""

from __future__ import annotations

import asyncio
import base64

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing.images import sample_image
from .qwen_model_dir import IDS, make_qwen2_vl_dir, tokenizer_config

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

JPEG = sample_image(320, 240, "JPEG", seed=5)
URL = "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    return mmf.Processor.from_model_dir(make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl") / "model"))


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    av = pytest.importorskip("av", reason="encoding a clip needs PyAV (mm-framework[video])")
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("mpeg4", rate=8)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        for k in range(32):
            frame = np.full((48, 64, 3), k * 7, np.uint8)
            out.mux(s.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(s.encode())
    return path


def by_hand(proc, messages, **options):
    """The pipeline fed what the front door should make of ``messages``: the rendered prompt's
    ids and the media in message order, each with its options."""
    ids = proc.tokenizer.encode(proc.render(messages))
    items = [it for m in messages if isinstance(m["content"], list) for it in _items(m["content"])]
    return mmf.MmInput(items=items, input_ids=ids, options=options)


def _items(parts):
    for p in parts:
        options = {k: v for k, v in p.items() if k not in ("type", "path", "video_url")}
        if p["type"] == "image_url":
            yield mmf.Image(p["image_url"]["url"])
        elif p["type"] == "video_url":
            yield mmf.Video(p["video_url"]["url"], do_sample_frames=True, **options)
        elif p["type"] == "video":
            yield mmf.Video(str(p["path"]), **options)


def test_videos_and_images_from_messages(proc, clip):
    messages = [{"role": "user", "content": [
        # fps without do_sample_frames samples (transformers' rule for processor kwargs, and qwen-vl-utils')
        {"type": "video_url", "video_url": {"url": f"file://{clip}"}, "fps": 4, "min_frames": 4, "max_frames": 32},
        {"type": "image_url", "image_url": {"url": URL}},
        {"type": "video", "path": str(clip), "do_sample_frames": True, "fps": 2, "min_frames": 2, "max_frames": 4},
        {"type": "text", "text": "What happens?"},
    ]}]
    text = proc.render(messages)
    assert text.count("<|vision_start|><|video_pad|><|vision_end|>") == 2
    assert text.index("<|video_pad|>") < text.index("<|image_pad|>")  # message order
    out = proc.apply_chat_template(messages)
    assert out == proc.pipeline.process(by_hand(proc, messages))
    first, second = (it for it in out.items if it.modality == "video")
    assert first.aux["video_grid_thw"].array[0] > second.aux["video_grid_thw"].array[0]
    assert int(np.count_nonzero(out.input_ids == IDS["<|video_pad|>"])) == sum(
        int(np.prod(it.aux["video_grid_thw"].array)) // 4 for it in (first, second)
    )


def test_async_and_many_equal_the_sync_form(proc):
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": URL}},
                                             {"type": "text", "text": "Describe."}]}]
    out = proc.apply_chat_template(messages)
    assert asyncio.run(proc.apply_chat_template_async(messages)) == out
    text_only = [{"role": "user", "content": "hi"}]
    bad = [{"role": "user", "content": [{"type": "image", "image": URL, "max_pixels": 1}]}]
    many = proc.apply_chat_template_many([messages, text_only, bad, [{"role": "robot", "content": "x"}]],
                                         return_exceptions=True)
    assert many[0] == out and many[1] == proc.apply_chat_template(text_only)
    assert isinstance(many[2], mmf.SpecError) and str(many[2]).startswith("item 0 (data:image/jpeg;base64,...): "
                                                                         "message 0 part 0: processor option")
    assert isinstance(many[3], mmf.InvalidInputError) and "unknown role 'robot'" in str(many[3])
    with pytest.raises(mmf.SpecError, match="message 0 part 0: processor option max_pixels=1"):
        proc.apply_chat_template_many([messages, bad])


def test_request_options_and_item_options(proc):
    messages = [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": URL}, "max_pixels": 64 * 28 * 28},
        {"type": "image_url", "image_url": {"url": URL}},
    ]}]
    out = proc.apply_chat_template(messages, mm_processor_kwargs={"max_pixels": 16 * 28 * 28})
    small, smaller = (int(np.prod(it.aux["image_grid_thw"].array)) // 4 for it in out.items)
    assert small <= 64 and smaller <= 16 and small > smaller  # the item's own option wins


def test_tools_and_documents_reach_the_template(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False, config=tokenizer_config(template=False))
    (root / "chat_template.jinja").write_text(
        "{% for t in tools %}{{ t | tojson }}{% endfor %}|{{ documents[0].title }}|{{ messages[-1].tool_calls[0].id }}"
    )
    proc = mmf.Processor.from_model_dir(root)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    messages = [{"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function"}]}]
    assert proc.render(messages, tools=tools, documents=[{"title": "T", "text": "x"}]) == (
        '{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}|T|call_1'
    )
