"""SmolVLM2 video through the chat front door (``mmf.Processor``): the chat template transformers
5.24 ships for SmolVLM video (``processing_smolvlm.DEFAULT_CHAT_TEMPLATE``, read from the
installed library), the prompt expanded as text before tokenizing (``Capabilities.text_prompts``),
against the golden ``replace_video_token`` texts and pixels (main venv) and live against
``SmolVLMProcessor.apply_chat_template`` (torchvision venv with num2words)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("av")
pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

import mm_framework as mmf  # noqa: E402
from mm_framework.testing import load_cases  # noqa: E402
from mm_framework.testing.records import tensor_doc  # noqa: E402

from . import smolvlm_reference  # noqa: E402
from .test_smolvlm_hf_config import CONFIGS, preprocessor  # noqa: E402

GOLDEN = Path(__file__).parent / "golden_video"
CASE = next(c for c in load_cases(GOLDEN / "cases") if len(c.doc["videos"]) == 2)
SPEC = CASE.doc["spec"]
# The golden's spec over the published SmolVLM2-500M files (the fields the resolver leaves out:
# the tokenizer's <video> id, and the small tiles and sampler of the case).
OVERRIDES = {k: SPEC[k] for k in ("video_token_id", "size_longest_edge", "max_image_size", "image_seq_len",
                                  "video_do_sample_frames", "video_fps", "video_num_frames")}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from transformers.models.smolvlm.processing_smolvlm import DEFAULT_CHAT_TEMPLATE

    root = tmp_path_factory.mktemp("smolvlm2")
    preset = "smolvlm2_500m_video_instruct"
    (root / "config.json").write_text(json.dumps(CONFIGS[preset]))
    (root / "preprocessor_config.json").write_text(json.dumps(preprocessor(preset)))
    (root / "chat_template.json").write_text(json.dumps({"chat_template": DEFAULT_CHAT_TEMPLATE}))
    smolvlm_reference.tokenizer(SPEC).backend_tokenizer.save(str(root / "tokenizer.json"))
    for v in CASE.doc["videos"]:
        (root / v["file"]).write_bytes((GOLDEN / "clips" / v["file"]).read_bytes())
    return root


def _messages(root: Path) -> list[dict]:
    first, second = (str(root / v["file"]) for v in CASE.doc["videos"])
    return [{"role": "user", "content": [{"type": "video", "path": first}, {"type": "text", "text": " and "},
                                         {"type": "video", "path": second},
                                         {"type": "text", "text": " What happens?"}]}]


def test_chat_video_prompt_is_the_processors(model_dir):
    proc = mmf.Processor.from_model_dir(model_dir, spec_overrides=OVERRIDES)
    assert proc.pipeline.spec == SPEC
    messages = _messages(model_dir)
    out = proc.apply_chat_template(messages)
    text = proc.render(messages)
    assert text.count("<video>") == 2
    for v in CASE.doc["videos"]:
        text = text.replace("<video>", v["expansion_text"], 1)
    assert out.input_ids.tolist() == smolvlm_reference.tokenizer(SPEC)(text)["input_ids"]
    kwargs = out.model_kwargs()
    for key, doc in CASE.doc["expected"]["model_kwargs"].items():
        assert tensor_doc(doc["dtype"], kwargs[key]) == doc, key
    for other in (asyncio.run(proc.apply_chat_template_async(messages)), proc.apply_chat_template_many([messages])[0]):
        assert other == out
    counted = proc.count_tokens(messages)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets


def test_live_against_apply_chat_template(model_dir):
    """The same clips as transformers' user path loads them (``load_video``, PyAV)."""
    from mm_framework.testing import require_torchvision

    require_torchvision()
    pytest.importorskip("num2words")
    import transformers

    ref_proc = transformers.SmolVLMProcessor(
        image_processor=smolvlm_reference.image_processor(SPEC), tokenizer=smolvlm_reference.tokenizer(SPEC),
        video_processor=smolvlm_reference.video_processor(SPEC), image_seq_len=SPEC["image_seq_len"],
        chat_template=json.loads((model_dir / "chat_template.json").read_text())["chat_template"])
    from transformers.video_utils import load_video

    # transformers' documented path for a file: its frames and metadata from load_video (pyav).
    loaded = [load_video(str(model_dir / v["file"]), backend="pyav") for v in CASE.doc["videos"]]
    messages = _messages(model_dir)
    theirs = [{**messages[0], "content": [
        {"type": "video", "video": loaded[0][0]}, messages[0]["content"][1], {"type": "video", "video": loaded[1][0]},
        messages[0]["content"][3]]}]
    ref = ref_proc.apply_chat_template(theirs, add_generation_prompt=True, tokenize=True, return_dict=True,
                                       return_tensors="np",
                                       processor_kwargs={"video_metadata": [m for _, m in loaded]})
    out = mmf.Processor.from_model_dir(model_dir, spec_overrides=OVERRIDES).apply_chat_template(messages)
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    kwargs = out.model_kwargs()
    for key in ("pixel_values", "pixel_attention_mask"):
        assert kwargs[key].tobytes() == ref[key].tobytes(), key
