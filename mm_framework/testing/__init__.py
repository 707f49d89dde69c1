"""The test toolkit for family plugins: the conformance harness, golden cases, test images.

A family's own test module subclasses :class:`FamilyConformance`, supplies a spec (and
optionally sample images and a golden directory) and inherits every check::

    from mm_framework.testing import FamilyConformance

    class TestMyFamily(FamilyConformance):
        @pytest.fixture
        def family_spec(self):
            return {"family": "my_family", ...}

The harness (``compare``, ``conformance``, ``golden``, ``bad_input`` (the bad-input rows every
image family shares, :class:`ImageBadInput`), ``hf_batch`` (:func:`assert_same_batch`, an adapter's
``BatchFeature`` against the processor's), and ``torch_reference``, which skips a
torchvision parity module where its reference cannot run; they need pytest) is imported on first use, so
``mm_framework.testing.images`` and ``.records`` (deterministic images, golden record
pieces) import without it: benchmarks and golden generators use them.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .images import *  # noqa: F403
from .images import __all__ as _images
from .records import *  # noqa: F403
from .records import __all__ as _records
from .standalone import load_module as load_module

if "pytest" in sys.modules:
    # Under pytest the harness's asserts explain themselves like a test module's; the
    # rewrite must be registered before the modules are imported.
    sys.modules["pytest"].register_assert_rewrite(
        "mm_framework.testing.bad_input", "mm_framework.testing.compare", "mm_framework.testing.conformance",
        "mm_framework.testing.golden",
    )

_HARNESS = {
    "FamilyConformance": "conformance", "AudioFamilyConformance": "conformance", "framed_prompt": "conformance",
    "assert_same_output": "compare", "part_adjacent": "compare", "drop_separators": "compare",
    "assert_adjacent_images_parted": "compare",
    "GoldenCase": "golden", "load_cases": "golden", "record_case": "golden", "replay_case": "golden",
    "run_case": "golden", "assert_rejection": "golden", "assert_tensors": "golden",
    "require_torchvision": "torch_reference", "ImageBadInput": "bad_input", "assert_same_batch": "hf_batch",
}

__all__ = sorted([*_HARNESS, *_images, *_records, "load_module"])


def __getattr__(name: str) -> Any:
    if name in ("bad_input", "compare", "conformance", "golden", "hf_batch", "torch_reference"):
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _HARNESS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HARNESS[name]}"), name)
    globals()[name] = value
    return value
