"""Per-item and per-request processor options (``mmf.Image(src, opt=...)``,
``MmInput(items=..., options=...)``): the three request forms agree, item numbering,
every rejection's exact message, precedence, the feature-cache key and in-request dedupe,
count_tokens against process, and ``Item`` itself."""

from __future__ import annotations

import json
import threading
from collections import Counter

import attrs
import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.errors import SpecError
from mm_framework.testing import assert_same_output

from .conftest import png_bytes
from .toy_family import ToyFamily

CALLS: Counter[tuple[int, int, int]] = Counter()
_lock = threading.Lock()


class OptionFamily(ToyFamily):
    """The toy family taking its block size as a per-image option (``block``), bounded so
    an out-of-range value is the factory's ``SpecError``; it counts each processing."""

    def __init__(self, params):
        super().__init__(params)
        if not 1 <= self.block <= 16:
            raise SpecError(f"toy spec: field 'block' must be in 1..16, got {self.block}")

    @mmp.hookimpl
    def mm_capabilities(self):
        return attrs.evolve(super().mm_capabilities(), item_options={"image": {"block": "block"}})

    @mmp.hookimpl
    def mm_process_item(self, media):
        with _lock:
            CALLS[(self.block, media.width, media.height)] += 1
        return super().mm_process_item(media)


class OptionPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy_opts", OptionFamily)


SPEC = {"family": "toy_opts", "image_token_id": 1}
A, B = png_bytes(32, 24, seed=1), png_bytes(40, 16, seed=2)


@pytest.fixture
def opts():
    name = mmf.plugins.register(OptionPlugin(), name="toy-opts-plugin")
    CALLS.clear()
    try:
        yield
    finally:
        mmf.plugins.unregister(name)


@pytest.fixture
def pipe(opts):
    return mmf.pipeline_from_spec(SPEC)


def ids(n: int) -> list[int]:
    return [5] + [1, 6] * n


def rejected(pipe, inp, error=SpecError):
    with pytest.raises(error) as e:
        pipe.process(inp)
    return e.value


# --- the three request forms ----------------------------------------------------------------
def test_image_keyword_items_and_mixed_forms_agree(pipe):
    forms = [
        mmf.MmInput([mmf.Image(A, block=8), mmf.Image(B)], ids(2)),
        mmf.MmInput(items=[mmf.Image(A, block=8), mmf.Image(B)], input_ids=ids(2)),
        mmf.MmInput(images=[mmf.Image(A, block=8)], items=[mmf.Item("image", B)], input_ids=ids(2)),
    ]
    outs = [pipe.process(inp) for inp in forms]
    for k, out in enumerate(outs[1:], 1):
        assert_same_output(outs[0], out, f"form {k}")
    # The option applies to its item only: A at block 8, B at the spec's block 4.
    assert [it.geometry for it in outs[0].items] == [mmf.Grid(1, 3, 4), mmf.Grid(1, 4, 10)]


def test_an_item_option_equals_the_pipeline_built_with_that_spec_field(pipe, opts):
    got = pipe.process(mmf.MmInput([mmf.Image(A, block=8)], ids(1)))
    want = mmf.pipeline_from_spec({**SPEC, "block": 8}).process(mmf.MmInput([A], ids(1)))
    assert_same_output(want, attrs.evolve(got, spec=want.spec), "block=8 item vs block=8 pipeline")
    # The output names the request's pipeline spec, not the item's.
    assert got.spec == pipe.process(mmf.MmInput([A], ids(1))).spec


def test_the_specs_own_value_reuses_the_plan(opts, monkeypatch):
    # A transformers processor passes its defaults with every call: an option holding the
    # spec's own value (block 4) builds nothing; one of another type still goes to the family.
    from mm_framework import driver

    pipe = mmf.pipeline_from_spec({**SPEC, "block": 4})
    built = []
    monkeypatch.setattr(driver, "hooks_for", lambda spec: built.append(spec) or driver.bind(json.loads(spec)))
    plain, same = (pipe.process(mmf.MmInput([src], ids(1))) for src in (A, mmf.Image(A, block=4)))
    assert_same_output(plain, same, "block=4 (the spec's) vs no option")
    assert built == []
    e = rejected(pipe, mmf.MmInput([mmf.Image(A, block=4.0)], ids(1)))
    assert str(e).startswith("item 0: processor option block=4.0 for this image: toy spec: field 'block' must be int")
    assert len(built) == 1


