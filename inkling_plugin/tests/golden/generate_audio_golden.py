"""Write Inkling's audio goldens from transformers 5.24's ``InklingProcessor`` (torch needed).

Run from the repository root with the reference environment::

    /work/venv-tv/bin/python inkling_plugin/tests/golden/generate_audio_golden.py

Writes, next to this script:

- ``audio_heldout.npz``: for every held-out clip of ``audio_clips.RECIPES`` and each
  configuration of ``CONFIGS``, the reference's float32 features (``InklingFeatureExtractor``,
  ``torch.stft``) and int32 dMel bins (``InklingProcessor._extract_dmel_bins``), the sha256
  of the clip's samples (the recipes must stay deterministic), each configuration's float32
  bin centres, and ``provenance`` (JSON: library versions). The tests compare our features
  within the stated tolerance and our bins exactly (docs/audio.md, "Inkling").
- ``cases/audio_*/``: request cases in ``mm_framework.testing.golden``'s format with their
  encoded audio files: ids, offsets and per-clip int64 bins from the processor end to end
  (``load_audio(..., backend="soundfile")`` then the processor, ``return_tensors="pt"``), the
  decoded samples as stage ``audio_samples[i]``, and the processor's ``audio_input_ids`` /
  ``audio_input_ids_mask`` under ``model_kwargs``.

Nothing from ``inkling_plugin`` or ``mm_framework`` is imported (the record helpers are
loaded from their file by ``mm_framework/testing/standalone.py``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[2] / "mm_framework" / "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()

import audio_clips  # noqa: E402
import audio_reference as ref  # noqa: E402
from mm_framework.testing.records import content_hash, digest, ids_doc, sha256, tensor_doc  # noqa: E402

# Held-out configurations: the published defaults, and one with every parameter moved
# (more mels, 24 kHz, n_fft above the window, other bins and range).
CONFIGS = {
    "defaults": {},
    "params": {"feature_size": 128, "sampling_rate": 24000, "audio_token_duration_s": 0.02,
               "window_size_multiplier": 2.5, "n_fft": 1536, "num_dmel_bins": 32, "dmel_min_value": -6.0,
               "dmel_max_value": 3.0},
}
# Clips of the second configuration (resampled to its rate with load_audio's soxr call).
PARAMS_CLIPS = ("noise", "speechlike", "silence", "short_7", "tone_440")

# (case name, spec fields, prompt text, [(file, rate, seconds, channels, format, subtype)])
REQUESTS = [
    ("audio_defaults_wav16k", {}, f"listen to {ref.AUDIO_BOS}{ref.AUDIO_TOKEN} and describe",
     [("clip_0.wav", 16000, 2.5, 1, "WAV", "PCM_16")]),
    ("audio_two_clips_resampled", {},
     f"hello {ref.AUDIO_BOS}{ref.AUDIO_TOKEN} then {ref.AUDIO_BOS}{ref.AUDIO_TOKEN} world",
     [("clip_0.wav", 22050, 1.3, 2, "WAV", "FLOAT"), ("clip_1.flac", 8000, 0.7, 1, "FLAC", "PCM_16")]),
    ("audio_params", {k: v for k, v in CONFIGS["params"].items() if k != "sampling_rate"},
     f"{ref.AUDIO_BOS}{ref.AUDIO_TOKEN} describe this",
     [("clip_0.wav", 44100, 1.1, 1, "WAV", "PCM_24")]),
]


def versions() -> dict[str, str]:
    import platform

    import soundfile
    import soxr
    import torch
    import transformers

    return {"transformers": transformers.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "soundfile": soundfile.__version__, "libsndfile": soundfile.__libsndfile_version__,
            "soxr": soxr.__version__, "python": platform.python_version()}


def write_heldout(provenance: dict[str, str]) -> None:
    import tempfile

    arrays: dict[str, np.ndarray] = {}
    for config, fields in CONFIGS.items():
        proc = ref.processor(fields)
        rate = proc.feature_extractor.sampling_rate
        arrays[f"{config}/centers"] = proc.bin_centers.numpy()
        names = audio_clips.RECIPES if config == "defaults" else PARAMS_CLIPS
        for name in names:
            x = audio_clips.clip(name)
            arrays[f"{config}/{name}/clip_sha256"] = np.array(sha256(x))
            if rate != audio_clips.RATE:
                # Resampled by load_audio itself, from a float WAV (which holds float32 exactly).
                with tempfile.NamedTemporaryFile(suffix=".wav") as f:
                    f.write(audio_clips.encode(x, audio_clips.RATE, "WAV", "FLOAT"))
                    f.flush()
                    x = ref.load(f.name, rate)
                arrays[f"{config}/{name}/samples"] = x
            feats = ref.features(proc, x)
            arrays[f"{config}/{name}/features"] = feats
            arrays[f"{config}/{name}/bins"] = ref.bins(proc, feats)
        print(f"held-out {config}: {len(names)} clips")
    arrays["provenance"] = np.array(json.dumps(provenance, sort_keys=True))
    arrays["configs"] = np.array(json.dumps(CONFIGS, sort_keys=True))
    np.savez_compressed(HERE / "audio_heldout.npz", **arrays)


def write_request(name: str, fields: dict, text: str, files: list[tuple], provenance: dict[str, str]) -> None:
    case_dir = HERE / "cases" / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    proc = ref.processor(fields)
    rate = proc.feature_extractor.sampling_rate
    clips, hashes, stages = [], [], {}
    for k, (file_name, src_rate, seconds, channels, fmt, subtype) in enumerate(files):
        data = audio_clips.encode(audio_clips.source_clip(f"{name}/{file_name}", src_rate, seconds, channels),
                                  src_rate, fmt, subtype)
        path = case_dir / file_name
        path.write_bytes(data)
        samples = ref.load(str(path), rate)
        clips.append(samples)
        hashes.append(content_hash(data))
        stages[f"audio_samples[{k}]"] = digest(samples)
    out = ref.run(proc, text, clips)
    ids = out["input_ids"][0].astype(np.int64)
    mask = out["audio_input_ids_mask"]
    counts = mask.sum(axis=1).tolist()
    features, offsets, start = [], [], 0
    positions = np.flatnonzero(ids == proc.audio_token_id)
    for k, n in enumerate(counts):
        first = int(positions[start])
        assert (ids[first:first + n] == proc.audio_token_id).all()
        offsets.append([first, first + n - 1])
        features.append(tensor_doc("i64", out["audio_input_ids"][k, :n].astype(np.int64)))
        start += n
    prompt = ref.tokenizer()(text)["input_ids"]
    spec = {"family": "inkling", "audio_token_id": proc.audio_token_id, **fields}
    doc = {
        "name": name,
        "spec": spec,
        "prompt_ids": prompt,
        "images": [],
        "audios": [f[0] for f in files],
        "expected": {
            "hashes": hashes,
            "features": features,
            "aux": [{} for _ in files],
            "input_ids": ids_doc(ids),
            "offsets": offsets,
            "positions": {"kind": "rope1d"},
            "stages": stages,
        },
        "model_kwargs": {
            key: {"dtype": str(out[key].dtype), "shape": list(out[key].shape), "blake3": digest(out[key])}
            for key in ("audio_input_ids", "audio_input_ids_mask")
        },
        "provenance": {"generator": "inkling_plugin/tests/golden/generate_audio_golden.py", **provenance},
    }
    (case_dir / "case.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"request {name}: {len(files)} clips, {len(ids)} ids, frames {counts}")


def main() -> None:
    provenance = versions()
    write_heldout(provenance)
    for request in REQUESTS:
        write_request(*request, provenance)
    print("GOLDEN_OK")


if __name__ == "__main__":
    main()
