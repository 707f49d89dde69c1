"""The ``pixtral`` family's chat test models: Pixtral-12B (``mistral-community/pixtral-12b``,
``LlavaForConditionalGeneration``) and Mistral 3 (``mistralai/Mistral-Small-3.1-24B-Instruct-2503``,
``Mistral3ForConditionalGeneration``). transformers 5.24 has no ``Mistral3Processor``: both
checkpoints ship ``PixtralProcessor`` (``processing_auto`` maps ``mistral3`` to it), the second
with ``spatial_merge_size`` 2.

Each directory holds the pixtral plugin's copies of the published ``config.json``,
``preprocessor_config.json`` and ``processor_config.json``, the published chat template (test
data, ``tests/chat/data/SOURCES.md``) and the Tekken vocabulary ``tekken_240911.json`` from
``mistral-common`` converted by transformers' ``MistralConverter`` (the plugin's
``pixtral_reference.tokenizer``): the real vocabulary with Mistral's fixed special-token table
(``<s>`` 1, ``[INST]`` 3, ``[IMG]`` 10, ``[IMG_BREAK]`` 12, ``[IMG_END]`` 13, ``[SYSTEM_PROMPT]``
17, ...). Mistral Small 3.1's own, newer Tekken file is not available offline; its control
tokens have the same ids.

Images are opaque and unrotated, where transformers' chat path (``load_image``: EXIF turned,
alpha dropped) and the spec's default decoding agree.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

from mm_framework.testing.images import sample_image

from . import Case, ChatModel, tokenizer_config
from ..bpe_ranks import vocab_and_merges

ROOT = Path(__file__).parents[3]
DATA = Path(__file__).parents[1] / "data"
CONFIGS = ROOT / "plugins" / "pixtral_plugin" / "tests" / "golden" / "models"
REFERENCE = ROOT / "plugins" / "pixtral_plugin" / "tests" / "pixtral_reference.py"

JPEG = sample_image(640, 480, "JPEG", seed=1)
PNG = sample_image(1000, 700, "PNG", seed=2)
SMALL = sample_image(90, 60, "PNG", seed=3)

# Our add_generation_prompt defaults to True (as vLLM's), transformers' to False: a case
# that means either says so.
GENERATE = {"add_generation_prompt": True}

_TOKENIZER: list[Path] = []


def _tokenizer_json() -> Path:
    """``tokenizer.json`` of the converted Tekken vocabulary, written once per session (the
    conversion takes seconds): transformers' ``MistralConverter`` when transformers is installed,
    else (the golden replay, which must not import it) the same conversion with ``tokenizers``
    alone. The test is skipped, saying why, without ``mistral-common``."""
    import pytest

    pytest.importorskip("mistral_common", reason="the Pixtral tokenizer is mistral-common's Tekken file")
    if not _TOKENIZER:
        import tempfile

        from mm_framework.testing import load_module

        reference = load_module(REFERENCE, "pixtral_reference")
        out = Path(tempfile.mkdtemp(prefix="mm-tekken-")) / "tokenizer.json"
        try:
            import transformers  # noqa: F401
        except ImportError:
            _tekken_tokenizer(reference.tekken_path()).save(str(out))
        else:
            reference.tokenizer().backend_tokenizer.save(str(out))
        _TOKENIZER.append(out)
    return _TOKENIZER[0]


def _tekken_tokenizer(path: str) -> Any:
    """The Tekken file converted as transformers' ``MistralConverter`` converts it: the special
    tokens first (this file predates their table in it: mistral-common's deprecated table, then
    ``<SPECIAL_i>`` up to ``default_num_special_tokens``), then the first ``default_vocab_size``
    ranks after them."""
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    config = raw["config"]
    assert "special_tokens" not in raw, "a Tekken file with its own special tokens"
    table = sorted(Tekkenizer.DEPRECATED_SPECIAL_TOKENS, key=lambda t: t["rank"])
    specials = [str(getattr(t["token_str"], "value", t["token_str"])) for t in table]
    count = config["default_num_special_tokens"]
    specials += [Tekkenizer.SPECIAL_TOKEN_TEMPLATE.format(id=i) for i in range(len(specials), count)]
    entries = raw["vocab"][: config["default_vocab_size"] - count]
    vocab, merges = vocab_and_merges({base64.b64decode(e["token_bytes"]): r for r, e in enumerate(entries)})
    vocab = {t: r + count for t, r in vocab.items()} | {t: r for r, t in enumerate(specials)}
    tok = Tokenizer(BPE(vocab, merges, fuse_unk=False))
    tok.model.ignore_merges = True
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(config["pattern"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True) for t in specials])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def tekken_tokenizer_config(tokenizer_json: Path) -> dict[str, Any]:
    """The tokenizer config transformers' conversion saves for a Tekken vocabulary: every control
    token of the vocabulary's table (ids 0..999) special, ``<s>``/``</s>``/``<unk>``/``<pad>`` named."""
    return tokenizer_config(
        json.loads(tokenizer_json.read_text(encoding="utf-8"))["added_tokens"],
        bos_token="<s>",
        clean_up_tokenization_spaces=False,
        eos_token="</s>",
        model_max_length=1000000000000000019884624838656,
        pad_token="<pad>",
        tokenizer_class="PreTrainedTokenizerFast",
        unk_token="<unk>",
    )


