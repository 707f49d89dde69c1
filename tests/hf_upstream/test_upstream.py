"""transformers' own image-processor tests through ``mm_framework.hf.accelerate``
(upstream.py says how and what it changes; docs/engines.md lists what does not apply).
Skips unless ``MM_UPSTREAM_TESTS`` names the directory holding the files of ``fetch_list``."""

import unittest

import pytest

from . import upstream

_root = upstream.upstream_dir()
if _root is None:
    pytest.skip("transformers' own tests are not here: fetch the files named in tests/hf_upstream/fetch_list into "
                "a directory (layout in tests/hf_upstream/upstream.py) and set MM_UPSTREAM_TESTS to it",
                allow_module_level=True)
pytest.importorskip("torch", reason="transformers' image-processor test classes need torch (run in the tv venv)")


def _collect() -> dict[str, type]:
    found = {}
    for model, module in upstream.load(_root).items():
        skips = {**upstream.NOT_APPLICABLE["*"], **upstream.NOT_APPLICABLE.get(model, {})}
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, unittest.TestCase) and value.__module__ == module.__name__:
                found[f"{model}__{name}"] = upstream.skip_not_applicable(value, skips)
    return found


globals().update(_collect())
