"""A family's declared outputs (Capabilities.outputs): items that differ are refused, and
datasets need the declaration."""

from __future__ import annotations

import pyarrow as pa
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import plugins
from mm_framework.arrow import process_table

from .conftest import png_bytes
from .toy_family import ToyFamily


class WrongAux(ToyFamily):
    """Declares a two-element ``grid`` aux; the toy's items carry three."""

    @mmp.hookimpl
    def mm_capabilities(self):
        caps = super().mm_capabilities()
        return mmp.Capabilities(placeholders=caps.placeholders,
                                outputs={"image": mmp.ItemOutputs("f32", {"grid": ("i64", (2,))})})


class WrongAuxPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy_wrong_aux", WrongAux)


@pytest.fixture
def wrong_aux():
    name = plugins.register(WrongAuxPlugin(), name="toy-wrong-aux")
    try:
        yield mmf.pipeline_from_spec({"family": "toy_wrong_aux", "image_token_id": 1})
    finally:
        plugins.unregister(name)


def test_an_item_that_differs_from_the_declaration_rejects_the_request(wrong_aux):
    with pytest.raises(mmf.InternalError) as err:
        wrong_aux.process(mmf.MmInput(images=[png_bytes(8, 8), png_bytes(4, 4, seed=1)], input_ids=[1, 1]))
    assert str(err.value) == (
        "item 0: family 'toy_wrong_aux': processed item f32 {'grid': ('i64', (3,))} differs from the family's "
        "declared outputs (f32 {'grid': ('i64', (2,))})"
    )
    assert err.value.item == 0
    # A token count processes nothing, so it holds nothing to the declaration.
    assert wrong_aux.count_tokens(mmf.MmInput(images=[png_bytes(8, 8)], input_ids=[1])).offsets == ((0, 3),)


def test_float_rows_need_the_declaration(toy_pipe):
    table = pa.table({"images": [[png_bytes(8, 8)]], "input_ids": [[1]]})
    with pytest.raises(mmf.SpecError) as err:
        process_table(toy_pipe, table, pixels="f32")
    assert str(err.value) == (
        "family 'toy' declares no outputs for image items (Capabilities.outputs): no dataset columns for them"
    )
    # Token counts need no columns of the family's.
    assert process_table(toy_pipe, table, pixels="none").column("num_tokens").to_pylist() == [4]


def test_item_outputs_refuse_an_unknown_dtype():
    with pytest.raises(mmf.InternalError, match=r"^ItemOutputs aux 'grid': dtype must be one of"):
        mmp.ItemOutputs("f32", {"grid": ("i32", (3,))})
