"""The two public levels: ``mm_framework`` (the engine API) and ``mm_framework.plugin`` (the
family toolkit) each keep a short ``__all__`` that resolves, and the toolkit stays off the
engine namespace."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp

LEVELS = {"mm_framework": mmf, "mm_framework.plugin": mmp}
TOOLKIT_ONLY = sorted(set(mmp.__all__) - set(mmf.__all__))


@pytest.mark.parametrize("name", LEVELS)
def test_all_is_short_unique_and_resolves(name):
    module = LEVELS[name]
    assert len(module.__all__) <= 56
    assert len(set(module.__all__)) == len(module.__all__)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it lacks: {missing}"


def test_toolkit_only_names_are_not_engine_attributes():
    assert {"hookimpl", "ProcessedItem", "layout_by_placeholder", "SpecFields", "decode_rgb"} <= set(TOOLKIT_ONLY)
    leaked = [n for n in TOOLKIT_ONLY if hasattr(mmf, n)]
    assert not leaked, f"toolkit names on mm_framework: {leaked}"


def test_the_engine_has_no_handle_on_the_family():
    assert not hasattr(mmf.Pipeline, "hooks")


def test_shared_names_are_the_same_objects():
    for n in set(mmf.__all__) & set(mmp.__all__):
        assert getattr(mmf, n) is getattr(mmp, n), n
