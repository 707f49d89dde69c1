"""The chat templates kept as test data are the texts their sources name (tests/chat/data/SOURCES.md):
each file's SHA-256 as pinned there, so an edit to one is a deliberate change of both."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
PINS = {
    "pixtral_12b/chat_template.jinja": "22840a9b6f697db3c00ab72fb13da0d05d3b1dc68625fa88543d36896023045e",
    "mistral_small_3_1_24b_instruct_2503/chat_template.jinja":
        "773c8c8c2ffb59c8d1069fe423733d2007a88c52d0a838d89e6aae6693b97427",
    "internvl3_1b_hf/chat_template.jinja": "b3e3fa7cdeceec1d3dfe0d17b77724baf3857714e688f3a700261567e96140eb",
}


@pytest.mark.parametrize("name", list(PINS))
def test_template_data_is_the_pinned_text(name):
    data = (DATA / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == PINS[name]
    assert PINS[name] in (DATA / "SOURCES.md").read_text(encoding="utf-8")
