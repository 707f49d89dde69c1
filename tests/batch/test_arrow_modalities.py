"""Rows of audio and of mixed modalities: each item's modality is stored (``mm_modalities``),
so ``model_kwargs(row)`` rebuilds what ``Output.model_kwargs()`` gives for images with videos
and for audio, and a token-count row of audio comes from its header."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("qwen_vl_plugin")

import mm_framework as mmf  # noqa: E402
from mm_framework.arrow import model_kwargs, pixel_values, process_table  # noqa: E402

from ..media.audio_helpers import wav  # noqa: E402
from ..test_audio_toy import AUD_ID, toyaudio  # noqa: E402,F401 (the fixture)
from ..test_driver_video import encode_clip  # noqa: E402
from .batch_cases import IMAGES  # noqa: E402


def _same_kwargs(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].tobytes() == want[name].tobytes(), name


def test_a_row_of_images_and_videos_reads_back_item_by_item():
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    caps = pipe.capabilities
    img, vid = caps.placeholders["image"], caps.placeholders["video"]
    rng = np.random.default_rng(3)
    clip = encode_clip(rng.integers(0, 256, (4, 56, 84, 3), dtype=np.uint8))
    ids = [vid, 7, img, 8, img]  # the video first in the prompt, the images after it
    table = pa.table({"images": [[IMAGES[0], IMAGES[1]]], "videos": [[clip]], "input_ids": [ids]})
    want = pipe.process(mmf.MmInput(images=[IMAGES[0], IMAGES[1]], videos=[clip], input_ids=ids))
    result = process_table(pipe, table, pixels="f32")
    assert result.column("mm_modalities").to_pylist() == [["video", "image", "image"]]
    assert [it.modality for it in want.items] == ["video", "image", "image"]
    _same_kwargs(model_kwargs(result), want.model_kwargs())
    # The same row as a mapping (Ray, to_pylist()) with the spec given.
    _same_kwargs(model_kwargs(result.to_pylist()[0], spec=pipe), want.model_kwargs())


def test_audio_rows_hold_features_and_count_from_the_header(toyaudio):  # noqa: F811
    pipe = mmf.pipeline_from_spec({"family": "toyaudio"})
    clips = [wav(0.5, 22050, 2), wav(1.25, 16000)]
    table = pa.table({"audios": [[clips[0]], [clips[1]], [b"RIFF junk"]], "input_ids": [[AUD_ID], [AUD_ID], [AUD_ID]]})
    f32, none = (process_table(pipe, table, pixels=mode) for mode in ("f32", "none"))
    for k, data in enumerate(clips):
        want = pipe.process(mmf.MmInput(audios=[data], input_ids=[AUD_ID]))
        row = f32.slice(k, 1)
        assert row.column("mm_modalities").to_pylist() == [["audio"]]
        assert row.column("mm_sizes").to_pylist() == [[None]]
        assert [a.tobytes() for a in pixel_values(row)] == [want.items[0].feature.array.tobytes()]
        _same_kwargs(model_kwargs(row), want.model_kwargs())
        for name in ("input_ids", "mm_offsets", "mm_hashes", "mm_modalities"):
            assert none.column(name)[k] == f32.column(name)[k], name
    assert f32.column("error_type").to_pylist()[2] == "MediaError"
    assert none.column("error_type").to_pylist()[2] == "MediaError"


def test_rows_that_cannot_be_read_item_by_item_are_refused():
    spec = mmf.preset("qwen2_vl")
    row = {"pixel_values": [], "pixel_values_shape": [], "mm_hashes": [], "mm_modalities": []}
    with pytest.raises(mmf.InvalidInputError, match="^this row holds no items, so no model inputs$"):
        model_kwargs(row, spec=spec)
    row = {"pixel_values": [0.0] * 4, "pixel_values_shape": [[1, 4]], "mm_hashes": [1], "mm_modalities": ["a", "b"]}
    with pytest.raises(mmf.InvalidInputError, match=r"^mm_modalities names 2 item\(s\) for 1 stored array\(s\)$"):
        model_kwargs(row, spec=spec)
