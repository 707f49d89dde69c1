"""``mmp.whisper.WhisperAudio`` on the first ``frames_read`` frames of a long clip gives the
bytes of the whole clip: the chunk's features after resampling (soxr's output over the chunk
does not depend on what lies past the margin), the mask and token count of the whole length.
At every source rate a serving client sends, on tones, noise and silence-padded speech-like
signals, so a family may decode no further (its ``mm_audio_frames``)."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import plugin as mmp

pytest.importorskip("soxr")

RATES = [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
AUDIO = mmp.whisper.WhisperAudio(
    mmp.whisper.WhisperSettings(feature_size=80, sampling_rate=16000, n_fft=400, hop_length=160, chunk_length=3),
    token_text="<|AUDIO|>", processor="the test's processor",
)


def _signals(rate: int, seconds: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(rate)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    gated = np.sin(2 * np.pi * 220 * t) * (np.sin(2 * np.pi * 0.7 * t) > 0)
    return {
        "noise": (rng.standard_normal(n) * 0.3).astype(np.float32),
        "chirp": (0.5 * np.sin(2 * np.pi * (100 + 2000 * t / seconds) * t)).astype(np.float32),
        "gated": gated.astype(np.float32),
    }


@pytest.mark.parametrize("rate", RATES)
def test_the_first_frames_read_give_the_whole_clips_bytes(rate):
    for seconds in (AUDIO.settings.chunk_length + mmp.whisper.RESAMPLE_MARGIN_SECONDS + 0.5, 11.0):
        for name, samples in _signals(rate, seconds).items():
            header = mmp.AudioHeader(rate, 1, len(samples))
            read = AUDIO.frames_read(header)
            assert read < len(samples), (rate, seconds)
            whole = AUDIO.process(mmp.DecodedAudio(samples, rate))
            cut = AUDIO.process(mmp.DecodedAudio(samples[:read], rate, total_frames=len(samples)))
            assert cut.feature.array.tobytes() == whole.feature.array.tobytes(), (rate, seconds, name)
            assert np.array_equal(cut.aux["feature_attention_mask"].array, whole.aux["feature_attention_mask"].array)
            assert cut.geometry == whole.geometry == AUDIO.plan(header).geometry


def test_without_resampling_exactly_one_chunk_is_read():
    header = mmp.AudioHeader(16000, 2, 600 * 16000)
    assert AUDIO.frames_read(header) == AUDIO.settings.chunk_length * 16000
    assert AUDIO.frames_read(mmp.AudioHeader(44100, 1, 10)) == (
        AUDIO.settings.chunk_length + mmp.whisper.RESAMPLE_MARGIN_SECONDS) * 44100
