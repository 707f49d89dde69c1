"""Mutated WAV, FLAC, OGG and MP3 bytes (and M4A/AAC, WebM/Opus and an MP4 clip's ALAC track
when PyAV is installed) through the audio probe and decoder, in a child process
(libsndfile, libFLAC, libvorbis, mpg123 and FFmpeg are C: a crash must fail this test, not
kill the run): only a decoded item or a typed MmError, ever. Some mutations of every PyAV
seed still decode, so the fuzz reaches FFmpeg's decoders, not only its probes (Ogg's page
checksums refuse almost every mutated Vorbis page before that)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("soundfile")

CHILD = textwrap.dedent("""
    import collections, json, sys
    import numpy as np
    import mm_framework as mmf
    from tests.media.audio_helpers import av_encode, encode, tone
    from mm_framework.media.audio import decode_audio, read_header

    seeds = [encode(tone(0.3, 16000, 2), 16000, "WAV", "PCM_16"), encode(tone(0.3, 8000), 8000, "WAV", "FLOAT"),
             encode(tone(0.3, 22050), 22050, "FLAC", "PCM_16"),
             encode(tone(0.3, 22050), 22050, "OGG", "VORBIS"), encode(tone(0.3, 48000), 48000, "OGG", "OPUS"),
             encode(tone(0.3, 44100), 44100, "MP3", "MPEG_LAYER_III")]
    n_sf = len(seeds)
    if "av" in sys.argv[3:]:
        seeds += [av_encode(tone(0.3, 16000, 2), 16000, "ipod", "aac"),
                  av_encode(tone(0.3, 48000), 48000, "webm", "libopus"),
                  av_encode(tone(0.3, 16000), 16000, "mp4", "alac", video=True)]
    rng = np.random.default_rng(int(sys.argv[1]))
    limits = mmf.Limits(max_audio_seconds=60)
    outcomes, decoded_seeds = collections.Counter(), set()
    for _ in range(int(sys.argv[2])):
        k = int(rng.integers(len(seeds)))
        data = bytearray(seeds[k])
        for _ in range(rng.integers(1, 6)):
            op, pos = rng.integers(4), int(rng.integers(len(data))) if data else 0
            if op == 0 and data:
                data[pos] ^= 1 << int(rng.integers(8))
            elif op == 1:
                del data[pos:]
            elif op == 2:
                data[pos:pos] = rng.bytes(int(rng.integers(1, 9)))
            else:
                data[pos:pos + 64] = bytes(len(data[pos:pos + 64]))
        try:
            header = read_header(bytes(data), limits)
            out = decode_audio(bytes(data), limits)
            # What is counted from the header is what is processed.
            assert out.header == header and out.samples.dtype == np.float32 and np.isfinite(out.samples).all()
            outcomes["decoded"] += 1
            decoded_seeds.add(k)
        except mmf.MmError as e:
            outcomes[type(e).__name__] += 1
    print(json.dumps([outcomes, sorted(k - n_sf for k in decoded_seeds if k >= n_sf)]))
""")


@pytest.mark.parametrize("seed", [0, 1])
def test_mutated_audio_never_crashes(seed):
    with_av = ["av"] if importlib.util.find_spec("av") is not None else []
    run = subprocess.run([sys.executable, "-c", CHILD, str(seed), "1000", *with_av], capture_output=True, text=True,
                         timeout=240, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr[-2000:]
    outcomes, av_decoded = json.loads(run.stdout.strip().splitlines()[-1])
    assert sum(outcomes.values()) == 1000 and outcomes["decoded"] and outcomes["MediaError"]
    assert av_decoded == ([0, 1, 2] if with_av else [])
    assert set(outcomes) <= {"decoded", "MediaError", "UnsupportedError", "LimitExceededError"}
