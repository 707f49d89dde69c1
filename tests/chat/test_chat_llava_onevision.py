"""llava_onevision with several images in one chat (docs/chat.md, per-family notes): each image is
processed anyres on its own, as LlavaOnevisionProcessor does for the rendered prompt and a flat
image list (vLLM's call), where transformers' chat path would give every image of the prompt
one pad-to-square patch."""

from __future__ import annotations

import io

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import sample_image
from .models import llava_onevision

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
Image = pytest.importorskip("PIL.Image")


def test_several_images_equal_the_processor_on_a_flat_list(tmp_path):
    root = llava_onevision.make_dir(tmp_path / "model")
    data = [sample_image(900, 500, "PNG", seed=31), sample_image(300, 640, "PNG", seed=32)]
    paths = []
    for k, d in enumerate(data):
        paths.append(tmp_path / f"{k}.png")
        paths[-1].write_bytes(d)
    messages = [{"role": "user", "content": [{"type": "image", "path": str(p)} for p in paths]
                 + [{"type": "text", "text": "Compare them."}]}]
    proc = mmf.Processor.from_model_dir(root)
    out = proc.apply_chat_template(messages)
    ref = llava_onevision.reference(root, "pil")
    want = ref(text=proc.render(messages), images=[Image.open(io.BytesIO(d)) for d in data], return_tensors="np")
    assert out.input_ids.tolist() == np.asarray(want["input_ids"])[0].tolist()
    ours = out.model_kwargs()
    for key in ("pixel_values", "image_sizes"):
        assert np.asarray(ours[key]).shape == np.asarray(want[key]).shape, key
        assert np.array_equal(np.asarray(ours[key]), np.asarray(want[key])), key
    chat = ref.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                   add_generation_prompt=True)
    assert len(chat["input_ids"][0]) < len(out.input_ids)  # the chat path's one patch per image