def ask(messages: list[dict[str, Any]], **options: Any) -> Case:
    """A request that ends with the generation prompt (``GENERATE``)."""
    return Case(messages, GENERATE, **options)


def _maker(configs: str, template: str):
    def make_dir(root: Path) -> Path:
        tokenizer = _tokenizer_json()
        root.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "preprocessor_config.json", "processor_config.json"):
            shutil.copy(CONFIGS / configs / name, root / name)
        shutil.copy(tokenizer, root / "tokenizer.json")
        (root / "tokenizer_config.json").write_text(json.dumps(tekken_tokenizer_config(tokenizer), indent=2))
        text = (DATA / template / "chat_template.jinja").read_text(encoding="utf-8")
        (root / "chat_template.json").write_text(json.dumps({"chat_template": text}, indent=2))
        return root

    return make_dir


def reference(root: Path, backend: str) -> Any:
    """``AutoProcessor.from_pretrained(root)`` with the image processor of ``backend``. Without
    torch, ``processing_pixtral`` cannot be imported (it takes one function from the torchvision
    image processor module), so the class comes from the pixtral plugin's reference, which serves
    that import with the PIL module's identical function, and is loaded the same way."""
    import transformers

    try:
        return transformers.AutoProcessor.from_pretrained(root, backend=backend)
    except ImportError:
        if backend != "pil":
            raise
    from mm_framework.testing import load_module

    cls, _ = load_module(REFERENCE, "pixtral_reference").processor_class()
    return cls.from_pretrained(root, backend=backend)


