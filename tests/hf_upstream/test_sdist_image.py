"""transformers' own ``ImageProcessingTestMixin`` (the 5.24.0 sdist's, assertions unchanged) on
every image processor ``mm_framework.hf`` serves, both backends, built through the adapter
with each served call checked against the real processor (upstream.py: ``_accelerated``,
``_Shadowed``). The testers are ours (sdist_families.py); the conftest fails the run when a
family's calls were not served on both backends. Skips unless ``MM_TRANSFORMERS_SDIST`` names
the sdist (sdist.py says how to get it)."""

import unittest

import pytest

from . import sdist, sdist_families, upstream

_tests = sdist.tests_dir()
if _tests is None:
    pytest.skip(sdist.HOW, allow_module_level=True)
pytest.importorskip("torch", reason="transformers' image-processor test mixin needs torch (run in the tv venv)")
pytest.importorskip("torchvision", reason="both backends are tested: the torchvision one needs torchvision")
pytest.importorskip("parameterized", reason=sdist.HOW)

_common = upstream.load_common(sdist.PACKAGE, _tests)


def _test_class(model_type: str, tester: type, skips: dict[str, str]) -> type:
    tester_class = type(tester.__name__, (tester, _common.ImageProcessingTester), {})
    test = type(f"sdist_{model_type}__ImageProcessingTest", (_common.ImageProcessingTestMixin, unittest.TestCase),
                {"image_processor_tester_class": tester_class, "test_cast_dtype": True, "__module__": __name__})
    return upstream.skip_not_applicable(test, skips)


globals().update({cls.__name__: cls for cls in (_test_class(model_type, tester, skips)
                                                for model_type, (tester, skips) in sdist_families.TESTERS.items())})