def test_no_options_is_the_plain_request(pipe):
    assert_same_output(pipe.process(mmf.MmInput([A], ids(1))), pipe.process(mmf.MmInput([mmf.Image(A)], ids(1))),
                       "Image without options vs a plain source")


# --- numbering --------------------------------------------------------------------------------
def test_items_are_numbered_by_modality_then_keyword_first():
    v1, v2 = np.zeros((2, 8, 8, 3), np.uint8), np.ones((2, 8, 8, 3), np.uint8)
    inp = mmf.MmInput(images=[A], videos=[v1], items=[mmf.Video(v2), mmf.Image(B, block=2), mmf.Image(A)])
    assert [it.modality for it in inp.items] == ["image", "image", "image", "video", "video"]
    assert [it.options for it in inp.items] == [{}, {"block": 2}, {}, {}, {}]
    assert inp.images == (A, B, A)
    assert [v is v1 or v is v2 for v in inp.videos] == [True, True] and inp.videos[0] is v1


def test_a_bad_option_names_the_item_by_that_numbering(pipe):
    inp = mmf.MmInput(images=[A], items=[mmf.Image(B), mmf.Image(A, colour=1)], input_ids=ids(3))
    e = rejected(pipe, inp)
    assert e.item == 2
    assert str(e) == "item 2: processor option 'colour' is not one family 'toy_opts' takes for image items; " \
        "it takes: block"


# --- rejections -------------------------------------------------------------------------------
def test_unknown_option_names_option_item_source_and_what_the_family_takes(pipe, tmp_path):
    path = tmp_path / "b.png"
    path.write_bytes(B)
    e = rejected(pipe, mmf.MmInput([A, mmf.Image(str(path), size=3)], ids(2)))
    assert e.item == 1 and e.source == "b.png"
    assert str(e) == "item 1 (b.png): processor option 'size' is not one family 'toy_opts' takes for image items; " \
        "it takes: block"


def test_a_family_without_options_takes_none(toy_pipe):
    e = rejected(toy_pipe, mmf.MmInput([mmf.Image(A, block=8)], ids(1)))
    assert str(e) == "item 0: processor option 'block' is not one family 'toy' takes for image items; it takes: none"


def test_out_of_range_value_is_the_family_factorys_spec_error(pipe):
    e = rejected(pipe, mmf.MmInput([A, mmf.Image(B, block=99)], ids(2)))
    assert e.item == 1
    assert str(e) == "item 1: processor option block=99 for this image: toy spec: field 'block' must be in 1..16, " \
        "got 99"


def test_wrong_type_value_is_the_family_factorys_spec_error(pipe):
    e = rejected(pipe, mmf.MmInput([mmf.Image(A, block="8")], ids(1)))
    assert str(e) == "item 0: processor option block='8' for this image: toy spec: field 'block' must be int"


def test_a_value_that_is_no_json_value_is_refused(pipe):
    e = rejected(pipe, mmf.MmInput([mmf.Image(A, block=np.int64(8))], ids(1)))
    assert str(e) == "item 0: processor options {'block': np.int64(8)} are not JSON values"


def test_request_option_no_modality_takes_is_refused(pipe, toy_pipe):
    e = rejected(pipe, mmf.MmInput([A], ids(1), options={"fps": 2}))
    assert e.item is None
    assert str(e) == "processor option 'fps' is not one family 'toy_opts' takes; it takes: block"
    e = rejected(toy_pipe, mmf.MmInput([A], ids(1), options={"block": 8}))
    assert str(e) == "processor option 'block' is not one family 'toy' takes; it takes: none"


def test_a_request_options_bad_value_names_the_first_item(pipe):
    e = rejected(pipe, mmf.MmInput([A, B], ids(2), options={"block": 0}))
    assert e.item == 0
    assert str(e) == "item 0: processor option block=0 for this image: toy spec: field 'block' must be in 1..16, got 0"


