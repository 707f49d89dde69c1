"""Conformance harness for family plugins.

A family's own test module subclasses :class:`FamilyConformance`, supplies a spec (and
optionally sample images and a golden directory) and inherits every check::

    from mm_framework.testing import FamilyConformance

    class TestMyFamily(FamilyConformance):
        @pytest.fixture
        def family_spec(self):
            return {"family": "my_family", ...}
"""

import pytest

# Asserts in the helper modules should explain themselves like test-module asserts do.
pytest.register_assert_rewrite(
    "mm_framework.testing.compare", "mm_framework.testing.conformance", "mm_framework.testing.golden"
)

from .compare import assert_same_output  # noqa: E402
from .conformance import FamilyConformance, sample_image  # noqa: E402
from .golden import GoldenCase, load_cases, record_case, replay_case  # noqa: E402

__all__ = [
    "FamilyConformance", "GoldenCase", "assert_same_output", "load_cases", "record_case", "replay_case", "sample_image",
]
