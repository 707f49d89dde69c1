"""SmolVLM2 video prompts, expanded as text (``Capabilities.text_prompts``): the pipeline, given
the prompt as text and a tokenizer reporting character offsets, gives the ids the processor's
tokenizer makes of the prompt with each ``<video>`` replaced by ``replace_video_token``'s text
(recorded in the goldens from transformers 5.24), each video's span the tokens of its text,
and the golden pixels; the live comparison with ``SmolVLMProcessor`` is
test_smolvlm_video_parity.py (torchvision venv)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("tokenizers")

import mm_framework as mmf  # noqa: E402
from mm_framework.testing import load_cases  # noqa: E402
from mm_framework.testing.records import tensor_doc  # noqa: E402

from . import smolvlm_reference  # noqa: E402

GOLDEN = Path(__file__).parent / "golden_video"
CASES = load_cases(GOLDEN / "cases")
PROMPT = "<|im_start|>User: {videos}Describe what happens<end_of_utterance>\nAssistant:"


def _prompt(n: int) -> str:
    return PROMPT.format(videos=" and ".join(["<video>"] * n))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_text_prompt_expands_as_the_processor_does(case):
    spec = case.doc["spec"]
    tok = smolvlm_reference.tokenizer(spec)
    videos = case.doc["videos"]
    clips = [(GOLDEN / "clips" / v["file"]).read_bytes() for v in videos]
    text = _prompt(len(clips))
    out = mmf.pipeline_from_spec(spec).process(mmf.MmInput(videos=clips, text=text), tokenize=tok)
    expanded = text
    for v in videos:
        expanded = expanded.replace("<video>", v["expansion_text"], 1)
    want = tok(expanded)["input_ids"]
    assert out.input_ids.tolist() == want
    for (start, end), v in zip(out.offsets, videos, strict=True):
        assert tok.decode(want[start:end + 1]) == tok.decode(tok(v["expansion_text"])["input_ids"])
    kwargs = out.model_kwargs()
    for key, doc in case.doc["expected"]["model_kwargs"].items():
        assert tensor_doc(doc["dtype"], kwargs[key]) == doc, key
    counted = mmf.pipeline_from_spec(spec).count_tokens(mmf.MmInput(videos=clips, text=text), tokenize=tok)
    assert counted.input_ids.tolist() == want and counted.offsets == out.offsets


@pytest.fixture(scope="module")
def case():
    return next(c for c in CASES if len(c.doc["videos"]) == 2)


def test_token_ids_are_refused_before_any_decoding(case):
    spec = case.doc["spec"]
    pipe = mmf.pipeline_from_spec(spec)
    # Not a clip: a request refused before I/O never looks at its bytes.
    inp = mmf.MmInput(videos=[b"not a clip"], input_ids=[7, spec["video_token_id"]])
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(mmf.UnsupportedError, match=r"item 0: a video's prompt is text in family 'smolvlm' .* "
                                                       r"send the prompt as text with a tokenizer"):
            run(inp)
    with pytest.raises(mmf.UnsupportedError, match="a video's token count in family 'smolvlm' depends on the "
                                                   "tokenizer"):
        pipe.num_media_tokens(frames=4, fps=2.0, width=32, height=32)


def test_text_without_a_tokenizer_is_refused(case):
    spec = case.doc["spec"]
    clip = (GOLDEN / "clips" / case.doc["videos"][0]["file"]).read_bytes()
    inp = mmf.MmInput(videos=[clip], text=_prompt(1))
    with pytest.raises(mmf.InvalidInputError, match="request has text but no tokenize callable was given"):
        mmf.pipeline_from_spec(spec).process(inp)
    with pytest.raises(mmf.UnsupportedError, match="needs a tokenizer reporting each token's characters"):
        mmf.pipeline_from_spec(spec).process(inp, tokenize=lambda s: [1, 2, 3])


def test_placeholder_count_must_match_the_videos(case):
    spec = case.doc["spec"]
    clip = (GOLDEN / "clips" / case.doc["videos"][0]["file"]).read_bytes()
    tok = smolvlm_reference.tokenizer(spec)
    with pytest.raises(mmf.LayoutError, match=r"prompt text has 2 '<video>' placeholder\(s\) for 1 video item\(s\)"):
        mmf.pipeline_from_spec(spec).process(mmf.MmInput(videos=[clip], text=_prompt(2)), tokenize=tok)


def test_same_request_same_bytes_on_threads(case):
    spec = case.doc["spec"]
    clips = [(GOLDEN / "clips" / v["file"]).read_bytes() for v in case.doc["videos"]]
    tok = smolvlm_reference.tokenizer(spec)
    pipe = mmf.pipeline_from_spec(spec)
    inp = mmf.MmInput(videos=clips, text=_prompt(2))
    outs = pipe.process_many([inp] * 4, tokenize=tok)
    assert all(o == outs[0] for o in outs)
    assert np.array_equal(outs[0].input_ids, pipe.process(inp, tokenize=tok).input_ids)
