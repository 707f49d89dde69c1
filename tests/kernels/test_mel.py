"""kernels.WhisperMel: bit-identical, live, to ``transformers.WhisperFeatureExtractor`` on its
numpy path (torch absent) with ``padding="max_length"`` and attention masks."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework.kernels.mel import mel_filter_bank

transformers = pytest.importorskip("transformers")
from transformers.audio_utils import mel_filter_bank as reference_filters  # noqa: E402


def _extractor(mel: kernels.WhisperMel):
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=mel.n_mels, sampling_rate=mel.sampling_rate,
                                   hop_length=mel.hop_length, chunk_length=mel.chunk_length, n_fft=mel.n_fft)


def _reference(ref, mel: kernels.WhisperMel, x: np.ndarray):
    return ref(x, sampling_rate=mel.sampling_rate, return_attention_mask=True, padding="max_length",
               return_tensors="np")


def _numpy_path():
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    pytest.skip("torch is installed: WhisperFeatureExtractor runs its torch path, not the numpy one")


def _signals(rate: int, chunk_s: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    t = np.arange(int(2.5 * rate)) / rate
    n = chunk_s * rate
    return {
        "silence": np.zeros(rate, np.float32),
        "noise": rng.standard_normal(3 * rate).astype(np.float32) * 0.3,
        "chirp": (0.8 * np.sin(2 * np.pi * (100 + 1500 * t) * t)).astype(np.float32),
        "short": rng.standard_normal(7).astype(np.float32),
        "one sample": np.array([0.25], np.float32),
        "exactly a chunk": rng.uniform(-1, 1, n).astype(np.float32),
        "longer, truncated": rng.uniform(-1, 1, n + rate // 3 + 11).astype(np.float32),
        "loud": rng.uniform(-1e4, 1e4, rate).astype(np.float32),
        "tones": (0.5 * np.sin(2 * np.pi * 440 * t) + 0.25 * np.sin(2 * np.pi * 3000 * t)).astype(np.float32),
        "clipping": np.clip(3 * np.sin(2 * np.pi * 220 * t), -1, 1).astype(np.float32),
    }


PARAMS = [
    dict(n_mels=80),
    dict(n_mels=128),
    dict(n_mels=80, chunk_length=5, hop_length=170),  # 80000 % 170 != 0: the mask drops its last entry
    dict(n_mels=64, chunk_length=4, n_fft=512, hop_length=128),
    dict(n_mels=80, chunk_length=3, sampling_rate=24000, hop_length=240, n_fft=600),
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_features_and_masks_equal_whisper_feature_extractor(params):
    _numpy_path()
    mel = kernels.WhisperMel(**params)
    ref = _extractor(mel)
    for name, x in _signals(mel.sampling_rate, mel.chunk_length).items():
        want = _reference(ref, mel, x)
        features, mask = mel(x), mel.mask(len(x))
        assert features.dtype == np.float32 and features.shape == (mel.n_mels, mel.num_frames), name
        assert np.array_equal(want["input_features"][0], features), name
        assert mask.dtype == want["attention_mask"].dtype and np.array_equal(want["attention_mask"][0], mask), name
        assert mel.num_valid_frames(len(x)) == int(mask.sum()), name


@pytest.mark.parametrize("params", PARAMS[:3], ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_frames_after_the_last_nonzero_sample_are_exact(params):
    """Only frames up to the last nonzero sample are transformed: a lone sample just before,
    at and after a frame start (with the reflect padding shifting it by n_fft // 2) gives the
    reference's bytes, as does speech followed by exact silence."""
    _numpy_path()
    mel = kernels.WhisperMel(**params)
    ref = _extractor(mel)
    half, hop = mel.n_fft // 2, mel.hop_length
    # ... and a last sample just before, at and after where the right reflection starts to hold it.
    edge = mel.n_samples - half - 1
    for start in (3 * hop - half - 1, 3 * hop - half, 3 * hop - half + 1, 5 * hop, 0, 1, edge - 1, edge, edge + 1):
        for length in (start + 1, start + 2 * hop + 3):
            x = np.zeros(length, np.float32)
            x[start] = 0.5
            x[start + 1:] = -0.0  # negative zeros are zeros to the frames' power
            assert np.array_equal(_reference(ref, mel, x)["input_features"][0], mel(x)), (start, length)
    speech = np.random.default_rng(3).standard_normal(mel.sampling_rate).astype(np.float32)
    x = np.concatenate([speech, np.zeros(mel.sampling_rate // 2 + 17, np.float32)])
    assert np.array_equal(_reference(ref, mel, x)["input_features"][0], mel(x))


# The largest |ours - torch path| over PARAMS x _signals, measured with torch 2.14.1 (1 thread,
# transformers 5.24): 5.67e-05, at the hop that does not divide the chunk; 3.9e-05 to 4.2e-05
# at the others. The tolerance is that with a 3.5x margin (docs/audio.md).
TORCH_PATH_TOLERANCE = 2e-4


@pytest.mark.torch_parity
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_features_are_within_the_stated_tolerance_of_the_torch_path(params):
    """With torch installed the extractor runs torch.stft in float32 (what engines run): the
    features differ by rounding only, the masks and token counts not at all."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    mel = kernels.WhisperMel(**params)
    ref = _extractor(mel)
    worst = 0.0
    for name, x in _signals(mel.sampling_rate, mel.chunk_length).items():
        want = _reference(ref, mel, x)
        features, mask = mel(x), mel.mask(len(x))
        assert want["input_features"][0].shape == features.shape, name
        worst = max(worst, float(np.abs(want["input_features"][0] - features).max()))
        assert np.array_equal(want["attention_mask"][0], mask), name
        assert mel.num_valid_frames(len(x)) == int(want["attention_mask"][0].sum()), name
    print(f"max |ours - torch path| {params}: {worst:.3g}")
    assert worst <= TORCH_PATH_TOLERANCE


def test_the_filter_bank_is_the_slaney_one():
    for bins, mels, rate in [(201, 80, 16000), (201, 128, 16000), (257, 64, 16000), (301, 80, 24000)]:
        want = reference_filters(bins, mels, 0.0, 8000.0, rate, norm="slaney", mel_scale="slaney")
        assert np.array_equal(mel_filter_bank(bins, mels, 0.0, 8000.0, rate), want)


def test_the_valid_frame_count_follows_the_length_alone():
    mel = kernels.WhisperMel()
    assert [mel.num_valid_frames(n) for n in (1, 160, 161, 16000, 480000, 10**7)] == [1, 1, 2, 100, 3000, 3000]


def test_parameters_are_checked():
    with pytest.raises(mmf.SpecError, match="^WhisperMel.hop_length must be greater than zero, got 0$"):
        kernels.WhisperMel(hop_length=0)