def _data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def media_parts(media: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Three image parts (shared by the chat models): a JPEG ``image_url`` with a ``data:`` URL,
    a PNG by ``path`` (written into ``media``), a small PNG by ``data:`` ``url``."""
    path = media / "page.png"
    if not path.exists():
        path.write_bytes(PNG)
    jpeg = {"type": "image_url", "image_url": {"url": _data_url(JPEG, "image/jpeg"), "detail": "high"}}
    page = {"type": "image", "path": str(path)}
    small = {"type": "image", "url": _data_url(SMALL, "image/png")}
    return jpeg, page, small


def pixtral_cases(media: Path) -> dict[str, Case]:
    """Pixtral-12B's template: the system prompt joins the last user turn, image parts are
    ``[IMG]``, assistant contents are strings; a text part is read from ``chunk["content"]``
    (the template predates ``"text"`` parts), so OpenAI text parts render empty, as there."""
    jpeg, page, small = media_parts(media)
    text = {"type": "text", "text": "Describe this image."}
    multi = [
        {"role": "user", "content": [jpeg, text]},
        {"role": "assistant", "content": "A picture."},
        {"role": "user", "content": "And now a text-only turn."},
        {"role": "assistant", "content": "Fine."},
        {"role": "user", "content": [page]},
    ]
    return {
        "single": ask([{"role": "user", "content": [jpeg, text]}]),
        "string_content": ask([{"role": "user", "content": "Hello, who are you?"}]),
        "system": ask([{"role": "system", "content": "You are terse."}, {"role": "user", "content": [page]}]),
        "interleaved": ask([{"role": "user", "content": [
            {"type": "text", "text": "First "}, jpeg, {"type": "text", "text": " then "}, small,
            {"type": "text", "text": " and "}, page,
        ]}]),
        "multi_turn": ask(multi),
        "multi_turn_no_generation_prompt": Case(multi, {"add_generation_prompt": False}),
        "image_only": ask([{"role": "user", "content": [small]}]),
        "continue_final_message": Case(
            [{"role": "user", "content": [small]}, {"role": "assistant", "content": "The image shows  "}],
            {"continue_final_message": True},
        ),
    }


_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}}]


def mistral3_cases(media: Path) -> dict[str, Case]:
    """Mistral Small 3.1's template: a default system prompt with today's date unless one is
    given (string or text parts), ``[IMG]`` for image and image_url parts, tools as
    ``[AVAILABLE_TOOLS]`` before the last user turn, tool calls and results."""
    jpeg, page, small = media_parts(media)
    multi = [
        {"role": "user", "content": [jpeg, {"type": "text", "text": "What is this?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A picture."}]},
        {"role": "user", "content": "And now a text-only turn."},
        {"role": "assistant", "content": "Fine."},
        {"role": "user", "content": [page, {"type": "text", "text": "This?"}]},
    ]
    call = {"id": "call_0123456789", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    return {
        "single": ask([{"role": "user", "content": [jpeg, {"type": "text", "text": "Describe this image."}]}]),
        "string_content": ask([{"role": "user", "content": "Hello, who are you?"}]),
        "system": ask([{"role": "system", "content": "You are terse."},
                        {"role": "user", "content": [{"type": "text", "text": "Read this:"}, page]}]),
        "system_parts": ask([{"role": "system", "content": [{"type": "text", "text": "You read pages."}]},
                              {"role": "user", "content": [page]}]),
        "interleaved": ask([{"role": "user", "content": [
            {"type": "text", "text": "First "}, jpeg, {"type": "text", "text": " then "}, small,
            {"type": "text", "text": " and "}, page, {"type": "text", "text": " which differ?"},
        ]}]),
        "multi_turn": ask(multi),
        "multi_turn_no_generation_prompt": Case(multi, {"add_generation_prompt": False}),
        "image_only": ask([{"role": "user", "content": [small]}]),
        "unicode": ask([{"role": "user", "content": [
            {"type": "text", "text": "Grüße, 世界 🌍\n\ttabs  and  spaces"}, jpeg]}]),
        "continue_final_message": Case(
            [{"role": "user", "content": [small]},
             {"role": "assistant", "content": [{"type": "text", "text": "The image shows  "}]}],
            {"continue_final_message": True},
        ),
        "tools": Case([{"role": "user", "content": [small, {"type": "text", "text": "Weather where this is?"}]}],
                      {"tools": _TOOLS, **GENERATE}),
        "tool_call_and_result": Case([
            {"role": "user", "content": [small, {"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0123456789", "content": "sunny"},
        ], {"tools": _TOOLS, **GENERATE}),
    }


KEYS = ("pixel_values", "image_sizes")
# The family clones PixtralImageProcessorPil (the default) and, with "backend": "torchvision",
# the torchvision PixtralImageProcessor (docs/families/pixtral.md §2, §3).
BACKENDS = ("pil", "torchvision")
MODELS = [
    ChatModel("pixtral_12b", _maker("pixtral_12b", "pixtral_12b"), reference, pixtral_cases, KEYS, backends=BACKENDS),
    ChatModel("mistral_small_3_1", _maker("mistral_small_3_1", "mistral_small_3_1_24b_instruct_2503"), reference,
              mistral3_cases, KEYS, backends=BACKENDS),
]
