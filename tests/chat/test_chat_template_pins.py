"""The chat templates kept as test data are the texts their sources name (tests/chat/data/SOURCES.md):
each file's SHA-256 as pinned there, so an edit to one is a deliberate change of both."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
PINS = {
    "pixtral_12b/chat_template.jinja": "22840a9b6f697db3c00ab72fb13da0d05d3b1dc68625fa88543d36896023045e",
    "mistral_small_3_1_24b_instruct_2503/chat_template.jinja":
        "773c8c8c2ffb59c8d1069fe423733d2007a88c52d0a838d89e6aae6693b97427",
    "internvl3_1b_hf/chat_template.jinja": "b3e3fa7cdeceec1d3dfe0d17b77724baf3857714e688f3a700261567e96140eb",
    "qwen2_vl_7b_instruct/chat_template.json": "94174d7176c52a7192f96fc34eb2cf23c7c2059d63cdbfadca1586ba89731fb7",
    "qwen3_vl_8b_instruct/chat_template.jinja": "3636d0f0bd6bef02654cdffdc447b79cb2cef8ab02cc75267345946291a489e4",
    "qwen3_5/chat_template.jinja": "ad22cb6365e58696ffc10f1fbfc5f09b8762d0486df899e8f18b0491906e0b21",
}


@pytest.mark.parametrize("name", list(PINS))
def test_template_data_is_the_pinned_text(name):
    data = (DATA / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == PINS[name]
    assert PINS[name] in (DATA / "SOURCES.md").read_text(encoding="utf-8")


def test_qwen2_5_vl_template_is_the_recorded_one():
    """Qwen2.5-VL-7B-Instruct publishes Qwen2-VL's template text: the SHA-256 a record of that
    checkpoint's processor gives for its ``json.dumps`` (tests/chat/data/SOURCES.md)."""
    data = (DATA / "qwen2_vl_7b_instruct" / "chat_template.json").read_text(encoding="utf-8")
    text = json.loads(data)["chat_template"]
    recorded = "4df95d05455c2a6f762616492bba63d0f9bef904ef47daabad35f5715d6d2e4e"
    assert hashlib.sha256(json.dumps(text).encode()).hexdigest() == recorded