def test_rejections_come_before_any_io(pipe):
    # An unreachable URL is never fetched: the option is refused first.
    e = rejected(pipe, mmf.MmInput([mmf.Image("https://unreachable.invalid/a.png", block=0)], ids(1)))
    assert str(e) == "item 0 (https://unreachable.invalid/a.png): processor option block=0 for this image: " \
        "toy spec: field 'block' must be in 1..16, got 0"


# --- precedence -------------------------------------------------------------------------------
def test_request_options_apply_to_every_item_and_an_item_option_wins(pipe, opts):
    out = pipe.process(mmf.MmInput([A, mmf.Image(B, block=2)], ids(2), options={"block": 8}))
    assert [it.geometry for it in out.items] == [mmf.Grid(1, 3, 4), mmf.Grid(1, 8, 20)]
    want = [mmf.pipeline_from_spec({**SPEC, "block": b}).process(mmf.MmInput([src], ids(1))).items[0]
            for src, b in ((A, 8), (B, 2))]
    assert list(out.items) == want


# --- cache key and dedupe ---------------------------------------------------------------------
def test_options_are_part_of_the_feature_cache_key(opts):
    cache = mmf.FeatureCache(1 << 20)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
    plain = pipe.process(mmf.MmInput([A], ids(1)))
    eight = pipe.process(mmf.MmInput([mmf.Image(A, block=8)], ids(1)))
    s = cache.stats()
    assert (s.hits, s.misses, s.entries) == (0, 2, 2)
    assert plain.items[0].feature != eight.items[0].feature and plain.input_ids.tolist() != eight.input_ids.tolist()
    again = pipe.process(mmf.MmInput([mmf.Image(A, block=8)], ids(1)))
    by_request = pipe.process(mmf.MmInput([A], ids(1), options={"block": 8}))
    s = cache.stats()
    assert (s.hits, s.misses, s.entries) == (2, 2, 2)
    assert again.items == eight.items and by_request.items == eight.items
    assert CALLS == {(4, 32, 24): 1, (8, 32, 24): 1}


def test_in_request_dedupe_keys_on_the_options(pipe):
    out = pipe.process(mmf.MmInput([A, mmf.Image(A, block=8), mmf.Image(A, block=8), A], ids(4)))
    assert CALLS == {(4, 32, 24): 1, (8, 32, 24): 1}
    assert out.items[0] == out.items[3] and out.items[1] == out.items[2] and out.items[0] != out.items[1]
    assert [t.cached for t in out.timings.items] == [False, False, True, True]


# --- count_tokens -----------------------------------------------------------------------------
def test_count_tokens_agrees_with_process_under_options(pipe):
    inp = mmf.MmInput([A, mmf.Image(B, block=2)], ids(2), options={"block": 8})
    counted, processed = pipe.count_tokens(inp), pipe.process(inp)
    assert counted.input_ids.tolist() == processed.input_ids.tolist() and counted.offsets == processed.offsets
    assert [it.geometry for it in counted.items] == [it.geometry for it in processed.items]
    assert counted.positions == processed.positions
    e = rejected(pipe, mmf.MmInput([mmf.Image(A, block=99)], ids(1)))
    with pytest.raises(SpecError) as c:
        pipe.count_tokens(mmf.MmInput([mmf.Image(A, block=99)], ids(1)))
    assert str(c.value) == str(e)


# --- Item and MmInput -------------------------------------------------------------------------
def test_item_repr_and_fields():
    it = mmf.Image(A, block=8)
    assert (it.modality, it.source, it.options) == ("image", A, {"block": 8})
    assert repr(it) == "Item(modality='image', options={'block': 8})"  # the source may be megabytes
    assert repr(mmf.Video(b"x", fps=2)) == "Item(modality='video', options={'fps': 2})"
    assert repr(mmf.Item("image", A)) == "Item(modality='image', options={})"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        it.options = {}


def test_request_options_must_be_str_keyed():
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput([A], options={1: 2})
    assert str(e.value) == "processor options must be a mapping of option names, got dict"
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput([A], options=[("block", 8)])
    assert str(e.value) == "processor options must be a mapping of option names, got list"


