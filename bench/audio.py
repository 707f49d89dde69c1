"""Audio benchmark (issue 25): decode, resample and Whisper features against transformers.

Usage (a venv with the repository, soundfile, soxr and transformers 5.24; with torch
installed the reference extractor runs its torch path, without it its numpy path: run it
in both venvs to get both columns)::

    taskset -c 1 python bench/audio.py
    taskset -c 1 python bench/audio.py --passes 7

One thread on both sides (OMP/MKL/OPENBLAS threads 1, ``torch.set_num_threads(1)``). The
files are written here with soundfile, deterministic (tones, a chirp and light noise):

- **30 s, 16 kHz mono WAV** (PCM 16): ours ``decode_audio`` + ``kernels.WhisperMel`` (no
  resampling needed) against ``load_audio(path, sampling_rate=16000, backend="soundfile")`` +
  ``WhisperFeatureExtractor`` (128 mels as Qwen2-Audio, ``padding="max_length"``, attention
  mask); and a **5 s** one (the chunk is still 30 s: the zero tail is where ours saves);
- **30 s, 44.1 kHz stereo FLAC**: the same with the downmix and ``kernels.resample`` to 16 kHz;
- **10 min, 16 kHz mono FLAC**, the header-only count: ``read_header`` (what the audio
  modality's probe, and so ``count_tokens``, runs) against decoding it with ``load_audio``,
  the only way transformers learns the length, and against our own ``decode_audio`` (the
  header is read from the bytes in memory, as a request holds them; the decoders read the file).

**The floor**: the numpy calls the numpy path's bytes depend on, each on the arrays of the 30 s
chunk as the reference feeds them (``np.fft.rfft`` of the 3001 windowed float64 frames, the
complex64 ``np.abs`` to float64, the ``np.dot`` with the filters, ``np.log10``): any
implementation that gives those bytes without re-implementing pocketfft, the BLAS kernel and
numpy's SIMD loops bit for bit pays at least this; ``transformers / floor`` is the largest
speed-up it can have on one thread.

Outputs are compared first: features byte for byte on the numpy path, within the test's
stated tolerance (tests/kernels/test_mel.py) on the torch path; masks equal. Contenders are
interleaved over passes (bench/serving.py) and the medians reported.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from mm_framework import kernels  # noqa: E402
from mm_framework.limits import Limits  # noqa: E402
from mm_framework.media.audio import decode_audio, read_header  # noqa: E402
from serving import interleaved  # noqa: E402

# tests/kernels/test_mel.py's stated tolerance against the torch path.
TORCH_PATH_TOLERANCE = 2e-4


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def signal(seconds: float, rate: int, channels: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    t = np.arange(int(seconds * rate)) / rate
    chirp = 0.4 * np.sin(2 * np.pi * (200 + 40 * (t % 10)) * t)
    cols = [chirp + 0.2 * np.sin(2 * np.pi * (330 + 110 * c) * t) + 0.02 * rng.standard_normal(len(t))
            for c in range(channels)]
    return np.stack(cols, -1).astype(np.float32)


def write(path: Path, seconds: float, rate: int, channels: int, fmt: str, subtype: str) -> Path:
    sf.write(path, signal(seconds, rate, channels), rate, format=fmt, subtype=subtype)
    return path


def floor_ms(mel: kernels.WhisperMel, path: Path, args: argparse.Namespace) -> float:
    """The time of the numpy calls WhisperMel's bytes are pinned to, on one 30 s chunk."""
    samples = sf.read(path, dtype="float32")[0][:mel.n_samples]
    half = mel.n_fft // 2
    padded = np.pad(samples, [(half, half)], mode="reflect").astype(np.float64)
    windowed = np.ascontiguousarray(kernels.mel.frames(padded, mel.n_fft, mel.hop_length) * mel.window)
    spectrum = np.fft.rfft(windowed, axis=-1).astype(np.complex64)
    power = np.abs(spectrum, dtype=np.float64) ** 2
    product = np.maximum(1e-10, np.dot(mel.filters.T, power.T))
    ms = interleaved({
        "rfft": lambda: np.fft.rfft(windowed, axis=-1),
        "abs": lambda: np.abs(spectrum, dtype=np.float64),
        "dot": lambda: np.dot(mel.filters.T, power.T),
        "log10": lambda: np.log10(product),
    }, args.passes, args.min_time)
    return sum(ms.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    torch = _torch()

    import transformers
    from transformers import WhisperFeatureExtractor
    from transformers.audio_utils import load_audio

    limits = Limits()
    mel = kernels.WhisperMel(n_mels=128)
    ref = WhisperFeatureExtractor(feature_size=128)
    tmp = Path(tempfile.mkdtemp())
    files = {
        "30 s 16 kHz mono WAV": write(tmp / "a.wav", 30, 16000, 1, "WAV", "PCM_16"),
        "5 s 16 kHz mono WAV": write(tmp / "d.wav", 5, 16000, 1, "WAV", "PCM_16"),
        "30 s 44.1 kHz stereo FLAC": write(tmp / "b.flac", 30, 44100, 2, "FLAC", "PCM_16"),
    }
    long_flac = write(tmp / "c.flac", 600, 16000, 1, "FLAC", "PCM_16")

    def ours(path: Path):
        def run():
            audio = decode_audio(path.read_bytes(), limits)
            samples = kernels.resample(audio.samples, audio.sample_rate, mel.sampling_rate)
            return mel(samples), mel.mask(len(samples))
        return run

    def theirs(path: Path):
        def run():
            x = load_audio(str(path), sampling_rate=16000, backend="soundfile")
            out = ref(x, sampling_rate=16000, return_attention_mask=True, padding="max_length", return_tensors="np")
            return out["input_features"][0], out["attention_mask"][0]
        return run

    path_name = f"torch {torch.__version__} path" if torch is not None else "numpy path"
    print(f"transformers {transformers.__version__}, WhisperFeatureExtractor on its {path_name}, 1 thread, "
          f"medians of {args.passes} interleaved passes")
    for name, path in files.items():
        (f_ours, m_ours), (f_ref, m_ref) = ours(path)(), theirs(path)()
        assert np.array_equal(m_ours, m_ref), f"{name}: masks differ"
        diff = float(np.abs(f_ours - f_ref).max())
        assert (diff == 0.0) if torch is None else (diff <= TORCH_PATH_TOLERANCE), f"{name}: features differ by {diff}"
        ms = interleaved({"ours": ours(path), "transformers": theirs(path)}, args.passes, args.min_time)
        print(f"  {name:28s} ours {ms['ours']:8.2f} ms  transformers {ms['transformers']:8.2f} ms  "
              f"{ms['transformers'] / ms['ours']:5.2f}x  (max |diff| {diff:.3g})")

        if name.startswith("30 s 16 kHz") and torch is None:
            floor = floor_ms(mel, path, args)
            print(f"    the floor (rfft + abs + dot + log10 of the reference's arrays) {floor:8.2f} ms: "
                  f"transformers / floor {ms['transformers'] / floor:5.2f}x")

    data = long_flac.read_bytes()
    header = read_header(data, limits)
    assert header.frames == len(load_audio(str(long_flac), sampling_rate=16000, backend="soundfile"))
    ms = interleaved({
        "read_header": lambda: read_header(data, limits),
        "decode_audio": lambda: decode_audio(long_flac.read_bytes(), limits),
        "load_audio": lambda: load_audio(str(long_flac), sampling_rate=16000, backend="soundfile"),
    }, args.passes, args.min_time)
    print(f"  10 min 16 kHz mono FLAC ({len(data) / 1e6:.1f} MB), the length for a token count:")
    print(f"    read_header (probe) {ms['read_header']:8.3f} ms  decode_audio {ms['decode_audio']:8.1f} ms  "
          f"load_audio {ms['load_audio']:8.1f} ms  load_audio / read_header "
          f"{ms['load_audio'] / ms['read_header']:.0f}x")
    memory(data)
    return 0


def memory(data: bytes) -> None:
    """Peak traced memory above the output of Qwen2-Audio processing of the 10-minute file:
    the pipeline (the family reads the first chunk, ``mm_audio_frames``), and the same
    toolkit steps on the whole decoded clip, as before the family said what it reads."""
    import tracemalloc

    import mm_framework as mmf
    from mm_framework import plugin as mmp

    spec = mmf.preset("qwen2_audio")
    pipe = mmf.pipeline_from_spec(spec)
    settings = mmp.whisper.WhisperSettings(**{k: spec[k] for k in mmp.whisper.FIELDS})
    audio = mmp.whisper.WhisperAudio(settings, token_text="<|AUDIO|>", processor="")
    runs = {"pipeline, first chunk read": lambda: pipe.process(mmf.MmInput(audios=[data])).items[0],
            "whole clip decoded": lambda: audio.process(mmp.decode_audio(data, Limits()))}
    item = runs["pipeline, first chunk read"]()
    out_bytes = item.feature.array.nbytes + sum(t.array.nbytes for t in item.aux.values())
    line = []
    for name, run in runs.items():
        tracemalloc.start()
        run()
        above = tracemalloc.get_traced_memory()[1] - out_bytes
        tracemalloc.stop()
        line.append(f"{name} {above / 1e6:.1f} MB ({above / out_bytes:.1f}x the output)")
    print(f"  10 min FLAC through qwen2_audio, output {out_bytes / 1e6:.2f} MB; peak traced memory above it: "
          + "; ".join(line))


if __name__ == "__main__":
    raise SystemExit(main())
