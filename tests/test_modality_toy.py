"""A third modality added from outside the core: a 1-D signal, its own modality plugin and
a family that takes it, run end to end (request, limits, hash domain, cache, counts,
a dataset row) with nothing in mm_framework edited."""

from __future__ import annotations

import struct

import attrs
import numpy as np
import pyarrow as pa
import pytest
from blake3 import blake3

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import plugins
from mm_framework.arrow import process_table

MAGIC = b"SIG1"
SIG_ID, IMG_ID = 7, 9


def encode(samples: np.ndarray) -> bytes:
    """The toy container: magic, uint32 sample count, float32 samples."""
    samples = np.asarray(samples, np.float32)
    return MAGIC + struct.pack("<I", len(samples)) + samples.astype("<f4").tobytes()


@attrs.frozen
class SignalHeader:
    samples: int


@attrs.frozen(eq=False)
class TakenSignal:
    """A signal given as samples, copied and hashed in its own domain."""

    samples: np.ndarray
    hash: int


class SignalModality(mmp.Modality):
    name, keyword = "signal", "signals"
    decoded_forms = "a float32 1-D numpy array"

    def __init__(self, max_samples: int) -> None:
        self.max_samples = max_samples

    def check_source(self, source):
        if not isinstance(source, np.ndarray):
            return super().check_source(source)
        if source.ndim != 1 or source.dtype != np.float32:
            raise mmf.InvalidInputError(f"a signal array must be float32 1-D, got {source.dtype} {source.shape}")
        return source

    def take_decoded(self, source, limits, budget, fetch):
        if not isinstance(source, np.ndarray):
            return None
        if not budget.claim(source.nbytes):
            raise mmf.LimitExceededError("signal exceeds the request media byte budget")
        copy = np.array(source)
        h = blake3(copy.tobytes(), derive_key_context="toy signal v1")
        return TakenSignal(copy, int.from_bytes(h.digest(8), "big"))

    def probe(self, source, item):
        if isinstance(source, TakenSignal):
            return SignalHeader(len(source.samples))
        if source[:4] != MAGIC or len(source) < 8:
            raise mmf.MediaError("not a toy signal (no SIG1 header)")
        (n,) = struct.unpack("<I", source[4:8])
        if n > self.max_samples:  # from the header, before any sample is read
            raise mmf.LimitExceededError(f"signal of {n} samples, above {self.max_samples}")
        if len(source) != 8 + 4 * n:
            raise mmf.MediaError(f"signal header says {n} samples, the body holds {(len(source) - 8) / 4}")
        return SignalHeader(n)

    def decode(self, source, item):
        header = self.probe(source, item)
        if isinstance(source, TakenSignal):
            return source.samples
        return np.frombuffer(source, "<f4", count=header.samples, offset=8).astype(np.float32)

    def header_of(self, media):
        return SignalHeader(len(media))


class SignalModalityPlugin:
    @mmp.hookimpl
    def mm_register_modalities(self, register):
        register(SignalModality(max_samples=64))


