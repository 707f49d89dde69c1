"""transformers 5.24's ``InklingProcessor`` (with ``InklingFeatureExtractor``, which needs
torch) built for tests: a word-level tokenizer holding the Inkling vocabulary's
multimodal tokens at their real ids, and the processor's inputs made from a family spec.

Used by the golden generator (``golden/generate_audio_golden.py``) and the live parity
tests; it imports nothing from ``inkling_plugin`` or ``mm_framework``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

# The Inkling vocabulary's tokens the processor encodes (InklingConfig's ids).
SPECIAL = {"<|unused_200053|>": 200053, "<|unused_200054|>": 200054, "<|content_image|>": 200005,
           "<|content_audio_input|>": 200020}
WORDS = ["[UNK]", "hello", "world", "listen", "to", "this", "and", "that", "then", "describe"]
AUDIO_TOKEN = "<|unused_200053|>"
AUDIO_BOS = "<|content_audio_input|>"
IMAGE_TOKEN = "<|unused_200054|>"
# Spec field -> InklingFeatureExtractor argument.
EXTRACTOR_FIELDS = {"feature_size": "feature_size", "sampling_rate": "sampling_rate",
                    "audio_token_duration_s": "audio_token_duration_s",
                    "window_size_multiplier": "window_size_multiplier", "n_fft": "n_fft"}
PROCESSOR_FIELDS = ("num_dmel_bins", "dmel_min_value", "dmel_max_value")


def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)} | SPECIAL, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", additional_special_tokens=list(SPECIAL))


def processor(spec: Mapping[str, Any]) -> Any:
    """``InklingProcessor`` configured as the (partial) family ``spec``."""
    from transformers.models.inkling.feature_extraction_inkling import InklingFeatureExtractor
    from transformers.models.inkling.image_processing_inkling import InklingImageProcessor
    from transformers.models.inkling.processing_inkling import InklingProcessor

    extractor = InklingFeatureExtractor(**{arg: spec[k] for k, arg in EXTRACTOR_FIELDS.items() if k in spec})
    kwargs = {k: spec[k] for k in PROCESSOR_FIELDS if k in spec}
    return InklingProcessor(feature_extractor=extractor, image_processor=InklingImageProcessor(),
                            tokenizer=tokenizer(), **kwargs)


def load(data_path: str, rate: int) -> np.ndarray:
    """``transformers.audio_utils.load_audio`` with the soundfile backend (what the family mirrors)."""
    from transformers.audio_utils import load_audio

    return load_audio(data_path, sampling_rate=rate, backend="soundfile")


def run(proc: Any, text: str, clips: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The processor's outputs for one prompt, as numpy (``return_tensors="pt"``, the serving form)."""
    out = proc(text=[text], audio=clips, sampling_rate=proc.feature_extractor.sampling_rate, return_tensors="pt")
    return {k: v.numpy() for k, v in out.items()}


def features(proc: Any, samples: np.ndarray) -> np.ndarray:
    """One clip's float32 ``[frames, feature_size]`` log-mel features, as the processor makes them."""
    fe = proc.feature_extractor
    return fe(samples, sampling_rate=fe.sampling_rate)["input_features"][0].numpy()


def bins(proc: Any, feats: np.ndarray) -> np.ndarray:
    """``InklingProcessor._extract_dmel_bins`` of float32 ``[frames, feature_size]`` features."""
    import torch

    return proc._extract_dmel_bins(torch.from_numpy(np.ascontiguousarray(feats))[None])[0].numpy()
