"""Live parity with transformers 5.24's ``InklingProcessor`` (needs torch: its feature
extractor runs ``torch.stft``; skipped without it). Ids and masks exactly, dMel bins exactly
except flips within the stated tolerance of a bin boundary (``test_inkling_audio``)."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from inkling_plugin.family import InklingFamily
from mm_framework import kernels

from . import audio_clips
from . import audio_reference as ref
from .test_inkling_audio import MAX_FLIPS, _flips

pytest.importorskip("torch")
pytest.importorskip("transformers.models.inkling.processing_inkling")

BATCHES = [["noise", "tone_440", "silence"], ["speechlike", "short_7"], ["one_sample"], ["chirp_up", "noise_loud"],
           ["long_speechlike"]]


@pytest.mark.parametrize("clips", BATCHES, ids=lambda c: "+".join(c))
def test_requests_equal_the_processor(clips):
    proc = ref.processor({})
    samples = [audio_clips.clip(n) for n in clips]
    text = " and ".join(f"listen {ref.AUDIO_BOS}{ref.AUDIO_TOKEN}" for _ in clips)
    want = ref.run(proc, text, samples)
    pipe = mmf.pipeline_from_spec({"family": "inkling"})
    out = pipe.process(mmf.MmInput(audios=[mmf.Audio(x, sample_rate=16000) for x in samples],
                                   input_ids=ref.tokenizer()(text)["input_ids"]))
    assert out.input_ids.tolist() == want["input_ids"][0].tolist()
    got = out.model_kwargs()
    for key in ("audio_input_ids", "audio_input_ids_mask"):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
    assert np.array_equal(got["audio_input_ids_mask"], want["audio_input_ids_mask"])
    audio = InklingFamily({}).audio
    flips = 0
    for k, x in enumerate(samples):
        n = int(want["audio_input_ids_mask"][k].sum())
        feats = ref.features(proc, x)
        flips += _flips(audio, feats, audio.features(x), want["audio_input_ids"][k, :n], got["audio_input_ids"][k, :n])
        assert np.array_equal(got["audio_input_ids"][k, n:], want["audio_input_ids"][k, n:])  # the padding bin
    assert flips <= MAX_FLIPS["defaults"]


@pytest.mark.parametrize("lo,hi,n", [(-7.0, 2.0, 16), (-7.0, 2.0, 256), (-6.0, 3.0, 32), (-6.9, 2.3, 17),
                                     (-5.0, 5.0, 1), (0.1, 0.7, 2)])
def test_bin_centres_equal_torch_linspace(lo, hi, n):
    proc = ref.processor({"num_dmel_bins": n, "dmel_min_value": lo, "dmel_max_value": hi})
    assert np.array_equal(kernels.dmel_centers(lo, hi, n), proc.bin_centers.numpy())