class SignalFamily:
    """Mean of each 4-sample chunk; one token per chunk; images are one token."""

    calls = 0

    def __init__(self, params):
        self.chunk = params.get("chunk", 4)

    @mmp.hookimpl
    def mm_capabilities(self):
        return mmp.Capabilities(
            modalities=("image", "signal"), placeholders={"image": IMG_ID, "signal": SIG_ID},
            item_options={"signal": {"chunk": "chunk"}},
            outputs={"signal": mmp.ItemOutputs("f32", {"chunks": ("i64", (1,))}),
                     "image": mmp.ItemOutputs("f32", {"chunks": ("i64", (1,))})},
        )

    @mmp.hookimpl
    def mm_plan_item(self, header):
        if isinstance(header, SignalHeader):
            return mmp.ItemPlan(mmf.Grid(1, 1, -(-header.samples // self.chunk)), None)
        return mmp.ItemPlan(mmf.Grid(1, 1, 1), (header.width, header.height))

    @mmp.hookimpl
    def mm_process_item(self, media):
        type(self).calls += 1
        if isinstance(media, np.ndarray):
            n = -(-len(media) // self.chunk)
            padded = np.zeros(n * self.chunk, np.float32)
            padded[: len(media)] = media
            feature = padded.reshape(n, self.chunk).mean(axis=1, keepdims=True)
            return mmp.ProcessedItem(mmp.Tensor.f32(feature), {"chunks": mmp.Tensor.i64([n])}, mmf.Grid(1, 1, n))
        mean = media.rgb.reshape(-1, 3).mean(axis=0, keepdims=True).astype(np.float32)
        return mmp.ProcessedItem(mmp.Tensor.f32(mean), {"chunks": mmp.Tensor.i64([1])}, mmf.Grid(1, 1, 1),
                                 size=(media.width, media.height))

    @mmp.hookimpl
    def mm_layout(self, input_ids, geometries, modalities):
        marks = {"image": IMG_ID, "signal": SIG_ID}
        return mmp.layout_by_placeholders(input_ids, marks, modalities,
                                          lambda i: mmp.Repeat(marks[modalities[i]], geometries[i].w))


class SignalFamilyPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toysig", SignalFamily)


@pytest.fixture
def signal_pipe():
    names = [plugins.register(SignalModalityPlugin(), name="toy-signal-modality"),
             plugins.register(SignalFamilyPlugin(), name="toy-signal-family")]
    try:
        yield mmf.pipeline_from_spec({"family": "toysig"})
    finally:
        for name in names:
            plugins.unregister(name)


SIG = np.arange(10, dtype=np.float32)


def test_a_signal_request_runs_end_to_end(signal_pipe, tmp_path):
    path = tmp_path / "a.sig"
    path.write_bytes(encode(SIG))
    png = _png()
    # Items are numbered image first (a built-in), then the signals, each in the order given.
    inp = mmf.MmInput(signals=[path, encode(SIG[:4])], images=[png], input_ids=[SIG_ID, 0, IMG_ID, SIG_ID])
    out = signal_pipe.process(inp)
    assert [it.modality for it in out.items] == ["signal", "image", "signal"]
    assert out.input_ids.tolist() == [SIG_ID] * 3 + [0, IMG_ID] + [SIG_ID]
    assert out.offsets == ((0, 2), (4, 4), (5, 5))
    np.testing.assert_array_equal(out.items[0].feature.array[:, 0], [1.5, 5.5, 4.25])
    assert out.items[0].size is None and out.items[1].size == (8, 6)
    assert out.items[0].hash == mmf.content_hash(encode(SIG))  # encoded bytes: the shared content hash
    # Pixel-free counting gives the same ids, offsets and geometry from the headers alone.
    counted = signal_pipe.count_tokens(inp)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    assert [it.geometry for it in counted.items] == [it.geometry for it in out.items]
    assert signal_pipe.num_media_tokens(8, 6) == 1


def test_decoded_signals_hash_in_their_own_domain_and_the_general_item_form(signal_pipe):
    by_keyword = signal_pipe.process(mmf.MmInput(signals=[SIG], input_ids=[SIG_ID]))
    by_item = signal_pipe.process(mmf.MmInput(items=[mmf.Item("signal", SIG)], input_ids=[SIG_ID]))
    assert by_keyword == by_item
    assert by_keyword.items[0].hash != mmf.content_hash(SIG.tobytes())
    # A per-item option the family declares for signals (chunk) changes that item only.
    two = signal_pipe.process(mmf.MmInput(items=[mmf.Item("signal", SIG, chunk=5)], input_ids=[SIG_ID]))
    assert two.items[0].feature.array[:, 0].tolist() == [2.0, 7.0]


def test_the_modality_limits_and_errors_reject_the_request(signal_pipe):
    too_long = encode(np.zeros(65, np.float32))
    with pytest.raises(mmf.LimitExceededError, match=r"^item 1: signal of 65 samples, above 64$"):
        signal_pipe.process(mmf.MmInput(signals=[encode(SIG), too_long], input_ids=[SIG_ID, SIG_ID]))
    with pytest.raises(mmf.MediaError, match=r"^item 0: not a toy signal \(no SIG1 header\)$"):
        signal_pipe.count_tokens(mmf.MmInput(signals=[b"RIFF...."], input_ids=[SIG_ID]))
    with pytest.raises(mmf.InvalidInputError, match=r"^item 0: a signal array must be float32 1-D, got int64 \(3,\)$"):
        mmf.MmInput(signals=[np.arange(3)])
    with pytest.raises(mmf.InvalidInputError, match=r"^item 0: unsupported signal source type list; expected bytes, "
                       r"str, a pathlib.Path, a float32 1-D numpy array$"):
        mmf.MmInput(signals=[[1.0, 2.0]])
    with pytest.raises(mmf.LimitExceededError, match="media items"):
        signal_pipe.process(mmf.MmInput(signals=[SIG] * 65, input_ids=[SIG_ID] * 65))


def test_a_family_without_the_modality_refuses_it_before_io(signal_pipe, toy):
    image_only = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1})
    refusal = r"^item 0 \(https://x.invalid/a.sig\): family 'toy' does not take signal$"
    with pytest.raises(mmf.UnsupportedError, match=refusal):
        image_only.process(mmf.MmInput(signals=["https://x.invalid/a.sig"], input_ids=[1]))


def test_the_feature_cache_keys_signals_by_content_and_modality(signal_pipe):
    cached = mmf.pipeline_from_spec({"family": "toysig"}, cache=mmf.FeatureCache(max_bytes=1 << 20))
    before = SignalFamily.calls
    first = cached.process(mmf.MmInput(signals=[encode(SIG)], input_ids=[SIG_ID]))
    again = cached.process(mmf.MmInput(signals=[encode(SIG)], input_ids=[SIG_ID]))
    assert first == again and SignalFamily.calls == before + 1
    assert again.timings.items[0].cached


def test_a_dataset_row_holds_a_signal_request(signal_pipe):
    table = pa.table({"id": [1, 2], "signals": [[encode(SIG)], [b"bad"]], "input_ids": [[SIG_ID], [SIG_ID]]})
    result = process_table(signal_pipe, table)
    rows = result.to_pylist()
    assert rows[0]["num_tokens"] == 3 and rows[0]["chunks"] == [[3]] and rows[0]["error"] is None
    assert rows[0]["pixel_values"] == [1.5, 5.5, 8.5 / 2]
    assert rows[1]["error_type"] == "MediaError" and rows[1]["error"] == "item 0: not a toy signal (no SIG1 header)"


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (10, 20, 30)).save(buf, "PNG")
    return buf.getvalue()