def test_a_wrong_modality_item_in_a_keyword_is_refused():
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(images=[A, mmf.Video(b"clip")])
    assert str(e.value) == "images holds an item of modality 'video'; pass it with the video items"
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(videos=[mmf.Image(A)])
    assert str(e.value) == "videos holds an item of modality 'image'; pass it with the image items"


def test_an_unregistered_keyword_is_refused():
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(foo=[A])
    assert str(e.value) == ("MmInput got foo=, which is no registered modality's keyword; "
                            "registered: audios, images, videos")


def test_items_must_hold_items_of_registered_modalities():
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(items=mmf.Image(A))
    assert str(e.value) == "items must be a sequence of Item values, not a single one"
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(items=[mmf.Image(A), A])
    assert str(e.value) == "items must hold Item values (mmf.Image, mmf.Video), got bytes"
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(items=[mmf.Item("signal", b"x")])
    assert str(e.value) == "item modality 'signal' is not registered; registered: image, video, audio"
    with pytest.raises(mmf.InvalidInputError) as e:
        mmf.MmInput(images=mmf.Image(A))
    assert str(e.value) == "images must be a sequence of sources, not a single source"


class OtherOptionFamily(OptionFamily):
    """Another family registered under the same name: its features are negated."""

    @mmp.hookimpl
    def mm_process_item(self, media):
        item = super().mm_process_item(media)
        return attrs.evolve(item, feature=mmp.Tensor.f32(-item.feature.array))


class OtherOptionPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy_opts", OtherOptionFamily)


def test_an_item_option_uses_the_family_registered_now(opts):
    inp = mmf.MmInput([mmf.Image(A, block=8)], ids(1))
    before = mmf.pipeline_from_spec(SPEC).process(inp)
    mmf.plugins.unregister("toy-opts-plugin")
    name = mmf.plugins.register(OtherOptionPlugin(), name="other-opts-plugin")
    try:
        pipe = mmf.pipeline_from_spec(SPEC)
        plain = pipe.process(mmf.MmInput([A], ids(1)))
        after = pipe.process(inp)
    finally:
        mmf.plugins.unregister(name)
        mmf.plugins.register(OptionPlugin(), name="toy-opts-plugin")
    assert (plain.items[0].feature.array <= 0).all()
    # The item is processed by the family registered now, like the pipeline's own items.
    assert np.array_equal(after.items[0].feature.array, -before.items[0].feature.array)


# --- request_options: request-level options with their own fields ------------------------------
class RequestOptionFamily(OptionFamily):
    """``block`` only for the whole request (``Capabilities.request_options``), none per item."""

    @mmp.hookimpl
    def mm_capabilities(self):
        return attrs.evolve(super().mm_capabilities(), item_options={"image": {}},
                            request_options={"image": {"block": "block"}})


class RequestOptionPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy_request_opts", RequestOptionFamily)


@pytest.fixture
def request_pipe(opts):
    name = mmf.plugins.register(RequestOptionPlugin(), name="toy-request-opts-plugin")
    try:
        yield mmf.pipeline_from_spec({**SPEC, "family": "toy_request_opts"})
    finally:
        mmf.plugins.unregister(name)


def test_request_options_route_request_level_options_apart_from_an_items(request_pipe):
    got = request_pipe.process(mmf.MmInput([A, B], ids(2), options={"block": 8}))
    want = mmf.pipeline_from_spec({**SPEC, "family": "toy_request_opts", "block": 8}).process(
        mmf.MmInput([A, B], ids(2)))
    assert_same_output(want, attrs.evolve(got, spec=want.spec), "request block=8")
    e = rejected(request_pipe, mmf.MmInput([mmf.Image(A, block=8)], ids(1)))
    assert str(e) == "item 0: processor option 'block' is not one family 'toy_request_opts' takes for image " \
        "items; it takes: none"


def test_without_request_options_a_request_takes_the_item_options(pipe):
    assert pipe.capabilities.request_options is None
    assert pipe.capabilities.options_for_request == pipe.capabilities.item_options
    e = rejected(pipe, mmf.MmInput([A], ids(1), options={"colour": 1}))
    assert str(e) == "processor option 'colour' is not one family 'toy_opts' takes; it takes: block"
