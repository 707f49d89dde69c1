"""Every bundled family's prompt facts through the core: default prompts, placeholder texts
for text prompts, and pixel-free counts that refuse clips for families without video."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import sample_image

# preset (or spec) -> its family's plugin; specs stand in where a family has no preset.
CASES = {
    "qwen2_vl": "qwen_vl_plugin",
    "qwen3_5": "qwen_vl_plugin",
    "gemma3_4b_it": "gemma3_plugin",
    "pixtral_12b": "pixtral_plugin",
    "llava_onevision_qwen2_7b_ov": "llava_onevision_plugin",
    "internvl2_5_8b": "intern_vl_plugin",
    "inkling_vocabulary": "inkling_plugin",
    "paddleocr_vl": "paddleocr_vl_plugin",
    "smolvlm_256m_instruct": "smolvlm_plugin",
}
SPECS = {"inkling_vocabulary": {"family": "inkling", "image_token_id": 200054}}
NO_VIDEO = ["gemma3_4b_it", "pixtral_12b", "llava_onevision_qwen2_7b_ov", "internvl2_5_8b", "inkling_vocabulary",
            "paddleocr_vl", "smolvlm_256m_instruct"]
IMG = sample_image(64, 48, "PNG", 1)


def pipe(case: str) -> mmf.Pipeline:
    if importlib.util.find_spec(CASES[case]) is None:
        pytest.skip(f"needs {CASES[case]}")
    return mmf.pipeline_from_spec(SPECS.get(case) or mmf.preset(case))


def special_aware(texts: dict[str, str], ids: dict[str, int]):
    """A tokenizer that knows the placeholder tokens; any other character is an ordinary id
    (1000..1049, clear of every family's special ids)."""
    def tokenize(text: str) -> list[int]:
        out: list[int] = []
        while text:
            hit = next((m for m, t in texts.items() if text.startswith(t)), None)
            if hit is not None:
                out.append(ids[hit])
                text = text[len(texts[hit]):]
            else:
                out.append(1000 + ord(text[0]) % 50)
                text = text[1:]
        return out

    return tokenize


@pytest.mark.parametrize("case", list(CASES))
def test_every_family_names_the_text_of_each_placeholder(case):
    caps = pipe(case).capabilities
    assert caps.placeholder_texts and set(caps.placeholder_texts) == set(caps.placeholders)


@pytest.mark.parametrize("case", list(CASES))
def test_a_text_prompt_works_through_a_tokenizer_that_knows_the_placeholder(case):
    p = pipe(case)
    caps = p.capabilities
    text = f"Look: {caps.placeholder_texts['image']} and {caps.placeholder_texts['image']}."
    tokenize = special_aware(caps.placeholder_texts, caps.placeholders)
    out = p.count_tokens(mmf.MmInput(images=[IMG, IMG], text=text), tokenize=tokenize)
    by_ids = p.count_tokens(mmf.MmInput(images=[IMG, IMG], input_ids=tokenize(text)))
    assert out.input_ids.tolist() == by_ids.input_ids.tolist() and out.offsets == by_ids.offsets


@pytest.mark.parametrize("case", list(CASES))
def test_a_tokenizer_without_the_special_tokens_is_named(case):
    p = pipe(case)
    caps = p.capabilities
    token, pid = caps.placeholder_texts["image"], caps.placeholders["image"]
    split = special_aware({}, {})
    with pytest.raises(mmf.LayoutError) as e:
        p.count_tokens(mmf.MmInput(images=[IMG], text=f"Look: {token}"), tokenize=split)
    assert str(e.value) == (
        f"prompt has 0 image placeholder(s) for 1 image item(s): the text holds {token!r} but the tokenizer did not "
        f"map it to id {pid}: the tokenizer lacks the model's special tokens"
    )


@pytest.mark.parametrize("case", list(CASES))
def test_no_prompt_is_one_placeholder_per_item(case):
    p = pipe(case)
    ids = [p.capabilities.placeholders["image"]] * 2
    got = p.count_tokens(mmf.MmInput(images=[IMG, IMG]))
    assert got.input_ids.tolist() == p.count_tokens(mmf.MmInput(images=[IMG, IMG], input_ids=ids)).input_ids.tolist()


def test_no_prompt_with_a_video_puts_its_placeholder_after_the_images():
    p = pipe("qwen2_vl")
    clip = mmf.VideoFrames(np.random.default_rng(3).integers(0, 256, (4, 28, 28, 3), dtype=np.uint8), fps=2.0)
    got = p.count_tokens(mmf.MmInput(images=[IMG], videos=[clip]))
    want = p.count_tokens(mmf.MmInput(images=[IMG], videos=[clip], input_ids=[151655, 151656]))
    assert got.input_ids.tolist() == want.input_ids.tolist() and [it.modality for it in got.items] == ["image", "video"]


@pytest.mark.parametrize("case", NO_VIDEO)
def test_a_clip_count_for_a_family_without_video_is_refused(case):
    p = pipe(case)
    for kw in ({"frames": 30, "fps": 10.0}, {"frames": 30}, {"fps": 10.0}):
        with pytest.raises(mmf.UnsupportedError, match=f"family {p.family!r} does not take video: frames and fps"):
            p.num_media_tokens(320, 240, **kw)
    assert p.num_media_tokens(320, 240) > 0


def test_a_clip_count_needs_its_frames():
    p = pipe("qwen2_vl")
    with pytest.raises(mmf.InvalidInputError, match="fps=10.0 without frames: a clip's token count needs its source"):
        p.num_media_tokens(320, 240, fps=10.0)
    # Unchanged for the families that take video: the clip's count.
    assert p.num_media_tokens(320, 240, frames=30, fps=10.0) == 1485 != p.num_media_tokens(320, 240)
