"""The qwen2_5_omni goldens replayed: every case made by ``golden_omni/generate_omni_goldens.py``
from transformers 5.24's ``Qwen2_5OmniProcessor`` and the thinker's ``get_rope_index``,
recomputed by the pipeline (no reference installed), and each case's header-only count."""

from __future__ import annotations

import pytest

pytest.importorskip("av")
pytest.importorskip("soundfile")

import mm_framework as mmf  # noqa: E402
from .omni_cases import CASES, MODEL, compare, load, output_doc, request  # noqa: E402


def test_cases_exist():
    assert len(CASES) == 7
    for path in CASES:
        assert load(path)["provenance"]["transformers"] == "5.24.0"


def test_preset_is_the_model_directory():
    assert mmf.spec_from_model_dir(MODEL) == mmf.preset("qwen2_5_omni")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case_replays(path):
    case = load(path)
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_5_omni"))
    out = pipe.process(request(case))
    compare(output_doc(out), case["expected"], case["name"])
    counted = pipe.count_tokens(request(case))
    assert counted.input_ids.tobytes() == out.input_ids.tobytes()
    assert counted.offsets == out.offsets
