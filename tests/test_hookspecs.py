"""Every hook is documented for plugin authors, with its exact argument names."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from mm_framework import hookspecs

DOC = (Path(__file__).parent.parent / "docs" / "plugin-authoring.md").read_text()
HOOKS = [(name, fn) for cls in (hookspecs.DiscoverySpecs, hookspecs.FamilySpecs)
         for name, fn in vars(cls).items() if name.startswith("mm_")]


@pytest.mark.parametrize("name, fn", HOOKS, ids=[n for n, _ in HOOKS])
def test_hook_is_documented_with_its_signature(name, fn):
    args = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert f"`{name}({', '.join(args)})`" in DOC, f"docs/plugin-authoring.md lacks `{name}({', '.join(args)})`"
    assert fn.__doc__ and len(fn.__doc__.strip()) > 40, f"{name} has no contract docstring"
