"""``mm-framework chat MESSAGES.json --spec DIR``: the summary of Processor.apply_chat_template."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.cli import main
from mm_framework.testing.images import sample_image
from .qwen_model_dir import make_qwen2_vl_dir

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

URL = "data:image/png;base64," + base64.b64encode(sample_image(120, 90)).decode()
MESSAGES = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": URL}},
                                         {"type": "text", "text": "Describe."}]}]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl") / "model")


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_chat_json_summary_and_arrays(model_dir, tmp_path, capsys):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(MESSAGES))
    npz = tmp_path / "out.npz"
    code, out, err = run(capsys, "chat", path, "--spec", model_dir, "--json", "--out", npz)
    assert (code, err) == (0, "")
    doc = json.loads(out)
    ref = mmf.Processor.from_model_dir(model_dir).apply_chat_template(MESSAGES)
    assert doc["tokens"] == len(ref.input_ids) and doc["items"][0]["source"] == "message 0 part 0"
    assert doc["prompt"].endswith("<|vision_start|><|image_pad|><|vision_end|>Describe.<|im_end|>\n"
                                  "<|im_start|>assistant\n")
    arrays = np.load(npz)
    assert arrays["input_ids"].tolist() == ref.input_ids.tolist()
    assert arrays["item0_feature"].tobytes() == ref.items[0].feature.array.tobytes()


def test_chat_reads_a_request_body_from_stdin(model_dir, monkeypatch, capsys):
    body = {"model": "x", "messages": MESSAGES, "mm_processor_kwargs": {"max_pixels": 16 * 28 * 28},
            "chat_template_kwargs": {"add_vision_id": True}}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(body)))
    code, out, err = run(capsys, "chat", "-", "--spec", model_dir)
    assert (code, err) == (0, "")
    assert "item 0: image message 0 part 0  120x90 -> " in out and "input_ids: " in out


@pytest.mark.parametrize(("text", "message"), [
    ("{", "invalid JSON: "),
    ('{"model": "x"}', "expected a list of messages or a request object with 'messages'"),
    ('[{"role": "robot", "content": "x"}]', "InvalidInputError: message 0: unknown role 'robot'"),
])
def test_chat_rejections(model_dir, monkeypatch, capsys, text, message):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, err = run(capsys, "chat", "-", "--spec", model_dir)
    assert code == 2 and out == "" and message in err


def test_chat_needs_a_model_directory(capsys):
    code, _, err = run(capsys, "chat", "-", "--spec", "qwen2_vl")
    assert code == 2 and err == ("error: InvalidInputError: chat reads the model's tokenizer and chat template: "
                                 "--spec must be a model directory, got 'qwen2_vl'\n")
