"""The README's "From a chat request" snippet runs as written against the test model directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .qwen_model_dir import make_qwen2_vl_dir

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

README = Path(__file__).parents[2] / "README.md"


def test_readme_chat_snippet_runs(tmp_path, capsys):
    section = README.read_text(encoding="utf-8").split("## From a chat request", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {"MODEL_DIR": make_qwen2_vl_dir(tmp_path / "model")})
    printed = capsys.readouterr().out
    assert "<|vision_start|><|image_pad|><|vision_end|>" in printed and "Output(family='qwen_vl'" in printed
    assert "'pixel_values': (" in printed
